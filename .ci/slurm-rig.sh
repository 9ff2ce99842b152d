#!/usr/bin/env bash
# A Slurm cluster on this machine for multi-node tests: the hosts of .ci/netns-rig.sh (one network
# namespace each, host0..), one slurmd in each (NodeName hostI, its own spool, log and /tmp), the
# controller (slurmctld) in the root namespace on the rig's bridge address. No munge (auth/none,
# cred/none), no cgroups (proctrack/linuxproc, task/none), no accounting; everything lives under
# /run/$RIG_ID-slurm, removed by down. Needs root and Debian's slurmd, slurmctld and
# slurm-client (.ci/setup-slurm.sh).
#
#   .ci/slurm-rig.sh check               exit 0 if Slurm is installed and network namespaces work, else say why
#   .ci/slurm-rig.sh up [HOSTS]          the rig (default 3 hosts), then the daemons; returns when sinfo shows every node idle
#   .ci/slurm-rig.sh down                kill the daemons and every job step, remove the rig and the files (safe to repeat)
#   .ci/slurm-rig.sh exec -- CMD..       run CMD (srun, sinfo, ...) against the cluster that is up (SLURM_CONF set)
#   .ci/slurm-rig.sh run [HOSTS] -- CMD  up, CMD, down (also on error or signal); CMD's exit code
#
# Settings (environment): RIG_ID and RIG_NET as for .ci/netns-rig.sh; SLURM_RIG_PORT the
# controller's port (default 6917; slurmd listens on +1 in each namespace, srun on +2..+101 in the
# root namespace).
#
# Example, 3 hosts x 2 ranks of a sharp4j program, bootstrapped by Slurm's PMIx server:
#   .ci/slurm-rig.sh run 3 -- srun --mpi=pmix -N 3 -n 6 java -Dsharp4j.ucx.tls=tcp -cp "$CP" org.sharp4j.launch.AllreduceDemo
set -euo pipefail

RIG_ID=${RIG_ID:-s4j}
RIG_NET=${RIG_NET:-10.231.77}
PORT=${SLURM_RIG_PORT:-6917}
export RIG_ID RIG_NET
export PATH="$PATH:/usr/sbin:/sbin"   # slurmctld and slurmd live in sbin, not always on a test runner's PATH
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self=$here/$(basename "${BASH_SOURCE[0]}")
rig=$here/netns-rig.sh
top=$(cd "$here/.." && pwd -P)
dir=/run/$RIG_ID-slurm   # not under /tmp: each slurmd gets its own /tmp (a bind mount of $dir/hostI/tmp)
conf=$dir/slurm.conf

die() { echo "slurm-rig: $*" >&2; exit 1; }

problem() {
  local c
  for c in slurmctld slurmd srun sinfo; do
    command -v $c >/dev/null || { echo "$c is not installed (run .ci/setup-slurm.sh as root)"; return; }
  done
  [ "$(id -u)" -eq 0 ] || { echo "the Slurm rig needs root (daemons in network namespaces)"; return; }
  local out
  out=$(bash "$rig" check 2>&1) || { echo "$out"; return; }
}

write_conf() {
  local hosts=$1 i cpus
  cpus=$(nproc)
  mkdir -p "$dir/ctld"
  {
    echo "# written by .ci/slurm-rig.sh; removed by its down"
    echo "ClusterName=${RIG_ID//[^a-z0-9]/}"
    echo "SlurmctldHost=$(hostname -s)($RIG_NET.254)"
    echo "SlurmctldPort=$PORT"
    echo "SlurmdPort=$((PORT + 1))"
    echo "SrunPortRange=$((PORT + 2))-$((PORT + 101))"
    echo "AuthType=auth/none"
    echo "CredType=cred/none"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$dir/ctld"
    echo "SlurmctldPidFile=$dir/ctld/slurmctld.pid"
    echo "SlurmctldLogFile=$dir/ctld/slurmctld.log"
    echo "SlurmdSpoolDir=$dir/%n/spool"
    echo "SlurmdPidFile=$dir/%n/slurmd.pid"
    echo "SlurmdLogFile=$dir/%n/slurmd.log"
    echo "PlugStackConfig=$dir/plugstack.conf"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "SchedulerType=sched/builtin"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "SlurmdParameters=config_overrides"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SlurmdTimeout=60"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    echo "MailProg=/bin/true"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    for ((i = 0; i < hosts; i++)); do
      echo "NodeName=host$i NodeAddr=$RIG_NET.$((i + 1)) NodeHostname=host$i CPUs=$cpus State=UNKNOWN"
    done
    echo "PartitionName=rig Nodes=host[0-$((hosts - 1))] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
  } > "$conf"
  : > "$dir/plugstack.conf"
  # No cgroup plugin is used; an explicit file keeps slurmd from reading /etc/slurm/cgroup.conf.
  printf "CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n" > "$dir/cgroup.conf"
  for ((i = 0; i < hosts; i++)); do mkdir -p "$dir/host$i/spool" "$dir/host$i/tmp"; done
}

down() {
  local f pid
  # slurmd and its slurmstepd/tasks run inside the namespaces: netns-rig.sh down kills them.
  for f in "$dir"/ctld/slurmctld.pid "$dir"/host*/slurmd.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    [ -n "$pid" ] || continue
    pkill -9 -P "$pid" 2>/dev/null || true   # slurmctld's slurmscriptd
    kill -9 "$pid" 2>/dev/null || true
  done
  bash "$rig" down
  # slurmctld started by an earlier up whose pid file is gone: only ours, by its config file.
  for pid in $(pgrep -x slurmctld 2>/dev/null || true); do
    if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-f $conf"; then
      pkill -9 -P "$pid" 2>/dev/null || true
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  # The binds of the repository live in the hosts' mount namespaces, gone with their processes;
  # never let rm reach through one that is still mounted here.
  for f in $(findmnt -rn -o TARGET 2>/dev/null | grep -F "$dir/" | sort -r || true); do
    umount -l "$f" 2>/dev/null || die "cannot unmount $f: not removing $dir"
  done
  rm -rf "$dir"
}

wait_idle() {
  local hosts=$1 t idle
  for ((t = 0; t < 120; t++)); do
    idle=$(SLURM_CONF=$conf sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | wc -l || true)
    [ "$idle" -eq "$hosts" ] && return 0
    sleep 0.5
  done
  echo "slurm-rig: the nodes are not idle after 60 s:" >&2
  SLURM_CONF=$conf sinfo -N -l >&2 || true
  tail -n 20 "$dir"/ctld/slurmctld.log "$dir"/host*/slurmd.log >&2 || true
  return 1
}

up() {
  local hosts=${1:-3} i p
  p=$(problem)
  [ -z "$p" ] || die "$p"
  down
  mkdir -p "$dir"
  bash "$rig" up "$hosts" >/dev/null
  write_conf "$hosts"
  slurmctld -f "$conf" -i || die "slurmctld did not start: $(tail -n 20 "$dir/ctld/slurmctld.log" 2>/dev/null)"
  # The repository, when it lies under /tmp (a clone there), stays visible at its path on every host.
  local keep=
  case "$top/" in /tmp/*) keep=$top ;; esac
  for ((i = 0; i < hosts; i++)); do
    # Inside ip netns exec's own mount namespace (nothing here reaches the root namespace): a
    # private /tmp (Slurm's PMIx plugin puts per-step directories of the same name there on every
    # node) with the repository bound back at its path if it was under /tmp, and the host's name.
    mkdir -p "$dir/host$i/keep"
    ip netns exec "$RIG_ID-h$i" unshare -u sh -c '
      set -e
      if [ -n "$4" ]; then mount --bind "$4" "$5"; fi
      mount --bind "$1" /tmp
      if [ -n "$4" ]; then mkdir -p "$4"; mount --bind "$5" "$4"; fi
      hostname "$2"
      exec slurmd -f "$3" -N "$2"' \
      sh "$dir/host$i/tmp" "host$i" "$conf" "$keep" "$dir/host$i/keep" \
      || die "slurmd on host$i did not start: $(tail -n 20 "$dir/host$i/slurmd.log" 2>/dev/null)"
  done
  wait_idle "$hosts"
}

case "${1:-}" in
  check)
    p=$(problem)
    if [ -n "$p" ]; then echo "$p"; exit 1; fi
    echo "Slurm $(slurmd -V | awk '{print $2}') is installed and network namespaces work"
    ;;
  up)
    trap 'down' EXIT   # a failed up leaves nothing behind
    up "${2:-3}"
    trap - EXIT
    echo "slurm-rig: ${2:-3} nodes idle (host0..; controller $RIG_NET.254:$PORT); SLURM_CONF=$conf"
    ;;
  down)
    down
    ;;
  exec)
    shift
    [ "${1:-}" = "--" ] || die "usage: $0 exec -- CMD ..."
    shift
    [ -f "$conf" ] || die "no cluster is up ($conf is missing): run $0 up first"
    SLURM_CONF=$conf exec "$@"
    ;;
  run)
    shift
    hosts=3
    if [ "${1:-}" != "--" ] && [ -n "${1:-}" ]; then hosts=$1; shift; fi
    [ "${1:-}" = "--" ] || die "usage: $0 run [HOSTS] -- CMD ..."
    shift
    child=
    trap 'down' EXIT
    trap '[ -z "$child" ] || kill -TERM "$child" 2>/dev/null; exit 130' INT
    trap '[ -z "$child" ] || kill -TERM "$child" 2>/dev/null; exit 143' TERM
    up "$hosts"
    export SLURM_CONF=$conf
    "$@" &
    child=$!
    set +e
    wait "$child"
    rc=$?
    set -e
    exit $rc
    ;;
  *)
    sed -n '2,/^set -euo/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
