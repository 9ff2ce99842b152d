#!/usr/bin/env bash
# OSU's own Java benchmarks (OMB 7.4, java/mpi/collective: OSUReduce, OSUAllReduce, OSUBarrier), unmodified,
# on Open MPI's Java bindings with their default buffer API (direct ByteBuffers), run under mpirun -np NP (2)
# alternately without and with the agent (-javaagent + -Dsharp4j.enable=true), PAIRS times. They are
# compiled from an OMB source tree into a temporary directory: nothing of OMB enters this repository.
# OMB's Java benchmarks time the whole loop of calls (no barrier between calls, no per-call clock):
# the latency they print is the loop's time per call averaged over the ranks, so a rank that runs
# ahead (a Reduce's non-root) overlaps its calls with the root's, as in a program that reduces in a
# loop. mpiapps.OsuDirect (osu-direct-agent.sh) times each call instead, which adds a clock read
# (about 65 ns on this VM's kvm-clock) to every call of both libraries.
#
#   mvn -B -o -q -pl mpi -am package -DskipTests     (the agent jar)
#   OMB_SRC=path/to/osu-micro-benchmarks-7.4 mpi/bench/omb-java-agent.sh [reduce|allreduce|barrier] [PAIRS]
# NP (default 2) ranks, ITERS (default 100000) calls per size, SKIP (default 10000) untimed calls first, MAX (default 4096) the
# largest size in bytes; BASE_AGENT=path/to/another-agent.jar adds a third run per pair ("base": e.g. the agent
# of the branch point), for before/after ratios in the same run. OMB's warm-up loop reduces 1024 floats (4 KiB) from buffers of MAX bytes:
# below 4096 Open MPI reads past the end of the buffer and sharp4j refuses the call ("send buffer too
# short"), so MAX stays at least 4096.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=/dev/null
source "$here/../.ci/mpi-env.sh"
coll=${1:-reduce}
pairs=${2:-3}
iters=${ITERS:-100000}
skip=${SKIP:-10000}
max=${MAX:-4096}
np=${NP:-2}
src=${OMB_SRC:?set OMB_SRC to an OMB 7.4 source tree (the directory holding java/mpi/collective)}
case $coll in
  reduce) main=mpi.collective.OSUReduce ;;
  allreduce) main=mpi.collective.OSUAllReduce ;;
  barrier) main=mpi.collective.OSUBarrier ;;
  *) echo "collective must be reduce, allreduce or barrier, got $coll" >&2; exit 2 ;;
esac
(( max >= 4096 )) || { echo "MAX must be at least 4096 (OMB's warm-up loop reduces 4 KiB)" >&2; exit 2; }
agent=$(ls "$here"/target/sharp4j-mpi-*-agent.jar)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir "$out/classes"
javac -nowarn -d "$out/classes" -cp "$MPI_JAR" "$src"/java/mpi/common/BenchmarkUtils.java \
    "$src/java/mpi/collective/${main#mpi.collective.}.java" > "$out/javac.log" 2>&1 || { cat "$out/javac.log" >&2; exit 1; }
run() { # $1: label, rest: extra JVM options
  local label=$1; shift
  local sizes=(-m "1:$max")
  [[ $coll == barrier ]] && sizes=()
  # shellcheck disable=SC2086
  mpirun $MPIRUN_FLAGS -np "$np" java $MPI_JAVA_OPTS -Xmx256m "$@" -cp "$out/classes:$MPI_JAR" "$main" \
      "${sizes[@]}" -i "$iters" -x "$skip" > "$out/$label" 2> "$out/$label.err" || { cat "$out/$label.err" >&2; exit 1; }
}
echo "# $(date -u +%FT%TZ) OMB Java $main, $np ranks, $iters calls per size; load: $(uptime | sed 's/.*load average/load average/')"
for p in $(seq 1 "$pairs"); do
  run "mpi.$p"
  run "agent.$p" -javaagent:"$agent" -Dsharp4j.enable=true
  if [[ -n ${BASE_AGENT:-} ]]; then run "base.$p" -javaagent:"$BASE_AGENT" -Dsharp4j.enable=true; fi
done
echo "# after: load: $(uptime | sed 's/.*load average/load average/')"
for f in $(cd "$out" && ls | grep -v '\.err$\|classes\|javac' | sort); do echo "== $f"; grep -v '^#\| started on ' "$out/$f" | grep -v '^\s*$'; done
# per size: Open MPI's and the agent's latency in every pair, the ratio agent / Open MPI per pair and its median
awk -v pairs="$pairs" '
  function median(a, k,   i, j, t, b) {
    for (i = 1; i <= k; i++) b[i] = a[i]
    for (i = 2; i <= k; i++) { t = b[i]; for (j = i - 1; j >= 1 && b[j] > t; j--) b[j + 1] = b[j]; b[j + 1] = t }
    return k % 2 ? b[(k + 1) / 2] : (b[k / 2] + b[k / 2 + 1]) / 2
  }
  FNR == 1 { split(FILENAME, a, "/"); f = a[length(a)]; split(f, lp, "."); lab = lp[1]; pr = lp[2]; row = 0 }
  /^#/ || / started on / || NF < 1 { next }
  { row++; s = NF >= 4 ? $1 : 0; lat[lab, pr, row] = NF >= 4 ? $2 : $1; size[row] = s; if (row > n) n = row }
  END {
    base = ("base", 1, 1) in lat
    printf "agent / Open MPI alone (OMB Java latency, us, per pair), median ratio%s\n%8s", base ? "; base: BASE_AGENT" : "", "Size"
    for (p = 1; p <= pairs; p++) printf "   mpi#%d agent#%d%s", p, p, base ? sprintf(" base#%d", p) : ""
    printf "   ratio-med%s\n", base ? "  base/mpi-med  agent/base-med" : ""
    for (r = 1; r <= n; r++) { printf "%8d", size[r]
      for (p = 1; p <= pairs; p++) {
        printf "  %6.2f  %6.2f", lat["mpi", p, r], lat["agent", p, r]; q[p] = lat["agent", p, r] / lat["mpi", p, r]
        if (base) { printf "  %6.2f", lat["base", p, r]; qb[p] = lat["base", p, r] / lat["mpi", p, r]; qa[p] = lat["agent", p, r] / lat["base", p, r] } }
      printf "   %9.2f", median(q, pairs)
      if (base) printf "  %11.2f  %14.2f", median(qb, pairs), median(qa, pairs)
      printf "\n" } }' $(ls "$out"/mpi.* "$out"/agent.* "$out"/base.* 2>/dev/null | grep -v '\.err$')
