#!/usr/bin/python3
"""An OpenCV stage whose work runs on OpenCV's own thread pool, written as users write it: a
reader thread puts frames on a queue.Queue, a `worker` thread takes them and runs
cv2.bilateralFilter, which OpenCV splits across its pool threads (unnamed: the kernel calls them
python3) while `worker` waits for them. The worker stage is the bottleneck: the reader waits on
the full queue. Prints "ready PID" and runs for SECONDS, then prints "frames N"."""
import os
import queue
import sys
import threading
import time

import cv2
import numpy as np


def reader(q, stop):
    frame = np.random.default_rng(1).integers(0, 255, (360, 480, 3), dtype=np.uint8)
    while not stop.is_set():
        try:
            q.put(frame.copy(), timeout=0.1)
        except queue.Full:
            pass


def worker(q, stop, done):
    while not stop.is_set():
        try:
            frame = q.get(timeout=0.1)
        except queue.Empty:
            continue
        cv2.bilateralFilter(frame, 9, 75, 75)
        done[0] += 1


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5
    cv2.setNumThreads(2)
    q, stop, done = queue.Queue(maxsize=4), threading.Event(), [0]
    threads = [threading.Thread(target=reader, args=(q, stop), name="reader"),
               threading.Thread(target=worker, args=(q, stop, done), name="worker")]
    for t in threads:
        t.start()
    print("ready", os.getpid(), flush=True)
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    print("frames", done[0], flush=True)


if __name__ == "__main__":
    main()
