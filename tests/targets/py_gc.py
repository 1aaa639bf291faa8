#!/usr/bin/python3
"""Python garbage collections with ground truth: automatic collection off, gc.collect() called
in a loop on fresh garbage, each call logged as "collect START_NS END_NS" (time.monotonic_ns).
Prints "ready PID"; with --wait-signal starts on SIGUSR1; runs --seconds."""
import argparse
import gc
import os
import signal
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--wait-signal", action="store_true")
    a = ap.parse_args()
    go = threading.Event()
    if a.wait_signal:
        signal.signal(signal.SIGUSR1, lambda *_: go.set())
    else:
        go.set()
    gc.disable()
    print("ready", os.getpid(), flush=True)
    while not go.wait(0.05):
        pass
    end = time.monotonic() + a.seconds
    log = []
    while time.monotonic() < end:
        junk = [[i] * 10 for i in range(20000)]
        t0 = time.monotonic_ns()
        gc.collect()
        log.append((t0, time.monotonic_ns()))
        del junk
        time.sleep(0.01)
    for t0, t1 in log:
        print("collect", t0, t1)


if __name__ == "__main__":
    main()
