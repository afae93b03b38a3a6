#!/usr/bin/env python3
"""Gradient replacement's attack success and clean cost per setting over a sweep of honest and attacked
runs (experiments/gr-pairing.yaml; docs/methods/integrity.md §11e). Standard library only.

    python3 experiments/gr_pairing_table.py out/gr-pairing
    python3 experiments/gr_pairing_table.py --selftest   # the summary against hand counts

Per setting (pairing, or the dry run): the attack success rate's range and median, how many seeds reach
0.9, and the clean cost, the honest run's test AUC minus the attacked run's clean test AUC of the same seed
(median, mean, largest and its seed, how many above 0.01). Then the honest runs' test AUC spread over seeds.
"""
import statistics
import sys

from detection_table import load


def summarise(asr, cost):
    """asr and cost: {seed: value} of one setting; returns the table row's numbers."""
    worst = max(cost, key=lambda s: (cost[s], s))
    return {"n": len(asr), "min": min(asr.values()), "max": max(asr.values()),
            "median": statistics.median(asr.values()), "at09": sum(a >= 0.9 for a in asr.values()),
            "cost_median": statistics.median(cost.values()), "cost_mean": statistics.mean(cost.values()),
            "cost_worst": cost[worst], "worst_seed": worst, "above001": sum(c > 0.01 for c in cost.values())}


def main(root):
    runs = load(root)
    honest, settings = {}, {}
    for _, cfg, summ, _ in runs:
        seed = int(cfg["seed"])
        if not cfg.get("backdoor"):
            honest[seed] = summ["test_auc_final"]
            continue
        name = "dry run" if cfg.get("backdoor_dry_run") == "true" else cfg.get("backdoor_pairing", "batch") + " pairing"
        settings.setdefault(name, {})[seed] = summ["backdoor"]
    for name, bds in sorted(settings.items()):
        asr = {s: b["asr"] for s, b in bds.items()}
        cost = {s: honest[s] - b["clean_test_auc"] for s, b in bds.items()}
        r = summarise(asr, cost)
        print(f"{name}: {r['n']} seeds, attack success {r['min']:.3f}-{r['max']:.3f}, median {r['median']:.3f}, "
              f"{r['at09']} of {r['n']} at 0.9 or more; clean cost median {r['cost_median']:.4f}, mean {r['cost_mean']:.4f}, "
              f"largest {r['cost_worst']:.4f} (seed {r['worst_seed']}), {r['above001']} above 0.01")
    h = list(honest.values())
    print(f"honest: {len(h)} seeds, test AUC {min(h):.4f}-{max(h):.4f}, median {statistics.median(h):.4f}, sd {statistics.stdev(h):.4f}")


def selftest():
    r = summarise({1: 0.95, 2: 0.5, 3: 1.0, 4: 0.9}, {1: 0.002, 2: -0.004, 3: 0.012, 4: 0.012})
    want = {"n": 4, "min": 0.5, "max": 1.0, "median": 0.925, "at09": 3, "cost_median": 0.007,
            "cost_mean": 0.0055, "cost_worst": 0.012, "worst_seed": 4, "above001": 2}
    for k, v in want.items():
        assert abs(r[k] - v) < 1e-12, (k, r[k], v)
    print("selftest ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
