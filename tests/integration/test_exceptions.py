"""C++ exceptions thrown through probed functions never harm the target, and the calls keep
their durations: where exceptions can unwind (an object with exception tables) a call ends at
the function's own exits, not at a return probe, whose trampoline in the return slot makes the
unwinder abort the process. A call an exception unwinds ends at its catch, marked
"exception". Checked against targets that log every call and how it ended: our own C++ target
(throws through 1 to 5 probed frames caught at each level, rethrow, nested exceptions, a thread
pool, backtrace(), a handler on a sigaltstack; also built with AddressSanitizer) and Debian's
python3 catching cv2.error and torch's RuntimeError."""
import bisect
import collections
import os
import re
import signal
import subprocess
import time

import lib
import test_frameworks
from lib import check_format, finish_tracer, load_trace, sigusr1, start_tracer, wait_exit, _procs

SPEC = "operator:{}:ops::*"  # every function of the target's namespace ops
PYTHON = "/usr/bin/python3"
PY_ERRORS = os.path.join(lib.ROOT, "tests", "targets", "py_cxx_errors.py")
# the pytorch pack names at::_ops::NAME::call as the PyTorch profiler does
TORCH_NAMES = {"at::_ops::cat::call": "aten::cat", "at::_ops::add_Tensor::call": "aten::add_Tensor"}


def read_log(path):
    """A target's own log: [(tid, function, start_ns, end_ns, 'ret' or 'exc')]."""
    calls = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            tid, name, start, end, how = line.split()
            calls.append((int(tid), TORCH_NAMES.get(name, name), int(start), int(end), how))
    return calls


def how_ended(e):
    args = e.get("args", {})
    return "exc" if args.get("exception") else "inc" if args.get("incomplete") else "ret"


def matching_span(spans, starts, s, end, logged_inside):
    """The span (of spans, sorted by their starts) of the call logged at [s, end]: the
    innermost one holding that interval (a recursion's outer calls hold it too), or the one
    inside it."""
    i = (bisect.bisect_right if logged_inside else bisect.bisect_left)(starts, s)
    if not logged_inside:
        return spans[i] if i < len(spans) and spans[i][1] <= end else None
    holding = [x for x in spans[max(0, i - 64):i] if end <= x[1]]
    return min(holding, key=lambda x: x[1] - x[0], default=None)


def check_calls(trace, calls, prefix="", margin_ns=0, logged_inside=True):
    """Each logged call inside the recording (margin_ns from its ends) is one span of its name
    on its thread, ended the same way: as many spans of each kind as calls. logged_inside: the
    target timed the call from inside the function (its span holds the logged interval), else
    around it (a Python caller's clock reads: the interval holds the span)."""
    t0 = trace["metadata"]["t0_monotonic_ns"]
    spans = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "X" and e["name"].startswith(prefix) and e.get("cat") != "sched":
            start = t0 + round(e["ts"] * 1000)
            spans[(e["tid"], e["name"])].append((start, start + round(e["dur"] * 1000), e))
    # calls are recorded until detaching starts, a little before the file's end
    t1 = max(x[1] for v in spans.values() for x in v)
    starts = {}
    for k, v in spans.items():
        v.sort(key=lambda x: x[0])
        starts[k] = [x[0] for x in v]
    got, want = collections.Counter(), collections.Counter()
    for tid, name, s, end, how in calls:
        if s < t0 + margin_ns or end > t1 - margin_ns:
            continue
        want[(name, how)] += 1
        found = matching_span(spans[(tid, name)], starts.get((tid, name), []), s, end,
                              logged_inside)
        assert found, f"no span of {name} on {tid} around [{s}, {end}] ({how})"
        assert how_ended(found[2]) == how, (name, how, found[2])
        got[(name, how_ended(found[2]))] += 1
    assert got == want, (got, want)
    return want


def wait_ready(path, timeout=30):
    """The pid from the "ready PID" line a target writes first to the file at path (read
    through a file of its own: a seek on the target's would move its writes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path) as f:
            line = f.readline()
        if line.endswith("\n"):
            assert line.startswith("ready "), line
            return int(line.split()[1])
        time.sleep(0.05)
    raise AssertionError("the target never said it was ready")


def untraced_output(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()[1:]  # after "ready PID"


def rounds(lines):
    """The round lines without their numbers."""
    return [re.sub(r"^round \d+: ", "", l) for l in lines if l.startswith("round ")]


def launch_cxx_throw(tmp, target, env=None):
    """Launch mode, every ops:: function probed: the program's output is the untraced one's,
    every call of every logged function is a span ended as it was, none is incomplete."""
    out, log = os.path.join(tmp, "t.json"), os.path.join(tmp, "calls.log")
    cmd = [lib.target(target), "--rounds", "5"]
    want = untraced_output(cmd)
    p = subprocess.run([lib.TRACER, "--max-overhead", "0", "-u", SPEC.format(target), "-o", out,
                        "--"] + cmd +
                       ["--log", log], capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, **env) if env else None)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1:] == want
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    kinds = check_calls(trace, read_log(log), prefix="ops::")
    # every level threw and caught, a pool thread's job ended by its exception, backtrace()
    # found every frame of its own (no return address was touched)
    for n in range(1, 6):
        assert kinds[(f"ops::stage{n}", "exc")] and kinds[(f"ops::stage{n}", "ret")], kinds
    assert kinds[("ops::job", "exc")] == 4 * 5 and kinds[("ops::where", "ret")] == 5
    # a signal handler on the sigaltstack: its calls, and a throw caught there
    assert kinds[("ops::on_altstack", "ret")] == 2 * 5 and kinds[("ops::raise_on", "ret")] == 5
    assert kinds[("ops::throw_in_handler", "exc")] == 5, kinds
    assert "?" not in re.search(r"backtrace=(\S+)", want[0]).group(1)
    assert not [e for e in trace["traceEvents"] if how_ended(e) == "inc"]
    m = re.search(r"C\+\+ exceptions: (\d+) spans ended by an exception", p.stderr)
    assert m and int(m.group(1)) >= sum(v for (n, h), v in kinds.items() if h == "exc"), p.stderr
    # the function's own returns were probed, not its return address
    probes = {x["function"]: x for x in trace["metadata"]["probes"]}
    assert all(x.get("exits", 0) >= 1 for f, x in probes.items() if "stage1" in f), probes
    assert "--entry-only" not in p.stderr


def test_cxx_throw_through_probed_frames(tmp):
    launch_cxx_throw(tmp, "cxx_throw")


def test_cxx_throw_uprobe_events(tmp):
    """Without uprobe_multi (6.1): the hooks on the unwinder are tracefs events too, each hit's
    hook (throw or catch) found by the probe that fired, as the calls' are."""
    launch_cxx_throw(tmp, "cxx_throw", env={"TRACER_NO_UPROBE_MULTI": "1"})


def test_cxx_throw_compat(tmp):
    """The programs for older kernels (no link cookies at all): the same."""
    launch_cxx_throw(tmp, "cxx_throw", env={"TRACER_NO_BPF_FEATURE": "bpf_loop"})


def test_cxx_throw_under_asan(tmp):
    """The same program built with AddressSanitizer (which intercepts __cxa_throw)."""
    launch_cxx_throw(tmp, "cxx_throw_asan")


def test_cxx_throw_by_pid(tmp):
    """A running program throwing thousands of times a second, traced by pid with the budget
    on: it runs on with its own output, and the calls inside the recording match its log."""
    out, log = os.path.join(tmp, "t.json"), os.path.join(tmp, "calls.log")
    want = set(rounds(untraced_output([lib.target("cxx_throw"), "--rounds", "1"])))
    # its output to a file: a pipe nobody reads while it runs would fill and stop it
    with open(os.path.join(tmp, "out.txt"), "w") as f:
        p = subprocess.Popen([lib.target("cxx_throw"), "--rounds", "0", "--log", log],
                             stdout=f, stderr=subprocess.PIPE, text=True)
    _procs.append(p)
    pid = wait_ready(os.path.join(tmp, "out.txt"))
    tr = start_tracer("-p", pid, "--max-overhead", "0", "-u", SPEC.format("cxx_throw"), "-d",
                      "1.5", "-o", out)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    p.send_signal(signal.SIGINT)
    rc, _, stderr = wait_exit(p)
    assert rc == 0, stderr
    with open(os.path.join(tmp, "out.txt")) as f:
        got = rounds(f.read().splitlines())
    assert len(got) > 10 and set(got) == want, (len(got), set(got) - want)
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    kinds = check_calls(trace, read_log(log), prefix="ops::", margin_ns=50_000_000)
    assert kinds[("ops::stage5", "exc")] > 10 and kinds[("ops::job", "exc")] > 10, kinds


def python_errors_calls(trace, log):
    kinds = check_calls(trace, read_log(log), logged_inside=False)
    assert kinds == collections.Counter({("cv::resize", "ret"): 300, ("cv::cvtColor", "exc"): 300,
                                         ("aten::add_Tensor", "ret"): 300,
                                         ("aten::cat", "exc"): 300}), kinds


def test_python_catching_opencv_and_torch_errors_launched(tmp):
    """Debian's python3 catching cv2.error and torch's RuntimeError 300 times each, with no
    options: it ends with the untraced output; every call is a span, the failed ones marked."""
    out, log = os.path.join(tmp, "t.json"), os.path.join(tmp, "calls.log")
    want = untraced_output([PYTHON, PY_ERRORS])
    tr = subprocess.Popen([lib.TRACER, "-o", out, "--", PYTHON, PY_ERRORS, "--wait-signal",
                           "--log", log], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _procs.append(tr)
    err, stdout = test_frameworks.Lines(tr.stderr), test_frameworks.Lines(tr.stdout)
    pid = int(stdout.until("ready").split()[1])
    for pack in ("opencv", "pytorch"):
        if not any(f"with the {pack} pack" in l for l in err.seen):
            err.until(f"probing it with the {pack} pack")
    sigusr1(pid)
    rest_out, rest_err = tr.communicate(timeout=180)
    assert tr.returncode == 0, "\n".join(err.seen) + rest_err.decode()
    assert (stdout.buf + rest_out).decode().splitlines() == want
    trace, text = load_trace(out)
    bad = check_format(trace, text)
    assert bad == [], bad[:5]
    python_errors_calls(trace, log)


def test_python_catching_opencv_and_torch_errors_by_pid(tmp):
    out, log = os.path.join(tmp, "t.json"), os.path.join(tmp, "calls.log")
    want = untraced_output([PYTHON, PY_ERRORS])
    p = subprocess.Popen([PYTHON, PY_ERRORS, "--wait-signal", "--log", log],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _procs.append(p)
    pid = int(p.stdout.readline().split()[1])
    tr = start_tracer("-p", pid, "-o", out)
    sigusr1(pid)
    rc, stdout, stderr = wait_exit(p, timeout=180)
    assert rc == 0, stderr
    assert stdout.splitlines() == want
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, text = load_trace(out)
    bad = check_format(trace, text)
    assert bad == [], bad[:5]
    python_errors_calls(trace, log)
