#!/usr/bin/python3
"""MainThread joins short-lived threads one after another (each sleeps 20 ms) while a
pure-Python thread spins, holding the GIL but when the switch interval makes it let go. From
3.13 on a join waits in _PySemaphore_Wait, which takes the GIL back before it returns: when the
spinner holds it then, MainThread waits for the GIL inside its lock wait, and only from the
moment the joined thread ended.

    python3 py_gil_joins.py [JOINS]
"""
import sys
import threading
import time

stop = False


def spin():
    n = 0
    while not stop:
        n += 1


spinner = threading.Thread(target=spin, name="spinner")
spinner.start()
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 40):
    sleeper = threading.Thread(target=time.sleep, args=(0.02,), name="sleeper")
    sleeper.start()
    sleeper.join()
stop = True
spinner.join()
