#!/usr/bin/python3
"""A GIL-bound pipeline: one thread runs pure Python flat out (holding the GIL), another makes
short native calls that release the GIL (a blocking lock acquire) and must take it back each
time: it waits for the GIL far longer than it works. Prints "ready PID", and at the end what
each thread did.

Each of poll's calls waits for the GIL, however loaded the machine: crunch, holding the GIL,
is what ends the call (it releases the lock poll blocks on), so the GIL is held when poll asks
for it back, and crunch gives it up only when the interpreter's switch interval (5 ms) makes it.
(A timed sleep would not do: when crunch is not back on a CPU by the time the sleep ends, the
GIL is free and poll takes it at once; on a loaded 2-CPU machine a third of the sleeps did.)
Only the last call may find the GIL free: crunch ends it on its way out.

    /usr/bin/python3 py_gil.py [SECONDS]
"""
import os
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
stop = time.monotonic() + SECONDS
done = {}
go = threading.Lock()
go.acquire()  # poll blocks on it until crunch lets it through
waiting = False  # poll is in (or about to enter) go.acquire(), without the GIL
finished = False


def crunch():
    global waiting, finished
    n = 0
    while time.monotonic() < stop:
        for i in range(1000):
            n += i * i
        if waiting:
            waiting = False
            go.release()
    done["crunch"] = n
    finished = True
    if waiting:
        waiting = False
        go.release()


def poll():
    global waiting
    n = 0
    # both flags change only with the GIL held: once poll has set waiting, crunch (now or on
    # its way out) releases it
    while not finished:
        waiting = True
        go.acquire()  # releases the GIL; taking it back waits for crunch
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
