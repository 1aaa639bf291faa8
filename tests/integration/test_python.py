"""Python frames: a threaded Python pipeline of our own (tests/targets/py_pipeline.py), attached by
pid, each stage function found on its own thread with the total time the pipeline logged."""
import bisect
import collections
import glob
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile

from lib import (check_format, finish_tracer, load_trace, read_ground_truth, sigusr1, spans,
                 start_tracer, wait_exit, wait_probes_gone, _procs)

import lib

PYTHON = "/usr/bin/python3"
PY314_ROOT = "/var/cache/py314/root"  # Debian sid's CPython 3.14: scripts/python314-root.sh
STAGES = {"read_batch": "reader", "decode_batch": "decoder", "write_batch": "writer"}


def start_py_pipeline(tmp, *args, python=PYTHON, root=None):
    """root: python runs chrooted there, seeing only that tree: the script and its log go to a
    directory of the root's /tmp (the log returned is its path outside)."""
    script = os.path.join(lib.ROOT, "tests", "targets", "py_pipeline.py")
    log = os.path.join(tmp, "gt.log")
    cmd = [python]
    if root:
        inner = tempfile.mkdtemp(prefix="tracer-test-", dir=os.path.join(root, "tmp"))
        shutil.copy(script, inner)
        script = os.path.join(inner[len(root):], "py_pipeline.py")
        log = os.path.join(inner, "gt.log")
        cmd = ["chroot", root, python]
    p = subprocess.Popen(cmd + [script, "--wait-signal", "--log",
                                log[len(root):] if root else log] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _procs.append(p)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", f"py_pipeline did not start: {line} {p.stderr.read()}"
    return p, int(line[1]), log


def in_window(trace, margin_ns=100_000_000):
    t0 = trace["metadata"]["t0_monotonic_ns"]
    return t0, t0 + margin_ns, t0 + trace["metadata"]["duration_ns"] - margin_ns


def clipped(start, end, lo, hi):
    """The part of [start, end] inside [lo, hi]."""
    return max(0, min(end, hi) - max(start, lo))


def back_to_back(calls, tick_ns=1_000_000):
    """Calls (start, end) that begin less than a tick after the one before ended: when a stage
    falls behind its queue (a loaded machine) it calls its function again at once, and with no
    stack read between the two calls (a lock taken without waiting reads none), sampling sees
    one long call. The calls a trace may merge."""
    calls = sorted(calls)
    return sum(b[0] - a[1] < tick_ns for a, b in zip(calls, calls[1:]))


def unmatched(logged, traced, t0):
    """What a failed count says: the logged calls (start, end) no traced span covers the middle
    of, and the traced spans that cover the middles of several, in ms from t0."""
    def ms(s, t):
        return round((s - t0) / 1e6, 3), round((t - t0) / 1e6, 3)
    spans_ = [(t0 + e["ts"] * 1000, t0 + (e["ts"] + e["dur"]) * 1000) for e in traced]
    mids = [(s + t) / 2 for s, t in logged]
    missed = [ms(*c) for c, m in zip(logged, mids) if not any(a <= m <= b for a, b in spans_)]
    merged = [ms(a, b) for a, b in spans_ if sum(a <= m <= b for m in mids) > 1]
    return missed, merged


def worst_covered(logged, traced, n=3):
    """The n logged calls (start, end) that the traced spans (start, end) cover least, with
    what covers each: a failed total says where its time went."""
    def cover(c):
        return sum(clipped(s, e, c[0], c[1]) for s, e in traced)
    worst = sorted(logged, key=lambda c: cover(c) - (c[1] - c[0]))[:n]
    return [(c, c[1] - c[0] - cover(c), [(s, e) for s, e in traced if e > c[0] and s < c[1]])
            for c in worst]


def test_python_stage_functions(tmp, python=PYTHON, minor=11, root=None):
    """root: python runs chrooted there (paths it names are inside that tree)."""
    assert os.access((root or "") + python, os.X_OK), f"no {python} (Debian's python3.11)"
    pl, pid, log = start_py_pipeline(tmp, "--seconds", "5", python=python, root=root)
    out = os.path.join(tmp, "py.json")
    sigusr1(pid)
    tr = start_tracer("-p", pid, "-d", "3", "-o", out)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    assert "python:" in err and "function spans" in err, err
    # the summary says which interpreter runs and what its frames were read with: from 3.13
    # on the target's own debug offsets, before the build's table of that version; 3.14 on
    # (no table of its own) its debug offsets, saying which readings they lack
    said = [l for l in err.splitlines() if f"python: pid {pid} runs CPython 3.{minor} " in l]
    assert len(said) == 1, err
    assert ("its own _Py_DebugOffsets (0 fields differ" if minor == 13
            else f"its own _Py_DebugOffsets laid out as 3.{minor}'s" if minor >= 14
            else f"the build's 3.{minor} table") in said[0], said
    assert minor < 14 or "not in them, read as in 3.13: the entry frames' owner" in said[0], said
    assert "thread names not read" not in said[0], said
    wait_exit(pl)
    gt = read_ground_truth(log)
    trace, text = load_trace(out)
    bad = check_format(trace, text)
    assert bad == [], bad[:3]  # Python spans nest with each other and natives
    meta = trace["metadata"]["python"]
    assert meta["enabled"] and meta["processes"] == 1 and meta["spans"] > 0
    interp = meta["interpreters"]
    assert len(interp) == 1 and interp[0]["pid"] == pid and interp[0]["version"] == f"3.{minor}" \
        and interp[0]["offsets"] == ("debug" if minor >= 13 else "table"), interp
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    # threads carry Python's names (their OS name is python3), on every version: 3.8-3.10 keep
    # the kernel tid in the Thread (_native_id), 3.11 on in the thread state
    assert gt["threads"]
    for tid, name in gt["threads"].items():
        assert names.get(tid) == name, (tid, names.get(tid), name)
    t0, lo, hi = in_window(trace)
    py = [e for e in spans(trace) if e["cat"] == "python"]
    for e in py:
        assert e["pid"] == pid
    for func, thread in STAGES.items():
        tid = next(t for t, n in gt["threads"].items() if n == thread)
        # every thread is read at each tick and switch once tracer is set up (setup_ns:
        # attaching the probes took up to 400 ms on a loaded machine), and before that only
        # where a probe's call returns (a lock wait's end: threads' first spans from 21 ms,
        # set up at 59, the stages' first calls seen after it; under load a first span at
        # 265 ms and three calls unseen after it): what ran on a thread before it was read so
        # is not known, and not compared
        lo = max(in_window(trace)[1], t0 + trace["metadata"]["setup_ns"],
                 t0 + min(e["ts"] for e in py if e["tid"] == tid) * 1000)
        evs = [e for e in py if e["name"] == func]
        assert evs, f"no {func} spans"
        # on the right thread, and only there
        assert {e["tid"] for e in evs} == {tid}, (func, collections.Counter(e["tid"] for e in evs))
        assert all(e["args"]["file"].endswith("py_pipeline.py") for e in evs)
        traced = [e for e in evs
                  if lo <= t0 + e["ts"] * 1000 and t0 + (e["ts"] + e["dur"]) * 1000 <= hi]
        logged = [(s, t) for t_, f, s, t, _ in gt["calls"] if f == func and lo <= s and t <= hi]
        # the totals inside the window, both clipped to it: a span of calls merged back to back
        # that crosses an edge counts for its part inside, as the calls it covers do
        traced_ns = sum(clipped(t0 + e["ts"] * 1000, t0 + (e["ts"] + e["dur"]) * 1000, lo, hi)
                        for e in evs)
        logged_ns = sum(clipped(s, t, lo, hi) for t_, f, s, t, _ in gt["calls"] if f == func)
        # every call is seen (each lasts several ticks), none is merged with the next unless it
        # followed it back to back
        merge = back_to_back(logged)
        assert len(logged) - merge - 2 <= len(traced) <= len(logged) + 2, \
            (func, len(traced), len(logged), merge, (lo - t0) / 1e6, (hi - t0) / 1e6,
             trace["metadata"]["setup_ns"] / 1e6,
             unmatched(logged, evs, t0),
             {k: v for k, v in meta.items() if k.startswith("reads")},
             [l for l in err.splitlines() if "lost" in l or "budget" in l])
        # totals within 5% (issue 27): edges are exact at switches and within a tick (1 ms)
        # elsewhere, and decode_batch's end, preempted by the writer it wakes as it puts its
        # result, is placed at that preemption (not midway to the tick before: 5.6-8.8% short)
        assert abs(traced_ns - logged_ns) <= 0.05 * logged_ns, \
            (func, traced_ns, logged_ns, worst_covered(
                logged, [(t0 + e["ts"] * 1000, t0 + (e["ts"] + e["dur"]) * 1000) for e in evs]),
             [l for l in err.splitlines() if "lost" in l or "python:" in l])
    # a queue's get blocks taking a lock in Condition.wait: the native span names that caller
    # (co_name "wait" before 3.11) and the line of its call, read from the version's own line
    # table (co_lnotab, 3.10's co_linetable, the location table)
    # (a lock wait with no Python caller read and nothing else to say has no args at all)
    waits = [e for e in spans(trace) if e["name"] == "lock wait"
             and e.get("args", {}).get("py") in ("Condition.wait", "wait")]
    assert waits, "no lock wait under Condition.wait"
    for path, line in {tuple(e["args"]["py_line"].rsplit(":", 1)) for e in waits}:
        with open((root or "") + path) as f:
            text = f.read().splitlines()[int(line) - 1]
        assert path.endswith("threading.py") and "acquire(" in text, (path, line, text)
    # spin() runs under every stage, nested in it on the same thread
    assert {e["tid"] for e in py if e["name"] == "spin"} == set(gt["threads"]) - {pid}
    assert wait_probes_gone(tr)


def other_pythons(minor_ok):
    """Interpreters besides Debian's (pyenv's, when installed) whose minor version passes."""
    found = []
    for exe in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3.*"))):
        m = os.path.basename(exe)[len("python3."):]
        if m.isdigit() and minor_ok(int(m)):
            found.append(exe)
    return found


def pyenv_python(minor):
    """pyenv's CPython 3.minor (a shared-library build: the interpreter is in libpython, a
    position-independent object), or a skip that says it is absent."""
    found = other_pythons(lambda m: m == minor)
    if not found:
        raise lib.Skip(f"CPython 3.{minor} absent: no pyenv build of it on this machine")
    return found[0]


def stage_functions_on(minor):
    """The ground truth test on pyenv's CPython 3.minor, attached by pid."""
    def test(tmp):
        test_python_stage_functions(tmp, python=pyenv_python(minor), minor=minor)
    return test


test_python_stage_functions_3_8 = stage_functions_on(8)    # PyFrameObject, co_lnotab
test_python_stage_functions_3_9 = stage_functions_on(9)
test_python_stage_functions_3_10 = stage_functions_on(10)  # 3.10's co_linetable
test_python_stage_functions_3_11 = stage_functions_on(11)  # shared libpython3.11
test_python_stage_functions_3_12 = stage_functions_on(12)  # _PyCFrame, entry shims
test_python_stage_functions_3_13 = stage_functions_on(13)  # current_frame, debug offsets


def test_python_stage_functions_3_14(tmp):
    """CPython 3.14, which has no table in this build: Debian sid's, run chrooted in the root
    scripts/python314-root.sh builds (it needs sid's glibc), its frames read with its own
    _Py_DebugOffsets, its paths in /proc/PID/maps inside that root (as a container's are)."""
    python = "/usr/bin/python3.14"
    if not os.access(PY314_ROOT + python, os.X_OK):
        raise lib.Skip(f"CPython 3.14 absent: no {PY314_ROOT}{python} (scripts/install-deps.sh "
                       "runs scripts/python314-root.sh, which builds it)")
    try:
        test_python_stage_functions(tmp, python=python, minor=14, root=PY314_ROOT)
    finally:
        for d in glob.glob(os.path.join(PY314_ROOT, "tmp", "tracer-test-*")):
            shutil.rmtree(d, ignore_errors=True)


def test_python_unsupported_version(tmp):
    """An interpreter older than 3.8: one line says so, the rest of the recording goes on."""
    found = other_pythons(lambda m: m < 8)
    if not found:
        raise lib.Skip("no CPython older than 3.8 (pyenv) on this machine")
    p = subprocess.Popen([found[-1], "-c", "import os, time; print('ready', os.getpid(), "
                          "flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    _procs.append(p)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    tr = start_tracer("-p", line[1], "-d", "1", "-o", os.path.join(tmp, "other.json"))
    rc, err = finish_tracer(tr)
    assert rc == 0, err  # the rest of the recording goes on
    lines = [l for l in err.splitlines() if "no Python frames" in l]
    assert len(lines) == 1 and \
        "this build reads CPython 3.8, 3.9, 3.10, 3.11, 3.12, 3.13 only" in lines[0], err
    p.kill()
    p.wait()


def test_python_off(tmp):
    pl, pid, log = start_py_pipeline(tmp, "--seconds", "3")
    out = os.path.join(tmp, "nopy.json")
    sigusr1(pid)
    tr = start_tracer("-p", pid, "-d", "1", "--no-python", "-o", out)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    assert "python: frames off" in err, err
    trace, _ = load_trace(out)
    assert not [e for e in spans(trace) if e["cat"] == "python"]
    assert trace["metadata"]["counts"]["python_reads"] == 0
    wait_exit(pl)


def test_torch_operators_under_python(tmp):
    try:
        has_torch = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True,
                                   timeout=120).returncode == 0
    except subprocess.TimeoutExpired:
        has_torch = False
    assert has_torch, "python3-torch is not installed (apt-get install python3-torch)"
    p = subprocess.Popen([PYTHON, os.path.join(lib.ROOT, "tests", "targets", "py_torch.py"), "30"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _procs.append(p)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", f"py_torch did not start: {line}"
    pid = int(line[1])
    out = os.path.join(tmp, "torch.json")
    tr = start_tracer("-p", pid, "-d", "2", "-o", out,
                      "-u", "operator:libtorch_cpu.so*:at::_ops::conv2d::call")
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []  # operators nest under the Python spans
    xs = spans(trace)
    ops = [e for e in xs if e["cat"] == "operator"]
    assert len(ops) >= 50, len(ops)
    py = [e for e in xs if e["cat"] == "python"]
    # each operator records the Python function and line that called it: F.conv2d in
    # Conv2d._conv_forward (Python stacks are read from before the first probe is attached)
    # (a call still running at the stop ends there, incomplete, without one)
    done = [e for e in ops if not e.get("args", {}).get("incomplete")]
    called = [e for e in done if e.get("args", {}).get("py") == "Conv2d._conv_forward"]
    assert len(called) == len(done) >= len(ops) - 1, [e for e in ops if e not in called][:5]
    # the line is the call itself, as the source file says
    for path_line in {e["args"]["py_line"] for e in called}:
        path, line = path_line.rsplit(":", 1)
        assert path.endswith("/torch/nn/modules/conv.py"), path_line
        with open(path) as f:
            assert "F.conv2d(" in f.read().splitlines()[int(line) - 1], path_line
    # ... and sits inside that function's span on the same thread, itself inside infer
    def inside(e, name):
        return any(p["name"] == name and p["tid"] == e["tid"] and p["ts"] <= e["ts"] and
                   e["ts"] + e["dur"] <= p["ts"] + p["dur"] for p in py)
    assert all(inside(e, "Conv2d._conv_forward") for e in called)
    assert all(inside(e, "infer") for e in called)
    p.kill()


def frames_off_here(trace, err):
    """Whether this kernel reads no Python frames (before 5.17: the programs for older kernels
    have no bpf_loop), and the summary and the trace say so, never a quiet zero."""
    if not lib.compat_programs():
        return False
    assert "python: frames off (this kernel lacks bpf_loop, 5.17 on)" in err, err
    assert trace["metadata"]["python"]["off"] == "this kernel lacks bpf_loop, 5.17 on"
    assert not [e for e in spans(trace) if e["cat"] == "python"]
    return True


def test_python_launch_mode(tmp):
    """tracer -- python3 SCRIPT: frames from the interpreter's start, imports included."""
    out = os.path.join(tmp, "launch.json")
    log = os.path.join(tmp, "gt.log")
    rc, err = lib.run_tracer("-o", out, "--", PYTHON,
                             os.path.join(lib.ROOT, "tests", "targets", "py_pipeline.py"),
                             "--seconds", "1.5", "--log", log, timeout=120)
    assert rc == 0, err
    trace, text = load_trace(out)
    bad = check_format(trace, text)
    assert bad == [], bad[:3]
    if frames_off_here(trace, err):
        return
    gt = read_ground_truth(log)
    py = [e for e in spans(trace) if e["cat"] == "python"]
    names = {e["name"] for e in py}
    assert {"read_batch", "decode_batch", "write_batch", "_find_and_load"} <= names, names
    for func, thread in STAGES.items():
        tid = next(t for t, n in gt["threads"].items() if n == thread)
        got = [e for e in py if e["name"] == func]
        assert {e["tid"] for e in got} == {tid}, (func, tid, {e["tid"] for e in got})
        logged = [c for c in gt["calls"] if c[1] == func]
        merge = back_to_back([(c[2], c[3]) for c in logged])
        least = len(logged) - merge - 1
        if lib.IN_VM:
            # emulated, a tick's read of the stack can come late enough that a whole call
            # falls between two (108 of 113 decode_batch calls, in 3 of 18 runs on 6.1): there
            # the goal of sampled frames (issue 26), 95% of the calls of 2 ms or more found.
            # Every stage function here takes 4 ms or more.
            assert min(c[3] - c[2] for c in logged) >= 2_000_000, func
            least = min(least, math.ceil(0.95 * len(logged)) - merge)
        assert least <= len(got) <= len(logged) + 1, (func, len(got), len(logged), merge)


FORKER = r"""
import multiprocessing as mp, os, sys, time
def task(x):
    start = time.monotonic_ns()
    while time.monotonic_ns() < start + 3_000_000:
        pass
    return os.getpid(), time.monotonic_ns() - start
if __name__ == "__main__":
    mp.set_start_method("fork")
    print("ready", os.getpid(), flush=True)
    sys.stdin.readline()
    with mp.Pool(2) as pool:
        done = [r for _ in range(10) for r in pool.map(task, range(8))]
    print("workers", *sorted({pid for pid, _ in done}), flush=True)
    print("busy_ms", sum(ns for _, ns in done) / 1e6, flush=True)
"""


def test_python_follow_forked_workers(tmp):
    """--follow: workers forked after attach (a DataLoader's, a Pool's) are read from their
    first instruction: the BPF side takes the parent's interpreter for them at the fork."""
    p = subprocess.Popen([PYTHON, "-c", FORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    _procs.append(p)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    pid = int(line[1])
    out = os.path.join(tmp, "follow.json")
    tr = start_tracer("-p", pid, "--follow", "-o", out)
    p.stdin.write("go\n")
    p.stdin.flush()
    workers = set(map(int, p.stdout.readline().split()[1:]))
    busy_ms = float(p.stdout.readline().split()[1])
    p.wait(timeout=60)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    if frames_off_here(trace, err):
        # the workers followed all the same: their threads are in the trace
        assert workers <= {e["pid"] for e in trace["traceEvents"] if e["ph"] == "M"}, workers
        return
    tasks = [e for e in spans(trace) if e["cat"] == "python" and e["name"] == "task"]
    assert {e["pid"] for e in tasks} == workers, ({e["pid"] for e in tasks}, workers)
    # 80 calls of at least 3 ms: longer when a worker waits for a CPU inside one (a loaded
    # machine: 766 ms in all once), so the workers time each. Calls of a chunk run back to back
    # from one line (Pool's mapstar), so neighbours with no read between them merge: compare
    # the time, not the count
    # (not in make check-kernels' emulated VM: ticks come late there, 877 of 1042 ms once)
    total_ms = sum(e["dur"] for e in tasks) / 1000
    assert busy_ms >= 240, busy_ms
    assert lib.IN_VM or 0.9 * busy_ms <= total_ms <= 1.1 * busy_ms + 10, (total_ms, busy_ms)
    assert trace["metadata"]["python"]["processes"] == 3


def test_python_system_wide(tmp):
    """-a: a Python process is taken in when it first calls a probed function, on whichever of
    its threads that is, and its Python frames are read from then on."""
    pl, pid, log = start_py_pipeline(tmp, "--seconds", "4")
    out = os.path.join(tmp, "all.json")
    tr = start_tracer("-a", "-u", "queue:python3.11:PyThread_acquire_lock_timed", "-d", "2",
                      "-o", out)
    sigusr1(pid)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    wait_exit(pl)
    gt = read_ground_truth(log)
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    py = [e for e in spans(trace) if e["cat"] == "python" and e["pid"] == pid]
    for func, thread in STAGES.items():
        tid = next(t for t, n in gt["threads"].items() if n == thread)
        got = {e["tid"] for e in py if e["name"] == func}
        assert got == {tid}, (func, tid, got)


def test_gil_bound_verdict(tmp):
    """tests/targets/py_gil.py: one thread runs Python flat out, the other blocks briefly in a
    loop (the first thread lets it through) and must take the GIL back after each call. The
    python-gil pack's GIL wait spans (PyEval_RestoreThread, kept from 20 us) are one per call on
    that thread (each waits for the other's switch interval), under the function that made it,
    and the summary and report both say GIL-bound, naming it and the thread that holds the
    GIL."""
    out = os.path.join(tmp, "gil.json")
    p = subprocess.run([lib.TRACER, "-P", "python-gil", "-o", out, "--", PYTHON,
                        os.path.join(lib.ROOT, "tests", "targets", "py_gil.py"), "2"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    calls = int(re.search(r"poll made (\d+) calls", p.stdout).group(1))
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    waits = [e for e in spans(trace) if e["name"] == "GIL wait"]
    assert {e["cat"] for e in waits} == {"gil"}
    # one per call, however loaded the machine (the target makes every call wait: see its
    # docstring), except the last, which crunch ends on its way out: the GIL may be free then
    # (a wait under 20 us leaves no record); each under the Python function that blocked (its
    # stack is read at the wait's entry)
    on_poll = sorted((e["ts"], e["args"].get("py")) for e in waits
                     if names.get(e["tid"]) == "poll")
    polls = sum(py == "poll" for _, py in on_poll)
    assert calls - 1 <= polls <= calls and calls > 100, (calls, polls, on_poll[:3])
    # before poll's first call its thread may wait in threading's start-up (for the lock of
    # the Event Thread.start waits on, with crunch holding the GIL). One run in 60 here had a
    # wait more than calls on poll's thread; where it was was not kept: the count above takes
    # the waits under poll only, and names the first three on the thread.
    first = next(ts for ts, py in on_poll if py == "poll")
    assert all(py == "poll" for ts, py in on_poll if ts >= first), on_poll
    verdict = [l for l in p.stderr.splitlines() if l.startswith("bottleneck:")]
    r = subprocess.run([lib.TRACER, "report", out], capture_output=True, text=True)
    assert verdict == [l for l in r.stdout.splitlines() if l.startswith("bottleneck:")]
    assert re.match(r"bottleneck: GIL-bound — poll waits for Python's GIL \d+% of wall time "
                    r"\(busiest: crunch, \d+%\)", verdict[0]), verdict


def test_pool_by_pid_is_the_process_tree(tmp):
    """-p on a parent whose work runs in a multiprocessing.Pool, with no option: the pipeline is
    the process tree, so the pool's workers (there before tracer) are traced, their Python frames
    recorded, the verdict names one of them, and the overhead is a share of the whole tree's CPU
    time (the idle parent's alone made it look 20 times larger). All probes are gone at exit."""
    p, (pid, *workers) = lib.start_ready(
        [PYTHON, os.path.join(lib.ROOT, "tests", "targets", "py_pool.py"), "30"],
        stderr=subprocess.DEVNULL)
    assert len(workers) == 2, workers
    out = os.path.join(tmp, "pool.json")
    tr = start_tracer("-p", pid, "-d", "2", "-o", out)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    assert wait_probes_gone(tr)
    assert "following 2 processes the targets started before" in err, err
    assert "not traced: " not in err, err
    verdict = [l for l in err.splitlines() if l.startswith("bottleneck: ")]
    assert len(verdict) == 1, err
    m = re.match(r"bottleneck: MainThread pid (\d+) — busy", verdict[0])
    assert m and int(m.group(1)) in workers, verdict
    assert re.search(r"overhead: .* of the .* CPU time of the 3 processes traced\)", err), err
    trace, text = load_trace(out)
    findings = check_format(trace, text)
    assert findings == [], findings[:5]
    assert {e["pid"] for e in spans(trace) if e["name"] == "featurize"} == set(workers)
    for w in workers + [pid]:
        os.kill(w, signal.SIGKILL)


def test_pool_by_pid_duration_under_load(tmp):
    """-d on a Pool's parent by pid, its workers followed, with both CPUs busy, by default and
    with --follow: the recording is -d long once tracer is set up (setup_ns, the first part of
    the trace while the probes of every process were being attached, is not counted in it) and
    ends on time although the loop is busy probing and shedding (users saw -d 5 record 10 s)."""
    spin = [subprocess.Popen([PYTHON, "-c", "while True: pass"]) for _ in range(2)]
    lib._procs.extend(spin)
    p, (pid, *workers) = lib.start_ready(
        [PYTHON, os.path.join(lib.ROOT, "tests", "targets", "py_pool.py"), "300"],
        stderr=subprocess.DEVNULL)
    for opt in ([], ["--follow"]):
        out = os.path.join(tmp, "pool.json")
        tr = start_tracer("-p", pid, "-d", "2", "-o", out, *opt, timeout=120)
        rc, err = finish_tracer(tr, timeout=120)
        assert rc == 0, err
        trace, text = load_trace(out)
        findings = check_format(trace, text)
        assert findings == [], (opt, findings[:5])
        meta = trace["metadata"]
        assert meta["stop_reason"] == "duration elapsed", (opt, meta["stop_reason"])
        recorded = meta["duration_ns"] - meta.get("setup_ns", 0)
        assert 2e9 <= recorded < 4e9, f"{opt}: -d 2 recorded {recorded / 1e9:.2f} s after setup"
        assert 0 < meta["setup_ns"] < meta["duration_ns"], (opt, meta)
        assert {e["pid"] for e in spans(trace) if e["name"] == "featurize"} == set(workers), opt
    for w in workers + [pid]:
        os.kill(w, signal.SIGKILL)


def test_pool_by_pid_traps_no_other_python(tmp):
    """-p on a Pool's parent (its workers followed by default): the probes on python3.11 are the
    traced processes' own. Another Python process on the machine has no breakpoint in its
    interpreter: the links served every process mapping python3.11, so each of its lock waits
    and collections trapped while tracer recorded (and its gc semaphores were raised)."""
    # an interpreter of the test's own (its standard library the system's): another tracer on
    # the machine cannot have probed it
    python = os.path.join(tmp, "bin", "python3.11")
    os.makedirs(os.path.join(tmp, "bin"))
    os.makedirs(os.path.join(tmp, "lib"))
    shutil.copy2(os.path.realpath(PYTHON), python)
    os.symlink("/usr/lib/python3.11", os.path.join(tmp, "lib", "python3.11"))
    other, (other_pid,) = lib.start_ready(
        [python, "-c", "import os, sys; print('ready', os.getpid(), flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE)
    p, (pid, *workers) = lib.start_ready(
        [python, os.path.join(lib.ROOT, "tests", "targets", "py_pool.py"), "30"],
        stderr=subprocess.DEVNULL)
    out = os.path.join(tmp, "pool.json")
    tr = start_tracer("-p", pid, "-o", out)
    traced = {w: len(lib.breakpoints(w, "python3.11")) for w in [pid] + workers}
    untraced = lib.breakpoints(other_pid, "python3.11")
    tr.send_signal(signal.SIGINT)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    assert all(traced.values()), traced  # the probes are there: the check sees them
    assert untraced == [], f"{len(untraced)} breakpoints in pid {other_pid}, not traced"
    other.stdin.close()
    assert other.wait(timeout=10) == 0
    for w in workers + [pid]:
        os.kill(w, signal.SIGKILL)


def test_busy_children_named_with_no_follow(tmp):
    """-p --no-follow on a parent whose work runs in a multiprocessing.Pool: the verdict sees only
    the waiting parent, so the busy workers are named after it, with what would trace them."""
    p, (pid, *workers) = lib.start_ready(
        [PYTHON, os.path.join(lib.ROOT, "tests", "targets", "py_pool.py"), "8"],
        stderr=subprocess.DEVNULL)
    assert len(workers) == 2, workers
    out = os.path.join(tmp, "pool.json")
    rc, err = lib.run_tracer("-p", pid, "-d", "2", "--no-follow", "-o", out)
    assert rc == 0, err
    named = [l for l in err.splitlines() if l.startswith("not traced: ")]
    assert len(named) == 1, err
    assert "the pipeline's work may be there: without --no-follow they are traced" in named[0]
    assert sorted(map(int, re.findall(r"(\d+) \(python3\)", named[0]))) == sorted(workers), named
    # the line comes after the verdict it completes
    lines = err.splitlines()
    assert any(l.startswith("bottleneck: ") for l in lines[:lines.index(named[0])]), err
    trace, _ = load_trace(out)
    assert {e["pid"] for e in spans(trace)} == {pid}
    rc, err = lib.run_tracer("-p", pid, "--follow", "--no-follow")
    assert rc == 2 and "give --follow or --no-follow, not both" in err, err
    for w in workers + [pid]:
        os.kill(w, signal.SIGKILL)


FOREIGN = r'''
import _thread, ctypes, os, sys, threading, time
libc = ctypes.CDLL(None)
def streaming():
    # a thread Python did not start (a GStreamer streaming thread calling a Python callback):
    # the kernel knows it as queue0:src, threading as Dummy-N
    libc.prctl(15, b"queue0:src", 0, 0, 0)
    threading.current_thread()
    print("ready", os.getpid(), threading.get_native_id(), flush=True)
    while True:
        sum(i * i for i in range(20000))
        time.sleep(0.001)
_thread.start_new_thread(streaming, ())
time.sleep(60)
'''


def test_foreign_thread_keeps_its_kernel_name(tmp):
    """A thread threading did not start is "Dummy-N" to Python: its kernel name ("queue0:src",
    as GStreamer names its streaming threads) is the one shown, not Dummy-1."""
    p, (pid, tid) = lib.start_ready([PYTHON, "-c", FOREIGN])
    out = os.path.join(tmp, "foreign.json")
    rc, err = lib.run_tracer("-p", pid, "-d", "1", "-o", out)
    assert rc == 0, err
    trace, _ = load_trace(out)
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names.get(tid) == "queue0:src", names
    # Python's own names still win where threading gave one
    assert names.get(pid) == "MainThread", names
    p.kill()


def test_python_sibling_calls_each_their_own(tmp):
    """read_a() then read_b(), each calling the same wait() from the same depth: the innermost
    frame is the same (wait's, at the same address and instruction), its caller is not. Every
    call is its own span with its own time; before, read_b's waits went to read_a (1 span for
    368 calls, read_a +59%, read_b -98%)."""
    log, out = os.path.join(tmp, "sib.log"), os.path.join(tmp, "sib.json")
    p, (pid,) = lib.start_ready([PYTHON, os.path.join(lib.ROOT, "tests", "targets",
                                                      "py_siblings.py"), "3", log])
    tr = start_tracer("-p", pid, "-o", out)
    sigusr1(pid)
    wait_exit(p)
    tr.send_signal(signal.SIGINT)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    calls = collections.defaultdict(list)
    with open(log) as f:
        for line in f:
            name, s, e = line.split()
            calls[name].append(int(e) - int(s))
    trace, _ = load_trace(out)
    got = collections.defaultdict(list)
    for e in spans(trace):
        if e["cat"] == "python" and e["name"] in calls:
            got[e["name"]].append(e["dur"] * 1000)
    for name in ("read_a", "read_b"):
        want = calls[name]
        assert len(want) > 50, (name, len(want))
        assert len(got[name]) >= 0.95 * len(want), (name, len(got[name]), len(want))
        assert abs(sum(got[name]) - sum(want)) <= 0.05 * sum(want), \
            (name, sum(got[name]), sum(want))


def test_python_callbacks_between_nested_native_calls(tmp, python=PYTHON):
    """labs() called by helper(), twice per call of a Python comparator that libc's qsort calls:
    each labs hit is nested in an open qsort call, under the callback's frames. A hit nested in
    a native call may skip the stack walk only where no Python ran since that call's entry;
    here Python ran, and each helper call is its own span (a walk skipped wrongly merges the
    second helper call of each comparison into the first: half as many spans). Ticks at 10 kHz:
    one that interrupts a return probe's program is in the ring before that call's span,
    stamped with its end (one with its own later time ended the callback's frames after the
    qsort that ran them: 5 runs in 30 under load)."""
    log, out = os.path.join(tmp, "cb.log"), os.path.join(tmp, "cb.json")
    p, (pid,) = lib.start_ready([python, os.path.join(lib.ROOT, "tests", "targets",
                                                      "py_callbacks.py"), "300", log])
    tr = start_tracer("-p", pid, "-u", "other:libc.so.6:qsort", "-u", "other:libc.so.6:labs",
                      "--py-rate", "10000", "-o", out)
    sigusr1(pid)
    wait_exit(p)
    tr.send_signal(signal.SIGINT)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    with open(log) as f:
        want = {name: int(n) for name, n in (line.split() for line in f)}
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    by_name = collections.defaultdict(list)
    for e in spans(trace):
        by_name[e["name"]].append(e)
    assert want["helper"] == 2 * want["compare"] > 1000, want
    assert len(by_name["qsort"]) == want["stage"], (len(by_name["qsort"]), want)
    assert len(by_name["labs"]) == want["helper"], (len(by_name["labs"]), want)
    helpers = sorted((e["ts"], e["ts"] + e["dur"]) for e in by_name["helper"])
    assert 0.98 * want["helper"] <= len(helpers) <= want["helper"], (len(helpers), want)
    # each labs call inside a helper span
    starts = [h[0] for h in helpers]
    for e in by_name["labs"]:
        i = bisect.bisect_right(starts, e["ts"]) - 1
        assert i >= 0 and helpers[i][1] >= e["ts"] + e["dur"] - 1e-3, e


# the oldest and newest frame layouts (PyFrameObject; _PyInterpreterFrame with entry shims)
def test_python_callbacks_between_nested_native_calls_3_8(tmp):
    test_python_callbacks_between_nested_native_calls(tmp, python=pyenv_python(8))


def test_python_callbacks_between_nested_native_calls_3_13(tmp):
    test_python_callbacks_between_nested_native_calls(tmp, python=pyenv_python(13))
