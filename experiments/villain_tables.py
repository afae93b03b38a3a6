#!/usr/bin/env python3
"""VILLAIN per table over seeds (scripts/villain-tables.sh; docs/methods/integrity.md §10d). Standard
library only.

    python3 experiments/villain_tables.py OUTDIR/runs.jsonl
    python3 experiments/villain_tables.py --selftest   # the summary against hand counts

Per table: each seed's attack success rate, its dry run's (the same trigger on the honestly trained
model), the clean cost (the dry run's test AUC, which is the honest run's, minus the attacked run's clean
test AUC), the inferred rows and their precision; then the median success over seeds and whether the table
meets "median ≥ 0.9 at a clean cost ≤ 0.01 on every seed".
"""
import json
import statistics
import sys


def summarise(attack, dry):
    """attack, dry: {seed: backdoor summary} of one table; returns per-seed rows and the verdict."""
    rows = []
    for s in sorted(attack):
        a, d = attack[s], dry.get(s)
        cost = None if d is None else d["clean_test_auc"] - a["clean_test_auc"]
        rows.append({"seed": s, "asr": a["asr"], "dry": None if d is None else d["asr"], "cost": cost,
                     "honest_auc": None if d is None else d["clean_test_auc"],
                     "inferred": a.get("inferred", 0), "precision": a.get("inferred_precision"),
                     "by_conf": a.get("asr_by_confidence")})
    med = statistics.median(r["asr"] for r in rows)
    costs = [r["cost"] for r in rows if r["cost"] is not None]
    meets = med >= 0.9 and len(costs) == len(rows) and max(costs) <= 0.01
    return rows, med, meets


def fmt(x, spec):
    return "—" if x is None else format(x, spec)


def main(path):
    attack, dry, order = {}, {}, []
    for line in open(path):
        r = json.loads(line)
        b = json.load(open(r["summary"]))["backdoor"]
        if r["table"] not in order:
            order.append(r["table"])
        (dry if r["dry"] else attack).setdefault(r["table"], {})[r["seed"]] = b
    print("| table | seed | success | dry run | honest test AUC | clean cost | inferred (precision) | by confidence quarter |")
    print("|---|---|---|---|---|---|---|---|")
    verdicts = []
    for t in order:
        if t not in attack:
            continue
        rows, med, meets = summarise(attack[t], dry.get(t, {}))
        for r in rows:
            conf = " / ".join(f"{x:.2f}" for x in r["by_conf"] or [])
            print(f"| {t} | {r['seed']} | {r['asr']:.3f} | {fmt(r['dry'], '.3f')} | {fmt(r['honest_auc'], '.4f')} | "
                  f"{fmt(r['cost'], '+.4f')} | "
                  f"{r['inferred']} ({fmt(r['precision'], '.3f')}) | {conf} |")
        verdicts.append((t, med, meets))
    print()
    for t, med, meets in verdicts:
        print(f"{t}: median success {med:.3f}, {'meets' if meets else 'does not meet'} median ≥ 0.9 at clean cost ≤ 0.01")


def selftest():
    a = {1: {"asr": 0.95, "clean_test_auc": 0.80}, 2: {"asr": 0.5, "clean_test_auc": 0.79},
         3: {"asr": 0.91, "clean_test_auc": 0.70}}
    d = {1: {"asr": 0.1, "clean_test_auc": 0.805}, 2: {"asr": 0.0, "clean_test_auc": 0.79},
         3: {"asr": 0.2, "clean_test_auc": 0.705}}
    rows, med, meets = summarise(a, d)
    assert med == 0.91, med
    assert meets, rows  # costs 0.005, 0, 0.005
    assert abs(rows[0]["cost"] - 0.005) < 1e-12
    d[2]["clean_test_auc"] = 0.801  # seed 2 costs 0.011 > 0.01
    assert not summarise(a, d)[2]
    a[3]["asr"] = 0.89  # median 0.89 < 0.9
    d[2]["clean_test_auc"] = 0.79
    assert not summarise(a, d)[2]
    print("selftest ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
    else:
        main(sys.argv[1])
