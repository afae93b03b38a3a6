#!/bin/sh
# step-probe.sh OLD NEW: build the step probe (step-probe.patch: per call site
# of internal/par.Do, each region's wall time, its parts' per-thread processor
# time and the caller's processor time between regions; per phase of the
# bench's step, the process's processor time; printed when SGPROBE is set)
# into two commits' trees, then run them alternating at GOMAXPROCS 1 and 2
# (docs/SCALING.md, "The caller's serial code"). Linux only. Run from the
# repository root; writes probe-1024.log and probe-8192.log.
set -eu
root=$(pwd)
old=$1 new=$2
for c in "$old" "$new"; do
  d=$(mktemp -d)
  git archive "$c" | tar -x -C "$d"
  (cd "$d" && git apply "$root/experiments/scaling/step-probe.patch" && go build -o "$root/probe-$c" ./cmd/splitguard)
  rm -rf "$d"
done
for i in 1 2 3 4 5 6; do for b in "$old" "$new"; do for c in 1 2; do
  echo "== $b GOMAXPROCS=$c batch 1024 pass $i $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"
  SGPROBE=1 GOMAXPROCS=$c nice -n 19 "./probe-$b" bench --batch 1024 --steps 300 --warmup 10 --par-stats 2>&1
done; done; done > probe-1024.log
for i in 1 2 3; do for b in "$old" "$new"; do for c in 1 2; do
  echo "== $b GOMAXPROCS=$c batch 8192 pass $i $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"
  SGPROBE=1 GOMAXPROCS=$c nice -n 19 "./probe-$b" bench --batch 8192 --steps 20 --warmup 2 --par-stats 2>&1
done; done; done > probe-8192.log
