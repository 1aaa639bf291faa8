#!/usr/bin/env bash
# Builds a root directory where `chroot ROOT /usr/bin/python3.14` runs Debian sid's CPython 3.14
# (tests/integration/test_python.py's 3.14 test: a version this Debian has no package of, whose
# frames tracer reads from its own _Py_DebugOffsets). sid's python3.14 needs sid's glibc, so
# the root carries the packages' minimal closure, libc6 included: downloaded with
# `apt-get download` from a private source list (the system's apt setup stays untouched) and
# unpacked with `dpkg-deb -x`, nothing installed or run as a maintainer script. Beside it,
# CACHE/include/python3.14 gets the two headers that give 3.14's _Py_DebugOffsets layout
# (scripts/py-offsets.sh checks userspace/python/offsets/debug-3.14.inc against them).
# Idempotent: once the root runs python3.14 it only checks. Everything lives under CACHE,
# never in the tree.
set -euo pipefail

CACHE=${PY314_CACHE:-/var/cache/py314}
ROOT=$CACHE/root
# the interpreter, its stdlib (queue's _queue is not in the minimal part), and what the
# executable and sid's libc6 load; the stdlib's other libraries (ssl, sqlite, ...) are left out
PACKAGES=(python3.14-minimal libpython3.14-minimal libpython3.14-stdlib libc6 libgcc-s1 libexpat1
	  zlib1g)

INC=$CACHE/include/python3.14
if [ -f "$INC/internal/pycore_debug_offsets.h" ] && [ -x "$ROOT/usr/bin/python3.14" ] &&
   chroot "$ROOT" /usr/bin/python3.14 -c 'import threading, queue, argparse' 2>/dev/null; then
	exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "python314-root.sh: run as root (chroot, apt-get)" >&2; exit 1; }

apt=$CACHE/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$CACHE/debs"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb [signed-by=$keyring] http://deb.debian.org/debian sid main" >"$apt/sources.list"
O=(-o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts=-
   -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o APT::Sandbox::User=root
   -o Debug::NoLocking=1)
if ! ls "$apt/lists/"*sid_main_binary-amd64_Packages* >/dev/null 2>&1; then
	apt-get "${O[@]}" update -qq
fi
cd "$CACHE/debs"
apt-get "${O[@]}" download -qq "${PACKAGES[@]}" libpython3.14-dev ||
	{ apt-get "${O[@]}" update -qq &&
	  apt-get "${O[@]}" download -qq "${PACKAGES[@]}" libpython3.14-dev; }
newest() { ls -v "$CACHE/debs/${1}_"*.deb | tail -n1; } # should the cache hold an older one too

tmp=$(mktemp -d "$CACHE/root.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for p in "${PACKAGES[@]}"; do
	dpkg-deb -x "$(newest "$p")" "$tmp"
done
mkdir -p "$tmp/dev"
dpkg-deb --fsys-tarfile "$(newest libpython3.14-dev)" |
	tar -x -C "$tmp/dev" ./usr/include/python3.14/patchlevel.h \
	    ./usr/include/python3.14/internal/pycore_debug_offsets.h
rm -rf "$INC"
mkdir -p "$(dirname "$INC")"
mv "$tmp/dev/usr/include/python3.14" "$INC"
rm -rf "$tmp/dev"
# what base-files and usrmerge would make: sid's files live under /usr only
for d in bin lib lib64 sbin; do
	[ -e "$tmp/$d" ] || ln -s "usr/$d" "$tmp/$d"
done
mkdir -p -m 1777 "$tmp/tmp"
chroot "$tmp" /usr/bin/python3.14 -c 'import threading, queue, argparse'
rm -rf "$ROOT"
mv "$tmp" "$ROOT"
chmod 755 "$ROOT"
trap - EXIT
echo "python314-root.sh: $(chroot "$ROOT" /usr/bin/python3.14 --version) in $ROOT"
