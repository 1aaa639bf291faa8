"""Row 4c of bench/bench.py: the per-function fallback (one perf-event uprobe per function, on
kernels without uprobe_multi; TRACER_NO_UPROBE_MULTI=1 forces it) attaching and detaching 1,000
functions (bench/many_funcs.c), tracer against the floor (bench/floor.c: empty programs attached
and closed the same way) in the same run: under emulation (the 6.1 VM of make check-kernels,
CHECK_KERNELS_RUN) everything is slower, the floor says by how much. Attach is start to
"recording"; detach is SIGINT to exit. b is the harness (bench.py): its helpers and settings."""
import os
import signal
import time

SEC = "4c. per-function fallback, 1,000 functions"
N = 1000
ENV = {"TRACER_NO_UPROBE_MULTI": "1"}


def floor_once(b, pid, tracefs=False):
    """tracefs: the floor's -t, every function on one tracefs event a direction (the route to
    two links in all, not two a function)."""
    funcs = ",".join(f"fn{i:03d}" for i in range(N))
    t0 = time.monotonic()
    proc = b.Proc([os.path.join(b.BENCH, "floor"), "-p", str(pid), "-f", funcs]
                  + (["-t"] if tracefs else []), env=ENV)
    try:
        proc.wait_ready(600)
        t_attach = proc.t_ready - t0
        time.sleep(0.3)
        t1 = time.monotonic()
        proc.signal(signal.SIGINT)
        if proc.wait(600) != 0:
            raise RuntimeError(f"floor exited {proc.status}: {proc.text()[-1000:]}")
        return t_attach, proc.t_exit - t1
    finally:
        proc.kill()


def run(b):
    b.log(SEC)
    rounds = 1 if b.QUICK else 3
    target = b.Proc([os.path.join(b.BENCH, "many_funcs")])
    try:
        time.sleep(0.3)
        fa, fd, ta, td, n, how = [], [], [], [], 0, ""
        ea, ed = [], []
        for r in range(rounds):  # interleaved: each round measures each once
            a, d = floor_once(b, target.pid)
            fa.append(a)
            fd.append(d)
            a, d = floor_once(b, target.pid, tracefs=True)
            ea.append(a)
            ed.append(d)
            a, d, n, how = b.attach_detach(target.pid, ["other:many_funcs:fn*"], env=ENV,
                                           timeout=600)
            ta.append(a)
            td.append(d)
    finally:
        target.kill()
    for what, t, f in (("start to 'recording'", ta, fa), ("SIGINT to exit", td, fd)):
        over = b.med(t) - b.med(f)
        b.row(SEC, f"{n} functions ({how}), {what}",
              f"{b.med(t):.2f} s (runs {min(t):.2f}-{max(t):.2f})",
              f"floor {b.med(f):.2f} s", f"+{over:.2f} s", "< 1 s (issue 28)",
              "met" if b.med(t) < 1 else
              f"NOT met: the floor alone takes {b.med(f):.2f} s" if b.med(f) >= 1 else "NOT met")
    # the route to the goal: the same empty programs with every function on one tracefs event a
    # direction, two links in all (not what tracer does yet)
    for what, t, f in (("start to 'recording'", ea, fa), ("SIGINT to exit", ed, fd)):
        b.row(SEC, f"floor, every function on one tracefs uprobe event a direction, {what}",
              f"{b.med(t):.2f} s (runs {min(t):.2f}-{max(t):.2f})",
              f"floor per function {b.med(f):.2f} s", f"{b.med(t) / b.med(f):.3f}x",
              "", "")
