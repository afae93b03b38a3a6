#!/usr/bin/env python3
"""The default detector set's alarms over a sweep or a folder of runs (docs/methods/integrity.md §11f;
experiments/integrity-defaults.yaml, scripts/integrity-defaults-tables.sh). Standard library only.

    python3 experiments/defaults_table.py DIR [DIR ...]

Every run directory below DIR (one holding summary.json and config.yaml) is put in a group by its table
(key data's file name, or "Criteo-shaped"), its protection and its free-riding mode. Per group: the runs, how
many raised an alarm (summary.json integrity_alarms) or were stopped (integrity_alarm), the largest score of
each default detector over the runs (summary.json integrity), and for the alarmed runs the first alarm's step
(median and range) and the batches alarmed over the batches from the cheat's first step on.
"""
import json
import os
import statistics
import sys


def config(path):
    cfg = {}
    with open(path) as f:
        for line in f:  # the top-level "key: value" lines are enough here
            if ":" in line and not line.startswith((" ", "#")):
                k, v = line.split(":", 1)
                cfg[k.strip()] = v.strip().strip('"')
    return cfg


def runs(roots):
    for root in roots:
        for d, _, files in sorted(os.walk(root)):
            if "summary.json" in files and "config.yaml" in files:
                with open(os.path.join(d, "summary.json")) as f:
                    yield config(os.path.join(d, "config.yaml")), json.load(f)


def group(cfg):
    table = os.path.basename(cfg.get("data", "")).removesuffix(".csv") or "Criteo-shaped"
    prot = cfg.get("protect", "none")
    cheat = cfg.get("free_ride", "") and "free_ride " + cfg["free_ride"]
    return table, prot, cheat or "honest"


def main(roots):
    groups = {}
    for cfg, s in runs(roots):
        groups.setdefault(group(cfg), []).append((cfg, s))
    print("| table | protection | party | runs | alarmed | stopped | largest score | first alarm step, median (range) | batches alarmed / from the cheat on |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in sorted(groups):
        rs = groups[key]
        alarmed = [s for _, s in rs if s.get("integrity_alarms")]
        stopped = sum(1 for _, s in rs if s.get("integrity_alarm"))
        scores = {}
        for _, s in rs:
            for k, v in (s.get("integrity") or {}).items():
                scores[k] = max(scores.get(k, v), v)
        steps = [s["integrity_alarms"][0]["first_step"] for s in alarmed]
        frac = ""
        if alarmed and key[2] != "honest":
            got = sum(s["integrity_alarms"][0]["batches"] for s in alarmed)
            span = sum(s["steps"] - int(cfg.get("free_ride_from", 0)) for cfg, s in rs if s.get("integrity_alarms"))
            frac = f"{got} / {span}"
        where = f"{statistics.median(steps):g} ({min(steps)}–{max(steps)})" if steps else "–"
        sc = ", ".join(f"{k} {v:.3g}" for k, v in sorted(scores.items())) or "none"
        print(f"| {key[0]} | {key[1]} | {key[2]} | {len(rs)} | {len(alarmed)} | {stopped} | {sc} | {where} | {frac} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
