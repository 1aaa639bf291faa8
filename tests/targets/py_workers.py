#!/usr/bin/python3
"""A parent with worker processes it forked at start, as a multiprocessing pool or a DataLoader
has them: each worker runs crunch() every 10 ms for SECONDS. Prints "ready PID WORKER..." once
the workers run, for tracer --follow attached to the parent afterwards."""
import os
import sys
import time


def crunch():
    x = 0
    for i in range(20000):
        x += i * i
    return x


def worker(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        crunch()
        time.sleep(0.01)
    os._exit(0)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 4
    kids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            worker(seconds)
        kids.append(pid)
    print("ready", os.getpid(), *kids, flush=True)
    for pid in kids:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
