#!/usr/bin/python3
"""Paired step timings: run two benchmark commands in turn (A B A B ...),
each printing one JSON object with "ms_per_step" (splitguard bench --json,
bench/torch_wdl.py, bench/torch_cnn.py), and report each one's median,
min and max ms per step and the ratio B/A taken pair by pair (how many
times faster A is than B). Pairing keeps the ratio meaningful on a shared
machine whose speed drifts between runs.

Usage:
    bench/paired.py --runs 5 \\
        --a 'splitguard bench --model wdl --json' \\
        --b 'env OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/torch_wdl.py --threads 2'
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys


def run(cmd):
    out = subprocess.run(shlex.split(cmd), check=True, capture_output=True, text=True).stdout
    for line in reversed(out.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)["ms_per_step"]
    sys.exit(f"paired: no JSON line with ms_per_step in the output of {cmd!r}:\n{out}")


def spread(v):
    return f"median {statistics.median(v):.2f}, min {min(v):.2f}, max {max(v):.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    o = ap.parse_args()
    if o.runs < 1:
        sys.exit("paired: --runs must be at least 1")
    a, b = [], []
    for i in range(o.runs):
        a.append(run(o.a))
        b.append(run(o.b))
        print(f"pair {i + 1}: A {a[-1]:.2f} ms/step, B {b[-1]:.2f} ms/step, B/A {b[-1] / a[-1]:.2f}", flush=True)
    r = [y / x for x, y in zip(a, b)]
    print(f"A ms/step: {spread(a)}  ({o.a})")
    print(f"B ms/step: {spread(b)}  ({o.b})")
    print(f"B/A per pair: {spread(r)}")


if __name__ == "__main__":
    main()
