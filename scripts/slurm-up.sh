#!/usr/bin/env bash
# Brings up a single-node Slurm cluster on this machine (as root), for the
# Slurm tests of the sharded sweep (cmd/splitguard/slurm_test.go):
#
#   scripts/slurm-up.sh        install slurm-wlm and munge if missing, configure, start, wait until idle
#   scripts/slurm-up.sh stop   stop the daemons this script started
#
# It works on a fresh Debian machine without systemd: munged runs as the
# munge user (it needs /run/munge and its log owned by that user), and
# slurmctld and slurmd run as root with proctrack/linuxproc and task/none
# (no cgroups needed). The node claims 8 CPUs whatever the machine has
# (SlurmdParameters=config_overrides) so that an array of a few tasks runs
# at once on a small machine. Every wait is bounded; on failure the
# daemons' logs are printed.
set -euo pipefail

conf=/etc/slurm/slurm.conf
logdir=/var/log/slurm
spool=/var/spool/slurmd
state=/var/spool/slurmctld

stop() {
  for p in /run/slurmd.pid /run/slurmctld.pid; do
    if [ -s "$p" ]; then kill "$(cat "$p")" 2>/dev/null || true; fi
  done
  if [ -s /run/munge/munged.pid ]; then kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true; fi
}

if [ "${1:-}" = stop ]; then
  stop
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "slurm-up: must run as root" >&2
  exit 1
fi

need=()
for pkg in slurm-wlm munge; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  mkdir -p /var/tmp/apt-ci
  TMPDIR=/var/tmp/apt-ci timeout 300 apt-get update -qq
  TMPDIR=/var/tmp/apt-ci timeout 600 apt-get install -y -qq "${need[@]}" >/dev/null
fi

dump_logs() {
  echo "slurm-up: failed; logs follow" >&2
  for f in /var/log/munge/munged.log "$logdir/slurmctld.log" "$logdir/slurmd.log"; do
    [ -f "$f" ] && { echo "== $f" >&2; tail -n 40 "$f" >&2; }
  done
  return 0
}
trap dump_logs ERR

# munge: a key (the package makes one; make it if absent), its run
# directory and log owned by the munge user.
if [ ! -s /etc/munge/munge.key ]; then
  if command -v mungekey >/dev/null; then
    mungekey --create --force
  else
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
  fi
fi
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/log/munge /var/lib/munge
chmod 0700 /etc/munge /var/log/munge
chmod 0400 /etc/munge/munge.key
chmod 0755 /run/munge
touch /var/log/munge/munged.log
chown munge:munge /var/log/munge/munged.log
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged --force
  for _ in $(seq 50); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.2
  done
  munge -n | unmunge >/dev/null
fi

host=$(hostname -s 2>/dev/null || uname -n)
host=${host%%.*}
mkdir -p "$logdir" "$spool" "$state" /etc/slurm
cat >"$conf" <<EOF
# Written by scripts/slurm-up.sh: a single-node cluster for tests.
ClusterName=splitguard
SlurmctldHost=$host
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=10
SlurmctldTimeout=30
SlurmdTimeout=60
MinJobAge=60
StateSaveLocation=$state
SlurmdSpoolDir=$spool
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$logdir/slurmctld.log
SlurmdLogFile=$logdir/slurmd.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=8 RealMemory=8000 State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
# Without cgroups, no cgroup.conf is needed; an old one would be read.
rm -f /etc/slurm/cgroup.conf

if ! timeout 5 scontrol ping 2>/dev/null | grep -q UP; then
  [ -s /run/slurmctld.pid ] && kill "$(cat /run/slurmctld.pid)" 2>/dev/null || true
  /usr/sbin/slurmctld
fi
for _ in $(seq 60); do
  timeout 5 scontrol ping 2>/dev/null | grep -q UP && break
  sleep 0.5
done
timeout 5 scontrol ping | grep -q UP

if ! { [ -s /run/slurmd.pid ] && kill -0 "$(cat /run/slurmd.pid)" 2>/dev/null; }; then
  /usr/sbin/slurmd
fi
# Wait (at most 60 s) for the node to be idle; resume it if it came up down.
for i in $(seq 120); do
  st=$(timeout 5 sinfo -h -N -o %t 2>/dev/null | head -1 || true)
  case "$st" in
    idle*|mix*|alloc*) break ;;
    down*|drain*|inval*) timeout 5 scontrol update nodename="$host" state=resume 2>/dev/null || true ;;
  esac
  sleep 0.5
done
st=$(timeout 5 sinfo -h -N -o %t | head -1)
case "$st" in
  idle*|mix*|alloc*) echo "slurm-up: node $host is $st" ;;
  *) echo "slurm-up: node $host is '$st', not idle" >&2; false ;;
esac
