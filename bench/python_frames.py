"""Row 7 of bench/bench.py: Python frames — what reading stacks costs a pure Python loop, and the
pace of a threaded Python pipeline traced and untraced. b is the harness (bench.py)."""
import glob
import os
import re
import signal
import subprocess


def traced_run(b, argv, seconds, tracer_args, out):
    """Starts argv (a target that prints "ready PID" and waits for SIGUSR1), attaches tracer
    when tracer_args is not None, starts the target and waits for it: (its stdout, tracer or
    None; tracer has exited)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    tr = None
    try:
        w = p.stdout.readline().split()
        if not w or w[0] != "ready":
            raise RuntimeError(f"{os.path.basename(argv[1])} did not start: {w}")
        pid = int(w[1])
        if tracer_args is not None:
            tr = b.Proc([b.TRACER, "-p", str(pid), "--max-overhead", "0", "-o", out] +
                        tracer_args)
            tr.wait_ready()
        os.kill(pid, signal.SIGUSR1)
        res, _ = p.communicate(timeout=seconds + 120)
        if tr:
            st = tr.wait(120)
            if st != 0:
                raise RuntimeError(f"tracer exited {st}: {tr.text()[-1500:]}")
        return res, tr
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if tr:
            tr.kill()


def py_loop_run(b, seconds, tracer_args=None, out=None):
    """One run of bench/py_loop.py, untraced or under tracer: (CPU ns per call, the trace's
    metadata or None)."""
    res, tr = traced_run(b, [b.PYTHON, os.path.join(b.ROOT, "bench", "py_loop.py"), str(seconds)],
                         seconds, tracer_args, out)
    m = re.search(r"calls (\d+) cpu_ns (\d+) wall_ns (\d+)", res)
    if not m:
        raise RuntimeError(f"py_loop printed no result: {res}")
    return int(m.group(2)) / int(m.group(1)), b.trace_metadata(out) if tr else None


def py_pipeline_pace(b, seconds, tracer_args=None, out=None, python=None):
    """Batches per second through tests/targets/py_pipeline.py, unpaced (as fast as it goes)."""
    log_path = os.path.join(b.TMP, "py_pipeline.log")
    traced_run(b, [python or b.PYTHON, os.path.join(b.ROOT, "tests", "targets", "py_pipeline.py"),
                   "--wait-signal", "--period", "0", "--seconds", str(seconds), "--log", log_path],
               seconds, tracer_args, out)
    with open(log_path) as f:
        ends = [int(l.split()[3]) for l in f if l.split()[1:2] == ["write_batch"]]
    return len(ends) / seconds


def run(b):
    b.log("7. Python frames")
    if not os.access(b.PYTHON, os.X_OK):
        b.row("7. Python frames", "all rows", "not run", "", "", "", f"no {b.PYTHON}")
        return
    reps = 3
    seconds = 2 if b.QUICK else 4
    sec = "7. Python frames, pure Python loop"
    out = os.path.join(b.TMP, "py.json")
    base, traced, charged, reads = [], [], [], []
    for _ in range(reps):
        u, _ = py_loop_run(b, seconds)
        t, meta = py_loop_run(b, seconds, [], out)
        base.append(u)
        traced.append(t)
        py = meta["python"]
        cpu = meta["overhead"]["target_cpu_ns"]
        charged.append(100.0 * py["read_ns"] / cpu if cpu else float("nan"))
        reads.append(py["reads"] / max(1e-9, meta["duration_ns"] / 1e9))
        hz = py["tick_hz"]
    added = [100.0 * (t - u) / u for u, t in zip(base, traced)]
    b.row(sec, "untraced", f"{b.med(base):.0f} ns CPU per step()")
    b.row(sec, f"tracer, default tick ({hz} Hz)",
        f"{b.med(traced):.0f} ns CPU per step(); {b.med(reads):.0f} stack reads/s",
        f"untraced {b.med(base):.0f}", f"{b.med(added):+.2f}% CPU (runs {min(added):+.2f} to "
        f"{max(added):+.2f})", "", "")
    b.row(sec, "stack reads, as tracer accounts them (python_read_ns / target CPU)",
        f"{b.med(charged):.2f}% of the target's CPU (runs {min(charged):.2f}-{max(charged):.2f})",
        "", "", "<= 1%", "met" if b.med(charged) <= 1.0 else "NOT met")
    sec = "7. Python frames, py_pipeline.py unpaced"
    pb, pt = [], []
    for _ in range(reps):
        pb.append(py_pipeline_pace(b, seconds))
        pt.append(py_pipeline_pace(b, seconds, [], out))
    b.row(sec, "pace untraced", f"{b.med(pb):.1f} batches/s (runs {min(pb):.1f}-{max(pb):.1f})")
    b.row(sec, "pace traced (Python frames, scheduler)",
        f"{b.med(pt):.1f} batches/s (runs {min(pt):.1f}-{max(pt):.1f})", f"{b.med(pb):.1f}",
        f"{b.med(pt) / b.med(pb):.3f}x", "", "")
    per_version(b, reps, seconds, out)


def per_version(b, reps, seconds, out):
    """The pipeline's pace traced and untraced, and what reading its stacks cost, on each pyenv
    CPython 3.8-3.13 present (shared-library builds); an absent one gets a row saying so."""
    sec = "7. Python frames, py_pipeline.py unpaced, per CPython version"
    for minor in range(8, 14):
        pattern = f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}"
        exes = sorted(glob.glob(os.path.expanduser(pattern)))
        if not exes:
            b.row(sec, f"CPython 3.{minor}", "absent (no pyenv build here)", "", "", "", "not run")
            continue
        pb, pt, charged, offsets = [], [], [], ""
        for _ in range(reps):
            pb.append(py_pipeline_pace(b, seconds, python=exes[0]))
            pt.append(py_pipeline_pace(b, seconds, [], out, python=exes[0]))
            meta = b.trace_metadata(out)
            py, cpu = meta["python"], meta["overhead"]["target_cpu_ns"]
            charged.append(100.0 * py["read_ns"] / cpu if cpu else float("nan"))
            offsets = ", ".join(i["offsets"] for i in py.get("interpreters", []))
        release = os.path.basename(os.path.dirname(os.path.dirname(exes[0])))
        b.row(sec, f"CPython {release} (offsets: {offsets or 'none'})",
              f"{b.med(pt):.1f} batches/s traced (runs {min(pt):.1f}-{max(pt):.1f}); stack reads "
              f"{b.med(charged):.2f}% of its CPU", f"{b.med(pb):.1f} untraced",
              f"{b.med(pt) / b.med(pb):.3f}x", ">= 0.9x",
              "met" if b.med(pt) >= 0.9 * b.med(pb) else "NOT met")
