"""Launch mode: `tracer -- COMMAND` attaches before the command's code runs."""
import collections
import os
import signal
import subprocess
import time

import lib
from lib import check_format, load_trace, read_ground_truth, spans, target


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



def test_uprobe_multi_pid_filter_checked(tmp):
    """On 6.6 to 6.9 a uprobe_multi link given a pid ran its program only in the thread of that
    id: tracer checks it there, with a probe of its own hit from a second thread, and uses
    perf-event uprobes if so (record/attach.c). TRACER_MULTI_THREAD_CHECK runs the check on any
    kernel: one that filters by process is found so, and every thread's calls are recorded."""
    log, out = os.path.join(tmp, "gt.log"), os.path.join(tmp, "l.json")
    p = subprocess.run([lib.TRACER, "-v", "-o", out, "-P", "pipeline", "--",
                        lib.target("pipeline"), "--frames", "10", "--log", log],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, TRACER_MULTI_THREAD_CHECK="1"))
    assert p.returncode == 0, p.stderr
    if "uprobe_multi links: yes" in p.stderr:
        assert "uprobe_multi's pid filter: by process" in p.stderr, p.stderr
        assert "(uprobe_multi)" in p.stderr, p.stderr
    trace, _ = load_trace(out)
    gt = read_ground_truth(log)
    per_thread = collections.Counter(e["tid"] for e in spans(trace))
    assert per_thread == collections.Counter(c[0] for c in gt["calls"])
    assert len(per_thread) > 1, per_thread

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


def test_sigterm_always_ends_tracer(tmp):
    """kill -TERM tracer: the launched command gets it too; one that ignores it is killed at
    the second signal. tracer never waits forever, and the file is complete either way."""
    out = os.path.join(tmp, "t.json")
    # signalled once it records (a loaded machine takes seconds to load the programs)
    tr = lib.start_tracer("-o", out, "-u", "other:libc.so.6:nanosleep", "--", "sleep", "100")
    tr.send_signal(signal.SIGTERM)
    _, err = tr.communicate(timeout=30)
    assert tr.returncode == 128 + signal.SIGTERM, (tr.returncode, err)  # sleep's own status
    load_trace(out)
    stubborn = os.path.join(tmp, "stubborn.sh")
    with open(stubborn, "w") as f:
        f.write("#!/bin/sh\ntrap '' TERM INT HUP\nwhile :; do sleep 0.1; done\n")
    os.chmod(stubborn, 0o755)
    out = os.path.join(tmp, "s.json")
    tr = lib.start_tracer("-o", out, "-u", "other:libc.so.6:nanosleep", "--", stubborn)
    tr.send_signal(signal.SIGTERM)
    time.sleep(2)
    assert tr.poll() is None  # the command ignored it: tracer waits, and says so ...
    tr.send_signal(signal.SIGTERM)  # ... until the second signal
    _, err = tr.communicate(timeout=30)
    err = "".join(tr.stderr_lines) + err
    assert tr.returncode == 128 + signal.SIGKILL, (tr.returncode, err)
    assert "waiting for" in err and "Ctrl-C again, or SIGTERM, kills it" in err, err
    assert "killing" in err, err
    trace, text = load_trace(out)
    assert trace["metadata"]["stop_reason"] == "SIGTERM", trace["metadata"]


def wait_stop_signals_blocked(pid, timeout=30):
    """Whether the process blocks SIGTERM (its SigBlk in /proc) within the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/status") as f:
            blocked = next(int(l.split()[1], 16) for l in f if l.startswith("SigBlk:"))
        if blocked & (1 << (signal.SIGTERM - 1)):
            return True
        time.sleep(0.001)
    return False


def test_sigterm_while_setting_up_leaves_nothing_running(tmp):
    """kill -TERM tracer before it records (loading its programs): it stops there with one
    line, and the command it launched, held at its start, does not go on untraced. Before, tracer
    died at once and the command ran on, orphaned."""
    marker = "987.25"  # sleep's argument: names the command among the machine's processes
    out = os.path.join(tmp, "t.json")
    for delay in (0.05, 0.3):
        tr = subprocess.Popen([lib.TRACER, "-o", out, "-u", "other:libc.so.6:nanosleep", "--",
                               "sleep", marker], stderr=subprocess.PIPE, text=True)
        lib._procs.append(tr)
        # from when tracer blocks the stop signals (its first step): before that the default
        # action ends it before it can have launched anything (a loaded machine, once)
        assert wait_stop_signals_blocked(tr.pid), tr.pid
        time.sleep(delay)
        tr.send_signal(signal.SIGTERM)
        _, err = tr.communicate(timeout=60)
        if "Ctrl-C to stop" in err:  # it was recording already: the command got it too
            assert tr.returncode == 128 + signal.SIGTERM, (tr.returncode, err)
            assert load_trace(out)[0]["metadata"]["stop_reason"] == "SIGTERM"
        else:
            assert tr.returncode == 1, (tr.returncode, err)
            assert "Terminated while setting up: stopped before recording, nothing written" \
                in err, err
        left = subprocess.run(["pgrep", "-f", f"^sleep {marker}$"], capture_output=True,
                              text=True).stdout.split()
        assert not left, (delay, left, err)


def test_stack_switching_program_unharmed(tmp):
    """A program that switches stacks with swapcontext inside probed functions (coroutines.c):
    with return probes it loops forever; tracer sees swapcontext in its imports and probes it
    entry-only, as a Go program, so it runs to its right answer and every call is an instant."""
    out = os.path.join(tmp, "c.json")
    n = 500
    p = subprocess.run([lib.TRACER, "-o", out, "-u", "other:coroutines:produce", "-u",
                        "other:coroutines:consume", "--", target("coroutines"), str(n)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[1] == f"sum {n * (n - 1) // 2}", p.stdout
    assert "switches stacks (coroutines calls swapcontext/setcontext): its probes are " \
        "entry-only" in p.stderr, p.stderr
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    calls = collections.Counter(e["name"] for e in trace["traceEvents"] if e.get("ph") == "i"
                                and e.get("name") in ("produce", "consume"))
    assert calls == {"produce": n, "consume": n}, calls
