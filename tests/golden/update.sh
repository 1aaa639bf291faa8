#!/bin/sh
# Regenerates the expected outputs of the golden tests (tests/integration/test_golden.py) from
# the committed traces, with the tracer just built; with --inputs, the traces too (tracegen,
# fixed seeds). Review the diff before committing: every change is a change of tracer's output.
#   tests/golden/update.sh [--inputs] [TRACER]
set -eu
cd "$(dirname "$0")"
[ "${1:-}" = --inputs ] && { inputs=1; shift; } || inputs=
tracer=$(realpath "${1:-../../.output/tracer}")
gen=../integration/tracegen.py
py=/usr/bin/python3

if [ "$inputs" ]; then
	$py $gen -o pipeline.json --size 40k --seed 1 --threads 6
	$py $gen -o host-a.json --size 15k --seed 2 --threads 4
	$py $gen -o host-b.json --size 15k --seed 3 --threads 4
	# B started 2.5 ms after A, on the same boot
	sed -i 's/"t0_monotonic_ns":1000000000000,"t0_realtime_ns":1700000000000000000/"t0_monotonic_ns":1000002500000,"t0_realtime_ns":1700000000002500000/' host-b.json
	# a recording killed with SIGKILL: cut in the middle of an event line
	head -c 20000 pipeline.json > cut.json
fi

mkdir -p expected
"$tracer" report pipeline.json > expected/report.txt
"$tracer" report pipeline.json --by stage > expected/report-stage.txt
"$tracer" report pipeline.json --by thread --top 5 --min-dur 1ms > expected/report-thread.txt
"$tracer" report pipeline.json --csv > expected/report.csv
"$tracer" report pipeline.json --json > expected/report.json
"$tracer" export pipeline.json --jsonl > expected/export.jsonl
"$tracer" export pipeline.json --csv > expected/export.csv
"$tracer" export pipeline.json --speedscope > expected/export.speedscope.json
"$tracer" diff host-a.json host-b.json > expected/diff.txt
"$tracer" diff host-a.json host-b.json --by stage --json > expected/diff-stage.json
"$tracer" merge host-a.json host-b.json -o expected/merge.json 2> /dev/null
cp cut.json expected/repaired.json
"$tracer" repair expected/repaired.json 2> /dev/null
rm -f expected/repaired.json.cut  # repair keeps the cut original beside it
echo "golden outputs regenerated in $(pwd)/expected"
