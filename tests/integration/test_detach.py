"""Detaching the per-function fallback (one perf-event uprobe per function, where tracefs's
uprobe events cannot be used): each close waits for grace periods, one close after another
(userspace/record/expedite.c), so tracer sets /sys/kernel/rcu_expedited to 1 while it closes them
and puts the old value back after. The time it takes is row 4c of make bench."""
import os
import resource
import signal
import subprocess
import threading
import time

import lib

from lib import finish_tracer, sigusr1, start_pipeline, start_tracer

KNOB = "/sys/kernel/rcu_expedited"
FALLBACK = {"TRACER_NO_UPROBE_MULTI": "1", "TRACER_NO_UPROBE_EVENTS": "1"}


def knob():
    with open(KNOB) as f:
        return f.read().strip()


def set_knob(v):
    with open(KNOB, "w") as f:
        f.write(v)


def wait_knob(v, timeout=30):
    """The knob's value once it is v (another fallback tracer of the suite may have set it
    for its own detach meanwhile), or what it is after timeout."""
    deadline = time.monotonic() + timeout
    while knob() != v and time.monotonic() < deadline:
        time.sleep(0.05)
    return knob()


def record_and_watch(tmp, sig, *args):
    """Records the pipeline with the fallback, stops tracer with sig and reads the knob every
    millisecond meanwhile: (exit status, stderr, values seen while tracer stopped)."""
    pl, pid = start_pipeline("--forever", "--bottleneck", "none")
    sigusr1(pid)
    # (-v under the sanitizers: 12 s to start on an idle machine, past 30 s with every CPU busy)
    tr = start_tracer("-p", pid, "-P", "pipeline", "-o", os.path.join(tmp, "t.json"), *args,
                      env=FALLBACK, timeout=120)
    seen, done = set(), threading.Event()

    def watch():
        while not done.is_set():
            seen.add(knob())
            time.sleep(0.001)
    w = threading.Thread(target=watch)
    time.sleep(0.5)
    w.start()
    tr.send_signal(sig)
    try:
        rc, err = finish_tracer(tr, timeout=300)
    finally:
        done.set()
        w.join()
        pl.kill()
        pl.wait()
    return rc, err, seen


def test_fallback_detach_expedites_then_restores(tmp):
    before = knob()
    try:
        # 0 (the kernel's default): 1 while tracer closes its links, then 0 again, on SIGTERM
        # as on Ctrl-C, and not a word about it without -v
        set_knob("0")
        for sig in (signal.SIGTERM, signal.SIGINT):
            rc, err, seen = record_and_watch(tmp, sig)
            assert rc == 0, err
            assert "1" in seen, (sig, seen)
            assert wait_knob("0") == "0", (sig, err[-2000:])
            assert "rcu_expedited" not in err, err
        # 1 already (set by someone else): left as it is, and -v says so
        set_knob("1")
        rc, err, seen = record_and_watch(tmp, signal.SIGTERM, "-v")
        assert rc == 0, err
        assert knob() == "1" and seen == {"1"}, seen
        assert "rcu_expedited is 1: left as it is" in err, err
    finally:
        set_knob(before)


def test_fallback_raises_the_open_file_limit(tmp):
    """Each per-function link holds two descriptors: 80 functions, entries and returns, are 320,
    past a soft limit of 256 (1,000 functions past the usual 1,024): tracer raises it."""
    target = subprocess.Popen([os.path.join(lib.OUTPUT, "bench", "many_funcs")])
    out = os.path.join(tmp, "t.json")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        try:
            tr = start_tracer("-p", target.pid, "-u", "other:many_funcs:fn0[0-7]*", "-o", out,
                              env=FALLBACK)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        time.sleep(0.3)
        tr.send_signal(signal.SIGINT)
        rc, err = finish_tracer(tr, timeout=300)
    finally:
        target.kill()
        target.wait()
    assert rc == 0, err
    trace, _ = lib.load_trace(out)
    assert trace["metadata"]["attach"] == "uprobe", trace["metadata"]["attach"]
    assert len(trace["metadata"]["probes"]) == 80, len(trace["metadata"]["probes"])
    assert trace["metadata"]["counts"]["spans"] > 0
