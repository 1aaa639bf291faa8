"""Row 6 of bench/bench.py: what the default packs cost ffmpeg decoding and scaling as fast as it
can, resolved to about 1% on a shared, noisy machine. Single runs of the same decode vary by
+-25% here (other work shares the CPUs), so one run traced against one untraced says nothing.
The method:
  - many short runs (a 300 s stretch of the clip, a few seconds of CPU each) in interleaved
    rounds of four: untraced, the floor (empty BPF programs on the same functions: what any
    uprobe tool pays here), the least span program on them (bench/least_span.bpf.c: what any
    tool that records spans pays) and tracer, the order rotating, so that drift in the
    machine's load falls on all sides alike;
  - the target's own CPU time (wait4 on ffmpeg: every thread, user and system, traps and BPF
    programs included), not wall time, which also counts waiting for a CPU;
  - the ratio of each traced run to the untraced run of its round, and the mean ratio with a
    95% confidence interval (Student's t over the rounds): the overhead is resolved when the
    interval is narrower than the goal's margin.
Two configurations: ffmpeg's default threads, and one thread pinned to one CPU with tracer on
the other (the steadiest measure of the probes' own cost). b is the harness (bench.py)."""
import fnmatch
import json
import math
import os
import signal
import subprocess
import time

SEC = "6. ffmpeg decode+scale (fast)"
SECONDS = 300  # of the clip, per run: about 3 s of CPU
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
       10: 2.23, 11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 16: 2.12, 19: 2.09, 24: 2.06,
       29: 2.05}


def t95(df):
    """Student's t for a two-sided 95% interval with df degrees of freedom (a little wide
    between the table's rows)."""
    if df < 1:
        return float("inf")
    return T95[max(k for k in T95 if k <= df)]


def mean_ci(xs):
    """(mean, half-width of its 95% confidence interval)."""
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("inf")
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return m, t95(n - 1) * sd / math.sqrt(n)


def pack_functions(b, pid):
    """The default ffmpeg pack's functions, grouped by the library of the target that has them:
    {library path: [function, ...]}."""
    with open(os.path.join(b.ROOT, "probes", "ffmpeg.json")) as f:
        pack = json.load(f)
    libs = b.mapped_files(pid)
    by_lib = {}
    for p in pack["probes"]:
        for lib in libs:
            if fnmatch.fnmatch(os.path.basename(lib), p["object"]):
                by_lib.setdefault(lib, []).append(p["function"])
                break
    return by_lib


def start_tool(b, tool, pid, threads1):
    """The tool's processes, attached and recording: tracer with its default packs, or the floor
    (empty programs on the same functions, one floor process per library), or the least span
    program on them (floor -s)."""
    pin = ["taskset", "-c", "0"] if threads1 else []
    if tool == "tracer":
        procs = [b.Proc(pin + [b.TRACER, "-p", str(pid), "--max-overhead", "0", "-o",
                               os.path.join(b.TMP, "ffmpeg.json")])]
    else:
        least = ["-s"] if tool == "least-span" else []
        procs = [b.Proc(pin + [os.path.join(b.BENCH, "floor"), "-p", str(pid), "-x", lib, "-f",
                               ",".join(funcs)] + least)
                 for lib, funcs in pack_functions(b, pid).items()]
    for pr in procs:
        pr.wait_ready()
    return procs


def run_once(b, inp, tool, threads1):
    """CPU seconds of one decode (ffmpeg's, from wait4), and tracer's stderr if traced."""
    cmd = ["ffmpeg", "-nostdin", "-loglevel", "error", "-t", str(SECONDS), "-i", inp, "-vf",
           "scale=320:240", "-f", "null", "-"]
    if threads1:
        cmd = ["taskset", "-c", "1"] + cmd[:4] + ["-threads", "1"] + cmd[4:]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = []
    try:
        b.wait_maps(p.pid, "libswscale")
        os.kill(p.pid, signal.SIGSTOP)
        cpu0 = b.cpu_of(p.pid)
        if tool:
            procs = start_tool(b, tool, p.pid, threads1)
        else:
            time.sleep(0.3)
        os.kill(p.pid, signal.SIGCONT)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            raise RuntimeError(f"ffmpeg exited {p.returncode}")
        for pr in procs:
            if pr.wait(120) != 0:
                raise RuntimeError(f"{pr.cmd[0]} exited {pr.status}: {pr.text()[-1500:]}")
        text = procs[0].text() if tool == "tracer" else None
        return ru.ru_utime + ru.ru_stime - cpu0, text
    finally:
        if p.returncode is None and p.poll() is None:
            p.kill()
            p.wait()
        for pr in procs:
            pr.kill()


def measure(b, inp, threads1, rounds):
    """Interleaved rounds of (untraced, floor, least span, tracer), the order rotating: per tool,
    the ratios of its runs to the untraced run of the same round."""
    tools = [None, "floor", "least-span", "tracer"]
    ratios = {"floor": [], "least-span": [], "tracer": []}
    base, own = [], []
    for i in range(rounds):
        got = {}
        for tool in tools[i % len(tools):] + tools[:i % len(tools)]:
            got[tool] = run_once(b, inp, tool, threads1)
        base.append(got[None][0])
        for tool in ratios:
            ratios[tool].append(got[tool][0] / got[None][0])
        m = [l for l in (got["tracer"][1] or "").splitlines() if l.startswith("overhead:")]
        if m and "%" in m[0]:
            own.append(float(m[0].split("(")[1].split("%")[0]))
    return ratios, base, own


def run(b):
    b.log(SEC)
    inp = b.media("long-900s.mp4", 900)
    rounds = 6 if b.QUICK else 12
    for threads1, what in ((True, "1 thread, pinned to a CPU (tracer on the other)"),
                           (False, "default threads")):
        ratios, base, own = measure(b, inp, threads1, rounds)
        fm, fhw = mean_ci(ratios["floor"])
        b.row(SEC, f"the floor: empty programs on the same functions, {what}",
              f"{100 * (fm - 1):+.1f}% (95% CI {100 * (fm - 1 - fhw):+.1f}% to "
              f"{100 * (fm - 1 + fhw):+.1f}%)", f"untraced {b.med(base):.2f} s CPU",
              f"x{fm:.3f} +- {fhw:.3f}", "", "what any uprobe tool pays here")
        # each over the floor in its own round: the untraced run's noise cancels
        lm, lhw = mean_ci([a - f for a, f in zip(ratios["least-span"], ratios["floor"])])
        b.row(SEC, f"the least span program on the same functions (a clock read and the "
              f"thread's task storage at each end, one ring record), {what}",
              f"{100 * (lm + fm - 1):+.1f}%; {100 * lm:+.1f} points over the floor (95% CI "
              f"{100 * (lm - lhw):+.1f} to {100 * (lm + lhw):+.1f})", "", "", "",
              "what any tool recording spans pays here")
        m, hw = mean_ci(ratios["tracer"])
        pct, lo, hi = 100 * (m - 1), 100 * (m - 1 - hw), 100 * (m - 1 + hw)
        om, ohw = mean_ci([t - f for t, f in zip(ratios["tracer"], ratios["floor"])])
        own_s = (f"; tracer's own account {min(own):.1f}-{max(own):.1f}%" if own else "")
        verdict = ("met" if hi <= 3 and hw <= 0.01 else
                   ("NOT met (not resolved to 1%)" if hw > 0.01 else "NOT met"))
        # issue 31: within 0.5 points of the floor, which no tool recording spans can be when
        # the least span program alone is further
        verdict += "; 0.5 points over the floor: " + (
            "met" if om + ohw <= 0.005 else
            f"NOT met, the least span program alone is {100 * lm:+.1f}" if lm > 0.005 else
            "NOT met")
        b.row(SEC, f"CPU time with the default packs, {what}: {rounds} interleaved rounds of "
              f"{SECONDS} s of video",
              f"{pct:+.1f}% (95% CI {lo:+.1f}% to {hi:+.1f}%){own_s}; "
              f"{100 * om:+.1f} points over the floor (95% CI {100 * (om - ohw):+.1f} to "
              f"{100 * (om + ohw):+.1f}), {100 * (m - fm - lm):+.1f} over the least "
              f"span program",
              f"untraced {b.med(base):.2f} s CPU (runs {min(base):.2f}-{max(base):.2f})",
              f"x{m:.3f} +- {hw:.3f}", "<= 3%, CI within +-1%; within 0.5 points of the floor",
              verdict)
