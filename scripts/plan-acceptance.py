#!/usr/bin/env python3
"""Prints experiments/plan-acceptance.md's table from plan directories that
scripts/plan-acceptance.sh filled: per plan, the limit, the recommended
setting, the plan's figures (validation split: its seed's validation AUC and
cost, and with a confirmation the cost's mean and range and the strongest
leak's range over the plan's seed and the confirmation seeds), and for the
fresh seeds of recheck-sweep.yaml the recommended setting's test AUC (its 95%
bootstrap interval), the test cost against no defence at the same seed (the
same test split), the strongest leak against its chance floor and whether
it meets the limit.

Usage: plan-acceptance.py PLANDIR...
"""
import csv
import glob
import json
import os
import re
import sys


def recommended(rows):
    """The confirmed row, or without a confirmation the one-seed choice."""
    conf = [r for r in rows if r.get("confirmation") == "confirmed"]
    if conf:
        return conf[0]
    if any(r.get("confirmation") for r in rows):
        return None  # candidates rejected or pending: nothing recommended
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


def fresh_seeds(d):
    m = re.search(r"^seeds: \[(.*)\]", open(os.path.join(d, "recheck-sweep.yaml")).read(), re.M)
    return [int(s) for s in m.group(1).split(",")]


def main():
    print("| table | limit | recommended (rejected first) | plan: val AUC, cost on its seed; cost over the seeds, mean [range] | "
          "plan: strongest leak, its seed (chance); range over the seeds | fresh seeds | test AUC [95% bootstrap] | "
          "test cost vs no defence | strongest leak (chance) | met |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d in sys.argv[1:]:
        limit = json.load(open(os.path.join(d, "plan.json")))["max_leak"]
        rows = list(csv.DictReader(open(os.path.join(d, "plan.csv"))))
        table = os.path.basename(os.path.normpath(d)).split("-")[0]
        rejected = [r["legend"] for r in rows if r.get("confirmation") == "rejected"]
        rec = recommended(rows)
        if rec is None:
            print(f"| {table} | {limit} | nothing met (rejected: {', '.join(rejected) or 'none'}) | | | | | | | |")
            continue
        name = rec["legend"] + (f" ({', '.join(rejected)} rejected)" if rejected else "")
        plan_cost = f'{float(rec["val_auc"]):.4f}, {float(rec["cost"]):+.4f}'
        plan_leak = f'{float(rec["strongest_leak"]):.3f} ({float(rec["chance"]):.3f}) {rec["strongest_attack"]}'
        if rec.get("confirm_seeds"):
            plan_cost += (f'; {float(rec["confirm_cost_mean"]):+.4f} [{float(rec["confirm_cost_min"]):+.4f}, '
                          f'{float(rec["confirm_cost_max"]):+.4f}] over {rec["confirm_seeds"]}')
            plan_leak += f'; {float(rec["confirm_leak_min"]):.3f}–{float(rec["confirm_leak_max"]):.3f}'
        seeds = fresh_seeds(d)
        aucs, costs, leaks, met = [], [], [], []
        for s in seeds:
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
            met.append(q <= limit)
        print(f'| {table} | {limit} | {name} | {plan_cost} | {plan_leak} | {", ".join(map(str, seeds))} | '
              f'{"; ".join(aucs)} | {" ".join(costs)} | {"; ".join(leaks)} | {sum(met)} of {len(met)} |')


if __name__ == "__main__":
    main()
