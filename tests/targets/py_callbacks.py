#!/usr/bin/python3
"""Native calls nested in native calls, with Python between them: stage() sorts with libc's
qsort, whose comparator is Python (ctypes); the comparator calls helper() twice, and helper()
calls libc's labs. So a probe hit on labs is nested in an open qsort call, under Python frames
that came after qsort's entry (the callback's). Logs how many calls of each it made:

    NAME COUNT

Prints "ready PID"; starts on SIGUSR1; runs ROUNDS sorts, then writes the counts to LOG."""
import ctypes
import os
import signal
import sys
import threading

libc = ctypes.CDLL("libc.so.6")
libc.labs.restype = ctypes.c_long
libc.labs.argtypes = [ctypes.c_long]
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_long), ctypes.POINTER(ctypes.c_long))
counts = {"stage": 0, "compare": 0, "helper": 0}


def helper(x):
    counts["helper"] += 1
    return libc.labs(x)


def compare(a, b):
    counts["compare"] += 1
    for i in range(2):  # two calls of helper from one line: only compare's i tells them apart
        helper(-i)
    return (a[0] > b[0]) - (a[0] < b[0])


def stage(values, cmp):
    counts["stage"] += 1
    arr = (ctypes.c_long * len(values))(*values)
    libc.qsort(arr, len(values), ctypes.sizeof(ctypes.c_long), cmp)
    return list(arr)


def main():
    rounds, path = int(sys.argv[1]), sys.argv[2]
    go = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: go.set())
    print("ready", os.getpid(), flush=True)
    go.wait()
    cmp = CMP(compare)
    for r in range(rounds):
        out = stage([(r * 7 + k * 13) % 11 for k in range(6)], cmp)
        assert out == sorted(out)
    with open(path, "w") as f:
        for name, n in counts.items():
            f.write(f"{name} {n}\n")


if __name__ == "__main__":
    main()
