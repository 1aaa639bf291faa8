#!/usr/bin/python3
"""A GIL-bound pipeline: one thread runs pure Python flat out (holding the GIL), another makes
short native calls that release the GIL (time.sleep) and must take it back each time: it
waits for the GIL far longer than it works. Prints "ready PID", and at the end what each
thread did.

    /usr/bin/python3 py_gil.py [SECONDS]
"""
import os
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
stop = time.monotonic() + SECONDS
done = {}


def crunch():
    n = 0
    while time.monotonic() < stop:
        for i in range(1000):
            n += i * i
    done["crunch"] = n


def poll():
    n = 0
    while time.monotonic() < stop:
        time.sleep(0.0002)  # releases the GIL; taking it back waits for crunch
        n += 1
    done["poll"] = n


print("ready", os.getpid(), flush=True)
threads = [threading.Thread(target=crunch, name="crunch"),
           threading.Thread(target=poll, name="poll")]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"py_gil: poll made {done['poll']} calls", flush=True)
