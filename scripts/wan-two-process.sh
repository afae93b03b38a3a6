#!/usr/bin/env bash
# wan-two-process.sh: the two parties as two processes on this machine, on
# plain loopback and through `splitguard link-proxy` (a third process),
# interleaved round by round, and each option's link ÷ loopback ratio per
# round (docs/methods/wan.md, "Three processes").
#
#   scripts/wan-two-process.sh SPLITGUARD OUTDIR [ROUNDS]
#
# OPTIONS (environment): the options to time, each "ENC:K:F:Q" (wire
# encoding both ways, staleness, staleness prediction, local steps);
# default "int8:0:0:1 int4:6:1:2". ROWS (60000) and EPOCHS (5) size the
# run; RTT (20ms), UP and DOWN (100 Mbit/s) the link; COMPRESSION (none)
# the parties' --wire-compression when set.
#
# Where the parties run: by default each party is a process of the
# machine's GOMAXPROCS, so on a small machine two processes each of
# every core contend for the same cores and the loopback step is slowed
# by it (which flatters the link ÷ loopback ratio). PARTY_PROCS=N gives
# each party GOMAXPROCS=N; PIN=1 also pins the passive to CPU 0 and the
# active to CPU 1 (taskset), the nearest this one machine comes to two
# hosts of one core each (the proxy then shares their cores). Plan the
# same hosts with `GOMAXPROCS=N splitguard plan-link` (each party on a
# host of its own). Prints one line per run (the passive's compute and
# wait per step, from its log) and one ratio per option and round.
set -euo pipefail
sg=$(realpath "$1"); out=$2; rounds=${3:-3}
OPTIONS=${OPTIONS:-"int8:0:0:1 int4:6:1:2"}
ROWS=${ROWS:-60000}; EPOCHS=${EPOCHS:-5}; RTT=${RTT:-20ms}; UP=${UP:-100}; DOWN=${DOWN:-100}
run_p=() run_a=() extra=()
if [ -n "${PARTY_PROCS:-}" ]; then run_p=(env "GOMAXPROCS=$PARTY_PROCS"); run_a=(env "GOMAXPROCS=$PARTY_PROCS"); fi
if [ "${PIN:-0}" = 1 ]; then run_p=(taskset -c 0 "${run_p[@]}"); run_a=(taskset -c 1 "${run_a[@]}"); fi
if [ -n "${COMPRESSION:-}" ]; then extra=(--wire-compression "$COMPRESSION"); fi
mkdir -p "$out"; cd "$out"
[ -f data.txt ] || "$sg" data synth --rows "$ROWS" --pos-rate 0.25 --seed 5 --out data.txt >/dev/null
if [ ! -d pki ]; then
  "$sg" certs init --dir pki >/dev/null
  "$sg" certs issue --dir pki --name active --host 127.0.0.1 >/dev/null
  "$sg" certs issue --dir pki --name passive >/dev/null
fi
port=7600
# one run: MODE (loopback|link) ENC K F Q; sets ms to the passive's ms per
# step (not run in a subshell, so that each run gets the next port)
one() {
  local mode=$1 enc=$2 k=$3 f=$4 q=$5 addr px=
  port=$((port + 1)); addr=127.0.0.1:$port
  local tag=$mode-$enc-k$k-F$f-Q$q-$port
  local common=(--data data.txt --layers 128,128,128 --cut 2 --embed-dim 4 --batch 1024 --epochs "$EPOCHS"
    --eval-every 0 --lr 1e-3 --seed 3 --test-frac 0.2 --hash-buckets 1000 --select last --early-stop 0
    --protect none --attacks norm --wire-embedding "$enc" --wire-gradient "$enc" --staleness "$k"
    --staleness-prediction "$f" --local-steps "$q" --baseline=false --checkpoint-every 0 --cert-dir pki "${extra[@]}")
  "${run_a[@]}" "$sg" active "${common[@]}" --out "A-$tag" --addr "$addr" --name active --peer-name passive >"A-$tag.log" 2>&1 &
  local act=$!
  sleep 1
  if [ "$mode" = link ]; then
    rm -f "px-$tag.addr"
    "$sg" link-proxy --target "$addr" --rtt "$RTT" --up "$UP" --down "$DOWN" --addr-file "px-$tag.addr" >"px-$tag.log" 2>&1 &
    px=$!
    while [ ! -s "px-$tag.addr" ]; do sleep 0.1; done
    addr=$(cat "px-$tag.addr")
  fi
  "${run_p[@]}" "$sg" passive "${common[@]}" --out "P-$tag" --addr "$addr" --name passive --peer-name active >"P-$tag.log" 2>&1
  wait "$act"
  if [ -n "$px" ]; then kill -INT "$px"; wait "$px" || true; fi
  # compute_ms + waiting_ms of the passive's closing line
  ms=$(grep -o 'party=passive compute_ms=[0-9.]* waiting_ms=[0-9.]*' "P-$tag.log" | tail -1 |
    awk -F'[= ]' '{printf "%.3f", $4 + $6}')
  if [ -z "$ms" ]; then echo "no timing line in $out/P-$tag.log" >&2; exit 1; fi
}
for r in $(seq "$rounds"); do
  for o in $OPTIONS; do
    IFS=: read -r enc k f q <<<"$o"
    one loopback "$enc" "$k" "$f" "$q"; lb=$ms
    one link "$enc" "$k" "$f" "$q"; ln=$ms
    echo "round $r $enc k=$k F=$f Q=$q: loopback $lb ms/step, link $ln ms/step, ratio $(awk -v a="$ln" -v b="$lb" 'BEGIN{printf "%.2f", a/b}') (load $(cut -d' ' -f1 /proc/loadavg))"
  done
done
