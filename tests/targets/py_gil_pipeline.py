#!/usr/bin/python3
"""Two pipelines for the GIL verdict, each with what it is bound by known by construction.

gil (the default): a pure-Python parser thread runs flat out, holding the GIL but when the
interpreter's switch interval makes it let go; two featurizer threads do native work with the
GIL released (numpy's matrix product with "numpy", else hashlib's sha256 of 32 KB) and take it
back after each call. They wait on nothing else: whatever time they spend off a CPU, they spend
waiting for the GIL, and they get far less done than their CPUs would let them.

queue: the same threads, but the parser sleeps 20 ms between records and each featurizer waits
for them on a queue.Queue: they wait on the queue, not for the GIL.

Prints "ready PID", and at the end one line per thread: "NAME tid TID cpu CPU_MS wall WALL_MS
calls N from T0 to T1" (CPU_MS the thread's own CPU time, time.thread_time; T0 and T1 the
CLOCK_MONOTONIC ns it measured between: a thread takes the GIL before its first Python, so its
first wait is before T0).

    python3 py_gil_pipeline.py [--mode gil|queue] [--work numpy|hash] [--seconds S]
"""
import argparse
import hashlib
import os
import queue
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--mode", choices=["gil", "queue"], default="gil")
ap.add_argument("--work", choices=["numpy", "hash"], default="hash")
ap.add_argument("--seconds", type=float, default=2.0)
args = ap.parse_args()

stop = time.monotonic() + args.seconds
results = []
records = queue.Queue()

if args.work == "numpy":
    import numpy
    matrix = numpy.random.default_rng(1).random((64, 64))

    def native():
        return float((matrix @ matrix)[0, 0])
else:
    data = os.urandom(32 * 1024)

    def native():
        return hashlib.sha256(data).digest()[0]  # releases the GIL from 2 KB on


def report(name, t0, c0, calls):
    t1 = time.monotonic_ns()
    results.append(f"{name} tid {threading.get_native_id()} "
                   f"cpu {(time.thread_time() - c0) * 1e3:.1f} "
                   f"wall {(t1 - t0) / 1e6:.1f} calls {calls} from {t0} to {t1}")


def parse(line):
    """Pure Python: split a CSV line and sum its fields."""
    total = 0
    for field in line.split(","):
        total += int(field) * 3 + 1
    return total


def parser():
    t0, c0, n = time.monotonic_ns(), time.thread_time(), 0
    line = ",".join(str(i) for i in range(50))
    while time.monotonic() < stop:
        parse(line)
        n += 1
        if args.mode == "queue":
            records.put(n)
            records.put(n)
            time.sleep(0.02)
    for _ in range(2):
        records.put(None)
    report("parser", t0, c0, n)


def featurize():
    return native()


def featurizer(name):
    t0, c0, n = time.monotonic_ns(), time.thread_time(), 0
    while time.monotonic() < stop:
        if args.mode == "queue" and records.get() is None:
            break
        featurize()
        n += 1
    report(name, t0, c0, n)


print("ready", os.getpid(), flush=True)
threads = [threading.Thread(target=parser, name="parser")]
threads += [threading.Thread(target=featurizer, args=(f"featurizer{i}",), name=f"featurizer{i}")
            for i in (1, 2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("\n".join(results), flush=True)
