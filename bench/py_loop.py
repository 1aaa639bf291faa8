#!/usr/bin/python3
"""A pure Python loop for `make bench`: nested calls (so every stack read has frames to walk),
no syscalls. Prints "ready PID", waits for SIGUSR1, runs SECONDS of wall time, then prints
"calls N cpu_ns C wall_ns W" (its own process CPU time over the run)."""
import os
import signal
import sys
import time


def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def middle(n):
    return leaf(n) + leaf(n // 2)


def step(depth, n):
    if depth:
        return step(depth - 1, n)
    return middle(n)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    go = []
    signal.signal(signal.SIGUSR1, lambda *_: go.append(1))
    print("ready", os.getpid(), flush=True)
    while not go:
        time.sleep(0.005)
    calls = 0
    c0, w0 = time.process_time_ns(), time.monotonic_ns()
    end = w0 + int(seconds * 1e9)
    while time.monotonic_ns() < end:
        for _ in range(50):
            step(10, 300)
        calls += 50
    c1, w1 = time.process_time_ns(), time.monotonic_ns()
    print(f"calls {calls} cpu_ns {c1 - c0} wall_ns {w1 - w0}", flush=True)


if __name__ == "__main__":
    main()
