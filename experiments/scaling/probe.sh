#!/bin/bash
# The first probe (H100 machine, 16:02 UTC 2026-11-26): where the time goes on 16 cores, main at 010c706.
# devbin/ held static builds: sg (cmd/splitguard), psi.test, step.test (bench/step with a temporary
# per-phase timing test, TestPhasesTmp, since removed), tensor.test, nn.test.
D=devbin; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/probe.log) 2>&1
lscpu | egrep 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA|L2|L3|Flags' | cut -c1-150
nproc; uptime
echo "== PSI20000 -cpu 1,2,4,8,16"
timeout 120 $D/psi.test -test.run '^$' -test.bench 'PSI20000$' -test.benchtime 1x -test.cpu 1,2,4,8,16 | grep Bench
echo "== PSIStream20000"
timeout 100 $D/psi.test -test.run '^$' -test.bench 'PSIStream20000$' -test.benchtime 1x -test.cpu 1,2,4,16 | grep Bench
timeout 60 $D/psi.test -test.run '^$' -test.bench 'PSI20000$' -test.benchtime 1x -test.cpu 2 -test.cpuprofile $O/psi2.prof | grep Bench
echo "== independent 2x psi cpu1"
( $D/psi.test -test.run '^$' -test.bench 'PSI20000$' -test.benchtime 1x -test.cpu 1 | grep Bench & $D/psi.test -test.run '^$' -test.bench 'PSI20000$' -test.benchtime 1x -test.cpu 1 | grep Bench; wait )
echo "== sgemm"
timeout 60 $D/tensor.test -test.run '^$' -test.bench 'Sgemm1024x128x128' -test.benchtime 3000x -test.cpu 1,2,4,8,16 | grep Bench
echo "== emb"
timeout 60 $D/nn.test -test.run '^$' -test.bench 'EmbeddingStep$|DenseReLU1024x128' -test.benchtime 300x -test.cpu 1,2,4,8,16 | grep Bench
echo "== phases"
for b in 1024 8192; do for p in 1 2 4 8 16; do PHASE_BATCH=$b GOMAXPROCS=$p timeout 60 $D/step.test -test.run TestPhasesTmp -test.v | grep total; done; done
timeout 60 $D/step.test -test.run '^$' -test.bench 'BenchmarkWDLStep$' -test.benchtime 300x -test.cpu 16 -test.cpuprofile $O/step16.prof | grep Bench
echo "== bench cores"
timeout 150 $D/sg bench --cores 1,2,4,8,16 --rounds 1 --batch 1024
uptime
