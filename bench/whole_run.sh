#!/bin/bash
# A whole `train` run against its step: runs `splitguard train --data FILE` with its default flags
# between two runs of `splitguard bench --model wdl` (default vocab, and the vocab given), RUNS times,
# and prints the run's examples per second (steps × 1024 over the command's wall time, start to exit)
# and its ratio to bench's (the mean of the bench before and the bench after). Pairing, with bench on
# both sides of the run, keeps the ratio meaningful on a machine whose speed drifts.
#
#   splitguard data synth --rows 200000 --out s200k.tsv
#   bench/whole_run.sh ./splitguard s200k.tsv 3 9173
set -euo pipefail
bin=${1:?usage: bench/whole_run.sh SPLITGUARD DATA [RUNS] [VOCAB]}
data=${2:?usage: bench/whole_run.sh SPLITGUARD DATA [RUNS] [VOCAB]}
runs=${3:-3}
vocab=${4:-9173}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
exps() { python3 -c 'import json,sys; print(int(json.loads(sys.stdin.read().strip().splitlines()[-1])["examples_per_s"]))'; }
for i in $(seq 1 "$runs"); do
  rm -rf "$out/run"
  a1=$("$bin" bench --model wdl --json | exps)
  a2=$("$bin" bench --model wdl --json --vocab "$vocab" | exps)
  s=$(date +%s.%N)
  "$bin" train --data "$data" --out "$out/run" >/dev/null 2>"$out/err" || { cat "$out/err" >&2; exit 1; }
  e=$(date +%s.%N)
  steps=$(python3 -c "import json; print(json.load(open('$out/run/summary.json'))['steps'])")
  ex=$(python3 -c "print(int($steps * 1024 / ($e - $s)))")
  b1=$("$bin" bench --model wdl --json | exps)
  b2=$("$bin" bench --model wdl --json --vocab "$vocab" | exps)
  b1=$(( (a1 + b1) / 2 )); b2=$(( (a2 + b2) / 2 ))
  python3 -c "print(f'run $i: train $steps steps in {$e - $s:.1f} s = $ex ex/s; ' f'bench {$b1} ex/s (ratio {$ex / $b1:.2f}); bench --vocab $vocab {$b2} ex/s (ratio {$ex / $b2:.2f})')"
  echo "$ex $b1 $b2" >> "$out/ratios"
done
python3 - "$out/ratios" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
for k, name in ((1, "bench"), (2, "bench --vocab")):
    r = sorted(t[0] / t[k] for t in rows)
    print(f"train ÷ {name}: median {statistics.median(r):.2f}, min {r[0]:.2f}, max {r[-1]:.2f} over {len(r)} pairs")
PY
