#!/bin/bash
cd devbin && gunzip -f sg.gz sg-old.gz && chmod +x sg sg-old psi.test psi-old.test && cd ..
D=devbin; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/final2.log) 2>&1
T0=$(date +%s); t() { echo "--- t=$(( $(date +%s) - T0 ))s $*"; }
lscpu | egrep 'Model name|^CPU\(s\)' ; uptime
t "P1 psi new/old/new"; for b in psi psi-old psi; do echo $b; timeout 40 $D/$b.test -test.run '^$' -test.bench 'PSI20000$' -test.benchtime 1x -test.cpu 1,2,4,8,16 | grep Bench; done
t "P2 psi cores table new"; timeout 60 $D/sg bench --psi 20000 --cores 1,2,16 --rounds 1
t "S1 new 8192"; timeout 90 $D/sg bench --cores 1,2,4,8,16 --rounds 1 --batch 8192 --steps 12 --warmup 2
t "S2 old 8192"; timeout 60 $D/sg-old bench --cores 1,2,4,8,16 --rounds 1 --batch 8192 --steps 12 --warmup 2 --no-independent
t "S3 new 1024"; timeout 60 $D/sg bench --cores 1,2,4,8,16 --rounds 1 --batch 1024 --steps 100 --no-independent
t "S4 old 1024"; timeout 60 $D/sg-old bench --cores 1,2,4,8,16 --rounds 1 --batch 1024 --steps 100 --no-independent
t "S5 new/old 8192 at 1,16 again"; for b in sg sg-old sg; do timeout 40 $D/$b bench --cores 1,16 --rounds 1 --batch 8192 --steps 12 --warmup 2 --no-independent | sed -n 3,4p; done
t "C cnn new/old"; for b in sg sg-old; do timeout 40 $D/$b bench --model cnn --batch 128 --cores 1,16 --rounds 1 --steps 3 --warmup 1 --no-independent | sed -n 3,4p; done
t "E train 200k"; for p in 16 2; do rm -rf /tmp/tr$p; /usr/bin/time -f "wall %e s P=$p" env GOMAXPROCS=$p timeout 60 $D/sg train --synth-rows 200000 --out /tmp/tr$p 2>&1 | tail -1; python3 -c "import json;s=json.load(open('/tmp/tr$p/summary.json'));print({k:s[k] for k in ('examples','seconds','examples_per_s','step_ms_mean')})" || grep -E '"(examples|seconds|examples_per_s)"' /tmp/tr$p/summary.json; GOMAXPROCS=$p $D/sg bench --json --batch 1024 --steps 100; done
t end; uptime
