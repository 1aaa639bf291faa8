#!/usr/bin/env python3
"""`make bench`: every comparison of issue 5 in one run, each against its baseline measured in
the same run, repeated (median of at least 3). Prints a table and writes it to a results file.

Needs root (uprobes). bpftrace and perf are compared against when installed; when missing, their
rows say which package to install. Nothing is installed here.

  python3 bench/bench.py --output .output [--quick] [--results bench/results.md] [--only ROWS]
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = TRACER = BENCH = TMP = None
TRACER2 = None  # --compare-tracer: a second build, for row 1
QUICK = False
LOAD = [""]
ROWS = []      # (section, what, measured, baseline, ratio, goal, verdict)
NOTES = []     # free text under the table
FFMPEG_LIB = "/usr/lib/x86_64-linux-gnu"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def row(section, what, measured, baseline="", ratio="", goal="", verdict=""):
    ROWS.append((section, what, measured, baseline, ratio, goal, verdict))
    log(f"  {what}: {measured}  {baseline}  {ratio}  {verdict}")


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    return f"{min(xs):.0f}-{max(xs):.0f}" if xs else ""


# ---------------------------------------------------------------------------------------------
# processes

class Proc:
    """A child whose stderr is read by a thread (so it never blocks) and whose CPU time and peak
    RSS come from wait4 when it exits."""

    def __init__(self, cmd, env=None, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL):
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, stdin=stdin,
                                  text=True, env=dict(os.environ, **env) if env else None)
        self.lines = []
        self.ready = threading.Event()
        self.t_ready = None
        self.rusage = None
        self.status = None
        self.t_exit = None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stderr:
            self.lines.append(line)
            if "recording" in line and not self.ready.is_set():
                self.t_ready = time.monotonic()
                self.ready.set()
        self.ready.set()

    @property
    def pid(self):
        return self.p.pid

    def wait_ready(self, timeout=60):
        if not self.ready.wait(timeout) or self.t_ready is None:
            self.kill()
            raise RuntimeError(f"{self.cmd[0]} did not start: {''.join(self.lines)[-2000:]}")

    def wait(self, timeout=120):
        """Waits for exit; returns the exit status. Kills it past the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            pid, status, ru = os.wait4(self.p.pid, os.WNOHANG)
            if pid:
                self.t_exit = time.monotonic()
                self.status = os.waitstatus_to_exitcode(status)
                self.p.returncode = self.status
                self.rusage = ru
                break
            if time.monotonic() > deadline:
                self.p.kill()
                os.wait4(self.p.pid, 0)
                raise RuntimeError(f"{self.cmd[0]} did not exit in {timeout} s")
            time.sleep(0.005)
        self.reader.join(5)
        return self.status

    def signal(self, sig):
        try:
            self.p.send_signal(sig)
        except ProcessLookupError:
            pass

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def cpu_s(self):
        return self.rusage.ru_utime + self.rusage.ru_stime

    def text(self):
        return "".join(self.lines)


def cpu_of(pid):
    """utime+stime of a live process, seconds (None if gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    w = s[s.rindex(")") + 2:].split()
    return (int(w[11]) + int(w[12])) / os.sysconf("SC_CLK_TCK")


class Loop:
    """bench/loop, started waiting for SIGUSR1."""

    def __init__(self, *args):
        self.p = subprocess.Popen([os.path.join(BENCH, "loop"), "-w"] + [str(a) for a in args],
                                  stdout=subprocess.PIPE, text=True)
        w = self.p.stdout.readline().split()
        if not w or w[0] != "ready":
            raise RuntimeError(f"loop did not start: {w}")
        self.pid, self.addr = int(w[1]), int(w[2], 16)
        self.orig = self.byte()

    def byte(self):
        """The function's first 16 bytes: where the probes go (its first instruction, or one
        after single-stepped ones when tracer moves them)."""
        with open(f"/proc/{self.pid}/mem", "rb", buffering=0) as f:
            f.seek(self.addr)
            return f.read(16)

    def wait_probed(self, timeout=30, settle=0.3):
        """Until a byte at the probed function's start changes (a probe is in), then a little
        more: every tool attaches its entry and return probes at that one address."""
        deadline = time.monotonic() + timeout
        while self.byte() == self.orig:
            if time.monotonic() > deadline:
                raise RuntimeError("the probe never showed up in the target")
            time.sleep(0.01)
        time.sleep(settle)

    def go(self):
        self.t_go = time.monotonic()
        os.kill(self.pid, signal.SIGUSR1)

    def result(self, timeout=300):
        out, _ = self.p.communicate(timeout=timeout)
        m = re.search(r"total calls (\d+) ns_per_call ([\d.]+) wall_ns_per_call ([\d.]+)", out)
        if not m:
            raise RuntimeError(f"loop printed no result: {out}")
        per_thread = [(int(a), int(b)) for a, b in re.findall(r"thread \d+ calls (\d+) ns (\d+)",
                                                              out)]
        return {"calls": int(m.group(1)), "ns_per_call": float(m.group(2)),
                "wall_ns_per_call": float(m.group(3)), "wall_ns": max(b for _, b in per_thread)}

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def trace_metadata(path):
    """The trace's metadata object, read from the end of the file (traces here are large)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(max(0, size - (8 << 20)))
        tail = f.read().decode("utf-8", "replace")
    i = tail.rfind('"metadata":')
    if i < 0:
        raise RuntimeError(f"{path} has no metadata")
    text = tail[i + len('"metadata":'):].rstrip()
    assert text.endswith("}"), text[-100:]
    return json.loads(text[:-1])


# ---------------------------------------------------------------------------------------------
# 1. added cost per traced call

def tool_cmds(name, pid, func):
    loop = os.path.join(BENCH, "loop")
    if name == "floor":
        return [os.path.join(BENCH, "floor"), "-p", str(pid), "-f", func]
    if name == "floor+clock":
        return [os.path.join(BENCH, "floor"), "-p", str(pid), "-f", func, "-k"]
    if name == "floor+stats":
        return [os.path.join(BENCH, "floor"), "-p", str(pid), "-f", func, "-c"]
    if name == "least-span":
        return [os.path.join(BENCH, "floor"), "-p", str(pid), "-f", func, "-s"]
    if name in ("tracer", "tracer2"):
        # no overhead budget: a loop of probed calls is all overhead, which is what is measured
        return [TRACER if name == "tracer" else TRACER2, "-p", str(pid), "-u",
                f"other:loop:{func}", "-o", os.path.join(TMP, "cost.json")] + \
            (["--max-overhead", "0"] if name == "tracer" else [])
    if name == "bpftrace":
        prog = (f'uprobe:{loop}:{func} {{ @s[tid] = nsecs; }} '
                f'uretprobe:{loop}:{func} /@s[tid]/ {{ printf("%d %d\\n", tid, nsecs - @s[tid]); '
                f'delete(@s[tid]); }}')
        return ["bpftrace", "-p", str(pid), "-o", os.path.join(TMP, "bpftrace.out"), "-e", prog]
    if name == "perf":
        return ["perf", "record", "-q", "-e", f"probe_loop:{func}", "-e",
                f"probe_loop:{func}__return", "-p", str(pid), "-o", os.path.join(TMP, "perf.data")]
    raise ValueError(name)


def perf_probes(func, add):
    loop = os.path.join(BENCH, "loop")
    subprocess.run(["perf", "probe", "-q", "-d", "probe_loop:*"], capture_output=True)
    if not add:
        return None
    for spec in (func, f"{func}%return"):
        p = subprocess.run(["perf", "probe", "-q", "-x", loop, "-a", spec], capture_output=True,
                           text=True)
        if p.returncode:
            return (p.stderr or p.stdout).strip().splitlines()[-1] if (p.stderr or p.stdout) else \
                f"perf probe exit {p.returncode}"
    return None


def cost_run(tool, func, threads, seconds, full=False):
    """One run of the loop target under tool (None: untraced): CPU ns per call on the loop's
    threads; with full, (that, wall ns per call, the tool process's own CPU ns per call from go
    to its exit)."""
    loop = Loop("-f", func, "-t", threads, "-s", seconds)
    proc = None
    tool_ns = 0.0
    try:
        if tool:
            proc = Proc(tool_cmds(tool, loop.pid, func))
            if tool in ("tracer", "tracer2", "floor", "floor+clock", "floor+stats",
                        "least-span"):
                proc.wait_ready()
            loop.wait_probed()
            cpu0 = cpu_of(proc.pid)
        loop.go()
        res = loop.result()
        if proc:
            if tool in ("bpftrace",):
                proc.signal(signal.SIGINT)
            st = proc.wait(120)
            if st != 0:
                raise RuntimeError(f"{tool} exited {st}: {proc.text()[-1500:]}")
            tool_ns = (proc.cpu_s() - cpu0) * 1e9 / res["calls"]
        if full:
            return res["ns_per_call"], res["wall_ns_per_call"], tool_ns
        return res["ns_per_call"]
    finally:
        loop.kill()
        if proc:
            proc.kill()


def bench_cost():
    log("1. added cost per traced call")
    reps = 3
    seconds = 0.5 if QUICK else 1.0
    tools = ["floor", "floor+clock", "least-span", "tracer"] + (["tracer2"] if TRACER2 else [])
    missing = {}
    if shutil.which("bpftrace"):
        tools.append("bpftrace")
    else:
        missing["bpftrace"] = "install the Debian package bpftrace"
    if shutil.which("perf"):
        tools.append("perf")
    else:
        missing["perf"] = "install the Debian package linux-perf"
    funcs = [("bench_push", "push %rbp first (emulated)"),
             ("bench_step", "sub $8,%rsp first (single-stepped)")]
    per_thread = {}  # tracer's added ns/call on the push site, by threads
    for func, fdesc in funcs:
        perf_err = perf_probes(func, "perf" in tools)
        for threads in (1, 2):
            base, wbase = [], []
            added = {t: [] for t in tools}
            wall = {t: [] for t in tools}
            own = {t: [] for t in tools}
            errors = {}
            if perf_err:
                errors["perf"] = perf_err
            for r in range(reps):
                b, wb, _ = cost_run(None, func, threads, seconds, full=True)
                base.append(b)
                wbase.append(wb)
                for t in tools:
                    if t in errors:
                        continue
                    try:
                        c, w, o = cost_run(t, func, threads, seconds, full=True)
                    except Exception as e:  # a tool that fails says why, the rest go on
                        errors[t] = str(e).strip().splitlines()[-1][:300]
                        continue
                    added[t].append(c - b)
                    wall[t].append(w - wb)
                    own[t].append(o)
            sec = f"1. cost/call, {fdesc}, {threads} thread{'s' if threads > 1 else ''}"
            row(sec, "untraced", f"{med(base):.1f} ns/call CPU ({med(wbase):.1f} wall)")
            fl = med(added["floor"])
            tr = med(added["tracer"]) if "tracer" not in errors else float("nan")
            ls = med(added["least-span"]) if "least-span" not in errors else float("nan")
            if func == "bench_push":
                per_thread[threads] = (tr, fl)
            for t in tools:
                if t in errors:
                    row(sec, t, "failed", "", "", "", errors[t])
                    continue
                a = med(added[t])
                detail = (f"+{a:.0f} ns/call (runs {spread(added[t])}); wall +{med(wall[t]):.0f}; "
                          f"tool's own CPU {med(own[t]):.0f} ns/call")
                if t == "floor":
                    row(sec, "floor: empty uprobe+uretprobe", detail)
                elif t == "floor+clock":
                    # a span needs a time stamp at each end: no design records one for less
                    row(sec, "floor + one clock read in each program (the least a span needs)",
                        detail, f"floor +{fl:.0f}", f"{a / fl:.2f}x floor")
                elif t == "least-span":
                    # what no span tool does without (bench/least_span.bpf.c)
                    row(sec, "floor + the least span program (a clock read and the thread's "
                        "task storage at each end, one ring record)", detail, f"floor +{fl:.0f}",
                        f"{a / fl:.2f}x floor")
                elif t in ("tracer", "tracer2"):
                    # issue 15 asks 1.05x on emulated sites; a single-stepped trap dwarfs the rest
                    goal = 1.05 if func == "bench_push" else 1.10
                    verdict = "met" if a <= goal * fl else "NOT met"
                    if a > goal * fl and ls > goal * fl:
                        verdict = f"NOT met: the least span program alone is {ls / fl:.2f}x"
                    row(sec, "tracer (sched on, spans to file)" if t == "tracer" else
                        f"tracer {TRACER2} (sched on, spans to file)", detail,
                        f"floor +{fl:.0f}; least span +{ls:.0f}",
                        f"{a / fl:.2f}x floor, {a / ls:.2f}x the least span",
                        f"<= {goal:.2f}x floor", verdict)
                else:
                    label = {"bpftrace": "bpftrace (span printf)",
                             "perf": "perf probe entry+return (perf record)"}[t]
                    goal = ">= 5x tracer" if t == "bpftrace" else ""
                    verdict = ("met" if a >= 5 * tr else "NOT met") if t == "bpftrace" else ""
                    tot_t = a + med(own[t])
                    tot_tr = tr + med(own["tracer"])
                    row(sec, label, detail, f"tracer +{tr:.0f}",
                        f"{a / tr:.1f}x tracer ({tot_t / tot_tr:.1f}x counting each tool's own "
                        f"CPU)", goal, verdict)
            for t, why in missing.items():
                row(sec, t, "not run", "", "", "", why)
        perf_probes(func, False)
        if func == "bench_push" and len(per_thread) == 2:
            # issue 31: every CPU as cheap as one (one ring buffer a CPU, no lock shared)
            (t1, f1), (t2, f2) = per_thread[1], per_thread[2]
            row("1. cost/call, push %rbp first (emulated), 2 threads against 1",
                "tracer: added CPU a call, each of 2 threads calling", f"+{t2:.0f} ns/call",
                f"1 thread +{t1:.0f}", f"{t2 / t1:.2f}x (the floor {f2 / f1:.2f}x)",
                "<= 1.05x", "met" if t2 <= 1.05 * t1 else "NOT met")
    # what the kernel's BPF run-time statistics add (the overhead accounting turns them on)
    base, fl, st = [], [], []
    for r in range(reps):
        base.append(cost_run(None, "bench_push", 1, seconds))
        fl.append(cost_run("floor", "bench_push", 1, seconds) - base[-1])
        st.append(cost_run("floor+stats", "bench_push", 1, seconds) - base[-1])
    row("1. cost/call, push, 1 thread", "floor with BPF run-time stats on all the time",
        f"+{med(st):.0f} ns/call", f"floor +{med(fl):.0f}", f"{med(st) / med(fl):.2f}x floor",
        "", "why overhead.c samples them 20 ms/s")


def bench_insn_classes():
    """Per-hit cost of an entry probe (empty program) by the function's first instruction."""
    log("1b. entry probe cost by first instruction")
    seconds = 0.3 if QUICK else 0.5
    funcs = [("bench_push", "push %rbp"), ("bench_nop", "nop"), ("bench_nopl", "nopl (3 bytes)"),
             ("bench_nop5", "nopl (5 bytes)"), ("bench_step", "sub $8,%rsp"),
             ("bench_endbr", "endbr64")]
    for func, desc in funcs:
        vals = []
        for r in range(3):
            b = cost_run(None, func, 1, seconds)
            loop = Loop("-f", func, "-t", 1, "-s", seconds)
            proc = Proc([os.path.join(BENCH, "floor"), "-p", str(loop.pid), "-f", func, "-e"])
            try:
                proc.wait_ready()
                loop.wait_probed()
                loop.go()
                vals.append(loop.result()["ns_per_call"] - b)
                proc.wait(60)
            finally:
                loop.kill()
                proc.kill()
        row("1b. entry probe per hit, by first instruction", desc,
            f"+{med(vals):.0f} ns/hit (runs {spread(vals)})")


# ---------------------------------------------------------------------------------------------
# 2. sustained rate, consumer CPU

def record_loop(loop_args, out, extra=()):
    """tracer on a loop target from go to exit. Returns (loop result, metadata, tracer cpu s over
    the recording, recording wall s, tracer Proc)."""
    loop = Loop(*loop_args)
    proc = Proc([TRACER, "-p", str(loop.pid), "-u", "other:loop:bench_push", "--max-overhead", "0",
                 "-o", out]
                + list(extra))
    try:
        proc.wait_ready()
        loop.wait_probed(settle=0.1)
        cpu0, t0 = cpu_of(proc.pid), time.monotonic()
        loop.go()
        res = loop.result(timeout=600)
        at_end = cpu_of(proc.pid)  # what follows the target's end: the trace's end, a push
        st = proc.wait(300)
        if st != 0:
            raise RuntimeError(f"tracer exited {st}: {proc.text()[-1500:]}")
        cpu = proc.cpu_s() - cpu0
        proc.cpu_while = (at_end - cpu0) if at_end is not None else cpu
        wall = proc.t_exit - t0
        meta = trace_metadata(out)
        return res, meta, cpu, wall, proc
    finally:
        loop.kill()
        proc.kill()
        if os.path.exists(out):
            os.unlink(out)


def bench_sustained():
    log("2. sustained rate")
    secs = 10 if QUICK else 30
    out = os.path.join(TMP, "sustained.json")
    rate = None
    tries = []
    for attempt in range(4):
        args = ["-f", "bench_push", "-t", 2, "-s", secs] + (["-r", int(rate)] if rate else [])
        res, meta, cpu, wall, _ = record_loop(args, out)
        c = meta["counts"]
        achieved = res["calls"] / (res["wall_ns"] / 1e9)
        tries.append((rate, achieved, c["spans"], c["lost_spans"], res["calls"], 100 * cpu / wall))
        if c["lost_spans"] == 0:
            break
        rate = achieved * 0.75
    rate_set, achieved, spans, lost, calls, busy = tries[-1]
    how = "both cores flat out" if rate_set is None else f"rate-limited to {rate_set / 1e3:.0f}k/s"
    row("2. sustained rate", f"highest rate with 0 lost for {secs} s ({how})",
        f"{achieved / 1e3:.0f}k spans/s ({spans} spans, {calls} calls, lost {lost}; tracer "
        f"{busy:.0f}% of a core)", "", "",
        "0 lost at the kernel's max", "met" if lost == 0 and rate_set is None else
        ("NOT met" if lost else "met below max"))
    for r, a, s, l, c, _ in tries[:-1]:
        NOTES.append(f"Sustained: at {'flat out' if r is None else f'{r / 1e3:.0f}k/s'} "
                     f"({a / 1e3:.0f}k calls/s) {l} of {c} spans were lost.")
    for target, threads in ((100000, 1), (1000000, 2)):
        secs = 5 if QUICK else 10
        vals, rates = [], []
        for r in range(3):
            res, meta, cpu, wall, _ = record_loop(
                ["-f", "bench_push", "-t", threads, "-s", secs, "-r", target], out)
            vals.append(100 * cpu / wall)
            rates.append(meta["counts"]["spans"] / wall)
        goal = "< 10% of a core" if target == 100000 else ""
        verdict = ("met" if med(vals) < 10 else "NOT met") if target == 100000 else ""
        row("2. consumer CPU", f"tracer CPU at {target // 1000}k spans/s "
            f"(achieved {med(rates) / 1e3:.0f}k/s)", f"{med(vals):.1f}% of a core "
            f"(runs {min(vals):.1f}-{max(vals):.1f})", "", "", goal, verdict)


# ---------------------------------------------------------------------------------------------
# 3. writer

def bench_writer():
    log("3. writer throughput")
    wb = os.path.join(BENCH, "writer_bench")
    for ext, n, goal in ((".json", 2000000 if QUICK else 5000000, 3e6),
                         (".json.gz", 1000000 if QUICK else 2000000, None)):
        vals, nbytes = [], 0
        for r in range(3):
            path = os.path.join(TMP, "writer" + ext)
            out = subprocess.run([wb, "-n", str(n), path], capture_output=True, text=True,
                                 check=True).stdout
            os.unlink(path)
            m = re.search(r"events_per_s (\d+) bytes (\d+)", out)
            vals.append(int(m.group(1)))
            nbytes = int(m.group(2))
        row("3. writer", f"span records -> {ext} ({n // 1000000}M events, "
            f"{nbytes / n:.0f} B/event)", f"{med(vals) / 1e6:.2f}M events/s "
            f"(runs {min(vals) / 1e6:.2f}-{max(vals) / 1e6:.2f})", "", "",
            ">= 3M events/s" if goal else "",
            ("met" if med(vals) >= goal else "NOT met") if goal else "")


# ---------------------------------------------------------------------------------------------
# 4. attach / detach on ffmpeg

def media(name, seconds):
    d = os.path.join(OUT, "bench", "media")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name)
    if not os.path.exists(path):
        log(f"  making {path} ({seconds} s of testsrc; once)")
        subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        f"testsrc=duration={seconds}:size=640x480:rate=30", "-c:v", "libx264",
                        "-preset", "veryfast", "-g", "60", "-pix_fmt", "yuv420p",
                        path + ".tmp.mp4"],
                       check=True)
        os.rename(path + ".tmp.mp4", path)
    return path


def start_ffmpeg_realtime(inp):
    p = subprocess.Popen(["ffmpeg", "-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1",
                          "-i", inp, "-vf", "scale=320:240", "-f", "null", "-"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_maps(p.pid, "libavcodec")
    time.sleep(0.5)
    return p


def mapped_files(pid):
    """The paths of the files pid maps, sorted."""
    with open(f"/proc/{pid}/maps") as f:
        return sorted(set(l.split()[-1] for l in f if len(l.split()) >= 6 and "/" in l))


def wait_maps(pid, what, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/maps") as f:
                if what in f.read():
                    return
        except OSError:
            pass
        time.sleep(0.002)
    raise RuntimeError(f"pid {pid} never mapped {what}")


def attach_detach(pid, specs, env=None, timeout=120):
    out = os.path.join(TMP, "attach.json")
    args = [TRACER, "-p", str(pid), "--max-overhead", "0", "-o", out]
    for s in specs:
        args += ["-u", s]
    t0 = time.monotonic()
    proc = Proc(args, env=env)
    try:
        proc.wait_ready(timeout)
        t_attach = proc.t_ready - t0
        time.sleep(0.3)
        t1 = time.monotonic()
        proc.signal(signal.SIGINT)
        st = proc.wait(timeout)
        t_detach = proc.t_exit - t1
        if st != 0:
            raise RuntimeError(f"tracer exited {st}: {proc.text()[-1000:]}")
        meta = trace_metadata(out)
        return t_attach, t_detach, len(meta["probes"]), meta.get("attach")
    finally:
        proc.kill()
        if os.path.exists(out):
            os.unlink(out)


def bench_attach():
    log("4. attach / detach")
    inp = media("in.mp4", 10)
    ff = start_ffmpeg_realtime(inp)
    try:
        sets = [("1", ["other:libavcodec.so.*:avcodec_send_packet"]),
                ("~100", ["other:libavcodec.so.*:avcodec_*", "other:libavfilter.so.*:av*"]),
                ("~1000", ["other:libav*.so.*:av*"])]
        for label, specs in sets:
            ta, td, n = [], [], 0
            for r in range(3):
                a, d, n, how = attach_detach(ff.pid, specs)
                ta.append(a)
                td.append(d)
            goal = "< 1 s each" if label == "~1000" else ""
            row("4. attach/detach (ffmpeg)", f"{n} functions ({how}), start to 'recording'",
                f"{med(ta) * 1000:.0f} ms (runs {spread([x * 1000 for x in ta])})", "", "", goal,
                ("met" if med(ta) < 1 else "NOT met") if goal else "")
            row("4. attach/detach (ffmpeg)", f"{n} functions ({how}), SIGINT to exit",
                f"{med(td) * 1000:.0f} ms (runs {spread([x * 1000 for x in td])})", "", "", goal,
                ("met" if med(td) < 1 else "NOT met") if goal else "")
        # per-probe links take about 0.25 s each to detach: a short list in a quick run
        quick_specs = ["other:libavcodec.so.*:" + f for f in (
            "avcodec_send_*", "avcodec_receive_*", "avcodec_open*", "avcodec_close",
            "avcodec_flush_buffers", "avcodec_alloc_context3", "avcodec_free_context")]
        specs = sets[1][1] if not QUICK else quick_specs
        a, d, n, how = attach_detach(ff.pid, specs, env={"TRACER_NO_UPROBE_MULTI": "1"},
                                     timeout=600)
        row("4. attach/detach (ffmpeg)", f"{n} functions, TRACER_NO_UPROBE_MULTI=1 ({how}), "
            f"start / exit", f"{a * 1000:.0f} ms / {d * 1000:.0f} ms", "", "", "",
            "one run: why uprobe_multi matters")
    finally:
        ff.kill()
        ff.wait()


def bench_detach():
    """4c. the per-function fallback attaching and detaching 1,000 functions (bench/detach.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import detach
    detach.run(sys.modules[__name__])


def bench_big_pack():
    """4b. a pack of 10,000 probes on 70,000 functions (bench/big_pack.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import big_pack
    big_pack.run(sys.modules[__name__])


# ---------------------------------------------------------------------------------------------
# 5. memory

def bench_memory():
    log("5. memory")
    out = os.path.join(TMP, "memory.json")
    for total in ((1000000, 4000000) if QUICK else (1000000, 10000000)):
        res, meta, cpu, wall, proc = record_loop(
            ["-f", "bench_push", "-t", 2, "-n", total // 2], out)
        rss = proc.rusage.ru_maxrss / 1024
        lost = meta["counts"]["lost_spans"]
        row("5. memory", f"tracer peak RSS, {meta['counts']['spans'] / 1e6:.1f}M spans recorded "
            f"(lost {lost})", f"{rss:.1f} MB", "", "", "< 64 MB, flat",
            "met" if rss < 64 else "NOT met")


# ---------------------------------------------------------------------------------------------
# 6. ffmpeg decoding + scaling as fast as it can

def bench_ffmpeg():
    """6. the default packs' cost on ffmpeg, with a confidence interval (bench/ffmpeg_overhead.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ffmpeg_overhead
    ffmpeg_overhead.run(sys.modules[__name__])


# ---------------------------------------------------------------------------------------------
PYTHON = "/usr/bin/python3"


def bench_python():
    """7. Python frames (bench/python_frames.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import python_frames
    python_frames.run(sys.modules[__name__])


def bench_sites():
    """1c. moved probe sites (bench/sites.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sites
    sites.run(sys.modules[__name__])


def bench_budget():
    """1d. the overhead budget on a pathological probe set (bench/budget.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import budget
    budget.run(sys.modules[__name__])


def bench_cxx():
    """1e. C++ exceptions: exits probed instead of returns (bench/cxx.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import cxx
    cxx.run(sys.modules[__name__])


def bench_frameworks():
    """8. the default packs on the framework pipelines (bench/frameworks.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import frameworks
    frameworks.run(sys.modules[__name__])


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def bench_clickhouse():
    """9. tracer push and record --to into ClickHouse (bench/clickhouse.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import clickhouse
    clickhouse.run(sys.modules[__name__])


def bench_sched():
    """10. Scheduler programs (bench/sched_programs.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sched_programs
    sched_programs.run(sys.modules[__name__])


def main():
    global OUT, TRACER, TRACER2, BENCH, TMP, QUICK
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default=os.path.join(ROOT, ".output"))
    ap.add_argument("--quick", action="store_true", help="shorter runs (noisier)")
    ap.add_argument("--results", default=None, help="write the table here (markdown)")
    ap.add_argument("--only", default="", help="comma-separated rows: 1,1b,1c,1d,1e,2,3,4,4b,4c,5,6,7,8,9,10")
    ap.add_argument("--compare-tracer", default=None,
                    help="another tracer binary to add to rows 1 and 10 (e.g. a build without a change)")
    a = ap.parse_args()
    OUT = os.path.abspath(a.output)
    TRACER = os.path.join(OUT, "tracer")
    TRACER2 = a.compare_tracer
    BENCH = os.path.join(OUT, "bench")
    QUICK = a.quick
    if os.geteuid() != 0:
        print("bench: needs root (uprobes need CAP_SYS_ADMIN); run with sudo", file=sys.stderr)
        return 2
    for tool in (TRACER, os.path.join(BENCH, "loop"), os.path.join(BENCH, "floor"),
                 os.path.join(BENCH, "writer_bench"), os.path.join(BENCH, "switcher"),
                 os.path.join(BENCH, "many_funcs")):
        if not os.access(tool, os.X_OK):
            print(f"bench: {tool} is missing; run `make bench` (it builds it)", file=sys.stderr)
            return 2
    for tool, pkg in (("bpftrace", "bpftrace"), ("perf", "linux-perf"), ("ffmpeg", "ffmpeg")):
        if not shutil.which(tool):
            print(f"bench: {tool} not found: its rows are skipped (install the Debian package "
                  f"{pkg}: apt-get install {pkg})", file=sys.stderr)
    os.environ.setdefault("TRACER_PROBES", os.path.join(ROOT, "probes"))
    only = set(x for x in a.only.split(",") if x)
    started, t0 = datetime.datetime.now(), time.monotonic()
    LOAD[0] = loadavg()
    TMP = tempfile.mkdtemp(prefix="tracer-bench-", dir="/var/tmp")
    steps = [("1", bench_cost), ("1b", bench_insn_classes), ("1c", bench_sites),
             ("1d", bench_budget), ("1e", bench_cxx), ("2", bench_sustained),
             ("3", bench_writer), ("4", bench_attach), ("4b", bench_big_pack),
             ("4c", bench_detach),
             ("5", bench_memory), ("6", bench_ffmpeg),
             ("7", bench_python), ("8", bench_frameworks), ("9", bench_clickhouse),
             ("10", bench_sched)]
    try:
        for key, fn in steps:
            if only and key not in only:
                continue
            if key in ("4", "6") and not shutil.which("ffmpeg"):
                row(key, "ffmpeg rows", "not run", "", "", "", "install the Debian package ffmpeg")
                continue
            try:
                fn()
            except Exception as e:
                row(key, fn.__name__, "FAILED", "", "", "", str(e).strip().splitlines()[-1][:300])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    took = time.monotonic() - t0
    print()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import results_table
    results_table.print_table(sys.modules[__name__])
    results_table.write_results(sys.modules[__name__], a.results, started, took)
    if a.results:
        print(f"\nwrote {a.results} ({took / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
