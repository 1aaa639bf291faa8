#!/usr/bin/python3
"""A pipeline that catches the errors OpenCV and PyTorch raise, as everyday Python does: bad
input to cv2.cvtColor (cv2.error, a cv::Exception thrown in C++) and mismatched shapes to
torch.cat (RuntimeError, a c10::Error), each caught with try/except, hundreds of times a
second, between good calls. Two threads, like a capture thread and a model thread.

Prints "ready PID" once cv2 and torch are imported; with --wait-signal starts on SIGUSR1. Every
call is logged with time.monotonic_ns() and its thread's kernel tid, written at exit in the
format of tests/targets/pipeline/'s log, with how it ended:

    # pid PID
    # thread TID NAME
    TID FUNCTION START_NS END_NS ret|exc

Its stdout depends only on what it computed: a traced run prints what an untraced one does."""
import argparse
import os
import signal
import sys
import threading
import time

import cv2
import numpy as np
import torch

calls = []  # (tid, function, start, end, how): list.append is atomic under the GIL


def logged(name, f, *args):
    t0 = time.monotonic_ns()
    try:
        out = f(*args)
    except (cv2.error, RuntimeError) as e:
        calls.append((threading.get_native_id(), name, t0, time.monotonic_ns(), "exc"))
        return e
    calls.append((threading.get_native_id(), name, t0, time.monotonic_ns(), "ret"))
    return out


def images(n, summary):
    img = np.full((48, 64, 3), 7, np.uint8)
    bad = np.zeros((4, 4, 2), np.uint8)  # two channels: BGR2GRAY refuses it
    total, errors = 0, set()
    for _ in range(n):
        small = logged("cv::resize", cv2.resize, img, (32, 24))
        total += int(small.sum())
        e = logged("cv::cvtColor", cv2.cvtColor, bad, cv2.COLOR_BGR2GRAY)
        errors.add(type(e).__name__)
    summary["images"] = (total, sorted(errors))


def tensors(n, summary):
    a, b = torch.ones(2, 3), torch.ones(3, 4)
    total, errors = 0.0, set()
    for _ in range(n):
        total += float(logged("at::_ops::add_Tensor::call", torch.add, a, a).sum())
        e = logged("at::_ops::cat::call", torch.cat, [a, b])
        errors.add(type(e).__name__)
    summary["tensors"] = (total, sorted(errors))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--wait-signal", action="store_true")
    ap.add_argument("--log")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.wait_signal:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    print("ready", os.getpid(), flush=True)
    if args.wait_signal:
        signal.sigwait({signal.SIGUSR1})
    summary = {}
    workers = [threading.Thread(target=images, args=(args.iterations, summary), name="capture"),
               threading.Thread(target=tensors, args=(args.iterations, summary), name="model")]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    print("images", summary["images"], "tensors", summary["tensors"], flush=True)
    if args.log:
        with open(args.log, "w") as f:
            f.write(f"# pid {os.getpid()}\n")
            for w in workers:
                f.write(f"# thread {w.native_id} {w.name}\n")
            for c in calls:
                f.write("%d %s %d %d %s\n" % c)
    print(f"py_cxx_errors: {args.iterations} iterations", file=sys.stderr)


if __name__ == "__main__":
    main()
