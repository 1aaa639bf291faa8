#!/usr/bin/env bash
# make check-kernels [KERNELS="5.10 6.1 6.12"]: boots Debian's cloud kernels in qemu (software
# emulation: KVM does not work everywhere) with a root made of this machine's own files, runs a
# chosen set of the integration tests inside, copies their output out over the serial console
# and prints one table: test by kernel.
#
# Usage: scripts/check-kernels.sh OUTPUT_DIR KERNEL...   (as root: apt-get, tracer in the VM)
# Kernels are downloaded as Debian packages into $TRACER_KERNEL_CACHE (default
# /var/cache/tracer-kernels), outside the tree; 6.1 from bookworm, 5.10 from bullseye, 6.12 from
# trixie, through a private apt source list so the machine's own stays untouched.
# CHECK_KERNELS_TESTS overrides the test names (substrings, as tests/run.py takes them);
# CHECK_KERNELS_RUN='shell command' runs that in the VM instead (to look into a failure);
# CHECK_KERNELS_APPEND='loglevel=5' adds to the kernel's command line (with it, a soft lockup's
# call trace reaches the console: quiet keeps only its first line).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTPUT=$(cd "${1:?usage: $0 OUTPUT_DIR KERNEL...}" && pwd)
shift
[ $# -gt 0 ] || { echo "check-kernels: name at least one kernel (5.10, 6.1, 6.12)" >&2; exit 2; }
CACHE=${TRACER_KERNEL_CACHE:-/var/cache/tracer-kernels}
TIMEOUT=${CHECK_KERNELS_TIMEOUT:-900}	# seconds per kernel (the 6.1 leg took about 150 s here)
# spans exact against the pipeline's log (uprobe_multi or the per-function fallback, whichever
# the kernel has; and the fallback forced; uprobe_multi's pid filter checked), scheduler states, a clean stop (the calls open then:
# through a thread's pidfd or the task iterator, whichever the kernel has, and loaded only there),
# launch mode, Python frames by pid and in launch mode, --follow, the overhead budget
TESTS=${CHECK_KERNELS_TESTS:-"test_record:test_spans_match_ground_truth
test_record:test_summary_counts_and_states test_record:test_stop_on_sigint_closes_open_spans
test_record:test_open_calls_of_threads_read_without_pidfd_thread
test_record:test_task_iterator_loaded_only_without_pidfd_thread
test_launch:test_launch_records_every_call test_launch:test_uprobe_multi_pid_filter_checked
test_python:test_python_launch_mode
test_python:test_python_follow_forked_workers
test_faults:test_sigkill_uprobe_events_unprobed_then_removed
test_sites:test_budget_sheds_the_costliest_probe
test_exit_sites:test_moved_exits_launched"}
# (not test_python_stage_functions: its target runs 5 s, less than tracer takes to load emulated)

for t in "$OUTPUT/tracer" "$OUTPUT/targets/pipeline" "$OUTPUT/targets/prologues"; do
	[ -x "$t" ] || { echo "check-kernels: no $t (make check-kernels builds it)" >&2; exit 1; }
done
for c in qemu-system-x86_64 cpio; do command -v "$c" >/dev/null ||
	{ echo "check-kernels: no $c (scripts/install-deps.sh installs it)" >&2; exit 1; }; done

# --- kernels: Debian's cloud packages, newest of each line -----------------------------------
APT_OPTS=(-o "Dir::Etc::sourcelist=$CACHE/apt/sources.list" -o "Dir::Etc::sourceparts=-"
	-o "Dir::State::Lists=$CACHE/apt/lists" -o "Dir::Cache=$CACHE/apt/cache"
	-o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root")

apt_private_update() {
	[ -n "${apt_updated:-}" ] && return
	mkdir -p "$CACHE/apt/lists/partial" "$CACHE/apt/cache/archives/partial"
	# the archive this machine already uses, with the suites of the other kernels
	local uri key=/usr/share/keyrings/debian-archive-keyring.gpg
	uri=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources \
		/dev/null 2>/dev/null | head -1)
	uri=${uri:-http://deb.debian.org/debian}
	: > "$CACHE/apt/sources.list"
	for s in bookworm bullseye trixie; do
		echo "deb [signed-by=$key] $uri $s main" >> "$CACHE/apt/sources.list"
		echo "deb [signed-by=$key] $uri-security $s-security main" >> "$CACHE/apt/sources.list"
	done
	apt-get "${APT_OPTS[@]}" -qq update >&2
	apt_updated=1
}

kernel_pattern() {
	case $1 in
	5.10) echo '^linux-image-5\.10\.0-[0-9]+-cloud-amd64-unsigned$' ;;
	6.1) echo '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' ;;
	6.12) echo '^linux-image-6\.12\.[0-9]+\+deb13-cloud-amd64-unsigned$' ;;
	*) return 1 ;;
	esac
}

# Prints the path of the kernel image for a version line, downloading it once.
fetch_kernel() {
	local line=$1 pat pkg dir
	pat=$(kernel_pattern "$line") ||
		{ echo "check-kernels: unknown kernel $line (known: 5.10 6.1 6.12)" >&2; return 1; }
	dir="$CACHE/$line"
	if ! ls "$dir"/boot/vmlinuz-* >/dev/null 2>&1; then
		apt_private_update
		rm -rf "$dir" && mkdir -p "$dir/deb"
		# newest first; an index can name a file the mirror no longer has (404): the next
		for pkg in $(apt-cache "${APT_OPTS[@]}" search --names-only "$pat" |
			awk '{print $1}' | sort -rV); do
			echo "check-kernels: downloading $pkg" >&2
			(cd "$dir/deb" && apt-get "${APT_OPTS[@]}" -qq download "$pkg" >&2) && break
		done
		ls "$dir"/deb/*.deb >/dev/null 2>&1 ||
			{ echo "check-kernels: no package matching $pat could be downloaded" >&2; return 1; }
		# only the image: the cloud kernels build in what the checks need (BTF, uprobes, BPF)
		dpkg-deb --fsys-tarfile "$dir"/deb/*.deb | tar -x -C "$dir" --wildcards './boot/vmlinuz-*'
		rm -rf "$dir/deb"
	fi
	ls "$dir"/boot/vmlinuz-* | head -1
}

# --- the root: this machine's binaries, their libraries, the tests ---------------------------
ROOTFS=$(mktemp -d /tmp/check-kernels.XXXXXX)
trap 'rm -rf "$ROOTFS"' EXIT
INITRD="$ROOTFS.cpio.gz"
trap 'rm -rf "$ROOTFS" "$INITRD"' EXIT

# copies a file in at its real path; a symlink naming it is kept as a symlink
add() {
	local p=$1 real dir
	real=$(readlink -f "$p")
	if [ ! -e "$ROOTFS$real" ]; then
		mkdir -p "$ROOTFS$(dirname "$real")" && cp -p "$real" "$ROOTFS$real"
	fi
	dir=$(readlink -f "$(dirname "$p")")
	if [ "$dir/$(basename "$p")" != "$real" ] && [ ! -e "$ROOTFS$dir/$(basename "$p")" ]; then
		mkdir -p "$ROOTFS$dir" && ln -s "$real" "$ROOTFS$dir/$(basename "$p")"
	fi
}

add_with_libs() {
	local f lib
	for f in "$@"; do
		add "$f"
		for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true); do
			add "$lib"
		done
	done
}

build_root() {
	mkdir -p "$ROOTFS"/{usr/bin,usr/sbin,usr/lib,usr/lib64,proc,sys,dev,tmp,run,root,var/tmp}
	for d in bin sbin lib lib64; do ln -s "usr/$d" "$ROOTFS/$d"; done
	local py=/usr/lib/python3.11 tools=(/usr/bin/python3) # Debian's: the tests name it so
	for t in sh mount mkdir cat base64 gzip tee uname sleep rm ls grep head tail wc bpftool; do
		tools+=("$(PATH=/usr/sbin:/usr/bin command -v "$t")")
	done
	# the standard library (what the tests and their targets import), not the third-party one
	(cd / && find "${py#/}" \( -name dist-packages -o -name test -o -name idlelib \
		-o -name tkinter -o -name ensurepip -o -name lib2to3 -o -name turtledemo \) -prune \
		-o -print | cpio -pdm --quiet "$ROOTFS")
	add_with_libs "${tools[@]}" "$OUTPUT/tracer" "$OUTPUT"/targets/* \
		$(find "$py/lib-dynload" -name '*.so')
	# the tree the tests read, at the same place as here (their paths are absolute)
	mkdir -p "$ROOTFS$ROOT" "$ROOTFS$OUTPUT"
	cp -a "$ROOT/tests" "$ROOT/probes" "$ROOT/bench" "$ROOTFS$ROOT/"
	cp -a "$OUTPUT/tracer" "$OUTPUT/targets" "$ROOTFS$OUTPUT/"
	# the bench's tools when built (make bench-tools): CHECK_KERNELS_RUN can run its rows
	if [ -d "$OUTPUT/bench" ]; then
		cp -a "$OUTPUT/bench" "$ROOTFS$OUTPUT/"
		add_with_libs $(find "$OUTPUT/bench" -maxdepth 1 -type f -perm -u+x)
	fi
	cat > "$ROOTFS/init" <<EOF
#!/bin/sh
export PATH=/usr/sbin:/usr/bin HOME=/root TRACER_TEST_IN_VM=1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /dev/pts && mount -t tmpfs tmpfs /dev/shm
# (not over a tree checked out under /tmp: the root's own /tmp is writable too)
case "$ROOT" in /tmp/*) ;; *) mount -t tmpfs tmpfs /tmp ;; esac
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
cd $ROOT
{
	echo "kernel \$(uname -r)"
	${CHECK_KERNELS_RUN:-python3 tests/run.py --output $OUTPUT $(echo $TESTS)} 2>&1
	echo "exit \$?"
} | tee /tmp/results.txt
echo @@RESULTS-BEGIN@@
gzip -c /tmp/results.txt | base64
echo @@RESULTS-END@@
echo o > /proc/sysrq-trigger
sleep 30
EOF
	chmod +x "$ROOTFS/init"
	(cd "$ROOTFS" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD"
}

# --- run ---------------------------------------------------------------------------------------
declare -A RESULT SECONDS_OF VERSION_OF
kernels=()
for k in "$@"; do
	image=$(fetch_kernel "$k")
	kernels+=("$k")
	[ -f "$INITRD" ] || build_root
	mkdir -p "$CACHE/results"
	log="$CACHE/results/$k.console" results="$CACHE/results/$k.txt"
	echo "check-kernels: $k: booting $(basename "$image") (log: $log)" >&2
	start=$(date +%s)
	timeout --foreground "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=single -m 2048 -smp 2 -nographic -no-reboot \
		-kernel "$image" -initrd "$INITRD" \
		-append "console=ttyS0 quiet panic=-1 rdinit=/init ${CHECK_KERNELS_APPEND:-}" </dev/null >"$log" 2>&1 || true
	SECONDS_OF[$k]=$(( $(date +%s) - start ))
	tr -d '\r' < "$log" | sed -n '/@@RESULTS-BEGIN@@/,/@@RESULTS-END@@/p' | sed '1d;$d' |
		base64 -d 2>/dev/null | gunzip > "$results" 2>/dev/null || true
	if [ ! -s "$results" ]; then
		echo "check-kernels: $k: no results came out of the VM; its console: $log" >&2
		RESULT[$k]=none
		continue
	fi
	VERSION_OF[$k]=$(sed -n 's/^kernel //p' "$results")
	grep -E '^(PASS|FAIL|SKIP) ' "$results" | sed 's/ ([0-9.]*s)$//' > "$results.rows" || true
	# the runner itself must have finished well (a test module that failed to load, ...)
	status=$(sed -n 's/^exit //p' "$results")
	[ "$status" = 0 ] && s=PASS || s=FAIL
	echo "$s tests/run.py-finished-with-status-0" >> "$results.rows"
	RESULT[$k]=ok
	# what went wrong, as the tests said it
	grep -q '^FAIL ' "$results" && sed -n '/^FAIL /,/^[A-Z]\{4\} /p' "$results" | head -60 >&2
done

# --- the table ---------------------------------------------------------------------------------
printf '\n%-58s' "test"
for k in "${kernels[@]}"; do printf ' %-22s' "$k"; done
echo
names=$(for k in "${kernels[@]}"; do
	[ "${RESULT[$k]}" = ok ] && awk '{print $2}' "$CACHE/results/$k.txt.rows"; done | awk '!s[$0]++')
fail=0 npass=0 nfail=0
for n in $names; do
	printf '%-58s' "$n"
	for k in "${kernels[@]}"; do
		s=none
		[ "${RESULT[$k]}" = ok ] && s=$(awk -v n="$n" '$2 == n {print $1}' "$CACHE/results/$k.txt.rows")
		if [ "$s" = PASS ]; then npass=$((npass + 1)); else fail=1 nfail=$((nfail + 1)); fi
		printf ' %-22s' "${s:-none}"
	done
	echo
done
printf '%-58s' "kernel"
for k in "${kernels[@]}"; do printf ' %-22s' "${VERSION_OF[$k]:-?}" ; done
echo
printf '%-58s' "seconds (boot, tests, power-off; emulated)"
for k in "${kernels[@]}"; do printf ' %-22s' "${SECONDS_OF[$k]}"; [ "${RESULT[$k]}" = ok ] || fail=1; done
echo
echo "full output: $CACHE/results/KERNEL.txt"
# a kernel whose VM gave no results is one failure more (.ci/run adds these to the suite's)
for k in "${kernels[@]}"; do [ "${RESULT[$k]}" = ok ] || nfail=$((nfail + 1)); done
echo "$npass passed, $nfail failed"
exit $fail
