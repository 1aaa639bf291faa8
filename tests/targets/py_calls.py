#!/usr/bin/python3
"""Back-to-back Python calls with ground truth: one thread calls the same function again and again
from the same line, 0.2 ms apart (the loop's own work between two calls), in four phases:

    noargs    stage_5ms()           5 ms of pure Python work, no arguments
    args      featurize(ms)         2 to 20 ms of work, a different argument each call
    sleep     write_frame(i)        a 5 ms blocking sleep
    edges     stage_io()            0.8 ms of work, then a 2 ms sleep
    native    checksum(data)        3 ms of zlib.crc32 calls on the same buffer (its argument,
                                    the same object each call), 27 frames down the stack

Logs each call:

    NAME START_NS END_NS     (time.monotonic_ns(), tracer's clock)

Prints "ready PID"; starts on SIGUSR1; runs each phase named (all four by default) for
SECONDS, then writes the log to LOG:

    py_calls.py SECONDS LOG [PHASE...]"""
import os
import signal
import sys
import threading
import time
import zlib

log = []
now = time.monotonic_ns


def spin(ns):
    end = now() + ns
    x = 0
    while now() < end:
        x += 1
    return x


def stage_5ms():
    spin(5_000_000)


def featurize(ms):
    spin(int(ms * 1e6))


def write_frame(i):
    time.sleep(0.005)


def stage_io():
    spin(800_000)
    time.sleep(0.002)


def checksum(data):
    end = now() + 3_000_000
    while now() < end:
        zlib.crc32(data)


def deep(n, f, *args):
    """f(*args) called n frames further down the stack."""
    return deep(n - 1, f, *args) if n else f(*args)


def timed(f, *args):
    s = now()
    f(*args)
    log.append((f.__name__, s, now()))


def loop(seconds, f, *args):
    end = now() + seconds * 1e9
    for i in range(1_000_000):  # the same line each time, and a loop variable that changes
        if now() > end:
            break
        timed(f, *(a[i % len(a)] for a in args))
        gap = now() + 200_000  # the loop's own work, in no function of its own
        while now() < gap:
            pass


def phases(seconds, names):
    if "noargs" in names:
        loop(seconds, stage_5ms)
    if "args" in names:
        loop(seconds, featurize, [2, 7, 20, 3, 12, 5])
    if "sleep" in names:
        loop(seconds, write_frame, range(1_000_000))
    if "edges" in names:
        loop(seconds, stage_io)
    if "native" in names:
        deep(20, loop, seconds, checksum, [bytes(200_000)])


def main():
    seconds, path = float(sys.argv[1]), sys.argv[2]
    names = sys.argv[3:] or ["noargs", "args", "sleep", "edges", "native"]
    go = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: go.set())
    print("ready", os.getpid(), flush=True)
    go.wait()
    t = threading.Thread(target=phases, args=(seconds, names), name="caller")
    t.start()
    t.join()
    with open(path, "w") as f:
        for name, s, e in log:
            f.write(f"{name} {s} {e}\n")


if __name__ == "__main__":
    main()
