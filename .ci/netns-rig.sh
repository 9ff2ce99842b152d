#!/usr/bin/env bash
# Several real "hosts" on this machine for multi-node tests: one network namespace per host,
# each with a veth link to a bridge in the root namespace, its own address and (per process,
# through unshare -u) its own host name. Ranks of one job run in different namespaces and talk
# over TCP across the veths, as on separate machines; the launcher's rendezvous listens on the
# bridge address.
#
#   .ci/netns-rig.sh check                 exit 0 if network namespaces can be made here, else say why
#   .ci/netns-rig.sh up [HOSTS]            create the rig (default 3 hosts; recreates it if present)
#   .ci/netns-rig.sh down                  remove it (kills processes left inside; safe to repeat)
#   .ci/netns-rig.sh run [HOSTS] -- CMD..  up, run CMD, down (also on error or signal); CMD's exit code
#   .ci/netns-rig.sh exec RANK SIZE CMD..  run CMD as rank RANK of SIZE on its host: host = RANK*HOSTS/SIZE
#                                          (blocks of consecutive ranks), as LocalLauncher's --rank-prefix
#
# Settings (environment): RIG_ID names everything (default s4j; namespaces $RIG_ID-h0.., bridge
# ${RIG_ID}br, veths ${RIG_ID}v0..; at most 10 characters), RIG_NET the /24 prefix (default
# 10.231.77: hosts .1, .2, ..., the bridge .254), RIG_HOSTS the host count for exec (run and up
# export it), RIG_QUICKACK=1 gives each host's route to the others the quickack attribute (no
# delayed ACKs: see "UCX over TCP" in the README), RIG_CC=NAME sets each host's TCP congestion
# control (a new namespace inherits the machine's default, which differs between machines: Debian's
# is cubic, some VM images set bbr, and the two give Open MPI's and UCX's TCP very different large
# message bandwidth; see "UCX over TCP"). NAME must be in the machine's
# net.ipv4.tcp_available_congestion_control; the script adds it to tcp_allowed_congestion_control
# (which a namespace may choose from) if it is not there. RIG_STEER says on which CPU the kernel
# processes the packets a host receives (a veth has no queues of its own, so by default on the CPU
# that sent them: the packets of one TCP flow, sent from the sending thread's CPU and from the CPU
# that handled an ACK, are processed on both, arrive out of order and are retransmitted in vain):
# "hash" steers each flow to one CPU by its hash (RPS, as RSS spreads the flows of a multi-queue
# NIC), "flow" to the CPU of the thread that reads it (RFS, as a NIC's aRFS; it sets the machine-wide
# net.core.rps_sock_flow_entries if it is 0). See "UCX over TCP" in the README. Host i is named
# host$i and resolves through /etc/netns/$RIG_ID-h$i/hosts.
#
# Example, 3 hosts x 2 ranks, UCX over TCP between them (the rendezvous on the bridge):
#   .ci/netns-rig.sh run 3 -- java -Dsharp4j.ucx.tls=tcp -cp "$CP" org.sharp4j.launch.LocalLauncher \
#       --bind 10.231.77.254 --rank-prefix ".ci/netns-rig.sh exec {rank} {size}" -np 6 demo
set -euo pipefail

RIG_ID=${RIG_ID:-s4j}
RIG_NET=${RIG_NET:-10.231.77}
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
br="${RIG_ID}br"

die() { echo "netns-rig: $*" >&2; exit 1; }
[ ${#RIG_ID} -le 10 ] || die "RIG_ID '$RIG_ID' is longer than 10 characters (interface names are limited to 15)"

namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${RIG_ID}-h[0-9]+\$" || true; }

down() {
  local ns pids
  for ns in $(namespaces); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true   # takes its end of the veth, and so the pair, with it
    rm -rf "/etc/netns/$ns"
  done
  rm -rf /etc/netns/"${RIG_ID}"-h* 2>/dev/null || true
  rmdir /etc/netns 2>/dev/null || true
  local v
  for v in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${RIG_ID}v[0-9]+\$" || true); do
    ip link del "$v" 2>/dev/null || true
  done
  ip link del "$br" 2>/dev/null || true
}

up() {
  local hosts=${1:-3} i ns
  [ "$hosts" -ge 1 ] && [ "$hosts" -le 200 ] || die "HOSTS must be 1..200, got $hosts"
  command -v ip >/dev/null || die "the ip command is missing (apt-get install iproute2)"
  command -v unshare >/dev/null || die "the unshare command is missing (util-linux)"
  local steer=${RIG_STEER:-} mask=""
  case "$steer" in
    "" | sender) steer="" ;;
    hash | flow)
      local n g m
      n=$(nproc --all)
      for ((g = 0; g * 32 < n; g++)); do   # rps_cpus: comma-separated 32-bit groups, the highest first
        m=$(( n - g * 32 >= 32 ? 0xffffffff : (1 << (n - g * 32)) - 1 ))
        mask=$(printf '%x' "$m")${mask:+,$mask}
      done
      if [ "$steer" = flow ] && [ "$(cat /proc/sys/net/core/rps_sock_flow_entries)" = 0 ]; then
        sysctl -qw net.core.rps_sock_flow_entries=32768
      fi
      ;;
    *) die "RIG_STEER must be sender, hash or flow, not '$steer'" ;;
  esac
  down
  local cc=${RIG_CC:-}
  if [ -n "$cc" ]; then
    grep -qw -- "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control ||
      die "RIG_CC=$cc is not an available congestion control here ($(cat /proc/sys/net/ipv4/tcp_available_congestion_control))"
    if ! grep -qw -- "$cc" /proc/sys/net/ipv4/tcp_allowed_congestion_control; then
      sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control) $cc"
    fi
  fi
  ip link add "$br" type bridge
  ip addr add "$RIG_NET.254/24" dev "$br"
  ip link set "$br" up
  for ((i = 0; i < hosts; i++)); do
    ns="$RIG_ID-h$i"
    ip netns add "$ns"
    ip link add "${RIG_ID}v$i" type veth peer name "${RIG_ID}p$i"
    ip link set "${RIG_ID}v$i" master "$br" up
    ip link set "${RIG_ID}p$i" netns "$ns"
    ip -n "$ns" link set "${RIG_ID}p$i" name eth0
    ip -n "$ns" addr add "$RIG_NET.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    if [ -n "$cc" ]; then
      ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control="$cc"
    fi
    if [ -n "$steer" ]; then   # both ends of the host's veth receive: the host, and the bridge's port
      local q
      for q in "/sys/class/net/${RIG_ID}v$i/queues/rx-0" "ns:/sys/class/net/eth0/queues/rx-0"; do
        local pre=()
        [[ $q == ns:* ]] && { pre=(ip netns exec "$ns"); q=${q#ns:}; }
        "${pre[@]}" sh -c "echo $mask > $q/rps_cpus && echo $([ "$steer" = flow ] && echo 32768 || echo 0) > $q/rps_flow_cnt"
      done
    fi
    if [ "${RIG_QUICKACK:-0}" = 1 ]; then
      ip -n "$ns" route change "$RIG_NET.0/24" dev eth0 proto kernel scope link src "$RIG_NET.$((i + 1))" quickack 1
    fi
    # ip netns exec bind-mounts /etc/netns/NS/* over /etc: each host resolves its own name.
    mkdir -p "/etc/netns/$ns"
    {
      echo "127.0.0.1 localhost"
      local j
      for ((j = 0; j < hosts; j++)); do echo "$RIG_NET.$((j + 1)) host$j"; done
    } > "/etc/netns/$ns/hosts"
  done
  if command -v ping >/dev/null; then   # every host reaches the bridge (where the rendezvous listens)
    for ((i = 0; i < hosts; i++)); do
      ip netns exec "$RIG_ID-h$i" ping -c 1 -W 2 "$RIG_NET.254" >/dev/null 2>&1 || die "host$i cannot reach $RIG_NET.254"
    done
  fi
}

case "${1:-}" in
  check)
    probe="${RIG_ID}-probe$$"
    if ! out=$(ip netns add "$probe" 2>&1); then
      echo "ip netns add is not permitted here: $out"
      exit 1
    fi
    ok=1
    out=$(ip netns exec "$probe" unshare -u sh -c 'hostname probe && ip link set lo up' 2>&1) || ok=0
    ip netns del "$probe" 2>/dev/null || true
    if [ $ok -eq 0 ]; then
      echo "network namespaces exist but cannot be used (ip netns exec / unshare -u): $out"
      exit 1
    fi
    if ! out=$(ip link add "${RIG_ID}pbr" type bridge 2>&1); then
      echo "cannot create a bridge: $out"
      exit 1
    fi
    ip link del "${RIG_ID}pbr"
    echo "network namespaces, veths, bridges and unshare -u work"
    ;;
  up)
    up "${2:-3}"
    echo "netns-rig: ${2:-3} hosts up: namespaces $RIG_ID-h0.., bridge $br at $RIG_NET.254"
    ;;
  down)
    down
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
    export RIG_ID RIG_NET RIG_HOSTS=$hosts
    "$@" &          # in the background so that a signal reaches the traps at once
    child=$!
    set +e
    wait "$child"
    rc=$?
    set -e
    exit $rc
    ;;
  exec)
    [ $# -ge 4 ] || die "usage: $0 exec RANK SIZE CMD ..."
    rank=$2 size=$3
    shift 3
    hosts=${RIG_HOSTS:?RIG_HOSTS is not set (use run, or export it after up)}
    h=$((rank * hosts / size))
    export HOSTNAME="host$h"
    exec ip netns exec "$RIG_ID-h$h" unshare -u sh -c 'hostname "$HOSTNAME" && exec "$@"' sh "$@"
    ;;
  *)
    sed -n '2,25p' "$self" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
