#!/usr/bin/python3
"""One split training step of the ISIC CNN (METHODS §6) in PyTorch, for
comparison with `go test -bench CNNStep ./bench/step/` (bench/step/cnn.go).

Passive: blocks 1..cut of [conv 3x3 'same' 64, ReLU, maxpool 2x2] on
84x84x3 inputs in [0, 1); active: the remaining blocks, flatten, Dense 64
ReLU, logit; BCE with logits (mean); Adam lr 1e-5 on both sides; the cut
gradient is handed from the active to the passive side as in a real split
step. Prints one JSON line: {"ms_per_step": ..., "examples_per_s": ...}.

Usage: /usr/bin/python3 bench/torch_cnn.py [--threads 1] [--batch 128] [--steps 3]
Run with OPENBLAS_NUM_THREADS=1 (docs/PERFORMANCE.md, "Before the project").
"""
import argparse
import json
import time

import torch
from torch import nn


def blocks(cin, n, filters):
    layers = []
    for _ in range(n):
        layers += [nn.Conv2d(cin, filters, 3, padding="same"), nn.ReLU(), nn.MaxPool2d(2)]
        cin = filters
    return nn.Sequential(*layers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--size", type=int, default=84)
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--cut", type=int, default=4)
    ap.add_argument("--filters", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)

    side = args.size
    for _ in range(args.blocks):
        side //= 2
    bottom = blocks(3, args.cut, args.filters)
    top = nn.Sequential(
        blocks(args.filters, args.blocks - args.cut, args.filters),
        nn.Flatten(),
        nn.Linear(side * side * args.filters, 64),
        nn.ReLU(),
        nn.Linear(64, 1),
    )
    opt_b = torch.optim.Adam(bottom.parameters(), lr=1e-5)
    opt_t = torch.optim.Adam(top.parameters(), lr=1e-5)
    loss_fn = nn.BCEWithLogitsLoss()

    xs = [torch.rand(args.batch, 3, args.size, args.size) for _ in range(2)]
    ys = [(torch.rand(args.batch, 1) < 0.1).float() for _ in range(2)]

    def step(i):
        x, y = xs[i % 2], ys[i % 2]
        e = bottom(x)  # passive forward
        e_recv = e.detach().requires_grad_()  # the cut: what the active party receives
        loss = loss_fn(top(e_recv), y)
        opt_t.zero_grad()
        loss.backward()  # active backward, gives the cut gradient
        opt_t.step()
        opt_b.zero_grad()
        e.backward(e_recv.grad)  # passive backward with the received gradient
        opt_b.step()
        return loss.item()

    for i in range(args.warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(args.steps):
        step(i)
    dt = (time.perf_counter() - t0) / args.steps
    print(json.dumps({
        "ms_per_step": round(dt * 1e3, 1),
        "examples_per_s": round(args.batch / dt, 1),
        "threads": args.threads,
        "batch": args.batch,
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
