#!/usr/bin/python3
"""A threaded Python pipeline with ground truth, for tracer's Python frames.

    source (paced) -> read_batch -> q1 -> decode_batch -> q2 -> write_batch

Three threads named with `threading` ("reader", "decoder", "writer"; their OS name stays
python3). Every stage function logs its own start and end with time.monotonic_ns() (the clock
tracer's timestamps use) and its thread's kernel tid; the log is written at exit:

    # pid PID
    # thread TID NAME
    TID FUNCTION START_NS END_NS

Prints "ready PID" once the threads run; with --wait-signal the stages start on SIGUSR1.
"""
import argparse
import os
import queue
import signal
import sys
import threading
import time

calls = []  # (tid, function, start, end): list.append is atomic under the GIL


def spin(ms):
    """Pure Python work for ms milliseconds of wall time."""
    end = time.monotonic_ns() + int(ms * 1e6)
    x = 0
    while time.monotonic_ns() < end:
        for i in range(200):
            x += i * i
    return x


def read_batch(n):
    t0 = time.monotonic_ns()
    spin(2)
    time.sleep(0.002)  # I/O
    calls.append((threading.get_native_id(), "read_batch", t0, time.monotonic_ns()))
    return n


def decode_batch(item):
    t0 = time.monotonic_ns()
    spin(5)
    calls.append((threading.get_native_id(), "decode_batch", t0, time.monotonic_ns()))
    return item


def write_batch(item):
    t0 = time.monotonic_ns()
    time.sleep(0.003)
    spin(1)
    calls.append((threading.get_native_id(), "write_batch", t0, time.monotonic_ns()))


def reader(stop, q1, period):
    n = 0
    next_t = time.monotonic()
    while not stop.is_set():
        next_t += period
        time.sleep(max(0.0, next_t - time.monotonic()))  # the source's pace
        q1.put(read_batch(n))
        n += 1
    q1.put(None)


def decoder(q1, q2):
    while True:
        item = q1.get()
        if item is None:
            break
        q2.put(decode_batch(item))
    q2.put(None)


def writer(q2):
    while True:
        item = q2.get()
        if item is None:
            break
        write_batch(item)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--period", type=float, default=0.012, help="seconds between batches")
    ap.add_argument("--log", default=None)
    ap.add_argument("--wait-signal", action="store_true")
    a = ap.parse_args()
    go = threading.Event()
    if a.wait_signal:
        signal.signal(signal.SIGUSR1, lambda *_: go.set())
    else:
        go.set()
    stop = threading.Event()
    q1, q2 = queue.Queue(maxsize=8), queue.Queue(maxsize=8)
    tids = {}

    def run(name, fn, *args):
        tids[name] = threading.get_native_id()
        go.wait()
        fn(*args)

    threads = [
        threading.Thread(target=run, name="reader", args=("reader", reader, stop, q1, a.period)),
        threading.Thread(target=run, name="decoder", args=("decoder", decoder, q1, q2)),
        threading.Thread(target=run, name="writer", args=("writer", writer, q2)),
    ]
    for t in threads:
        t.start()
    while len(tids) < 3:
        time.sleep(0.01)
    print("ready", os.getpid(), flush=True)
    while not go.wait(0.1):
        pass
    time.sleep(a.seconds)
    stop.set()
    for t in threads:
        t.join()
    if a.log:
        with open(a.log, "w") as f:
            f.write(f"# pid {os.getpid()}\n")
            for name, tid in tids.items():
                f.write(f"# thread {tid} {name}\n")
            for tid, fn, s, e in calls:
                f.write(f"{tid} {fn} {s} {e}\n")


if __name__ == "__main__":
    sys.exit(main())
