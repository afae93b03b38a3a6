#!/bin/bash
# final device measurement: old (main 010c706) vs new, 16-core scaling
cd devbin && gunzip -f sg.gz sg-old.gz && chmod +x sg sg-old psi.test && cd ..
D=devbin; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/final.log) 2>&1
T0=$(date +%s); t() { echo "--- t=$(( $(date +%s) - T0 ))s $*"; }
lscpu | egrep 'Model name|^CPU\(s\)|Thread|MHz' ; uptime; head -1 /proc/stat
t "A PSI early"; timeout 40 $D/psi.test -test.run '^$' -test.bench 'PSI20000$' -test.benchtime 1x -test.cpu 1,2 | grep Bench
t "B1 new 8192"; timeout 90 $D/sg bench --cores 1,2,4,8,16 --rounds 1 --batch 8192 --steps 12 --warmup 2
t "B2 old 8192"; timeout 60 $D/sg-old bench --cores 1,2,4,8,16 --rounds 1 --batch 8192 --steps 12 --warmup 2 --no-independent
t "B3 new 1024"; timeout 90 $D/sg bench --cores 1,2,4,8,16 --rounds 1 --batch 1024 --steps 100
t "B4 old 1024"; timeout 60 $D/sg-old bench --cores 1,2,4,8,16 --rounds 1 --batch 1024 --steps 100 --no-independent
t "B5 new 8192 again"; timeout 60 $D/sg bench --cores 1,16 --rounds 1 --batch 8192 --steps 12 --warmup 2 --no-independent
t "C cnn new/old"; for b in sg sg-old; do timeout 45 $D/$b bench --model cnn --batch 128 --cores 1,4,16 --rounds 1 --steps 3 --warmup 1 --no-independent; done
t "D PSI"; timeout 60 $D/psi.test -test.run '^$' -test.bench 'PSI20000$|PSIStream20000$' -test.benchtime 1x -test.cpu 1,2,4,8,16 | grep Bench
t "D2 PSI cores table"; timeout 90 $D/sg bench --psi 20000 --cores 1,2,4,8,16 --rounds 1
t "E train 200k"; for p in 16 2; do rm -rf /tmp/tr$p; /usr/bin/time -f "wall %e s P=$p" env GOMAXPROCS=$p timeout 60 $D/sg train --synth-rows 200000 --out /tmp/tr$p 2>&1 | tail -2; grep -o '"examples_per_s":[0-9.]*\|"steps":[0-9]*' /tmp/tr$p/summary.json | tr '\n' ' '; echo; GOMAXPROCS=$p $D/sg bench --json --batch 1024 --steps 100; done
t "F PSI late"; timeout 40 $D/psi.test -test.run '^$' -test.bench 'PSI20000$' -test.benchtime 1x -test.cpu 1,2 | grep Bench
t end; uptime; head -1 /proc/stat
