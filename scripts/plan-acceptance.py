#!/usr/bin/env python3
"""Prints experiments/plan-acceptance.md's table from plan directories that
scripts/plan-acceptance.sh filled: per plan, the limit, the recommended
setting, the plan's figures (validation split: its seed's validation AUC and
cost, and with a confirmation the cost's mean and range and the strongest
leak's range over the plan's seed and the confirmation seeds), and for the
fresh seeds of recheck-sweep.yaml the recommended setting's test AUC (its 95%
bootstrap interval), the test cost against no defence at the same seed (the
same test split; in brackets against no defence capped at the plan's
max_steps, when scripts/plan-acceptance.sh trained it), the strongest leak
against its chance floor (an embedding attack's net of the feature prior of the
same seed, PLANDIR/prior-sS, as the plan judges it; its raw figure in brackets)
and whether it meets the limit, and whether each fresh seed's test cost lies within the plan's 95% prediction
interval for a further seed's test cost (plan.csv confirm_cost_pi95_lo/hi; judged against no defence capped at
the plan's max_steps, the reference the plan's costs are measured against, when it was trained, else against
no defence; in brackets against the other). With a T-DCS floor (plan --min-tdcs) it also prints each
fresh seed's T-DCS on the test split, recomputed here from the runs' figures
(see tdcs below), and a seed meets the plan's limits only when it meets both.

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


def net_of_prior(summary, prior):
    """The run's leak figures with its embedding attacks judged beyond the
    passive's own columns, as the plan judges them (docs/methods/plan.md):
    for every series the feature prior of the same seed has (the same attack
    on the bottom as initialised: PLANDIR/prior-sS, trained from the plan's
    feature-prior.yaml), q95 |AUC - 1/2| becomes max(0, chance floor + q95 -
    max(the prior's q95, the prior's chance floor)). Returns a copy; without a prior, the raw figures."""
    leak = {k: dict(v) for k, v in summary.get("leak", {}).items()}
    for k, p in (prior or {}).get("leak", {}).items():
        if k in leak and p.get("q95_abs") is not None:
            v = leak[k]
            v["raw_q95_abs"] = v["q95_abs"]
            pq = max(p["q95_abs"], p.get("chance_q95_abs") or 0.0)  # a prior below chance counts as chance
            v["q95_abs"] = max(0.0, v["chance_q95_abs"] + v["q95_abs"] - pq)
    return dict(summary, leak=leak)


def strongest(summary):
    best = None
    for key, v in summary.get("leak", {}).items():
        if best is None or v["q95_abs"] > best[1]:
            best = (key, v["q95_abs"], v["chance_q95_abs"], v.get("raw_q95_abs"))
    return best


TUNED = "_tuned"


def tdcs(summary, ref_auc):
    """VFLAIR's T-DCS of a fresh run, computed independently of the Go code:
    the mean over the attacks of 1/(1 + sqrt(AP^2/2 + (MP - MP*)^2/2)), with
    AP = 2 x the attack's largest q95 |leak AUC - 1/2| over its layers (a
    tuned attacker's figure standing for its attack's), MP the run's test AUC
    and MP* no defence's test AUC with the same seed and split."""
    worst = {}
    for key, v in summary.get("leak", {}).items():
        a = key.split("/")[0]
        worst[a] = max(worst.get(a, 0.0), v["q95_abs"])
    for a in [a for a in worst if a.endswith(TUNED)]:
        worst[a[:-len(TUNED)]] = worst.pop(a)
    dm = summary["test_auc_selected"] - ref_auc
    dcs = [1 / (1 + ((2 * q) ** 2 / 2 + dm * dm / 2) ** 0.5) for q in worst.values()]
    return sum(dcs) / len(dcs)


def fresh_seeds(d):
    m = re.search(r"^seeds: \[(.*)\]", open(os.path.join(d, "recheck-sweep.yaml")).read(), re.M)
    return [int(s) for s in m.group(1).split(",")]


def main():
    print("| table | limit | recommended (rejected first) | plan: val AUC, cost on its seed; cost over the seeds, mean [range] | "
          "plan: strongest leak, its seed (chance); range over the seeds | fresh seeds | test AUC [95% bootstrap] | "
          "test cost vs no defence (capped as the plan) | strongest leak (chance)[, T-DCS] | met | "
          "within the cost interval |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d in sys.argv[1:]:
        pj = json.load(open(os.path.join(d, "plan.json")))
        limit, floor = pj.get("max_leak", 0) or 0, pj.get("min_tdcs", 0) or 0
        shown = " and ".join(([f"leak ≤ {limit}"] if limit else []) + ([f"T-DCS ≥ {floor}"] if floor else []))
        rows = list(csv.DictReader(open(os.path.join(d, "plan.csv"))))
        table = os.path.basename(os.path.normpath(d)).split("-")[0]
        rejected = [r["legend"] + (f' (prediction bound {float(r["confirm_leak_pred95"]):.3f})' if r.get("confirm_leak_pred95") else "")
                    for r in rows if r.get("confirmation") == "rejected"]
        rec = recommended(rows)
        if rec is None:
            print(f"| {table} | {shown} | nothing met (rejected: {', '.join(rejected) or 'none'}) | | | | | | | | |")
            continue
        name = rec["legend"] + (f" ({', '.join(rejected)} rejected)" if rejected else "")
        plan_cost = f'{float(rec["val_auc"]):.4f}, {float(rec["cost"]):+.4f}'
        plan_leak = f'{float(rec["strongest_leak"]):.3f} ({float(rec["chance"]):.3f}) {rec["strongest_attack"]}'
        if rec.get("confirm_seeds"):
            plan_cost += (f'; {float(rec["confirm_cost_mean"]):+.4f} [{float(rec["confirm_cost_min"]):+.4f}, '
                          f'{float(rec["confirm_cost_max"]):+.4f}] over {rec["confirm_seeds"]}')
            plan_leak += f'; {float(rec["confirm_leak_min"]):.3f}–{float(rec["confirm_leak_max"]):.3f}'
            if rec.get("confirm_leak_pred95"):
                plan_leak += f', a further seed at most {float(rec["confirm_leak_pred95"]):.3f} (95% prediction bound)'
        interval = None
        if rec.get("confirm_cost_pi95_lo") and rec.get("confirm_cost_pi95_hi"):
            interval = (float(rec["confirm_cost_pi95_lo"]), float(rec["confirm_cost_pi95_hi"]))
            plan_cost += f'; a further seed\'s test cost in [{interval[0]:+.4f}, {interval[1]:+.4f}] (95% prediction interval)'
        if floor:
            plan_leak += f'; T-DCS {float(rec["tdcs"]):.3f}'
            if rec.get("confirm_tdcs_min"):
                plan_leak += f', at least {float(rec["confirm_tdcs_min"]):.3f} over the seeds'
        seeds = fresh_seeds(d)
        aucs, costs, leaks, met, within = [], [], [], [], []
        for s in seeds:
            got = glob.glob(os.path.join(d, "recheck", f"*seed={s}", "summary.json"))
            none = os.path.join(d, f"none-s{s}", "summary.json")
            if not got or not os.path.exists(none):
                continue
            p, n = json.load(open(got[0])), json.load(open(none))
            prior = os.path.join(d, f"prior-s{s}", "summary.json")
            if os.path.exists(prior):
                p = net_of_prior(p, json.load(open(prior)))
            ci = p.get("test_auc_selected_ci95") or [float("nan")] * 2
            aucs.append(f'{p["test_auc_selected"]:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]')
            costs.append(f'{n["test_auc_selected"] - p["test_auc_selected"]:+.3f}')
            capped = os.path.join(d, f"nonecap-s{s}", "summary.json")
            full = n["test_auc_selected"] - p["test_auc_selected"]
            judged, other = full, None
            if os.path.exists(capped):
                c = json.load(open(capped))
                costs[-1] += f' ({c["test_auc_selected"] - p["test_auc_selected"]:+.3f})'
                judged, other = c["test_auc_selected"] - p["test_auc_selected"], full
            if interval:
                inside = lambda x: interval[0] <= x <= interval[1]
                within.append(("yes" if inside(judged) else "no") + f" ({judged:+.4f})"
                              + ("" if other is None else f" [{'yes' if inside(other) else 'no'} {other:+.4f}]"))
            k, q, c, raw = strongest(p)
            leaks.append(f"{q:.4f} ({c:.3f}) {k}" + (f" [raw {raw:.4f}]" if raw is not None else ""))
            ok = not limit or q <= limit
            if floor:
                t = tdcs(p, n["test_auc_selected"])
                leaks[-1] += f", T-DCS {t:.3f}"
                ok = ok and t >= floor
            met.append(ok)
        print(f'| {table} | {shown} | {name} | {plan_cost} | {plan_leak} | {", ".join(map(str, seeds))} | '
              f'{"; ".join(aucs)} | {" ".join(costs)} | {"; ".join(leaks)} | {sum(met)} of {len(met)} | '
              + (f'{sum(w.startswith("yes") for w in within)} of {len(within)}: {"; ".join(within)}' if interval else "no interval") + ' |')


if __name__ == "__main__":
    main()
