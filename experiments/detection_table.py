#!/usr/bin/env python3
"""Detection AUC and firing step of every two-party detector over a sweep of honest and cheating runs
(experiments/integrity-detection.yaml; docs/methods/integrity.md §11c). Standard library only.

    python3 experiments/detection_table.py out/integrity-detection
    python3 experiments/detection_table.py --selftest   # the AUC and the step summary against hand counts

A run is scored by each detector's largest score over the run (summary.json "integrity"); the
contribution check by minus its passive gain at the last evaluation (a free-rider's embedding helps the
top less). The detection AUC of a cheat is the Mann-Whitney AUC of its runs against the honest runs (ties
count one half). "Caught" counts cheating runs above every honest run's score: a threshold at the largest
honest score (no false alarm on these honest runs). "Fires at" is, over the caught runs, the median and
range of the first evaluation step (every eval_every steps) whose window score passes that threshold; for
the contribution check, the first evaluation from the cheat's first step on whose passive gain is below
every honest run's passive gain at the evaluations from that step on.
"""
import json
import os
import statistics
import sys


def auc(pos, neg):
    """Mann-Whitney AUC of scores pos (cheating) against neg (honest), ties one half."""
    s = 0.0
    for p in pos:
        for n in neg:
            s += 1.0 if p > n else 0.5 if p == n else 0.0
    return s / (len(pos) * len(neg))


def load(root):
    runs = []
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        if not os.path.exists(os.path.join(d, "summary.json")):
            continue
        with open(os.path.join(d, "summary.json")) as f:
            summ = json.load(f)
        with open(os.path.join(d, "eval.jsonl")) as f:
            evals = [json.loads(line) for line in f if line.strip()]
        cfg = {}
        with open(os.path.join(d, "config.yaml")) as f:
            for line in f:  # the top-level "key: value" lines are enough here
                if ":" in line and not line.startswith((" ", "#")):
                    k, v = line.split(":", 1)
                    cfg[k.strip()] = v.strip().strip('"')
        runs.append((name, cfg, summ, evals))
    return runs


def group(cfg):
    if cfg.get("backdoor"):
        name = cfg["backdoor"] + "".join(f" {k[9:]} {cfg[k]}" for k in ("backdoor_amplify", "backdoor_known", "backdoor_poison", "backdoor_pairing") if k in cfg)
        if cfg.get("backdoor_dry_run") == "true":
            name += " (dry run)"
        return name, int(cfg.get("backdoor_from", 0))
    if cfg.get("free_ride"):
        return "free_ride " + cfg["free_ride"], int(cfg.get("free_ride_from", 0))
    return "honest", 0


def main(root):
    runs = load(root)
    groups = {}
    for name, cfg, summ, evals in runs:
        summ["seed"] = cfg["seed"]
        groups.setdefault(group(cfg), []).append((summ, evals))
    honest = groups.pop(("honest", 0))
    honest_auc = {s["seed"]: s["test_auc_final"] for s, _ in honest}
    dets = sorted(honest[0][0]["integrity"])
    print(f"{len(honest)} honest runs")
    print("largest honest score: " + ", ".join(f"{d} {max(s['integrity'][d] for s, _ in honest):.3g}" for d in dets))
    for (cheat, start), rs in sorted(groups.items()):
        print(f"\n{cheat} (from step {start}), {len(rs)} runs")
        asr = [s["backdoor"]["asr"] for s, _ in rs if "backdoor" in s]
        if asr:
            cost = [honest_auc[s["seed"]] - s["backdoor"]["clean_test_auc"] for s, _ in rs]
            print(f"  attack success {min(asr):.3f}-{max(asr):.3f}, median {statistics.median(asr):.3f}, "
                  f"{sum(a >= 0.9 for a in asr)} of {len(asr)} at 0.9 or more; clean test AUC below the honest run "
                  f"of the same seed by {statistics.median(cost):+.4f} (median), {max(cost):+.4f} at most")
        if cheat.endswith("(dry run)"):
            continue  # an honest party: its detector scores are not a cheat's
        print("  detector | AUC | caught | fires at step (median, range)")
        for d in dets:
            neg = [s["integrity"][d] for s, _ in honest]
            pos = [s["integrity"][d] for s, _ in rs]
            thr = max(neg)
            steps = []
            for s, evals in rs:
                for e in evals:
                    if e.get("integrity", {}).get(d, 0) > thr:
                        steps.append(e["step"])
                        break
            print(f"  {d} | {auc(pos, neg):.3f} | {sum(p > thr for p in pos)}/{len(pos)} | {fmt(steps)}")
        if all("passive_gain_final" in s for s, _ in honest + rs):
            neg = [-s["passive_gain_final"] for s, _ in honest]
            pos = [-s["passive_gain_final"] for s, _ in rs]
            floor = min(e["passive_gain"] for _, ev in honest for e in ev if e["step"] >= start and "passive_gain" in e)
            steps = []
            for _, evals in rs:
                for e in evals:
                    if e["step"] >= start and e.get("passive_gain", floor) < floor:
                        steps.append(e["step"])
                        break
            print(f"  contribution (-passive gain) | {auc(pos, neg):.3f} | {sum(p > max(neg) for p in pos)}/{len(pos)} | "
                  f"{fmt(steps)} (gain below {floor:.4f})")


def fmt(steps):
    if not steps:
        return "-"
    return f"{statistics.median(steps):g} ({min(steps)}-{max(steps)}), {len(steps)} runs"


def selftest():
    """The AUC against pairs counted by hand: 3 > 1, 3 > 2, 2 > 1, 2 = 2 (one half): 3.5 of 4."""
    assert auc([3, 2], [1, 2]) == 0.875, auc([3, 2], [1, 2])
    assert auc([0], [1]) == 0.0 and auc([1], [1]) == 0.5
    assert fmt([96, 80, 128]) == "96 (80-128), 3 runs" and fmt([]) == "-"
    print("ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
    else:
        main(sys.argv[1])
