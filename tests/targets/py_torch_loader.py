#!/usr/bin/python3
"""A PyTorch input pipeline as users write it: a Dataset whose __getitem__ decodes and augments
a sample (numpy work), a DataLoader with 2 persistent worker processes, and a small CNN under
torch.inference_mode() in the main process. Runs BATCHES batches and prints what it did.

    /usr/bin/python3 py_torch_loader.py [BATCHES] [--wait-signal] [--slow-data|--light-data]

With --wait-signal it prints "ready PID" once torch is imported and the model built, and starts
on SIGUSR1 (for a tracer attached by pid to count every batch). With --slow-data each sample takes
ten times the decoding: the workers cannot keep up and the model waits for its batches; with
--light-data a twelfth: the workers idle while the model runs.
"""
import os
import signal
import sys
import threading
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return augment(decode_sample(i))


PASSES = 120 if "--slow-data" in sys.argv else 1 if "--light-data" in sys.argv else 12


def decode_sample(i):
    rng = np.random.default_rng(i)
    img = rng.integers(0, 255, (3, 128, 128), dtype=np.uint8)
    for _ in range(PASSES):  # a stand-in for JPEG decoding: a few passes over the pixels
        img = np.sort(img, axis=2)
    return img


def augment(img):
    x = torch.from_numpy(img.astype(np.float32) / 255)
    return torch.flip(x, dims=[2])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3)
        self.c2 = nn.Conv2d(16, 16, 3)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.c2(torch.relu(self.c1(x))))
        return self.fc(x.mean(dim=(2, 3)))


def infer(model, batch):
    with torch.inference_mode():
        return model(batch).argmax(dim=1)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    batches = int(args[0]) if args else 60
    torch.set_num_threads(1)
    model = Net().eval()
    if "--wait-signal" in sys.argv:
        go = threading.Event()
        signal.signal(signal.SIGUSR1, lambda *_: go.set())
        print("ready", os.getpid(), flush=True)
        go.wait()
    loader = DataLoader(Frames(), batch_size=8, num_workers=2, persistent_workers=True)
    t0, n = time.monotonic(), 0
    for batch in loader:
        infer(model, batch)
        n += 1
        if n == batches:
            break
    print(f"py_torch_loader: {n} batches in {time.monotonic() - t0:.2f} s", flush=True)


if __name__ == "__main__":
    main()
