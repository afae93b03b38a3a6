#!/bin/bash
# The default detector set's cost per step (docs/methods/integrity.md §11f): three pairs of Criteo-shaped
# runs, --detectors none against the default, at batch 256 and 4096; prints each run's step_ms_mean.
#
#   go build -o splitguard ./cmd/splitguard
#   scripts/integrity-defaults-cost.sh ./splitguard OUTDIR
set -euo pipefail
sg=${1:?usage: integrity-defaults-cost.sh SPLITGUARD_BINARY OUTDIR}
out=${2:?usage: integrity-defaults-cost.sh SPLITGUARD_BINARY OUTDIR}
mkdir -p "$out"
common="--synth-rows 20000 --passive-columns I1,I2,I3,I4,I5,I6,I7,I8,I9,I10,I11,I12,I13,C1,C2,C3 --lr 0.01 --eval-every 0 --val-frac 0 --select last --early-stop 0 --attacks norm"
for batch in 256 4096; do
  for pair in 1 2 3; do
    for det in none default; do
      flag=""; [ "$det" = none ] && flag="--detectors none"
      d="$out/b$batch-p$pair-$det"; rm -rf "$d"
      # shellcheck disable=SC2086 # common and flag are words
      nice -n 19 "$sg" train $common --batch "$batch" --epochs 3 $flag --out "$d" > "$d.log" 2>&1
      python3 -c "import json;s=json.load(open('$d/summary.json'));print('$batch',$pair,'$det',round(s['step_ms_mean'],2),s['steps'],sorted((s.get('integrity') or {}).items()))"
    done
  done
done
