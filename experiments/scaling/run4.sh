#!/bin/bash
# Device call for issue 32, prepared 2026-11-28 and not yet run (no device was lent that day).
# devbin/ from build4.sh: sg (the head), sg-old (33fd7f4), sg-prepack (the head with prepack-b.patch:
# a weight gradient's B packed once for all the row ranges of its grid, instead of once per row range),
# psi.test. Device: run with carry ["devbin"], timeout_s 540. QUICK=1 shrinks every size to check the
# script itself on any machine.
cd devbin && gunzip -kf sg.gz sg-old.gz sg-prepack.gz && chmod +x sg sg-old sg-prepack psi.test && cd ..
D=$PWD/devbin; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/run4.log) 2>&1
T0=$(date +%s); t() { echo "--- t=$(( $(date +%s) - T0 ))s $*"; }
if [ -n "$QUICK" ]; then C=1,2; S8=2; S1=5; P=1000; W=20000; CC=1,2; R=1; else C=1,2,4,8,16; S8=12; S1=60; P=20000; W=200000; CC=1,2,4,8,16; R=3; fi
j() { python3 -c "import json,sys; d=json.load(sys.stdin); print(round(d['ms_per_step'],2), round(d['cpu_ms_per_step'],2))"; }
lscpu | egrep 'Model name|^CPU\(s\)|Thread|L2|L3|Flags' | cut -c1-200; nproc; uptime
t "S1 step 8192, head, with independents (2 rounds)"; timeout 150 $D/sg bench --cores $C --rounds 2 --batch 8192 --steps $S8 --warmup 2
t "S2 step 1024, head, with independents (2 rounds)"; timeout 100 $D/sg bench --cores $C --rounds 2 --batch 1024 --steps $S1
t "S3 old 8192, no independents"; timeout 60 $D/sg-old bench --cores $C --rounds 1 --batch 8192 --steps $S8 --warmup 2 --no-independent
t "K prepack against head, batch 8192, GOMAXPROCS 8 and 16, ABAB (ms/step, CPU ms/step)"
for p in 8 16; do for r in $(seq $R); do
  a=$(GOMAXPROCS=$p timeout 30 $D/sg bench --batch 8192 --steps $S8 --warmup 2 --json | j)
  b=$(GOMAXPROCS=$p timeout 30 $D/sg-prepack bench --batch 8192 --steps $S8 --warmup 2 --json | j)
  echo "procs $p round $r: head $a | prepack $b"
done; done
t "P1 psi.test -cpu 1,2,4,8,16"; timeout 45 $D/psi.test -test.run '^$' -test.bench "PSI${P}\$" -test.benchtime 1x -test.cpu $CC | grep Bench
t "W whole run at 2 and 16 cores"; timeout 120 $D/sg bench --whole-run $W --cores 2,16 --rounds 1
t "C cnn 1,2,16"; timeout 60 $D/sg bench --model cnn --batch 128 --cores 1,2,16 --rounds 1 --steps 3 --warmup 1 --no-independent
t end; uptime
