#!/usr/bin/env python3
"""The split Wide&Deep training step of `splitguard bench --model wdl`, in PyTorch.

Same shapes and work as step.WDL (bench/step): batch 1024, 26 categorical tables of
100,000 rows, 13 dense columns; passive = deep embeddings (dim 4) + 3 x
Dense(128)+ReLU; active = 3 x Dense(128)+ReLU -> logit, plus a wide part
(dim-1 embeddings + linear on dense); BCE with logits (mean); the gradient at
the cut is injected into the passive backward; sparse embeddings updated by
SparseAdam, everything else by Adam (lr 1e-4). Ids are uniform over each
table, as in the Go benchmark. L2 on the touched embedding rows is omitted
(torch's sparse path has no cheap way to express it; it is a few microseconds
in the Go step).

Run with Debian's interpreter, which has torch 1.13:
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/torch_wdl.py --threads 1
Prints one JSON object: {"ms_per_step": ..., "examples_per_s": ...}.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn as nn


class Bottom(nn.Module):
    def __init__(self, fields, vocab, dense, dim, widths):
        super().__init__()
        self.fields, self.vocab = fields, vocab
        # One table holding every field's rows (offsets per field), as in Go.
        self.emb = nn.Embedding(fields * vocab, dim, sparse=True)
        nn.init.uniform_(self.emb.weight, -0.05, 0.05)
        layers, w = [], fields * dim + dense
        for out in widths:
            layers += [nn.Linear(w, out), nn.ReLU()]
            w = out
        self.mlp = nn.Sequential(*layers)

    def forward(self, ids, x):
        e = self.emb(ids).reshape(ids.shape[0], -1)
        return self.mlp(torch.cat([e, x], dim=1))


class Top(nn.Module):
    def __init__(self, fields, vocab, dense, cut, widths):
        super().__init__()
        layers, w = [], cut
        for out in widths:
            layers += [nn.Linear(w, out), nn.ReLU()]
            w = out
        layers.append(nn.Linear(w, 1))
        self.deep = nn.Sequential(*layers)
        self.wide_emb = nn.Embedding(fields * vocab, 1, sparse=True)
        nn.init.uniform_(self.wide_emb.weight, -0.05, 0.05)
        self.wide_lin = nn.Linear(dense, 1)

    def forward(self, e, ids, x):
        wide = self.wide_emb(ids).sum(dim=(1, 2)) + self.wide_lin(x).squeeze(1)
        return self.deep(e).squeeze(1) + wide


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=100000)
    ap.add_argument("--fields", type=int, default=26)
    ap.add_argument("--dense", type=int, default=13)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    g = torch.Generator().manual_seed(1)

    bot = Bottom(a.fields, a.vocab, a.dense, 4, [128] * 3)
    top = Top(a.fields, a.vocab, a.dense, 128, [128] * 3)
    lr = 1e-4
    opts = [
        torch.optim.SparseAdam([bot.emb.weight, top.wide_emb.weight], lr=lr),
        torch.optim.Adam(list(bot.mlp.parameters()), lr=lr),
        torch.optim.Adam(list(top.deep.parameters()) + list(top.wide_lin.parameters()), lr=lr),
    ]
    offsets = torch.arange(a.fields) * a.vocab
    batches = []
    for _ in range(8):
        ids = torch.randint(0, a.vocab, (a.batch, a.fields), generator=g) + offsets
        x = torch.rand(a.batch, a.dense, generator=g)
        y = (torch.rand(a.batch, generator=g) < 0.25).float()
        batches.append((ids, x, y))
    lossf = nn.BCEWithLogitsLoss()

    def step(k):
        ids, x, y = batches[k % len(batches)]
        for o in opts:
            o.zero_grad(set_to_none=True)
        # passive forward; the cut embedding crosses to the active party
        e = bot(ids, x)
        e_act = e.detach().requires_grad_(True)
        # active forward + backward
        loss = lossf(top(e_act, ids, x), y)
        loss.backward()
        # passive backward with the injected cut gradient
        e.backward(e_act.grad)
        for o in opts:
            o.step()

    times = []
    for k in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        step(k)
        if k >= a.warmup:
            times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    print(json.dumps({
        "ms_per_step": round(ms, 3),
        "examples_per_s": round(a.batch / ms * 1e3, 1),
        "engine": "torch " + torch.__version__,
        "threads": a.threads,
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
        "batch": a.batch,
        "vocab": a.vocab,
    }))


if __name__ == "__main__":
    main()
