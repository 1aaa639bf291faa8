#!/usr/bin/python3
"""A training loop's input side as often written: a fresh DataLoader every epoch (no
persistent_workers), so its worker processes are forked at each epoch's start and exit at its
end, a few times a second. Prints "ready PID" after the first epoch, then runs for SECONDS.

    /usr/bin/python3 py_loader_epochs.py [SECONDS] [WORKERS]
"""
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Tiles(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        x = torch.ones(64, 64)
        for _ in range(10):
            x = x @ x / 64
        return x


def epoch(workers):
    for _ in DataLoader(Tiles(), batch_size=4, num_workers=workers):
        pass


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    torch.set_num_threads(1)
    epoch(workers)
    print("ready", os.getpid(), flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        epoch(workers)


if __name__ == "__main__":
    main()
