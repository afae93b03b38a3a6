#!/bin/bash
# Reproduces experiments/own-data.md: converts the real public tables that Debian's R
# packages ship (scripts/owndata-tables.R: the eight first tables; owndata-modeldata.R and
# owndata-fresh.R: the twenty of the independent checks), then trains on each with the
# defaults and with Marvell s = 4, for seeds 1-3, and prints the table (scripts/owndata-table.py).
#
#   apt-get install -y r-base-core r-cran-mlbench r-cran-kernlab r-cran-aer r-cran-modeldata
#   go build -o splitguard ./cmd/splitguard
#   scripts/owndata-run.sh ./splitguard /tmp/owndata      # about 30 minutes on 2 cores
#
# Each run is exactly the command of the table, e.g.
#   splitguard train --format csv --data DIR/tables/pima.csv --label diabetes --positive pos --out R
# plus `--protect marvell --marvell-s 4` for the Marvell column and `--seed S` for seeds 2 and 3.
# MODES=default runs only the defaults (84 runs, half the time); the table leaves Marvell's columns empty.
# EXTRA="--flag value" adds flags to every run (e.g. EXTRA="--select-margin off").
set -euo pipefail
sg=${1:?usage: owndata-run.sh SPLITGUARD_BINARY OUTDIR}
dir=${2:?usage: owndata-run.sh SPLITGUARD_BINARY OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
Rscript "$here/owndata-tables.R" "$dir/tables"
Rscript "$here/owndata-modeldata.R" "$dir/tables"
Rscript "$here/owndata-fresh.R" "$dir/tables"
runs="$dir/runs.jsonl"
: > "$runs"
for seed in 1 2 3; do
  for mode in ${MODES:-default marvell4}; do
    extra=(${EXTRA:-})
    [ "$mode" = marvell4 ] && extra+=(--protect marvell --marvell-s 4)
    [ "$seed" != 1 ] && extra+=(--seed "$seed")
    while read -r name label pos; do
      out="$dir/runs/$mode-s$seed/$name"
      mkdir -p "$(dirname "$out")"
      rm -rf "$out"
      "$sg" train --format csv --data "$dir/tables/$name.csv" --label "$label" --positive "$pos" --out "$out" "${extra[@]}" > "$out.log" 2>&1
      printf '{"table":"%s","mode":"%s","seed":%s,"label":"%s","positive":"%s","summary":"%s"}\n' \
        "$name" "$mode" "$seed" "$label" "$pos" "$out/summary.json" >> "$runs"
    done <<'T'
pima diabetes pos
breastcancer Class malignant
hmda deny yes
spam type spam
resumenames call yes
ticdata CARAVAN insurance
smokeban smoker yes
letter_a letter_A yes
attrition Attrition Yes
twoclass Class Class2
cells class WS
pdspeech class control
addata Class Impaired
credit Status bad
mlcchurn churn yes
sonar Class M
ionosphere Class bad
swisslabor participation yes
vehicle_van van yes
bivariate Class Two
satellite_damp damp yes
wachurn churn Yes
lendingclub Class bad
cps1988 parttime yes
stackoverflow Remote Remote
hpc_long long yes
grants class successful
doctorvisits visited yes
T
  done
done
python3 "$here/owndata-table.py" "$runs"
