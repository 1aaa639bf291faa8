"""Row 4c of bench/bench.py: the fallback for kernels without uprobe_multi (TRACER_NO_UPROBE_MULTI=1
forces it) attaching and detaching 1,000 functions (bench/many_funcs.c), tracer against the floor
(bench/floor.c: empty programs attached and closed the same way) in the same run: tracer's
tracefs uprobe events (a site and direction each) against floor -t, and the per-function links
(TRACER_NO_UPROBE_EVENTS=1, where tracefs cannot be used) against floor's own. Under emulation
(the 6.1 VM of make check-kernels, CHECK_KERNELS_RUN) everything is slower, the floor says by how
much. Attach is start to "recording"; detach is SIGINT to exit. b is the harness (bench.py): its
helpers and settings."""
import os
import signal
import time

SEC = "4c. without uprobe_multi, 1,000 functions"
N = 1000
ENV = {"TRACER_NO_UPROBE_MULTI": "1"}


def floor_once(b, pid, tracefs=False):
    """tracefs: the floor's -t, every function on one tracefs event a direction, as tracer's
    events (two links in all, not two a function)."""
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
    per_function = dict(ENV, TRACER_NO_UPROBE_EVENTS="1")
    target = b.Proc([os.path.join(b.BENCH, "many_funcs")])
    try:
        time.sleep(0.3)
        ea, ed, ta, td, pfa, pfd, pa, pd, oa = [], [], [], [], [], [], [], [], []
        for r in range(rounds):  # interleaved: each round measures each once
            a, d = floor_once(b, target.pid, tracefs=True)
            ea.append(a)
            ed.append(d)
            a, d, n, how = b.attach_detach(target.pid, ["other:many_funcs:fn*"], env=ENV,
                                           timeout=600)
            ta.append(a)
            td.append(d)
            # tracer's own start (loading its programs: slow under emulation), one function
            oa.append(b.attach_detach(target.pid, ["other:many_funcs:fn000"], env=ENV,
                                      timeout=600)[0])
        # the per-function links close one by one in minutes: one round each
        a, d = floor_once(b, target.pid)
        pfa.append(a)
        pfd.append(d)
        a, d, pn, phow = b.attach_detach(target.pid, ["other:many_funcs:fn*"],
                                         env=per_function, timeout=900)
        pa.append(a)
        pd.append(d)
    finally:
        target.kill()
    # (attaching is judged below, without tracer's start)
    for what, t, f, goal in (("start to 'recording'", ta, ea, False),
                             ("SIGINT to exit", td, ed, True)):
        b.row(SEC, f"{n} functions ({how}), {what}",
              f"{b.med(t):.2f} s (runs {min(t):.2f}-{max(t):.2f})",
              f"floor (empty programs, floor -t) {b.med(f):.2f} s", f"+{b.med(t) - b.med(f):.2f} s",
              "< 1 s (issue 28)" if goal else "", "" if not goal else "met" if b.med(t) < 1 else
              f"NOT met: the floor alone takes {b.med(f):.2f} s" if b.med(f) >= 1 else "NOT met")
    links = b.med(ta) - b.med(oa)
    b.row(SEC, f"{n} functions ({how}), attaching them: start to 'recording' less tracer's "
          "start with 1 function", f"{links:.2f} s", f"1 function {b.med(oa):.2f} s",
          f"floor -t {b.med(ea):.2f} s", "< 1 s (issue 28)", "met" if links < 1 else "NOT met")
    for what, t, f in (("start to 'recording'", pa, pfa), ("SIGINT to exit", pd, pfd)):
        b.row(SEC, f"{pn} functions ({phow}: TRACER_NO_UPROBE_EVENTS=1), {what}",
              f"{b.med(t):.2f} s", f"floor per function {b.med(f):.2f} s",
              f"+{b.med(t) - b.med(f):.2f} s", "", "")
