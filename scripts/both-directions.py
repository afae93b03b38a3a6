#!/usr/bin/env python3
"""Issue 25's closing table from a sweep directory (experiments/both-directions.yaml): per run, the
selected model's test AUC and its cost against the unprotected run, the label side (q95 |AUC − ½| of
norm, cosine and spectral at the cut over the training batches; model completion's AUC on the final
bottom) and the feature side (mean R² of the numeric passive columns for the learned inverse and
white-box inversion, and the learned inverse's mean categorical accuracy beside the majority prior),
read from each run's summary.json. The C-DCS ranking is the report's (`splitguard report DIR`).

    python3 scripts/both-directions.py out/both-directions
"""
import glob
import json
import os
import sys


def main(root):
    runs = {}
    for path in sorted(glob.glob(os.path.join(root, "*", "summary.json"))):
        with open(path) as f:
            runs[os.path.basename(os.path.dirname(path))] = json.load(f)
    base = next((s for n, s in runs.items() if n.startswith("none-seed=")), None)
    if base is None:
        sys.exit("no unprotected run (none-seed=N) in " + root)
    print("| setting | test AUC | cost | norm q95 | cosine q95 | spectral q95 | completion AUC "
          "| inverse R² | inversion R² | inverse cat. acc. (prior) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, s in runs.items():
        f = s.get("feature_leak_selected") or s.get("feature_leak_final") or {}
        leak = s.get("leak", {})

        def q(attack):
            v = leak.get(attack + "/cut", {}).get("q95_abs")
            return "—" if v is None else "%.3f" % v

        def g(d, k):
            v = d.get(k)
            return "—" if v is None else "%.3f" % v
        auc = s["test_auc_selected"]
        print("| `%s` | %.4f | %+.4f | %s | %s | %s | %s | %s | %s | %s (%s) |" % (
            name.rsplit("-seed=", 1)[0], auc, base["test_auc_selected"] - auc, q("norm"), q("cosine"),
            q("spectral"), g(s.get("eval_attacks_final", {}), "completion/auc"),
            g(f, "inverse_linear/r2_mean"), g(f, "inversion/r2_mean"),
            g(f, "inverse_linear/acc_mean"), g(f, "inverse_linear/acc_prior_mean")))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
