#!/usr/bin/env bash
# Starts (or stops) a single-node Slurm cluster on this machine, for the tests of `nnperf sweep run
# --slurm` (tests/slurm/slurm_sweep_test.sh) and for trying sweeps by hand. Debian 12's slurm 22.05.
#   sudo bash slurm-local.sh up [STATE_DIR]    # installs Debian's slurm + munge if missing, starts
#                                              # munged, slurmctld, slurmd; waits until the node is idle
#   sudo bash slurm-local.sh down [STATE_DIR]  # stops the three daemons by the pids it recorded
# Needs root (the daemons run as root/munge). Prints the partition name on success. Writes
# /etc/slurm/slurm.conf: do not run it on a machine that has a Slurm configuration of its own.
set -euo pipefail
cmd=${1:-up}; state=${2:-/tmp/nnperf-slurm}
mkdir -p "$state"
if [ "$cmd" = down ]; then
  # Stops the daemons by the pids recorded, then waits (up to 20 s) until they have exited, so the
  # state folder can be removed.
  pids=()
  for p in slurmd slurmctld munged; do
    if [ -f "$state/$p.pid" ]; then
      pid=$(cat "$state/$p.pid")
      kill "$pid" 2>/dev/null && pids+=("$pid")
    fi
  done
  for _ in $(seq 1 100); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.2
  done
  exit 0
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
fi
# munge: a key owned by munge, the daemon run as munge
install -d -o munge -g munge -m 700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 755 /run/munge
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none; }
chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  su -s /bin/sh munge -c "/usr/sbin/munged --force --pid-file=/run/munge/munged.pid"
  sleep 1; cp /run/munge/munged.pid "$state/munged.pid" 2>/dev/null || true
fi
host=$(hostname -s); cpus=$(nproc); mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
mkdir -p /etc/slurm "$state/ctld" "$state/d"
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=nnperf-local
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
SlurmUser=root
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld
pgrep -x slurmd >/dev/null || /usr/sbin/slurmd
for i in $(seq 1 30); do
  sinfo -h -o '%T' 2>/dev/null | grep -q -E 'idle|mixed|allocated' && { echo local; exit 0; }
  sleep 1
done
echo "slurm did not come up; see $state/slurmctld.log and $state/slurmd.log" >&2
exit 1
