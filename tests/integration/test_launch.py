"""Launch mode: `tracer -- COMMAND` attaches before the command's code runs."""
import collections
import os
import subprocess

import lib
from lib import check_format, load_trace, read_ground_truth, spans


def test_launch_records_every_call(tmp):
    log, out = os.path.join(tmp, "gt.log"), os.path.join(tmp, "l.json")
    p = subprocess.run([lib.TRACER, "-o", out, "-P", "pipeline", "--",
                        lib.target("pipeline"), "--frames", "25", "--log", log],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    gt = read_ground_truth(log)
    # nothing ran before the probes were in place: every call of the run is there
    assert len(spans(trace)) == len(gt["calls"])
    per_thread = collections.Counter(e["tid"] for e in spans(trace))
    assert per_thread == collections.Counter(c[0] for c in gt["calls"])
    assert trace["metadata"]["stop_reason"] == "target exited"


def test_launch_exit_status_and_errors(tmp):
    out = os.path.join(tmp, "s.json")
    p = subprocess.run([lib.TRACER, "-q", "-o", out, "-P", "pipeline", "--",
                        lib.target("pipeline"), "--no-such-option"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    p = subprocess.run([lib.TRACER, "-o", out, "-P", "pipeline", "--", "/nonexistent/cmd"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stderr.strip() == \
        "tracer: cannot run /nonexistent/cmd: No such file or directory", p.stderr
    p = subprocess.run([lib.TRACER, "-p", "1", "--", "true"], capture_output=True, text=True)
    assert p.returncode == 2 and "not both" in p.stderr


def test_launch_runs_as_invoking_user(tmp):
    out = os.path.join(tmp, "u.json")
    env = dict(os.environ, SUDO_UID="65534", SUDO_GID="65534")
    p = subprocess.run([lib.TRACER, "-q", "-o", out, "-u", "other:libc.so.*:get*uid", "--",
                        "id", "-u"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "65534"
    trace, _ = load_trace(out)
    assert any(e["name"] in ("getuid", "geteuid") for e in spans(trace))
    assert os.stat(out).st_uid == 65534


def test_malformed_sudo_ids_refused(tmp):
    """SUDO_UID=abc must not mean "run the command as root": one line, nothing run."""
    marker = os.path.join(tmp, "ran")
    for env in ({"SUDO_UID": "abc", "SUDO_GID": "0"}, {"SUDO_UID": "65534"},
                {"SUDO_UID": "65534", "SUDO_GID": "-1"}):
        out = os.path.join(tmp, "u.json")
        p = subprocess.run([lib.TRACER, "-q", "-o", out, "--", "touch", marker],
                           capture_output=True, text=True, env=dict(os.environ, **env), timeout=60)
        assert p.returncode == 1, (env, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "SUDO_UID" in lines[0] and "unset" in lines[0], (env, lines)
        assert not os.path.exists(marker) and not os.path.exists(out), env
