#!/usr/bin/python3
"""A small CNN under torch.inference_mode(), called from a Python function `infer` in a loop:
the PyTorch target of tracer's mixed-mode test (aten operators under the Python code that
called them). Prints "ready PID" once torch is imported and the model built; runs SECONDS."""
import os
import sys
import time

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3)
        self.c2 = nn.Conv2d(8, 8, 3)

    def forward(self, x):
        return self.c2(torch.relu(self.c1(x)))


def infer(model, x):
    with torch.inference_mode():
        return model(x)


def main():
    torch.set_num_threads(1)
    model = Net().eval()
    x = torch.randn(1, 3, 64, 64)
    print("ready", os.getpid(), flush=True)
    end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 10)
    while time.monotonic() < end:
        infer(model, x)
        time.sleep(0.002)


if __name__ == "__main__":
    main()
