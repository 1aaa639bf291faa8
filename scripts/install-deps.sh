#!/usr/bin/env bash
# Installs everything tracer needs to build and test on Debian/Ubuntu. Idempotent: when every
# package is present it only checks, which takes well under a second.
set -euo pipefail

packages=(
	make gcc g++ clang llvm pkg-config bpftool	# build; g++: libstdc++, the C++ target
	python3.11-dev systemtap-sdt-dev		# tests: the CPython 3.11 offsets check, USDT targets
	libbpf-dev libelf-dev zlib1g-dev libcjson-dev	# libraries tracer links against
	libcapstone-dev					# decoding functions whole: moved probe sites
	uthash-dev					# one hash table, header-only
	python3 ffmpeg util-linux time valgrind		# tests: runner, a real pipeline, setpriv, RSS, valgrind
	chromium groff-base				# tests: viewer in a real browser, man page
	python3-torch python3-opencv			# tests: the framework packs on real pipelines
	libgstreamer1.0-dev				# build: GstPad/GstObject offsets for the gstreamer pack
	gstreamer1.0-tools gstreamer1.0-plugins-base	# tests: gst-launch-1.0, videoconvert, videoscale
	libcurl4-openssl-dev				# build: HTTP(S) to ClickHouse (push, fleet)
	clickhouse-server clickhouse-client		# tests: a real ClickHouse on loopback
	qemu-system-x86 cpio				# make check-kernels: other kernels in a VM
)

# CPython 3.14 (Debian sid's, chrooted: it needs sid's glibc) for the Python tests; cached under
# /var/cache/py314, a check only once there
if [ "$(id -u)" -eq 0 ]; then
	"$(dirname "$0")/python314-root.sh"
else
	sudo "$(dirname "$0")/python314-root.sh"
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
