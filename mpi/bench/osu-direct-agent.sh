#!/usr/bin/env bash
# An OSU-style Java benchmark (mpiapps.OsuDirect, test classes of the mpi module) on Open MPI's Java
# bindings with direct buffers, run under mpirun -np 2 alternately without and with the agent
# (-javaagent + -Dsharp4j.enable=true), PAIRS times; prints each run's table and, per size, the ratio
# agent / Open MPI alone of the pass-2 (steady state) averages, medians and P99 (as OMB's -z: of each
# call's time averaged over the ranks) and of rank 0's own medians, and each run's first row and
# first 1,000 calls against its steady state. Ratios come from runs of one script on a shared machine:
# the load is printed (uptime). Medians say more than averages on a loaded machine (stalls of a
# descheduled rank dominate the averages).
#
#   mvn -B -o -q -pl mpi -am package -DskipTests     (the agent jar, and the test classes)
#   mpi/bench/osu-direct-agent.sh [allreduce|reduce] [float|int|double|long] [bytebuffer|typed|array] [PAIRS]
# ITERS (default 5000) timed calls per size; BASE_AGENT=path/to/another-agent.jar adds a third run per pair
# ("base": e.g. the agent of the branch point), for before/after ratios in the same run.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=/dev/null
source "$here/../.ci/mpi-env.sh"
coll=${1:-allreduce}
type=${2:-float}
form=${3:-bytebuffer}
pairs=${4:-2}
iters=${ITERS:-5000}
agent=$(ls "$here"/target/sharp4j-mpi-*-agent.jar)
classes=$here/target/test-classes
[[ -f $classes/mpiapps/OsuDirect.class ]] || { echo "no $classes/mpiapps/OsuDirect.class: run mvn -pl mpi test-compile" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() { # $1: label, rest: extra JVM options
  local label=$1; shift
  # shellcheck disable=SC2086
  mpirun $MPIRUN_FLAGS -np 2 java $MPI_JAVA_OPTS -Xmx256m "$@" -cp "$classes:$MPI_JAR" mpiapps.OsuDirect \
      "$coll" "$type" "$form" 4 4096 "$iters" 100 1000 > "$out/$label" 2> "$out/$label.err" || { cat "$out/$label.err" >&2; exit 1; }
}
echo "# $(date -u +%FT%TZ) load: $(uptime | sed 's/.*load average/load average/')"
for p in $(seq 1 "$pairs"); do
  run "mpi.$p"
  run "agent.$p" -javaagent:"$agent" -Dsharp4j.enable=true
  if [[ -n ${BASE_AGENT:-} ]]; then run "base.$p" -javaagent:"$BASE_AGENT" -Dsharp4j.enable=true; fi
done
echo "# after: load: $(uptime | sed 's/.*load average/load average/')"
for f in $(cd "$out" && ls | grep -v '\.err$' | sort); do echo "== $f"; cat "$out/$f"; done
# ratios: agent.p / mpi.p per size (pass 2 averages), first row (pass 1 smallest size) / steady state (pass 2 same size)
# The machine's phases (a cache-line transfer costs 2-3x more in some stretches of seconds to minutes) hit
# single runs: the medians over the pairs are the figures to compare, not one pair.
awk -v pairs="$pairs" '
  function median(a, k,   i, j, t, b) { # of a[1..k] (mawk has no asort: insertion sort of a copy)
    for (i = 1; i <= k; i++) b[i] = a[i]
    for (i = 2; i <= k; i++) { t = b[i]; for (j = i - 1; j >= 1 && b[j] > t; j--) b[j + 1] = b[j]; b[j + 1] = t }
    return k % 2 ? b[(k + 1) / 2] : (b[k / 2] + b[k / 2 + 1]) / 2
  }
  FNR == 1 { split(FILENAME, a, "/"); f = a[length(a)]; split(f, lp, "."); lab = lp[1]; pr = lp[2] }
  /^first/ { first[lab, pr] = $(NF - 4); firstp50[lab, pr] = $(NF - 1) }
  /^[12] / { avg[lab, pr, $1, $2] = $3; p50[lab, pr, $1, $2] = $4; p99[lab, pr, $1, $2] = $5; r0[lab, pr, $1, $2] = $6; if (!($2 in seen)) { seen[$2] = 1; sizes[++n] = $2 } }
  END {
    nl = ("base", 1, 2, sizes[1]) in avg ? 2 : 1
    for (l = 1; l <= nl; l++) { lab = l == 1 ? "agent" : "base"
    printf "%s / Open MPI alone, steady state (pass 2): Avg and P50 (OMB -z: per call, mean over ranks), per pair and their medians over the pairs;\n", lab
    printf "then the medians of the ratios of P99 and of rank 0'"'"'s own P50 (P50r0; for a Reduce rooted at 0, the root'"'"'s)\n%8s", "Size"
    for (p = 1; p <= pairs; p++) printf "  avg#%d  p50#%d", p, p; printf "  avg-med p50-med p99-med p50r0-med\n"
    for (i = 1; i <= n; i++) { s = sizes[i]; printf "%8d", s
      for (p = 1; p <= pairs; p++) {
        ra[p] = avg[lab, p, 2, s] / avg["mpi", p, 2, s]; rp[p] = p50[lab, p, 2, s] / p50["mpi", p, 2, s]
        printf "  %5.2f  %5.2f", ra[p], rp[p]
        r9[p] = p99[lab, p, 2, s] / p99["mpi", p, 2, s]; rr[p] = r0[lab, p, 2, s] / r0["mpi", p, 2, s] }
      printf "  %7.2f %7.2f %7.2f %9.2f\n", median(ra, pairs), median(rp, pairs), median(r9, pairs), median(rr, pairs) } }
    s = sizes[1]
    for (p = 1; p <= pairs; p++) for (l = 0; l <= nl; l++) { lab = l == 0 ? "mpi" : l == 1 ? "agent" : "base"
      printf "%-6s#%d %d B: first row avg %7.3f / steady %7.3f = %5.2f, P50 %.3f / %.3f = %5.2f; first 1000 calls avg %7.3f us = %6.2fx, P50 %.3f = %5.2fx steady\n",
        lab, p, s, avg[lab, p, 1, s], avg[lab, p, 2, s], avg[lab, p, 1, s] / avg[lab, p, 2, s], p50[lab, p, 1, s], p50[lab, p, 2, s],
        p50[lab, p, 1, s] / p50[lab, p, 2, s], first[lab, p], first[lab, p] / avg[lab, p, 2, s], firstp50[lab, p], firstp50[lab, p] / p50[lab, p, 2, s] }
    for (l = 0; l <= nl; l++) { lab = l == 0 ? "mpi" : l == 1 ? "agent" : "base"
      for (p = 1; p <= pairs; p++) { ra[p] = avg[lab, p, 1, s] / avg[lab, p, 2, s]; rp[p] = p50[lab, p, 1, s] / p50[lab, p, 2, s] }
      printf "%-6s %d B, medians over the pairs: first row / steady state avg %5.2f, P50 %5.2f\n", lab, s, median(ra, pairs), median(rp, pairs) }
  }' $(ls "$out"/* | grep -v '\.err$')
