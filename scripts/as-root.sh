#!/usr/bin/env bash
# Runs a command as root: directly when already root (a root shell may have no sudo), else
# through sudo. The README's commands call this, so they work as written either way.
# CI is kept: under CI=true, tests that would skip fail instead.
set -euo pipefail
if [ "$(id -u)" -eq 0 ]; then
	exec "$@"
fi
if command -v sudo >/dev/null 2>&1; then
	exec sudo --preserve-env=PATH,CI "$@"
fi
echo "$(basename "$1") needs root (uprobes need CAP_SYS_ADMIN): run it as root or install sudo" >&2
exit 1
