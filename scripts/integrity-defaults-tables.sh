#!/bin/bash
# The default detector set on real tables (docs/methods/integrity.md §11f): for each of the eight
# own-data tables (scripts/owndata-run.sh makes them), one seed of an honest run with the defaults,
# honest runs under grad_dp, Marvell s = 4 and max_norm, and the three free-riding modes from step 0.
# No detector flag: each run has what a user gets by default.
#
#   go build -o splitguard ./cmd/splitguard
#   scripts/integrity-defaults-tables.sh ./splitguard /tmp/owndata OUTDIR
#   python3 experiments/defaults_table.py OUTDIR
set -euo pipefail
sg=${1:?usage: integrity-defaults-tables.sh SPLITGUARD_BINARY OWNDATA_DIR OUTDIR}
tables=${2:?usage: integrity-defaults-tables.sh SPLITGUARD_BINARY OWNDATA_DIR OUTDIR}/tables
out=${3:?usage: integrity-defaults-tables.sh SPLITGUARD_BINARY OWNDATA_DIR OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
while read -r name label pos; do
  while read -r tag flags; do
    d="$out/$name/$tag"
    rm -rf "$d"
    mkdir -p "$(dirname "$d")"
    # shellcheck disable=SC2086 # flags are words
    nice -n 19 "$sg" train --format csv --data "$tables/$name.csv" --label "$label" --positive "$pos" --out "$d" $flags > "$d.log" 2>&1 ||
      echo "$name $tag failed: see $d.log"
  done <<'R'
honest
grad_dp --protect grad_dp --grad-dp-sigma 1 --grad-dp-clip 0.05
marvell --protect marvell --marvell-s 4
max_norm --protect max_norm
noise --free-ride noise
constant --free-ride constant
replay --free-ride replay
R
done < <(sed -n '/^pima diabetes pos$/,/^letter_a letter_A yes$/p' "$here/owndata-run.sh") # its first eight tables
