#!/bin/bash
# VILLAIN at its defaults, unprotected, on the Criteo-shaped synthetic table and on each of the
# eight own-data tables (scripts/owndata-run.sh makes them), seeds 1-3 (docs/methods/integrity.md
# §10d). Per table and seed two runs: the attack, and its dry run (the same trigger on the honestly
# trained model, whose clean test AUC is the honest run's). One run at a time.
#
#   go build -o splitguard ./cmd/splitguard
#   scripts/villain-tables.sh ./splitguard /tmp/owndata OUTDIR     # about 6 minutes on a shared 2-core machine
#   python3 experiments/villain_tables.py OUTDIR/runs.jsonl
#
# Each table: target 1 (its positive class), the passive party holds the first ⌊n/2⌋ of its n
# feature columns in header order (on spam exactly the 28 of §10b), batch 64, 5 epochs, Adam at
# 0.01, the last model, and poisoning from the first step of the second epoch (one epoch of warm-up;
# label inference watches from step 0). The Criteo-shaped table: §10b's command (20,000 rows,
# batch 256, 3 epochs, poisoning from step 64). SEEDS="1 2 3" and TABLES="…" narrow a rerun.
set -euo pipefail
sg=${1:?usage: villain-tables.sh SPLITGUARD_BINARY OWNDATA_DIR OUTDIR}
tables=${2:?usage: villain-tables.sh SPLITGUARD_BINARY OWNDATA_DIR OUTDIR}/tables
out=${3:?usage: villain-tables.sh SPLITGUARD_BINARY OWNDATA_DIR OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
runs="$out/runs.jsonl"
: > "$runs"
common=(--eval-every 0 --val-frac 0 --select last --early-stop 0 --lr 0.01 --backdoor villain --backdoor-target 1)
one() { # name seed dry args...
  local name=$1 seed=$2 dry=$3 tag d
  shift 3
  tag=attack
  extra=()
  if [ "$dry" = true ]; then tag=dry; extra=(--backdoor-dry-run); fi
  d="$out/$name/s$seed-$tag"
  rm -rf "$d"
  mkdir -p "$(dirname "$d")"
  nice -n 19 "$sg" train "$@" "${common[@]}" --seed "$seed" --out "$d" "${extra[@]}" > "$d.log" 2>&1 || { echo "$name s$seed $tag failed: see $d.log"; return; }
  printf '{"table":"%s","seed":%s,"dry":%s,"summary":"%s"}\n' "$name" "$seed" "$dry" "$d/summary.json" >> "$runs"
}
for seed in ${SEEDS:-1 2 3}; do
  for dry in false true; do
    if [[ " ${TABLES:-criteo_synth} " == *" criteo_synth "* ]]; then
      one criteo_synth "$seed" "$dry" --synth-rows 20000 \
        --passive-columns I1,I2,I3,I4,I5,I6,I7,I8,I9,I10,I11,I12,I13,C1,C2,C3 \
        --epochs 3 --batch 256 --backdoor-from 64
    fi
    while read -r name label pos; do
      [ -n "${TABLES:-}" ] && [[ " $TABLES " != *" $name "* ]] && continue
      f="$tables/$name.csv"
      # the feature columns in header order, the label left out; the passive takes the first half
      cols=$(head -1 "$f" | tr -d '"\r' | tr ',' '\n' | grep -vx "$label")
      n=$(wc -l <<<"$cols")
      passive=$(head -n $((n / 2)) <<<"$cols" | paste -sd, -)
      rows=$(($(wc -l < "$f") - 1))
      train=$((rows - (rows + 9) / 10))       # the default test share 0.1, no validation split
      from=$(((train + 63) / 64))             # one epoch of batches of 64
      one "$name" "$seed" "$dry" --format csv --data "$f" --label "$label" --positive "$pos" \
        --passive-columns "$passive" --batch 64 --epochs 5 --backdoor-from "$from"
    done < <(sed -n '/^pima diabetes pos$/,/^letter_a letter_A yes$/p' "$here/owndata-run.sh") # its first eight tables
  done
done
