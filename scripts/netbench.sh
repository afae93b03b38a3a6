#!/bin/sh
# End-to-end network overhead of the two-party deployment on loopback.
#
# Trains the same configuration (batch 1024, cut width d = 128, no
# protection, the cheap norm attack audited) for N1 and for N2 steps, once
# in process (`splitguard train`) and once as two processes over mutual TLS
# on 127.0.0.1 (`splitguard active` / `splitguard passive`), timing each run
# from start to exit. The per-step figures are slopes between the N1 and the
# N2 runs, (T(N2) − T(N1)) / (N2 − N1), so that data loading and the final
# evaluation (fixed costs) cancel out; the two-process runs are timed from
# the passive party's "resuming" log line (training starts) to the exit, as
# the PSI over 60 000 IDs takes seconds whose variation would swamp the
# slope. Bytes per step
# are the same slope over the passive party's gRPC counters (message bytes
# incl. 5-byte frame headers; TLS and HTTP/2 framing not counted).
#
# Usage: scripts/netbench.sh [N1 N2 REPEATS]   (defaults 20 120 3; the
# fastest of REPEATS runs is used for each timing)
# Both parties share the machine's cores, as they would not on two hosts.
set -eu
cd "$(dirname "$0")/.."
N1=${1:-20}
N2=${2:-120}
REP=${3:-3}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
go build -o "$W/splitguard" ./cmd/splitguard
SG="$W/splitguard"
cd "$W"
"$SG" data synth --rows 60000 --out data.txt >/dev/null
"$SG" certs init --dir pki >/dev/null
"$SG" certs issue --dir pki --name active --host 127.0.0.1 >/dev/null
"$SG" certs issue --dir pki --name passive >/dev/null
FLAGS="--data data.txt --layers 128,128,128 --cut 2 --batch 1024 --epochs 50 --eval-every 0 --hash-buckets 100000 --protect none --attacks norm --checkpoint-every 0"
now() { date +%s%N; }

inproc() { # steps → nanoseconds
	best=0
	for _ in $(seq "$REP"); do
		t0=$(now)
		# shellcheck disable=SC2086
		"$SG" train $(echo "$FLAGS" | sed 's/--checkpoint-every 0//') --max-steps "$1" --out "in-$1" >/dev/null 2>&1
		t=$(($(now) - t0))
		if [ "$best" -eq 0 ] || [ "$t" -lt "$best" ]; then best=$t; fi
	done
	echo "$best"
}

net() { # steps → "nanoseconds bytes"
	best=0
	for _ in $(seq "$REP"); do
		port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
		# shellcheck disable=SC2086
		"$SG" active $FLAGS --max-steps "$1" --out "na-$1" --addr "127.0.0.1:$port" --cert-dir pki --name active --peer-name passive >/dev/null 2>"na.log" &
		apid=$!
		# shellcheck disable=SC2086
		"$SG" passive $FLAGS --max-steps "$1" --out "np-$1" --addr "127.0.0.1:$port" --cert-dir pki --name passive --peer-name active >"np.out" 2>"np.log"
		wait "$apid"
		t1=$(now)
		# Time from the start of training (after data loading, TLS and
		# PSI, whose duration varies by seconds between runs) to the exit.
		ts=$(sed -n 's/^time=\([^ ]*\) .*msg=resuming.*/\1/p' np.log | head -1)
		t=$((t1 - $(date -d "$ts" +%s%N)))
		bytes=$(sed -n 's/.*sent \([0-9]*\) bytes, received \([0-9]*\) bytes.*/\1 \2/p' np.out)
		if [ "$best" -eq 0 ] || [ "$t" -lt "$best" ]; then best=$t; fi
	done
	echo "$best $bytes"
}

i1=$(inproc "$N1")
i2=$(inproc "$N2")
set -- $(net "$N1")
n1=$1 s1=$2 r1=$3
set -- $(net "$N2")
n2=$1 s2=$2 r2=$3
awk -v N1="$N1" -v N2="$N2" -v i1="$i1" -v i2="$i2" -v n1="$n1" -v n2="$n2" -v s1="$s1" -v s2="$s2" -v r1="$r1" -v r2="$r2" 'BEGIN {
	d = N2 - N1
	ip = (i2 - i1) / d / 1e6; np = (n2 - n1) / d / 1e6
	printf "batch 1024, d = 128, %d vs %d steps (slope), best of runs\n", N1, N2
	printf "in-process   %8.2f ms/step  (whole runs: %.2f s, %.2f s)\n", ip, i1 / 1e9, i2 / 1e9
	printf "two procs    %8.2f ms/step  (training to exit: %.2f s, %.2f s; mTLS on loopback)\n", np, n1 / 1e9, n2 / 1e9
	printf "overhead     %8.2f ms/step  (%.0f%%)\n", np - ip, 100 * (np - ip) / ip
	printf "wire         %8.0f bytes/step passive→active, %.0f active→passive (gRPC messages)\n", (s2 - s1) / d, (r2 - r1) / d
}'
