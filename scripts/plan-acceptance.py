#!/usr/bin/env python3
"""Prints experiments/plan-acceptance.md's table from plan directories that
scripts/plan-acceptance.sh filled: per plan, the limit, the recommended
setting, the plan's validation AUC, cost and strongest leak (seed 1,
validation split), and for the fresh seeds 2-4 the recommended setting's
test AUC (its 95% bootstrap interval), the test cost against no defence at
the same seed (same split), and the strongest leak against its chance floor.

Usage: plan-acceptance.py PLANDIR...
"""
import csv
import glob
import json
import os
import sys


def recommended(rows, limit):
    met = [r for r in rows if r["met"] == "true"]
    if not met:
        return None
    return min(met, key=lambda r: (float(r["cost"]), float(r["step_ms"] or 0), int(r["index"])))


def strongest(summary):
    best = None
    for key, v in summary.get("leak", {}).items():
        if best is None or v["q95_abs"] > best[1]:
            best = (key, v["q95_abs"], v["chance_q95_abs"])
    return best


def main():
    print("| table | limit | recommended | plan: val AUC (cost) | plan: strongest leak (chance) | "
          "fresh seeds 2–4: test AUC [95% bootstrap] | test cost vs no defence, seeds 2–4 | "
          "strongest leak (chance), seeds 2–4 | met on all 3 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in sys.argv[1:]:
        limit = json.load(open(os.path.join(d, "plan.json")))["max_leak"]
        rows = list(csv.DictReader(open(os.path.join(d, "plan.csv"))))
        table = os.path.basename(os.path.normpath(d)).split("-")[0]
        rec = recommended(rows, limit)
        if rec is None:
            print(f"| {table} | {limit} | nothing met | | | | | | |")
            continue
        aucs, costs, leaks, met = [], [], [], 0
        for s in (2, 3, 4):
            got = glob.glob(os.path.join(d, "recheck", f"*seed={s}", "summary.json"))
            none = os.path.join(d, f"none-s{s}", "summary.json")
            if not got or not os.path.exists(none):
                continue
            p, n = json.load(open(got[0])), json.load(open(none))
            ci = p.get("test_auc_selected_ci95") or [float("nan")] * 2
            aucs.append(f'{p["test_auc_selected"]:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]')
            costs.append(f'{n["test_auc_selected"] - p["test_auc_selected"]:+.3f}')
            k, q, c = strongest(p)
            leaks.append(f"{q:.3f} ({c:.3f}) {k}")
            met += q <= limit
        print(f'| {table} | {limit} | {rec["legend"]} | {float(rec["val_auc"]):.4f} ({float(rec["cost"]):+.4f}) | '
              f'{float(rec["strongest_leak"]):.3f} ({float(rec["chance"]):.3f}) {rec["strongest_attack"]} | '
              f'{"; ".join(aucs)} | {" ".join(costs)} | {"; ".join(leaks)} | {met} of {len(leaks)} |')


if __name__ == "__main__":
    main()
