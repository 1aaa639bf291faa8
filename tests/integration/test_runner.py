"""tests/run.py itself: what CI takes as a pass must be one."""
import os
import subprocess
import sys

import lib

RUN = [sys.executable, "-B"]  # -B: a runner without root writes no __pycache__ into the tree


def run_py(*args, env=None, as_nobody=False):
    cmd = RUN + [os.path.join(lib.ROOT, "tests", "run.py")] + list(args)
    if as_nobody and os.geteuid() == 0:
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
    return subprocess.run(cmd, cwd=lib.ROOT, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **(env or {})))


@lib.offline
def test_silent_unit_binary_fails(tmp):
    """A unit binary that exits 0 without one "ok" line tested nothing: it fails the run (it
    passed before, in silence)."""
    os.makedirs(os.path.join(tmp, "tests"))
    path = os.path.join(tmp, "tests", "test_silent")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(path, 0o755)
    p = run_py("--output", tmp, "--unit-only")
    assert p.returncode == 1, p.stdout
    assert "FAIL test_silent" in p.stdout and 'printed no "ok" line' in p.stdout, p.stdout
    assert p.stdout.splitlines()[-1] == "0 passed, 1 failed", p.stdout


@lib.offline
def test_ci_fails_when_tests_skip_for_root(tmp):
    """Without root, attach tests are skipped and counted in the closing line; under CI=true
    that fails the run, so that a CI step run without root cannot pass while testing nothing."""
    name = "test_faults:test_stops_when_asked_under_full_load"
    for ci, rc in (("", 0), ("true", 1)):
        p = run_py("--output", tmp, name, env={"CI": ci}, as_nobody=True)
        lines = p.stdout.splitlines()
        assert p.returncode == rc, (ci, p.stdout, p.stderr)
        assert f"SKIP {name}" in lines and lines[-1] == "0 passed, 0 failed, 1 skipped", p.stdout
        assert ("skipped for want of root under CI=true" in p.stdout) == (ci == "true"), p.stdout
