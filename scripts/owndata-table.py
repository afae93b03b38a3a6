#!/usr/bin/env python3
"""Prints the table of experiments/own-data.md from the runs that scripts/owndata-run.sh made.

Input: a JSON-lines file, one run a line: table, mode (default or marvell4), seed, label,
positive, and summary (the path of its summary.json). Seed 1 is the command with no other
flag; seeds 2 and 3 show how much the figures move with the split and initialisation.
"""
import json
import sys
from collections import defaultdict


def load(path):
    runs = defaultdict(dict)
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            s = r.get("s")
            if s is None:
                with open(r["summary"]) as g:
                    s = json.load(g)
            runs[r["table"]][(r["mode"], r["seed"])] = (r, s)
    return runs


def main():
    runs = load(sys.argv[1])
    print("| data set | label = positive | rows (train/val/test) | positive rate | baseline test AUC | "
          "default run test AUC (Δ) | its 95% bootstrap interval | Δ's 95% paired interval | Marvell s=4 test AUC (Δ) | "
          "Δ default, seeds 1–3 | Δ Marvell, seeds 1–3 | norm leak q95\\|AUC−½\\| (chance) none → Marvell |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    within = 0
    for table, by in runs.items():
        r, d = by[("default", 1)]
        m = by.get(("marvell4", 1), (None, None))[1]
        base = d["baseline"]["test_auc"]
        rows = f'{d["train_rows"]}/{d["val_rows"]}/{d["test_rows"]}'

        def cell(s):
            if s is None:
                return "—"
            return f'{s["test_auc_selected"]:.4f} ({s["test_auc_selected"] - s["baseline"]["test_auc"]:+.4f})'

        def deltas(mode):
            ds = [s["test_auc_selected"] - s["baseline"]["test_auc"]
                  for (md, seed), (_, s) in sorted(by.items()) if md == mode]
            return " ".join(f"{x:+.3f}" for x in ds) if ds else "—"

        def leak(s):
            if not s or "norm/cut" not in s["leak"]:
                return "—"
            l = s["leak"]["norm/cut"]
            return f'{l["q95_abs"]:.3f} ({l["chance_q95_abs"]:.3f})'


        ci = d.get("test_auc_selected_ci95")
        interval = f"{ci[0]:.4f}–{ci[1]:.4f} (±{(ci[1] - ci[0]) / 2:.3f})" if ci else "—"
        dci = d.get("test_auc_minus_baseline_ci95")
        paired = f"{dci[0]:+.3f} to {dci[1]:+.3f}" if dci else "—"
        if d["test_auc_selected"] >= base - 0.02:
            within += 1
        print(f'| {table} | {r["label"]} = {r["positive"]} | {rows} | {d["train_pos_rate"]:.3f} | {base:.4f} | '
              f'{cell(d)} | {interval} | {paired} | {cell(m)} | {deltas("default")} | {deltas("marvell4")} | {leak(d)} → {leak(m)} |')
    print(f"\n{within} of {len(runs)} tables: default run (seed 1) within 0.02 of the baseline's test AUC or above.")
    per_seed(runs)


def per_seed(runs):
    """The default runs seed by seed: the closing table of issue 29's acceptance."""
    print("\n| data set | seed | rows (train/val/test) | positive rate | baseline test AUC | default run test AUC | "
          "its 95% bootstrap interval | Δ | Δ's 95% paired interval |")
    print("|---|---|---|---|---|---|---|---|---|")
    every = 0
    for table, by in runs.items():
        ok = True
        for (mode, seed), (_, d) in sorted(by.items()):
            if mode != "default":
                continue
            base = d["baseline"]["test_auc"]
            delta = d["test_auc_selected"] - base
            ok = ok and delta >= -0.02
            ci, dci = d.get("test_auc_selected_ci95"), d.get("test_auc_minus_baseline_ci95")
            print(f'| {table} | {seed} | {d["train_rows"]}/{d["val_rows"]}/{d["test_rows"]} | {d["train_pos_rate"]:.3f} | '
                  f'{base:.4f} | {d["test_auc_selected"]:.4f} | {ci[0]:.4f}–{ci[1]:.4f} | {delta:+.4f} | '
                  f'{dci[0]:+.3f} to {dci[1]:+.3f} |')
        every += ok
    print(f"\n{every} of {len(runs)} tables: default run within 0.02 of the baseline's test AUC, or above, on every seed.")


if __name__ == "__main__":
    main()
