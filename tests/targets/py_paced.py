"""A loop paced to whole milliseconds, for the tick that reads Python stacks: every 10 ms,
stage() works 2 ms, after() 1 ms, then the loop sleeps to the next period. stage() ends at
the same point of a millisecond each time, and not at a switch: a tick with a steady 1 ms
period would read the stack the same time after that end in every call, and the end, placed
midway between two reads, would be off by the same amount each time (up to half a tick: a
quarter of stage's 2 ms), never averaging out.

Prints "ready PID"; at exit writes the log (--log): TID FUNCTION START_NS END_NS."""
import argparse
import os
import sys
import threading
import time

calls = []


def spin(ns):
    end = time.monotonic_ns() + ns
    while time.monotonic_ns() < end:
        pass


def stage():
    t0 = time.monotonic_ns()
    spin(2_000_000)
    calls.append((threading.get_native_id(), "stage", t0, time.monotonic_ns()))


def after():
    spin(1_000_000)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    print("ready", os.getpid(), flush=True)
    next_t = time.monotonic_ns()
    end = next_t + int(a.seconds * 1e9)
    while next_t < end:
        next_t += 10_000_000
        time.sleep(max(0, next_t - time.monotonic_ns()) / 1e9)
        stage()
        after()
    with open(a.log, "w") as f:
        f.write(f"# pid {os.getpid()}\n")
        for tid, fn, s, e in calls:
            f.write(f"{tid} {fn} {s} {e}\n")


if __name__ == "__main__":
    sys.exit(main())
