#!/usr/bin/python3
"""Sibling Python calls with ground truth: one thread calls read_a() then read_b(), each of which
calls the same wait() from the same depth (a blocking sleep of 3 ms, then 5 ms), as a reader
that waits on two sources does. Logs each call:

    NAME START_NS END_NS     (time.monotonic_ns(), tracer's clock)

Prints "ready PID"; starts on SIGUSR1; runs for SECONDS, then writes the log to LOG."""
import os
import signal
import sys
import threading
import time

log = []


def wait(seconds):
    time.sleep(seconds)


def read_a():
    wait(0.003)


def read_b():
    wait(0.005)


def reader(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for f in (read_a, read_b):
            s = time.monotonic_ns()
            f()
            log.append((f.__name__, s, time.monotonic_ns()))


def main():
    seconds, path = float(sys.argv[1]), sys.argv[2]
    go = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: go.set())
    print("ready", os.getpid(), flush=True)
    go.wait()
    t = threading.Thread(target=reader, args=(seconds,), name="reader")
    t.start()
    t.join()
    with open(path, "w") as f:
        for name, s, e in log:
            f.write(f"{name} {s} {e}\n")


if __name__ == "__main__":
    main()
