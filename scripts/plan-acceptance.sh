#!/bin/bash
# Checks a plan's recommendation on the test split (experiments/plan-acceptance.md): trains the plan's
# recheck sweep (the recommended setting with three seeds the plan never trained, on the plan's test
# split: PLANDIR/recheck) and no defence with the same seeds, split and attacks, once with its full
# schedule (PLANDIR/none-sS) and once capped at the plan's max_steps as the plan measured it
# (PLANDIR/nonecap-sS), and the plan's feature prior with the same seeds (PLANDIR/prior-sS), then
# scripts/plan-acceptance.py prints the table.
#
#   splitguard plan --format csv --data DIR/tables/pima.csv --label diabetes --positive pos \
#       --max-leak 0.4 --budget 10m --out PLANDIR
#   scripts/plan-acceptance.sh ./splitguard PLANDIR DIR/tables/pima.csv diabetes pos
#   scripts/plan-acceptance.py PLANDIR...
set -euo pipefail
sg=${1:?usage: plan-acceptance.sh SPLITGUARD PLANDIR TABLE.csv LABEL POSITIVE}
p=${2:?usage: plan-acceptance.sh SPLITGUARD PLANDIR TABLE.csv LABEL POSITIVE}
data=${3:?usage: plan-acceptance.sh SPLITGUARD PLANDIR TABLE.csv LABEL POSITIVE}
label=${4:?usage: plan-acceptance.sh SPLITGUARD PLANDIR TABLE.csv LABEL POSITIVE}
pos=${5:?usage: plan-acceptance.sh SPLITGUARD PLANDIR TABLE.csv LABEL POSITIVE}
[ -f "$p/recheck-sweep.yaml" ] || { echo "$p/recheck-sweep.yaml: no recommendation in this plan" >&2; exit 1; }
# The threat's attacks: the list under "attacks:" in the sweep's base.
attacks=$(awk '/^    attacks:/{on=1; next} on && /^        - /{printf "%s%s", sep, $2; sep=","; next} {on=0}' "$p/recheck-sweep.yaml")
# The sweep's seeds ("seeds: [4, 5, 6]") and the plan's data seed ("split_seed: 1").
seeds=$(sed -n 's/^seeds: \[\(.*\)\]/\1/p' "$p/recheck-sweep.yaml" | tr -d ' ' | tr ',' ' ')
split=$(awk '/^    split_seed:/{print $2}' "$p/recheck-sweep.yaml")
cap=$(awk '/^    max_steps:/{print $2}' "$p/recheck-sweep.yaml")
[ -n "$seeds" ] && [ -n "$split" ] && [ -n "$cap" ] || { echo "$p/recheck-sweep.yaml: no seeds, split_seed or max_steps" >&2; exit 1; }
rm -rf "$p/recheck"
"$sg" sweep "$p/recheck-sweep.yaml" --out "$p/recheck" > "$p/recheck.log" 2>&1
for s in $seeds; do
  # The feature prior of the seed (the plan's feature-prior.yaml: no defence, the bottom kept as
  # initialised, the embedding attacks), against which the plan judges an embedding attack.
  if [ -f "$p/feature-prior.yaml" ]; then
    rm -rf "$p/prior-s$s"
    "$sg" train --config "$p/feature-prior.yaml" --seed "$s" --split-seed "$split" --out "$p/prior-s$s" > "$p/prior-s$s.log" 2>&1
  fi
  rm -rf "$p/none-s$s"
  "$sg" train --format csv --data "$data" --label "$label" --positive "$pos" --attacks "$attacks" \
    --seed "$s" --split-seed "$split" --out "$p/none-s$s" > "$p/none-s$s.log" 2>&1
  rm -rf "$p/nonecap-s$s"
  "$sg" train --format csv --data "$data" --label "$label" --positive "$pos" --attacks "$attacks" \
    --seed "$s" --split-seed "$split" --max-steps "$cap" --out "$p/nonecap-s$s" > "$p/nonecap-s$s.log" 2>&1
done
