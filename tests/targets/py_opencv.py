#!/usr/bin/python3
"""An OpenCV pipeline with ground truth, for tracer's opencv pack (Debian's python3-opencv):

    cv2.VideoCapture (reader thread) -> queue.Queue -> cvtColor, resize, GaussianBlur (worker)

It writes its input video first (cv2.VideoWriter, MJPG), then prints "ready PID"; with
--wait-signal the pipeline starts on SIGUSR1 (cv2 is imported by then: a tracer started
before it has had the time to pick the pack). Every OpenCV call is logged with
time.monotonic_ns() (the clock of tracer's timestamps) and its thread's kernel tid; the log is
written at exit in the format of tests/targets/pipeline/'s:

    # pid PID
    # thread TID NAME
    TID FUNCTION START_NS END_NS
"""
import argparse
import os
import queue
import signal
import sys
import tempfile
import threading
import time

import cv2
import numpy as np

calls = []  # (tid, function, start, end): list.append is atomic under the GIL


def logged(name, f, *args):
    t0 = time.monotonic_ns()
    out = f(*args)
    calls.append((threading.get_native_id(), name, t0, time.monotonic_ns()))
    return out


def make_video(path, frames, size):
    w = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"MJPG"), 25, size)
    for i in range(frames):
        img = np.zeros((size[1], size[0], 3), np.uint8)
        cv2.circle(img, (20 + 7 * i % size[0], size[1] // 2), 30, (0, 200, 255), -1)
        w.write(img)
    w.release()


def reader(path, q):
    cap = cv2.VideoCapture(path)
    while True:
        ok, frame = logged("cv::VideoCapture::read", cap.read)
        if not ok:
            break
        q.put(frame)
    q.put(None)


def worker(q, out):
    while True:
        frame = q.get()
        if frame is None:
            return
        gray = logged("cv::cvtColor", cv2.cvtColor, frame, cv2.COLOR_BGR2GRAY)
        small = logged("cv::resize", cv2.resize, gray, (160, 120))
        out.append(logged("cv::GaussianBlur", cv2.GaussianBlur, small, (5, 5), 0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=50)
    ap.add_argument("--log")
    ap.add_argument("--wait-signal", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="py_opencv.")
    path = os.path.join(tmp, "in.avi")
    make_video(path, a.frames, (640, 480))
    go = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: go.set())
    print("ready", os.getpid(), flush=True)
    if a.wait_signal:
        go.wait()
    q, out = queue.Queue(maxsize=4), []
    threads = [threading.Thread(target=reader, args=(path, q), name="reader"),
               threading.Thread(target=worker, args=(q, out), name="worker")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    os.remove(path)
    os.rmdir(tmp)
    if a.log:
        with open(a.log, "w") as f:
            f.write(f"# pid {os.getpid()}\n")
            for t in threads:
                f.write(f"# thread {t.native_id} {t.name}\n")
            for tid, name, s, e in calls:
                f.write(f"{tid} {name} {s} {e}\n")
    print(f"py_opencv: {len(out)} frames", flush=True)
    return 0 if len(out) == a.frames else 1


if __name__ == "__main__":
    sys.exit(main())
