"""Back-to-back Python calls from the same line, with ground truth (tests/targets/py_calls.py):
each call of 2 ms or more its own span, totals right, no span stretched over time that no call
of its function ran. Bounds are the goal of issue 26, at the default rate."""
import bisect
import collections
import os
import signal
import sys

from lib import finish_tracer, load_trace, sigusr1, spans, start_tracer, wait_exit
from test_python import pyenv_python

import lib

PYTHON = "/usr/bin/python3"
LATE_NS = 600_000
EDGE_NS = 2_000_000  # two ticks at the default rate
GAP_NS = 200_000  # between two calls: py_calls.py's loop()


def overlap(a, b):
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def percentile(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def off_cpu(trace, tid):
    """The times tid was off the CPU, (start, end) in ns, from a switch out to the switch back
    in, where the trace has both; and the times its state is unknown: from a switch out to the
    next one when the kernel reported no switch back in between (it came back at a time no one
    knows)."""
    t0, out, unknown, gone = trace["metadata"]["t0_monotonic_ns"], [], [], None
    for s in lib.sched_lines(trace):
        ts = t0 + round(s["ts"] * 1e9)
        if s["next"] == tid:
            if gone is not None:
                out.append((gone, ts))
            gone = None
        if s["prev"] == tid:
            if gone is not None:
                unknown.append((gone, ts))
            gone = ts
    return out, unknown


def ran(off, a, b):
    """The time in [a, b] outside the off-CPU times off (sorted)."""
    i = max(0, bisect.bisect_left(off, (a, 0)) - 1)
    t = b - a
    while i < len(off) and off[i][0] < b:
        t -= overlap(off[i], (a, b))
        i += 1
    return t


def measure(calls, got, off=(), unknown=()):
    """For one function's logged calls and traced spans, (start, end) in ns, both inside the
    recording: the calls found as their own span (one that covers half of the call and not
    half of any other), the totals' error, the share of span time outside every call of the
    function, the p99 and max of the calls of 5 ms or more and of their spans, and the largest
    (edge) and third largest (edge3) distance in ns of an edge of a call found from its span's,
    less the time its thread was off the CPU (off) in between: a thread preempted between its
    call's return and the clock reading that logs it logs an end the span rightly does not have.
    An edge whose gap holds time the thread's state is unknown (unknown) is not measured: how
    long it ran is not known."""
    calls, got = sorted(calls), sorted(got)
    found, j = set(), 0
    for s in got:
        while j < len(calls) and calls[j][1] <= s[0]:
            j += 1
        covered = [c for c in calls[max(0, j - 1):j + 40] if c[0] < s[1]
                   and overlap(c, s) >= 0.5 * (c[1] - c[0])]
        if len(covered) == 1:
            found.add(covered[0])
    outside, late, j = 0, 0, 0
    for s in got:
        while j < len(calls) and calls[j][1] <= s[0]:
            j += 1
        near = [c for c in calls[max(0, j - 1):j + 40] if c[0] < s[1]]
        outside += (s[1] - s[0]) - sum(overlap(c, s) for c in near)
        # ends past its last call by more than half a tick (and 100 us): run on to a later
        # read instead of the midpoint
        late += bool(near) and s[1] > near[-1][1] + LATE_NS
    total_calls = sum(e - s for s, e in calls)
    total_got = sum(e - s for s, e in got)
    # the calls of 5 ms or more, and the span that covers most of each (as many of both); and
    # how far the edges of each call found are from its span's (the first call left out: the
    # thread's first read knows nothing of what came before it)
    long_calls, long_got, edges, j = [], [], [0, 0, 0], 0
    for c in calls:
        while j < len(got) and got[j][1] <= c[0]:
            j += 1
        near = got[max(0, j - 1):j + 40]
        best = max(near, key=lambda s: overlap(c, s)) if near else (0, 0)
        if c in found and c != calls[0]:
            for gap in (sorted((best[0], c[0])), sorted((best[1], c[1]))):
                if not any(overlap(u, gap) for u in unknown):
                    edges.append(ran(off, *gap))
        if c[1] - c[0] >= 5_000_000:
            long_calls.append(c[1] - c[0])
            long_got.append(best[1] - best[0])
    return {"calls": len(calls), "spans": len(got), "found": len(found) / len(calls),
            "mean": total_calls / len(calls),
            "total": total_got / total_calls - 1, "outside": outside / max(1, total_got), "late": late / max(1, len(got)),
            "p99": (percentile(long_got, 0.99) / percentile(long_calls, 0.99) - 1
                    if long_calls else 0),
            "max": max(long_got) / max(long_calls) - 1 if long_calls else 0,
            "edge": max(edges), "edge3": sorted(edges)[-3],
            "first": float(calls[0] in found)}


def record(tmp, python, phases, *tracer_args, traces=None):
    """Runs py_calls.py's phases under tracer: each logged function's measure(); the trace
    goes into traces (a list) too."""
    log, out = os.path.join(tmp, "calls.log"), os.path.join(tmp, "calls.json")
    p, (pid,) = lib.start_ready([python, os.path.join(lib.ROOT, "tests", "targets",
                                                      "py_calls.py"), "2", log] + phases)
    tr = start_tracer("-p", pid, "-o", out, *tracer_args)
    sigusr1(pid)
    wait_exit(p)
    tr.send_signal(signal.SIGINT)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    calls = collections.defaultdict(list)
    with open(log) as f:
        for line in f:
            name, s, e = line.split()
            calls[name].append((int(s), int(e)))
    trace, text = load_trace(out)
    assert lib.check_format(trace, text) == []  # no span across a sibling or its parent's edge
    if traces is not None:
        traces.append(trace)
    t0 = trace["metadata"]["t0_monotonic_ns"]
    got, tid = collections.defaultdict(list), {}
    for e in spans(trace):
        if e["cat"] == "python" and e["name"] in calls:
            got[e["name"]].append((t0 + round(e["ts"] * 1000),
                                   t0 + round((e["ts"] + e["dur"]) * 1000)))
            tid[e["name"]] = e["tid"]
    m = {f: measure(c, got[f], *off_cpu(trace, tid.get(f))) for f, c in calls.items()}
    print("\n".join(f"{f}: " + " ".join(f"{k} {v:.3g}" for k, v in r.items())
                    for f, r in m.items()), file=sys.stderr)
    return m


def check(m, f, tails=False, first=False):
    """The goal for f's calls: 95% found, totals within 5%, at most 2% of the span time outside
    its calls, except for what the README states: the caller's 0.2 ms between two calls that
    no read separates goes half to each (outside: 2% and that gap's share of a call). tails:
    the p99 and max of the calls of 5 ms or more within 10% too, for functions whose longest
    calls are long enough for that: an edge placed midway between two reads is within half a
    tick (0.5 ms) of the truth, so calls of one length (5 ms) can be off by two half ticks (up
    to 20%) and are only measured. first: f's first call is the thread's first, found too."""
    r = m[f]
    # enough calls for the shares to mean something: on a loaded machine a 5 ms call of
    # stage_5ms took 38 ms (waiting for a CPU), and its 2 s phase made 52 of them
    assert r["calls"] >= 30, (f, r)
    assert r["found"] >= 0.95, (f, "calls found as their own span", r)
    # the gap's halves given to the calls on either side lengthen the spans by as much
    gap = GAP_NS / (r["mean"] + GAP_NS)
    assert -0.05 <= r["total"] <= 0.05 + gap, (f, "total time", r)
    assert r["outside"] <= 0.02 + gap, (f, "span time outside a call", r)
    # each edge within half a tick (a tick when the kernel reported no switch back in) and the
    # gap's half, counting the time the thread ran: two ticks leave room for a loaded machine
    # (measured: at most 0.83 ms; before, a call lost 3 to 25 ms to the next one about once in
    # a few hundred calls)
    assert r["edge3"] <= EDGE_NS, (f, "an edge of a call far from its span's", r)
    # but the two of one call boundary (an end and the next start), within five times that:
    # CI of stop 40 (idle, about 1,000 calls) had an edge 2.28 ms off, a 5 ms call's span 51%
    # long, and CI of stop 41 (ASan, both CPUs busy, 532 calls) one 5.5 ms off: reads that far
    # apart while the thread ran, as when the host takes the virtual CPU away (steal time: no
    # tick fires, and the guest counts the time as run). Not shown to be that; the bug this
    # test was written for (3 to 25 ms, once in a few hundred calls) fails edge3
    assert r["edge"] <= 5 * EDGE_NS, (f, "an edge of a call far from its span's", r)
    # a new thread is read from its first moments: before, a read before it had bound its
    # state left it unread for 10 ms (its first call or two, about one run in ten under load)
    assert not first or r["first"], (f, "the thread's first call not found", r)
    if tails:
        assert abs(r["p99"]) <= 0.10 and abs(r["max"]) <= 0.10, (f, "p99 or max", r)


def back_to_back_on(python):
    """stage_5ms(), featurize(ms), write_frame(i) called again and again from the same line
    0.2 ms apart: the callee's frame is at the same address, at the same instruction, called
    from the same place; what tells one call from the next is its caller's locals. Before,
    one span stood for several calls (calls found: 0% to 17% on 3.8 to 3.13; p99 2 to 16
    times the true one). featurize's calls of 5 ms or more have their p99 and max within 10%:
    its longest calls (20 ms) are off by a tick at most. Before, on a loaded machine a call
    whose thread the kernel put back on a CPU without a sched_switch event lost half the time
    it was off the CPU (7 to 15 ms) to the next call."""
    def test(tmp):
        m = record(tmp, python, ["noargs", "args", "sleep"])
        check(m, "stage_5ms", first=True)
        check(m, "featurize", tails=True)
        check(m, "write_frame")
    return test


def call_edges_on(python):
    """stage_io() called again and again from the same line, 0.2 ms apart: it works 0.8 ms,
    then blocks. A block read that shows the new call says nothing of when the old one ended
    (the new one worked before it blocked): they part midway between the reads. Before, the
    calls were merged (6% to 29% found) and spans ran on to the next block, over the next
    call."""
    def test(tmp):
        r = record(tmp, python, ["edges"])["stage_io"]
        check({"stage_io": r}, "stage_io", first=True)
        # no span ends more than half a tick (and 100 us) after its call
        assert r["late"] <= 0.01, ("stage_io spans run on past the midpoint", r)
    return test


def native_calls_on(python):
    """checksum(data) called again and again from the same line, 27 frames down, each call
    making probed native calls (zlib's crc32, about ten a call) on the same buffer: its own
    locals are the same at every call, its caller's are not. Each probe hit reads the stack,
    each caller's frame in one read (bpf/python.bpf.c, read_frame): every call is still found
    as its own span, and every crc32 span names checksum as its Python caller and nests in one
    of its spans."""
    def test(tmp):
        traces = []
        m = record(tmp, python, ["native"], "-u", "other:libz.so*:crc32", traces=traces)
        check(m, "checksum", first=True)
        ev = spans(traces[0])
        crc = [e for e in ev if e["name"] == "crc32"]
        assert len(crc) >= 5 * m["checksum"]["calls"], (len(crc), m["checksum"])
        # Every one, from the calling thread's first: it starts after tracer is in, and its
        # first native calls come a moment after it binds its thread state. (CI of stop 46,
        # check-san under load: one crc32 before the thread's first read, with no caller, out
        # of any checksum span: a read as the thread started missed and the next was put off
        # 250 us; 2 runs in 25 under load, 0 in 45 since young threads look at probe hits.)
        # (CI of stop 46, idle, 3.12: 1 of 55,445 with no caller; at most 1 in 10,000 is let
        # pass, none named otherwise)
        callers = collections.Counter(e.get("args", {}).get("py") for e in crc)
        assert set(callers) <= {"checksum", None} and callers[None] <= 1 + len(crc) // 10_000, \
            callers
        head = min(crc, key=lambda e: e["ts"])
        assert head.get("args", {}).get("py") == "checksum", ("the thread's first", head)
        own = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"] == "checksum")
        for e in crc:
            i = bisect.bisect_right(own, (e["ts"], float("inf"))) - 1
            assert e.get("args", {}).get("py") is None or \
                (i >= 0 and own[i][1] >= e["ts"] + e["dur"]), \
                ("crc32 outside checksum", e, "checksum spans around it", own[max(i, 0):i + 2])
    return test


def test_python_tick_out_of_step(tmp):
    """A loop paced to whole milliseconds (tests/targets/py_paced.py): stage() ends at the same
    point of a millisecond each call, away from any switch, where only the tick sees it. A
    steady 1 ms tick read the stack the same time after every end, and the total of stage
    came out 0.91 to 1.22 of the logged one in six runs; with the tick's period changed every
    50 ms (python/py_ticks.h) the calls' errors average out: 0.998 to 1.036 in six. The target
    runs SCHED_FIFO: what is tested is the tick alone. Preempted by busy loops, at the
    scheduler's own tick, which is in step with whole milliseconds too, the edges next to a
    preemption moved the total by up to 4.6% in a run (0.954 to 1.021 in 39, against 1.006 to
    1.031 in 12 with FIFO; the preempted edges are test_python's stage-function tests')."""
    log, out = os.path.join(tmp, "paced.log"), os.path.join(tmp, "paced.json")
    p, (pid,) = lib.start_ready(["chrt", "-f", "1", PYTHON,
                                 os.path.join(lib.ROOT, "tests", "targets", "py_paced.py"),
                                 "--seconds", "5", "--log", log])
    tr = start_tracer("-p", pid, "-d", "3", "-o", out)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    wait_exit(p)
    trace, _ = load_trace(out)
    t0 = trace["metadata"]["t0_monotonic_ns"]
    # (the first 100 ms left out: the thread's first read knows nothing before it)
    lo, hi = t0 + 100_000_000, t0 + trace["metadata"]["duration_ns"]
    logged = sum(max(0, min(e, hi) - max(s, lo))
                 for _, fn, s, e, _ in lib.read_ground_truth(log)["calls"] if fn == "stage")
    got = [e for e in spans(trace) if e["cat"] == "python" and e["name"] == "stage"]
    traced = sum(max(0, min(t0 + round((e["ts"] + e["dur"]) * 1000), hi) -
                     max(t0 + round(e["ts"] * 1000), lo)) for e in got)
    assert logged > 0.4e9 and abs(traced / logged - 1) <= 0.05, (traced / logged, len(got))

def on_pyenv(make, minor):
    """make's test on pyenv's CPython 3.minor (skipped when absent)."""
    def test(tmp):
        make(pyenv_python(minor))(tmp)
    return test


test_python_back_to_back_calls = back_to_back_on(PYTHON)
test_python_call_edges = call_edges_on(PYTHON)
test_python_native_calls = native_calls_on(PYTHON)
# each version's frame and code layout: PyFrameObject (3.8, 3.10), _PyInterpreterFrame (3.12
# with its _PyCFrame, 3.13)
test_python_back_to_back_calls_3_8 = on_pyenv(back_to_back_on, 8)
test_python_back_to_back_calls_3_10 = on_pyenv(back_to_back_on, 10)
test_python_back_to_back_calls_3_12 = on_pyenv(back_to_back_on, 12)
test_python_back_to_back_calls_3_13 = on_pyenv(back_to_back_on, 13)
test_python_call_edges_3_8 = on_pyenv(call_edges_on, 8)
test_python_call_edges_3_13 = on_pyenv(call_edges_on, 13)
test_python_native_calls_3_8 = on_pyenv(native_calls_on, 8)
test_python_native_calls_3_12 = on_pyenv(native_calls_on, 12)
