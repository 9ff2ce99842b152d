#!/usr/bin/env bash
# The OSU ports against Open MPI between the hosts of .ci/netns-rig.sh (one rank per host) or among the ranks of
# this host (node:RANKS), measured so
# that the machine's slow and fast phases (seconds to minutes on a shared VM) cancel: in each round the
# port runs with --compare mpi --blocks B (sharp4j and Open MPI Java alternate in blocks inside every
# size, in the same processes), and, with OMB_DIR set, Open MPI's C benchmark (the public OSU benchmarks
# built outside this repository over the same Open MPI), the two in alternating order from round to
# round. Prints per size the medians over the rounds: sharp4j's P50, its P50 over Open MPI Java's (each
# round's ratio, min-max), over OMB C's, the P99/P50 of both and sharp4j's average over its P50.
#
#   .ci/netns-rig.sh up 2                         (as root; RIG_ID / RIG_NET name another rig)
#   mvn -B -q install -DskipTests                 (the port's jar and osu-bench/target/lib)
#   OMB_DIR=/path/to/omb osu-bench/bench/rig-compare.sh 2 reduce 65536:16777216 300 6
#   OMB_DIR=/path/to/omb osu-bench/bench/rig-compare.sh node:4 allreduce    (4 ranks on this host, no rig:
#                                                 shared memory, $MPIRUN_FLAGS, mpirun's own placement)
#
# Arguments: HOSTS|node:RANKS allreduce|reduce [SIZES (MIN:MAX, default 65536:16777216)] [ITERS (300)] [ROUNDS (4)].
# BLOCKS (default 4) blocks per size, SKIP (20) warm-up calls per size, SHARP4J_OPTS more JVM options,
# KEEP=dir keeps the raw rows (ROUNDS 0 with KEEP=dir summarises rows kept before). Placement as the README's "Binding on the rig" says: a CPU of its own per
# rank where hosts do not outnumber CPUs, else unbound with mpi_yield_when_idle.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=/dev/null
source "$top/.ci/mpi-env.sh"
hosts=${1:?HOSTS}
coll=${2:?allreduce or reduce}
sizes=${3:-65536:16777216}
iters=${4:-300}
rounds=${5:-4}
blocks=${BLOCKS:-4}
skip=${SKIP:-20}
case $coll in
  allreduce) cls=OsuAllreduce ;;
  reduce) cls=OsuReduce ;;
  *) echo "rig-compare.sh: collective must be allreduce or reduce, not '$coll'" >&2; exit 2 ;;
esac
jar=$(ls "$top"/osu-bench/target/sharp4j-osu-bench-*.jar 2>/dev/null | grep -v -e sources -e javadoc | head -1 || true)
[[ -n $jar && -d $top/osu-bench/target/lib ]] || { echo "rig-compare.sh: no port jar: run mvn -B -q install -DskipTests" >&2; exit 2; }
omb=
if [[ -n ${OMB_DIR:-} ]]; then
  omb=$OMB_DIR/osu_$coll
  [[ -x $omb ]] || { echo "rig-compare.sh: OMB_DIR has no executable osu_$coll" >&2; exit 2; }
fi
net=${RIG_NET:-10.231.77}
node_ranks=
if [[ $hosts == node:* ]]; then
  node_ranks=${hosts#node:}
  [[ $node_ranks =~ ^[1-9][0-9]*$ ]] || { echo "rig-compare.sh: node:RANKS needs a rank count, not '$hosts'" >&2; exit 2; }
else
  [[ $hosts =~ ^[1-9][0-9]*$ ]] || { echo "rig-compare.sh: HOSTS must be a host count or node:RANKS, not '$hosts'" >&2; exit 2; }
fi
[[ -n $node_ranks ]] || ip netns list 2>/dev/null | grep -q "^${RIG_ID:-s4j}-h$((hosts - 1))\b" \
  || { echo "rig-compare.sh: no rig host $((hosts - 1)) (${RIG_ID:-s4j}-h$((hosts - 1))): .ci/netns-rig.sh up $hosts first" >&2; exit 2; }
out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$out"' EXIT
if [[ -n $node_ranks ]]; then
  # shellcheck disable=SC2206
  flags=($MPIRUN_FLAGS -np "$node_ranks")
  what="$node_ranks ranks on one host"
else
  for ((h = 0; h < hosts; h++)); do echo "host$h slots=1"; done > "$out/hosts"
  if ((hosts <= $(nproc))); then
    for ((h = 0; h < hosts; h++)); do echo "rank $h=host$h slot=$h"; done > "$out/rankfile"
    place=(--hostfile "$out/hosts" --rankfile "$out/rankfile")
  else
    place=(--hostfile "$out/hosts" --map-by node --bind-to none --mca mpi_yield_when_idle 1)
  fi
  flags=(--allow-run-as-root --mca plm_rsh_agent "$top/.ci/netns-rsh" --mca oob_tcp_if_include "$net.0/24"
    --mca btl_tcp_if_include "$net.0/24" --mca pml ob1 --mca btl self,vader,tcp "${place[@]}" -np "$hosts")
  what="$hosts hosts x 1 rank"
fi
port() {
  # shellcheck disable=SC2086
  mpirun "${flags[@]}" java -cp "$jar:$top/osu-bench/target/lib/*:$MPI_JAR" $MPI_JAVA_OPTS -Dsharp4j.ucx.tls=tcp \
      ${SHARP4J_OPTS:-} org.sharp4j.osu.$cls --compare mpi --blocks "$blocks" -m "$sizes" -i "$iters" -x "$skip" -z \
      > "$out/port.$1" 2>&1 || { cat "$out/port.$1" >&2; exit 1; }
}
ombc() {
  mpirun "${flags[@]}" "$omb" -m "$sizes" -i "$iters" -x "$skip" -z -T mpi_float > "$out/omb.$1" 2>&1 \
    || { cat "$out/omb.$1" >&2; exit 1; }
}
echo "# $(date -u +%FT%TZ) $what, $coll $sizes, $iters calls per size, $rounds rounds, --blocks $blocks;" \
  "load: $(uptime | sed 's/.*load average/load average/')"
for ((r = 1; r <= rounds; r++)); do
  if [[ -z $omb ]]; then port "$r"; elif ((r % 2)); then port "$r"; ombc "$r"; else ombc "$r"; port "$r"; fi
done
# port rows (-z, --compare): size, sharp4j avg p50 p90 p99, Open MPI Java avg p50 p90 p99, ratio; OMB C rows: size avg p50 p90 p99
awk '
  function median(a, k,   i, j, t, b) { # of a[1..k] (mawk has no asort: insertion sort of a copy)
    for (i = 1; i <= k; i++) b[i] = a[i]
    for (i = 2; i <= k; i++) { t = b[i]; for (j = i - 1; j >= 1 && b[j] > t; j--) b[j + 1] = b[j]; b[j + 1] = t }
    return k % 2 ? b[(k + 1) / 2] : (b[k / 2] + b[k / 2 + 1]) / 2
  }
  function range(a, k,   i, lo, hi) { lo = hi = a[1]; for (i = 2; i <= k; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
    return sprintf("%.2f-%.2f", lo, hi) }
  FNR == 1 { n = split(FILENAME, p, "/"); split(p[n], lr, "."); kind = lr[1]; r = lr[2] }
  $1 !~ /^[0-9]+$/ { next }
  kind == "port" { s = $1; avg[s, r] = $2; p50[s, r] = $3; p99[s, r] = $5; javg[s, r] = $6; jp50[s, r] = $7; if (!(s in seen)) { seen[s] = 1; order[++ns] = s } }
  kind == "omb" { cavg[$1, r] = $2; cp50[$1, r] = $3; cp99[$1, r] = $5 }
  END {
    printf "%9s %9s %20s %20s %13s %13s %13s %13s %13s\n", "Size", "P50(us)", "xJava P50 (range)", "xOMB-C P50 (range)", "P99/P50 ours", "P99/P50 C",
      "avg/P50 ours", "avg/P50 Java", "avg/P50 C"
    for (i = 1; i <= ns; i++) { s = order[i]; k = 0; kc = 0
      for (rr = 1; (s, rr) in p50; rr++) { k++; a[k] = p50[s, rr]; j[k] = p50[s, rr] / jp50[s, rr]; t[k] = p99[s, rr] / p50[s, rr]; v[k] = avg[s, rr] / p50[s, rr]
        vj[k] = javg[s, rr] / jp50[s, rr]
        if ((s, rr) in cp50) { kc++; c[kc] = p50[s, rr] / cp50[s, rr]; tc[kc] = cp99[s, rr] / cp50[s, rr]; vc[kc] = cavg[s, rr] / cp50[s, rr] } }
      printf "%9d %9.2f %7.2f (%s) %20s %13.1f %13s %13.2f %13.2f %13s\n", s, median(a, k), median(j, k), range(j, k),
        kc ? sprintf("%7.2f (%s)", median(c, kc), range(c, kc)) : "-", median(t, k), kc ? sprintf("%.1f", median(tc, kc)) : "-", median(v, k),
        median(vj, k), kc ? sprintf("%.2f", median(vc, kc)) : "-"
    }
  }' $(ls "$out"/port.* "$out"/omb.* 2>/dev/null)
