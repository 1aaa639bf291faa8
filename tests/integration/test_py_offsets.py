"""The committed CPython offset tables (userspace/python/offsets/3.N.inc) are what
tools/py_offsets.c gives from each version's own headers, wherever those are installed here
(Debian's python3.N-dev, pyenv's builds), and 3.14's _Py_DebugOffsets layout (debug-3.14.inc)
what tools/py_debug_layout.c gives from its header (scripts/python314-root.sh): one test per
version, reported as skipped with "absent" when no headers of that version are on the machine
(never counted as passed)."""
import os
import subprocess

import lib


def check_version(v):
    def test(tmp):
        r = subprocess.run([os.path.join(lib.ROOT, "scripts", "py-offsets.sh"), "--check", v],
                           capture_output=True, text=True)
        out = r.stdout + r.stderr
        assert r.returncode == 0, out
        if "absent" in out:
            raise lib.Skip(f"CPython {v} absent: no headers of it here, its table not checked")
        assert out.count("same as") >= 1, out
    test.offline = True
    return test


test_py_offsets_3_8 = check_version("3.8")
test_py_offsets_3_9 = check_version("3.9")
test_py_offsets_3_10 = check_version("3.10")
test_py_offsets_3_11 = check_version("3.11")
test_py_offsets_3_12 = check_version("3.12")
test_py_offsets_3_13 = check_version("3.13")
test_py_offsets_3_14 = check_version("3.14")
