"""Recording the sample pipeline: every span against the pipeline's own ground-truth log."""
import collections
import json
import subprocess
import os
import re
import signal
import statistics
import time

import lib

from lib import (alive, check_format, finish_tracer, load_trace, wait_probes_gone,
                 read_ground_truth, sched_lines, sigusr1, spans, start_pipeline, start_tracer,
                 wait_exit)

FUNCS = {"read_packet", "decode_frame", "run_operator", "op_resize", "op_normalize", "op_infer",
         "queue_push", "queue_pop", "write_frame"}


def record_pipeline(tmp, *pipeline_args, tracer_args=(), env=None):
    log = os.path.join(tmp, "gt.log")
    out = os.path.join(tmp, "trace.json")
    pl, pid = start_pipeline(*pipeline_args, log=log)
    tr = start_tracer("-p", pid, "-P", "pipeline", "-o", out, *tracer_args, env=env)
    sigusr1(pid)
    rc, _, _ = wait_exit(pl)
    assert rc == 0, f"pipeline failed: {rc}"
    trc, err = finish_tracer(tr)
    assert trc == 0, f"tracer exit {trc}: {err}"
    trace, text = load_trace(out)
    return trace, text, read_ground_truth(log), err, pid


def test_spans_match_ground_truth(tmp, env=None, attach=None, compat=None):
    trace, text, gt, err, pid = record_pipeline(tmp, "--frames", "60", env=env)
    bad = check_format(trace, text)
    assert bad == [], bad[:5]
    # uprobe_multi came in 6.6; before it, the per-function fallback
    want = attach or ("uprobe_multi" if lib.kernel_at_least(6, 6) else "uprobe_events")
    assert trace["metadata"]["attach"] == want, (trace["metadata"]["attach"], want)
    # the programs for older kernels before 5.17, and where asked for
    compat = lib.compat_programs() if compat is None else compat
    assert trace["metadata"]["bpf_programs"] == ("compat" if compat else "full"), trace["metadata"]
    assert ("programs for older kernels" in err) == compat, err
    assert trace["metadata"]["stop_reason"] == "target exited"
    # the pack names queue_pop "Wait on Input Queue", and run_operator's spans after the
    # operator it dispatches (name_from): map span names back to functions
    name_to_func = {p["name"]: p["function"] for p in trace["metadata"]["probes"]}
    got = collections.defaultdict(list)
    for e in spans(trace):
        assert e["pid"] == pid
        assert not e.get("args", {}).get("incomplete"), e
        got[(e["tid"], name_to_func.get(e["name"], "run_operator"))].append(e)
        if name_to_func.get(e["name"]) is None:
            got[(e["tid"], "op:" + e["name"])].append(e)
    want = collections.defaultdict(list)
    for tid, func, start, end, op in gt["calls"]:
        want[(tid, func)].append((start, end))
        if op:
            want[(tid, "op:" + op)].append((start, end))
    n_got, n_want = ({k: len(v) for k, v in d.items()} for d in (got, want))
    assert n_got == n_want, ({k: (n_got.get(k), n_want.get(k)) for k in n_got.keys() | n_want.keys()
                              if n_got.get(k) != n_want.get(k)}, trace["metadata"]["counts"])
    assert {k[1] for k in want if not k[1].startswith("op:")} == FUNCS
    assert {k[1] for k in want if k[1].startswith("op:")} == {"op:resize", "op:normalize", "op:infer"}
    # durations and start times against the pipeline's own clock readings
    t0 = trace["metadata"]["t0_monotonic_ns"]
    dur_err, start_err = [], []
    for key, calls in want.items():
        evs = sorted(got[key], key=lambda e: e["ts"])
        for (start, end), e in zip(sorted(calls), evs):
            ts = t0 + round(e["ts"] * 1000)
            dur = round(e["dur"] * 1000)
            assert ts <= start and ts + dur >= end, (key, start, end, ts, dur)
            dur_err.append(dur - (end - start))
            start_err.append(start - ts)
    # the span includes the probe traps and the function's prologue: a few microseconds
    assert lib.IN_VM or statistics.median(dur_err) < 5000, statistics.median(dur_err)
    assert lib.IN_VM or statistics.median(start_err) < 5000, statistics.median(start_err)
    # thread names as the threads set them
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    for tid, name in gt["threads"].items():
        assert names.get(tid) == name, (tid, names.get(tid), name)
    # the scheduler's view of every thread that ran
    switched = {s["prev"] for s in sched_lines(trace)} | {s["next"] for s in sched_lines(trace)}
    for tid in gt["threads"]:
        assert tid in switched, f"no scheduler events for {gt['threads'][tid]}"
    # summary printed: per span name and per thread
    assert "Wait on Input Queue" in err and "decode_frame" in err and "decode-0" in err
    # captured arguments: read_packet's index counts up; pops return the item they took
    idx = sorted(e["args"]["index"] for e in spans(trace) if e["name"] == "read_packet")
    assert idx == list(range(60)), idx
    pops = [e for e in spans(trace) if e["name"] == "Wait on Input Queue"]
    assert all(e["args"]["queue"].startswith("0x") and "item" in e["args"] for e in pops)


def test_queue_depth_counters(tmp):
    trace, text, gt, _, _ = record_pipeline(tmp, "--frames", "50", "--queue-cap", "3")
    assert check_format(trace, text) == []
    counters = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "C":
            counters[e["name"]].append((e["ts"], e["args"]["depth"]))
    # three queues; each starts and ends empty and never holds more than its capacity plus
    # the pops in flight (2 consumers)
    assert len(counters) == 3, counters.keys()
    pushes = sum(1 for c in gt["calls"] if c[1] == "queue_push")
    assert sum(len(v) for v in counters.values()) == 2 * pushes
    for name, vals in counters.items():
        depths = [d for _, d in sorted(vals)]
        assert min(depths) >= 0 and max(depths) <= 3 + 2, (name, depths)
        assert depths[-1] == 0, (name, depths[-5:])
    # decode-bound: the fast reader fills the packet queue up to its capacity
    assert max(max(d for _, d in vals) for vals in counters.values()) >= 3, counters


def test_wakeup_arrows_bind_to_slices(tmp):
    trace, text, _, _, _ = record_pipeline(tmp, "--frames", "40")
    assert check_format(trace, text) == []
    flows = [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")]
    ids = collections.Counter(e["id"] for e in flows)
    assert flows and all(n == 2 for n in ids.values())
    xs = collections.defaultdict(list)
    for e in spans(trace):
        xs[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    for e in flows:
        # both ends inside a real slice of their thread (no dangling ids)
        assert any(s <= e["ts"] <= t for s, t in xs[e["tid"]]), e
    # the producer-consumer edges: pushes wake the threads waiting in their queue
    starts = {e["id"]: e for e in flows if e["ph"] == "s"}
    ends = {e["id"]: e for e in flows if e["ph"] == "f"}
    assert any(starts[i]["tid"] != ends[i]["tid"] for i in starts)


def test_spans_match_ground_truth_uprobe_events(tmp):
    """The fallback for kernels without uprobe_multi: a tracefs uprobe event a site and
    direction, the probe ids found by address in BPF."""
    test_spans_match_ground_truth(tmp, env={"TRACER_NO_UPROBE_MULTI": "1"},
                                  attach="uprobe_events")


def test_spans_match_ground_truth_perf_uprobes(tmp):
    """Where tracefs cannot be used: one perf-event uprobe per function, its cookie the probe
    id; before 5.15 (no cookies) tracer says in one line that it needs tracefs there."""
    env = {"TRACER_NO_UPROBE_MULTI": "1", "TRACER_NO_UPROBE_EVENTS": "1"}
    if not lib.kernel_at_least(5, 15):
        pl, pid = start_pipeline("--forever")
        rc, err = lib.run_tracer("-p", pid, "-P", "pipeline", "-d", "1",
                                 "-o", os.path.join(tmp, "t.json"), env=env)
        pl.kill()
        pl.wait()
        assert rc != 0 and err.count("\n") == 1 and "needs tracefs uprobe events" in err, err
        return
    test_spans_match_ground_truth(tmp, env=env, attach="uprobe")


def test_spans_match_ground_truth_compat(tmp):
    """The programs for kernels 5.10 to 5.16 (TRACER_NO_BPF_FEATURE takes bpf_loop as missing
    here): per-thread state in a hash by thread id, no link cookies (each hit's probe found by
    the tracefs event that fired), no bpf_get_current_task_btf, prev_state read from the task;
    the same spans, states and arguments."""
    test_spans_match_ground_truth(tmp, env={"TRACER_NO_BPF_FEATURE": "bpf_loop"},
                                  attach="uprobe_events", compat=True)


def test_summary_counts_and_states(tmp):
    trace, _, gt, err, _ = record_pipeline(tmp, "--frames", "40", "--bottleneck", "decode")
    counts = trace["metadata"]["counts"]
    assert counts["spans"] == len(gt["calls"]), (counts, len(gt["calls"]))
    assert counts["lost_spans"] == 0 and counts["unmatched_returns"] == 0
    lines = err.splitlines()
    row = next(l for l in lines if l.endswith("  decode_frame")).split()
    assert row[0] == "40" and row[-2] == "decode", row
    assert row[1] == row[2], row  # nothing probed runs inside a decode: its self time is all
    # decoders spin (running or waiting for a CPU); the writer mostly waits in its queue. The
    # first not in the emulated VM: on a loaded host its virtual CPUs wait for the host's, and
    # every thread there spends about as long waiting for a CPU (writer 42.7%, decode-0 44.2%)
    def share(row, col):
        return float(row[col].rstrip("%"))
    dec = next(l for l in lines if l.startswith("decode-0")).split()
    wr = next(l for l in lines if l.startswith("writer")).split()
    assert lib.IN_VM or share(dec, 2) + share(dec, 3) > 2 * (share(wr, 2) + share(wr, 3)), \
        (dec, wr)
    assert share(wr, 6) > share(dec, 6) and share(wr, 6) > 30, (dec, wr)


def test_stop_after_duration_target_survives(tmp):
    out = os.path.join(tmp, "d.json")
    pl, pid = start_pipeline("--forever", "--bottleneck", "none")
    sigusr1(pid)
    start = time.monotonic()
    tr = start_tracer("-p", pid, "-P", "pipeline", "-d", "1.5", "-o", out)
    rc, err = finish_tracer(tr, timeout=30)
    assert rc == 0, err
    assert time.monotonic() - start < 15
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    assert trace["metadata"]["stop_reason"] == "duration elapsed"
    assert 1.4e9 < trace["metadata"]["duration_ns"] < 5e9
    assert len(spans(trace)) > 100
    # probes gone, target unharmed: it runs on and shuts down cleanly
    assert tr.bpf_ids and wait_probes_gone(tr)
    time.sleep(0.3)
    assert alive(pid)
    pl.send_signal(signal.SIGINT)
    rc, _, _ = wait_exit(pl)
    assert rc == 0


def test_duration_ends_on_time_while_tracer_is_held(tmp):
    """-d is kept by a thread of its own: the event loop held up (here its writes to a pipe
    nobody reads; in the field probing followed children and shedding probes, seconds under
    load) no longer stretches the recording. Before, -d 2 recorded 8 s: until the reader came
    back. -d counts once tracer is set up (setup_ns, the trace's first part while probes were
    still being attached)."""
    h, (pid,) = lib.start_ready([lib.target("hammer"), "--threads", "2", "--seconds", "120",
                                 "--wait-signal"])
    sigusr1(pid)
    tr = subprocess.Popen([lib.TRACER, "-p", str(pid), "-u", "other:hammer:hammer_*",
                           "--max-overhead", "0", "-d", "2", "-o", "-"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lib._procs.append(tr)
    time.sleep(10)  # the trace's reader is away: tracer's writes block once the pipe is full
    out, err = tr.communicate(timeout=120)
    assert tr.returncode == 0, err
    trace = json.loads(out)
    assert check_format(trace, out) == []
    meta = trace["metadata"]
    assert meta["stop_reason"] == "duration elapsed", meta["stop_reason"]
    recorded = meta["duration_ns"] - meta.get("setup_ns", 0)
    assert 2e9 <= recorded < 4e9, f"-d 2 recorded {recorded / 1e9:.2f} s after setup"
    assert 0 < meta["setup_ns"] < meta["duration_ns"], meta
    assert len(spans(trace)) > 1000
    h.kill()


def stop_with(tmp, sig, reason, env=None):
    out = os.path.join(tmp, "s.json")
    # a 4 s decode that starts after tracer attached: in flight when the signal arrives; the
    # operators and the writer wait in their queues meanwhile
    pl, pid = start_pipeline("--forever", "--decode-us", "4000000", "--decoders", "1")
    tr = start_tracer("-p", pid, "-P", "pipeline", "-o", out, env=env)
    sigusr1(pid)
    time.sleep(1.2)
    tr.send_signal(sig)
    rc, err = finish_tracer(tr, timeout=30)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    assert trace["metadata"]["stop_reason"] == reason
    incomplete = [e for e in spans(trace) if e.get("args", {}).get("incomplete")]
    names = {e["name"] for e in incomplete}
    assert "decode_frame" in names and "Wait on Input Queue" in names, incomplete
    assert len({e["tid"] for e in incomplete}) >= 3, incomplete
    end = trace["metadata"]["duration_ns"] / 1000
    for e in incomplete:
        assert abs(e["ts"] + e["dur"] - end) < 1000, e
    assert tr.bpf_ids and wait_probes_gone(tr)
    assert alive(pid)
    pl.send_signal(signal.SIGTERM)
    rc, _, _ = wait_exit(pl)
    assert rc == 0


def test_stop_on_sigint_closes_open_spans(tmp):
    stop_with(tmp, signal.SIGINT, "SIGINT")


def test_stop_on_sigterm_closes_open_spans(tmp):
    stop_with(tmp, signal.SIGTERM, "SIGTERM")


def test_stop_closes_open_spans_compat(tmp):
    """The programs for older kernels: the calls open at the stop read from their hash by
    thread id, in every thread."""
    stop_with(tmp, signal.SIGINT, "SIGINT", env={"TRACER_NO_BPF_FEATURE": "bpf_loop"})


def test_min_dur_filters_in_kernel(tmp):
    trace, _, gt, _, _ = record_pipeline(tmp, "--frames", "30", tracer_args=("--min-dur", "1ms"))
    durs = [e["dur"] for e in spans(trace)]
    assert durs and min(durs) >= 1000
    counts = trace["metadata"]["counts"]
    assert counts["spans"] + counts["spans_under_min_dur"] == len(gt["calls"])
    assert counts["spans_under_min_dur"] > 0


def test_gzip_output(tmp):
    out = os.path.join(tmp, "t.json.gz")
    pl, pid = start_pipeline("--frames", "20")
    tr = start_tracer("-p", pid, "-P", "pipeline", "-o", out)
    sigusr1(pid)
    wait_exit(pl)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    with open(out, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    assert len(spans(trace)) == trace["metadata"]["counts"]["spans"] > 0


def test_no_sched(tmp):
    trace, text, gt, _, _ = record_pipeline(tmp, "--frames", "10", tracer_args=("--no-sched",))
    assert check_format(trace, text) == []
    assert sched_lines(trace) == []
    assert len(spans(trace)) == len(gt["calls"])


def test_pause_resume(tmp):
    out = os.path.join(tmp, "p.json")
    pl, pid = start_pipeline("--forever", "--bottleneck", "none")
    sigusr1(pid)
    tr = start_tracer("-p", pid, "-P", "pipeline", "--start-paused", "-o", out)
    time.sleep(0.6)
    tr.send_signal(signal.SIGUSR1)  # resume
    time.sleep(0.6)
    tr.send_signal(signal.SIGUSR1)  # pause again
    time.sleep(0.6)
    tr.send_signal(signal.SIGINT)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    marks = sorted((e["ts"], e["name"]) for e in trace["traceEvents"]
                   if e["ph"] == "i" and e["name"] in ("recording paused", "recording resumed"))
    names = [n for _, n in marks]
    assert names == ["recording paused", "recording resumed", "recording paused"], marks
    resumed, paused = marks[1][0], marks[2][0]
    xs = spans(trace)
    assert len(xs) > 50
    # nothing starts while paused; calls under way at the pause still complete
    assert all(resumed <= e["ts"] <= paused for e in xs), [e for e in xs if not resumed <= e["ts"] <= paused][:3]
    assert sched_lines(trace) and all(resumed / 1e6 - 0.001 <= s["ts"] <= paused / 1e6 + 0.001
                                      for s in sched_lines(trace))
    pl.send_signal(signal.SIGINT)
    wait_exit(pl)


def test_status_line_and_max_size(tmp):
    import pty
    out = os.path.join(tmp, "m.json")
    pl, pid = start_pipeline("--forever", "--bottleneck", "none")
    sigusr1(pid)
    # on a terminal: one line rewritten in place
    master, slave = pty.openpty()
    p = subprocess.Popen([lib.TRACER, "-p", str(pid), "-P", "pipeline", "-d", "2.6", "-o", out],
                         stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    text = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        text += chunk
    p.wait()
    text = text.decode(errors="replace")
    assert p.returncode == 0, text
    assert "\r\x1b[Krecording " in text and "spans " in text and "/s)" in text, text
    assert "\x1b[3" not in text  # no colours (NO_COLOR holds trivially)
    # not a terminal: no status line
    rc, err = lib.run_tracer("-p", pid, "-P", "pipeline", "-d", "1.5", "-o", out)
    assert rc == 0 and "\r" not in err
    # --max-size: stops near the size with a valid file
    rc, err = lib.run_tracer("-p", pid, "-P", "pipeline", "--max-size", "1M", "-o", out, "-d", "30")
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    assert trace["metadata"]["stop_reason"] == "--max-size reached"
    assert 512 << 10 < os.path.getsize(out) <= 1 << 20, os.path.getsize(out)
    pl.send_signal(signal.SIGINT)
    wait_exit(pl)


PING_PONG = r"""
import os, sys, threading, time
r1, w1 = os.pipe(); r2, w2 = os.pipe()
def ping():
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        os.write(w1, b"x"); os.read(r2, 1)
    os.write(w1, b"q")
def pong():
    while os.read(r1, 1) != b"q":
        os.write(w2, b"y")
ts = [threading.Thread(target=ping), threading.Thread(target=pong)]
[t.start() for t in ts]; [t.join() for t in ts]
"""


def test_missing_switches_marked_not_invented(tmp):
    """Two threads wake each other ~15,000 times a second for 3 s. Wherever the file shows a
    thread switched out twice (or in twice) without the opposite between, a switch was not
    recorded: each such spot is counted (sched_state_unknown) and marked on the thread's track
    at that switch, and the kernel's own skips (recursion_misses) are counted too; the report
    credits no state to those stretches."""
    out = os.path.join(tmp, "pp.json")
    p = subprocess.run([lib.TRACER, "--no-python", "-o", out, "--", "/usr/bin/python3", "-c",
                        PING_PONG, "3"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    traced = {e["tid"] for e in trace["traceEvents"]
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    seen, gaps = {}, []
    for l in sched_lines(trace):
        ts, prev, nxt = l["ts"] * 1e6, l["prev"], l["next"]
        if prev in traced and seen.get(prev) == "out":
            gaps.append((prev, ts))
        if nxt in traced and seen.get(nxt) == "in":
            gaps.append((nxt, ts))
        seen[prev], seen[nxt] = "out", "in"
    counts = trace["metadata"]["counts"]
    marks = sorted((e["tid"], e["ts"]) for e in trace["traceEvents"]
                   if e.get("name") == "scheduler state unknown")
    assert counts["sched_state_unknown"] == len(gaps) == len(marks), (counts, gaps, marks)
    for (tid, ts), (mtid, mts) in zip(sorted(gaps), marks):
        assert tid == mtid and abs(ts - mts) < 1, ((tid, ts), (mtid, mts))
    assert "skipped_sched_events" in counts and "skipped_probe_hits" in counts
    if counts["skipped_sched_events"]:
        assert "the kernel skipped" in p.stderr, p.stderr
    if gaps:  # the summary says so too, with the same count
        assert f"Missing switches: {len(gaps)} times" in p.stderr, p.stderr
    # switches in that fired no sched_switch, found after (this VM's agent threads switch out
    # unreported): placed where the scheduler logged the arrival, and said
    n = counts["sched_switches_unreported"]
    assert not n or f"Unreported switches: {n} switches" in p.stderr, p.stderr


def record_irqwake(tmp, env=None):
    """irqwake for 1 s under tracer: (trace, the programs tracer had linked while recording)."""
    out = os.path.join(tmp, "iw.json")
    tr = start_tracer("-u", "other:irqwake:spin_work", "-o", out, "--", lib.target("irqwake"),
                      "1", env=env)
    linked = linked_programs(tr.bpf_ids)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    return trace, linked


def check_irq_wakeups(trace):
    """The sleeper's wake-ups are flagged as from a hard interrupt ('h', as ftrace writes them)
    and no arrow starts in spin_work, which wakes no one."""
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    sleeper = next(t for t, n in names.items() if n == "sleeper")
    wakes = [m for m in (lib.FTRACE_RE.match(l) for l in
                         trace["systemTraceEvents"].split("\n")) if m and
             m.group(6) == "sched_waking" and f" pid={sleeper} " in m.group(7)]
    # 1,000 sleeps of 1 ms; on a busy machine a few hundred (107 seen at load average 12)
    assert len(wakes) > 50, len(wakes)
    flagged = [m for m in wakes if m.group(0).split("] ")[1][2] == "h"]
    assert len(flagged) >= 0.9 * len(wakes), (len(flagged), len(wakes))
    arrows = [e for e in trace["traceEvents"] if e.get("ph") in ("s", "f")]
    assert not arrows, arrows[:4]
    assert any(e["name"] == "spin_work" for e in spans(trace))


IRQ_PROGRAMS = {"on_irq_entry", "on_irq_exit", "on_hrtimer_entry", "on_hrtimer_exit",
                "on_softirq_entry", "on_softirq_exit"}


def linked_programs(ids):
    """Names of the programs behind the BPF links among ids (lib.bpf_ids)."""
    def bpftool(*what):
        p = subprocess.run(["bpftool", "-j", *what, "show"], capture_output=True, text=True)
        return json.loads(p.stdout or "[]")
    mine = {i for kind, i in ids if kind == "link"}
    names = {pr["id"]: pr.get("name") for pr in bpftool("prog")}
    return {names.get(link.get("prog_id")) for link in bpftool("link") if link["id"] in mine}


def preempt_count_in_btf():
    """Whether the kernel's BTF places the per-CPU preempt count (what tracer reads instead of
    running interrupt programs, record/irq_ctx.c): x86-64 with per-CPU variables in BTF."""
    p = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux"],
                       capture_output=True, text=True)
    have = lambda name: f"VAR '{name}'" in p.stdout
    return have("runqueues") and (have("__preempt_count") and have("cpu_number") or
                                  have("pcpu_hot"))


def test_interrupt_wakeups_have_no_source_thread(tmp):
    """irqwake: "sleeper" wakes from its 1 ms timer in the timer interrupt, on CPU 0 where
    "spinner" runs inside the probed spin_work(). Told by the kernel's preempt count where its
    BTF places it (no interrupt program runs then), by the six interrupt programs elsewhere."""
    trace, linked = record_irqwake(tmp)
    check_irq_wakeups(trace)
    assert "on_waking" in linked, linked
    if preempt_count_in_btf():
        assert not linked & IRQ_PROGRAMS, linked


def test_interrupt_wakeups_with_interrupt_programs(tmp):
    """The fallback of kernels whose preempt count tracer cannot read: the same flags."""
    trace, linked = record_irqwake(tmp, env={"TRACER_IRQ_PROGRAMS": "1"})
    check_irq_wakeups(trace)
    assert IRQ_PROGRAMS <= linked, linked


def us_ns(us):
    """A trace's microseconds (three decimals) as exact nanoseconds."""
    return round(us * 1000)


def arrow_rule(trace):
    """The rule of doc/trace-format.md ("Wake-up arrows"), replayed from the file itself: a
    sched_waking by a traced thread inside a span (not from an interrupt) is pending for the
    woken thread; the woken thread's next span to end after it gets the arrow; a later waking
    before that replaces an earlier one. Returns the arrows the file has and those the rule
    gives, as (waker, ts, woken)."""
    xs = collections.defaultdict(list)
    for e in spans(trace):
        xs[e["tid"]].append((us_ns(e["ts"]), us_ns(e["ts"]) + us_ns(e["dur"])))
    traced = set(xs) | {e["tid"] for e in trace["traceEvents"]
                        if e.get("ph") == "M" and e.get("name") == "thread_name"}
    timeline = []  # (time, order, kind, data): span records arrive when the span ends
    for tid, ss in xs.items():
        for s, e in ss:
            timeline.append((e, 1, "span", (tid, s, e)))
    for line in trace["systemTraceEvents"].split("\n"):
        m = lib.FTRACE_RE.match(line)
        if not m or m.group(6) != "sched_waking" or m.group(0).split("] ")[1][2] in "hs":
            continue
        secs, frac = m.group(5).split(".")
        waker, ts = int(m.group(2)), int(secs) * 10**9 + int(frac)
        woken = int(re.search(r" pid=(\d+)", m.group(7)).group(1))
        inside = any(s < ts < e for s, e in xs.get(waker, ()))
        if waker in traced and woken != waker and inside:
            timeline.append((ts, 0, "wake", (waker, woken)))
    pending, want = {}, set()
    for t, _, kind, data in sorted(timeline):
        if kind == "wake":
            pending[data[1]] = (t, data[0])
        elif data[0] in pending and data[2] > pending[data[0]][0]:
            ts, waker = pending.pop(data[0])
            want.add((waker, ts, data[0]))
    flows = [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")]
    ends = {e["id"]: e["tid"] for e in flows if e["ph"] == "f"}
    got = {(e["tid"], us_ns(e["ts"]), ends[e["id"]]) for e in flows if e["ph"] == "s"}
    return got, want


def test_wakeup_arrow_rule(tmp):
    """Every arrow the file has is one the rule gives, and every one the rule gives is there."""
    trace, text, _, _, _ = record_pipeline(tmp, "--frames", "40")
    got, want = arrow_rule(trace)
    assert got and got == want, (len(got), len(want), sorted(got ^ want)[:6])


def test_wakeup_arrows_across_cpus(tmp):
    """Issue 31: each CPU writes its own ring buffer. pingpong's threads, pinned to CPUs 0 and
    1, wake each other from inside their probed calls: each waking is in the waker's CPU's
    ring, the woken thread's next span in the other's. Read in time order, every waking gets its
    arrow, as the rule gives it; read ring after ring, a ring's wakings would replace each other
    before the spans they lead to."""
    if os.cpu_count() < 2:
        raise lib.Skip("needs 2 CPUs")
    out = os.path.join(tmp, "pp.json")
    p = subprocess.run([lib.TRACER, "-u", "other:pingpong:ping_call", "-u",
                        "other:pingpong:pong_call", "-o", out, "--", lib.target("pingpong"),
                        "3000"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    counts = trace["metadata"]["counts"]
    assert counts["spans"] == 6000 and counts["lost_spans"] == 0, counts
    cpus = {m.group(4) for m in (lib.FTRACE_RE.match(l) for l in
                                 trace["systemTraceEvents"].split("\n"))
            if m and m.group(6) == "sched_waking"}
    assert len(cpus) >= 2, cpus  # wakings from both CPUs (the threads are pinned)
    got, want = arrow_rule(trace)
    # a thread still running when woken (not yet asleep in read) gets no waking: not every round
    assert len(want) >= 100, len(want)
    assert got == want, (len(got), len(want), sorted(got ^ want)[:6])


def chain_pack(tmp):
    """A pack naming named_objects' handle() through GStreamer's pad -> peer -> element chain."""
    pack = os.path.join(tmp, "chain.json")
    with open(pack, "w") as f:
        f.write('{"name": "chain", "probes": [{"object": "named_objects", "function": "handle", '
                '"category": "operator", '
                '"name_from": "arg0->GstPad.peer->GstObject.parent->GstObject.name:str"}]}')
    return pack


def test_name_from_follows_pointers(tmp):
    """"name_from": "arg0->GstPad.peer->GstObject.parent->GstObject.name:str" reads a chain of
    pointers in the kernel: each call whose chain leads to a name is named by it; a NULL pointer
    or a chain into unmapped memory gives a span with the function's name, and the target runs
    on unharmed (tests/targets/named_objects.c)."""
    pack = chain_pack(tmp)
    out = os.path.join(tmp, "chain.json.out.json")
    p = subprocess.run([lib.TRACER, "-P", pack, "-o", out, "--", lib.target("named_objects"),
                        "2000"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "calls 6000 named 2000\n", p.stdout
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    names = collections.Counter(e["name"] for e in spans(trace))
    assert names == {"element7": 2000, "handle": 4000}, names


def test_name_from_a_relinked_chain(tmp):
    """A name read through a chain of pointers is kept by the thread for 10 ms (bpf/events.h,
    struct name_memo: a GStreamer pad, its peer and the peer's element live across pushes).
    named_objects relinks its chain halfway, to "element8", and calls on at once: no call
    before the change is named by the new name, and none from 10 ms after it by the old."""
    pack = chain_pack(tmp)
    out = os.path.join(tmp, "relink.json")
    n = 50_000
    # (a call that does nothing, probed: over any budget)
    p = subprocess.run([lib.TRACER, "-P", pack, "--max-overhead", "0", "-o", out, "--",
                        lib.target("named_objects"), str(n), "relink"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split("\n")
    assert lines[0] == f"calls {3 * n} named {n}", p.stdout
    relinked = int(lines[1].split()[1])
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    t0 = trace["metadata"]["t0_monotonic_ns"]
    named = collections.defaultdict(list)
    for e in spans(trace):
        named[e["name"]].append(t0 + round(e["ts"] * 1000))
    counts = {k: len(v) for k, v in named.items()}
    assert set(named) == {"handle", "element7", "element8"} and counts["handle"] == 2 * n and \
        counts["element7"] + counts["element8"] == n, counts
    assert min(named["element8"]) > relinked, (min(named["element8"]), relinked)
    stale = [t for t in named["element7"] if t > relinked]
    assert all(t <= relinked + 10_000_000 for t in stale), (max(stale) - relinked)
    # the calls after the change outlast the 10 ms it may take to show (75,000 traced calls:
    # 80 ms here at the least)
    assert max(named["element8"]) > relinked + 20_000_000, max(named["element8"]) - relinked


def test_open_calls_of_threads_read_without_pidfd_thread(tmp):
    """At the stop, the calls still in progress are read from each thread's task storage,
    through a pidfd of the thread; a pidfd of a thread other than the main one needs
    PIDFD_THREAD (kernel 6.9). Without it (TRACER_NO_PIDFD_THREAD pretends, 6.1 is so) a task
    iterator reads the same storage: the same open calls in the same threads, outermost first,
    each ending at the stop, and nothing is warned (before, they were missing, with a
    warning)."""
    out = os.path.join(tmp, "t.json")
    found = {}
    for old_kernel in (False, True):
        # a 4 s decode in flight at the stop; the operators and the writer wait in their queues
        pl, pid = start_pipeline("--forever", "--decode-us", "4000000", "--decoders", "1")
        tr = start_tracer("-p", pid, "-P", "pipeline", "-d", "1.5", "-o", out,
                          env={"TRACER_NO_PIDFD_THREAD": "1"} if old_kernel else None)
        sigusr1(pid)
        rc, err = finish_tracer(tr, timeout=30)
        assert rc == 0, err
        pl.kill()  # not drained: frames of 4 s each wait in its queues
        pl.wait()
        trace, text = load_trace(out)
        assert check_format(trace, text) == []
        assert "calls still in progress" not in err, err
        names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        incomplete = [e for e in spans(trace) if e.get("args", {}).get("incomplete")]
        end = trace["metadata"]["duration_ns"] / 1000
        for e in incomplete:
            assert abs(e["ts"] + e["dur"] - end) < 1000, e
        assert len({e["tid"] for e in incomplete if e["tid"] != pid}) >= 3, incomplete
        calls = collections.defaultdict(list)
        for e in sorted(incomplete, key=lambda e: e["ts"]):
            calls[names.get(e["tid"], e["tid"])].append(e["name"])
        found[old_kernel] = dict(calls)
    assert found[True] == found[False], found



def kernel_has_pidfd_thread():
    """Whether a pidfd can name a thread (PIDFD_THREAD = O_EXCL, kernel 6.9)."""
    try:
        os.close(os.pidfd_open(os.getpid(), os.O_EXCL))
        return True
    except OSError:
        return False


def test_task_iterator_loaded_only_without_pidfd_thread(tmp):
    """The task iterator (bpf/open_calls.bpf.c) is loaded only where the calls open at the stop
    need it, a kernel without PIDFD_THREAD (or TRACER_NO_PIDFD_THREAD): elsewhere a kernel that
    refused it would stop tracer for nothing (before, it was loaded everywhere)."""
    out = os.path.join(tmp, "t.json")
    loaded = {}
    for old_kernel in (False, True):
        pl, pid = start_pipeline("--forever")
        tr = start_tracer("-p", pid, "-P", "pipeline", "-o", out,
                          env={"TRACER_NO_PIDFD_THREAD": "1"} if old_kernel else None)
        names = set()
        for kind, ident in tr.bpf_ids:
            if kind == "prog":
                p = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(ident)],
                                   capture_output=True, text=True)
                names.add(json.loads(p.stdout or "{}").get("name"))
        tr.send_signal(signal.SIGINT)
        rc, err = finish_tracer(tr, timeout=30)
        assert rc == 0, err
        pl.kill()
        pl.wait()
        assert "span_enter" in names, names
        loaded[old_kernel] = "open_calls" in names
    # (the programs for older kernels read the open calls from a hash: never an iterator)
    iter_ok = not lib.compat_programs()
    assert loaded == {False: iter_ok and not kernel_has_pidfd_thread(), True: iter_ok}, loaded

def task_storage_of(tracer_pid, map_name, pid):
    """Whether tracer's task storage map map_name holds an entry for process pid's main thread
    (looked up with a pidfd, as the kernel's BPF_MAP_TYPE_TASK_STORAGE wants)."""
    import ctypes
    u32, u64 = ctypes.c_uint32, ctypes.c_uint64
    libc = ctypes.CDLL(None, use_errno=True)

    class ById(ctypes.Structure):
        _fields_ = [("id", u32), ("next_id", u32), ("open_flags", u32)]

    class InfoByFd(ctypes.Structure):
        _fields_ = [("bpf_fd", u32), ("info_len", u32), ("info", u64)]

    class MapInfo(ctypes.Structure):
        _fields_ = [("type", u32), ("id", u32), ("key_size", u32), ("value_size", u32),
                    ("max_entries", u32), ("map_flags", u32), ("name", ctypes.c_char * 16)]

    class Lookup(ctypes.Structure):
        _fields_ = [("map_fd", u32), ("pad", u32), ("key", u64), ("value", u64), ("flags", u64)]

    def bpf(cmd, attr):
        return libc.syscall(321, cmd, ctypes.byref(attr), ctypes.sizeof(attr))  # SYS_bpf

    for _, map_id in lib.fdinfo_values(tracer_pid, "map_id"):
        mfd = bpf(14, ById(id=map_id))  # BPF_MAP_GET_FD_BY_ID
        assert mfd >= 0, os.strerror(ctypes.get_errno())
        try:
            info = MapInfo()
            bpf(15, InfoByFd(bpf_fd=mfd, info_len=ctypes.sizeof(info),  # OBJ_GET_INFO_BY_FD
                             info=ctypes.addressof(info)))
            if info.name.decode() != map_name:
                continue
            pidfd = libc.syscall(434, pid, 0)  # pidfd_open
            assert pidfd >= 0, os.strerror(ctypes.get_errno())
            key, value = ctypes.c_int(pidfd), ctypes.create_string_buffer(info.value_size)
            try:
                r = bpf(1, Lookup(map_fd=mfd, key=ctypes.addressof(key),  # MAP_LOOKUP_ELEM
                                  value=ctypes.addressof(value)))
                err = ctypes.get_errno()
            finally:
                os.close(pidfd)
            assert r == 0 or err == 2, os.strerror(err)  # ENOENT: no entry
            return r == 0
        finally:
            os.close(mfd)
    raise AssertionError(f"tracer {tracer_pid} has no map {map_name}")


def test_untraced_processes_get_no_task_storage(tmp):
    """The scheduler programs run for every task on the machine: a process that is not traced
    gets no task storage from them, neither when woken (sched_waking) nor when it execs (the
    target check comes first). The traced one, woken every 50 ms, has its waking kept."""
    traced = subprocess.Popen(["sh", "-c", "while :; do sleep 0.05; done"])
    lib._procs.append(traced)
    tr = start_tracer("-p", traced.pid, "-o", os.path.join(tmp, "t.json"))
    # woken when its child exits, then execs
    other = subprocess.Popen(["sh", "-c", "sleep 0.2; exec sleep 30"])
    lib._procs.append(other)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{other.pid}/comm") as f:
            if f.read().strip() == "sleep":
                break
        time.sleep(0.05)
    else:
        raise AssertionError("the untraced shell did not exec")
    try:
        # its wakings from when the probes are in (later on a loaded machine)
        while not task_storage_of(tr.pid, "wakes", traced.pid):
            assert time.monotonic() < deadline, "the traced shell's waking was not kept"
            time.sleep(0.05)
        assert not task_storage_of(tr.pid, "wakes", other.pid)
        assert not task_storage_of(tr.pid, "stacks", other.pid)
    finally:
        other.kill()
        traced.kill()
        tr.send_signal(signal.SIGINT)
        finish_tracer(tr)
