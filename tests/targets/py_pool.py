#!/usr/bin/python3
"""A pipeline whose work runs in a multiprocessing.Pool, written the way its users write it: the
parent maps batches onto the pool and waits for the results. Prints "ready PID WORKER..." once
the pool's workers run, then goes on for SECONDS."""
import multiprocessing
import os
import sys
import time


def featurize(n):
    x = 0
    for i in range(n):
        x += i * i % 7
    return x


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 4
    with multiprocessing.Pool(2) as pool:
        pool.map(featurize, [10] * 4)  # the workers are up
        kids = [p.pid for p in multiprocessing.active_children()]
        print("ready", os.getpid(), *kids, flush=True)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pool.map(featurize, [200000] * 8)


if __name__ == "__main__":
    main()
