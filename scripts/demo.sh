#!/usr/bin/env bash
# The main job on the bundled sample pipeline: start it, attach tracer, record a few seconds,
# write the trace and print the summary. Attaching needs root: scripts/as-root.sh asks for it
# (through sudo) only when not already root.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUTPUT:-.output}
trace=${TRACE:-pipeline-trace.json}
seconds=${SECONDS_TO_RECORD:-3}

"$out/targets/pipeline" --forever --bottleneck decode > /dev/null &
pid=$!
trap 'kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
sleep 0.5
echo "sample pipeline running as pid $pid; tracing it for $seconds s"
scripts/as-root.sh ./tracer -p "$pid" -d "$seconds" -o "$trace"
