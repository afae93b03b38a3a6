#!/bin/bash
# Device call of 2026-11-27 (issue 32): the scaling table of main at ad01032 ("sg") against
# 6d6d604 ("sg-old", the commit measured on 2026-11-26) on one 16-core machine, PyTorch's CPU step on
# the same cores, and a whole default run at 2 and 16 cores. devbin/ holds static builds
# (CGO_ENABLED=0 go build -ldflags='-s -w', gzip -9) and psi.test (go test -c ./psi).
# QUICK=1 shrinks every size to check the script itself on any machine.
cd devbin && gunzip -kf sg.gz sg-old.gz && chmod +x sg sg-old psi.test && cd ..
D=$PWD/devbin; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/run3.log) 2>&1
T0=$(date +%s); t() { echo "--- t=$(( $(date +%s) - T0 ))s $*"; }
if [ -n "$QUICK" ]; then C=1,2; S8=2; S1=5; P=2000; W=20000; CC=1,2; else C=1,2,4,8,16; S8=12; S1=60; P=20000; W=200000; CC=1,2,4,8,16; fi
lscpu | egrep 'Model name|^CPU\(s\)|Thread|L2|L3|Flags' | cut -c1-200; nproc; uptime
t "S1 step 8192, new, with independents (2 rounds)"; timeout 150 $D/sg bench --cores $C --rounds 2 --batch 8192 --steps $S8 --warmup 2
t "S2 step 1024, new, with independents (2 rounds)"; timeout 100 $D/sg bench --cores $C --rounds 2 --batch 1024 --steps $S1
t "S3 old 8192 and 1024, no independents"; timeout 60 $D/sg-old bench --cores $C --rounds 1 --batch 8192 --steps $S8 --warmup 2 --no-independent; timeout 40 $D/sg-old bench --cores $C --rounds 1 --batch 1024 --steps $S1 --no-independent
t "P1 psi.test -cpu 1,2,4,8,16 (twice)"; for i in 1 2; do timeout 45 $D/psi.test -test.run '^$' -test.bench "PSI${P}\$" -test.benchtime 1x -test.cpu $CC | grep Bench; done
t "P2 streamed PSI with independents"; timeout 90 $D/sg bench --psi $P --cores $C --rounds 1
t "F profile: step 8192 at 16 workers"; GOMAXPROCS=16 timeout 40 $D/sg bench --batch 8192 --steps 30 --warmup 2 --cpuprofile $O/step8192-16.prof
t "W whole run at 2 and 16 cores"; timeout 120 $D/sg bench --whole-run $W --cores 2,16 --rounds 2
t "C cnn new 1,2,4,16 and old 1,16"; timeout 60 $D/sg bench --model cnn --batch 128 --cores 1,2,4,16 --rounds 1 --steps 3 --warmup 1 --no-independent; timeout 30 $D/sg-old bench --model cnn --batch 128 --cores 1,16 --rounds 1 --steps 3 --warmup 1 --no-independent
t "T pytorch CPU"; for th in 1 16; do for b in 1024 8192; do timeout 40 python3 bench/torch_wdl.py --threads $th --batch $b --steps 20 --warmup 3; done; timeout 40 python3 bench/torch_cnn.py --threads $th --steps 3 --warmup 1; done
t end; uptime
