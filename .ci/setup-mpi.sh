#!/usr/bin/env bash
# Installs Open MPI 4.1 and its Java bindings (mpi.jar) on Debian 12, so sharp4j can be
# tested and benchmarked against MPI from Java. Run as root; safe to rerun (every step
# is skipped when already done); needs no stdin. Run settings live in .ci/mpi-env.sh.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

ci_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=mpi-env.sh
. "$ci_dir/mpi-env.sh"                      # MPI_JAR, MPIRUN_FLAGS, MPI_JAVA_OPTS
scratch=/var/cache/sharp4j/openmpi-src      # source package download and jar build
debsrc=/etc/apt/sources.list.d/sharp4j-deb-src
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
log() { echo "[setup-mpi] $*"; }
[ "$(id -u)" -eq 0 ] || { echo "setup-mpi.sh: run as root" >&2; exit 1; }

# 1. deb-src entries. mpi.jar is in no Debian binary package, so it is built from the
#    openmpi source package, and "apt-get source" needs deb-src. They are derived from
#    the machine's own "deb" entries for this release (same URIs, suites, components,
#    keys), so the script names no mirror and uses whichever one the machine is set to.
# shellcheck disable=SC2016  # $(...) is apt's own field syntax here
if apt-get indextargets --format '$(CREATED_BY) $(RELEASE)' | grep -cx "Sources $codename" >/dev/null; then
  log "deb-src for $codename already configured"
else
  shopt -s nullglob
  stanzas=$(for f in /etc/apt/sources.list.d/*.sources; do   # deb822 format
    awk -v cn="$codename" '
      function flush() {
        if (types ~ /(^|[ \t])deb([ \t]|$)/ && enabled != "no" && (" " suites " ") ~ (" " cn "[ -]"))
          printf "%s\n", stanza
        stanza = types = suites = enabled = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      {
        line = $0
        if (match(line, /^[A-Za-z-]+:/)) {
          key = tolower(substr(line, 1, RLENGTH)); val = substr(line, RLENGTH + 1)
          gsub(/^[ \t]+|[ \t]+$/, "", val)
          if (key == "types:") { types = val; line = "Types: deb-src" }
          else if (key == "suites:") suites = val
          else if (key == "enabled:") enabled = tolower(val)
        }
        stanza = stanza line "\n"
      }
      END { flush() }' "$f"
  done)
  lines=$(for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do   # one-line format
    [ -f "$f" ] || continue
    awk -v cn="$codename" '$1 == "deb" {
        i = 2; if ($2 ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }   # skip [options]
        if ($(i + 1) == cn || index($(i + 1), cn "-") == 1) { sub(/deb/, "deb-src"); print } }' "$f"
  done)
  shopt -u nullglob
  [ -n "$stanzas$lines" ] || { echo "setup-mpi.sh: no '$codename' deb entry to derive deb-src from" >&2; exit 1; }
  header="# Written by sharp4j .ci/setup-mpi.sh: deb-src twins of this machine's $codename entries."
  [ -z "$stanzas" ] || printf '%s\n\n%s' "$header" "$stanzas" > "$debsrc.sources"
  [ -z "$lines" ] || printf '%s\n%s\n' "$header" "$lines" > "$debsrc.list"
  log "wrote deb-src entries: $(ls "$debsrc".*)"
fi

# 2. Packages: mpirun and libmpi_java.so (openmpi-bin, libopenmpi-dev), dpkg-dev for
#    "apt-get source", iproute2 for the network-namespace tests; a JDK and Maven only
#    when the machine has none (CI images usually bring their own).
pkgs=(openmpi-bin libopenmpi-dev dpkg-dev iproute2)
command -v javac >/dev/null || pkgs+=(default-jdk-headless)
command -v mvn >/dev/null || pkgs+=(maven)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
else
  log "packages already installed"
fi
jdk_bin=$(dirname "$(readlink -f "$(command -v javac)")")   # javac, jar, java of one JDK
src_ver=$(dpkg-query -W -f='${source:Version}' libopenmpi3) # e.g. 4.1.4-3 (binary 4.1.4-3+b1)
ompi_ver=${src_ver%%-*}                                     # e.g. 4.1.4

# 3. mpi.jar, compiled from the Java sources of exactly the source version the installed
#    libmpi_java.so was built from (its JNI methods must match the classes). They are
#    plain Java: no .java.in template, no generated file (constants are filled in at
#    run time by native code), and Debian's patches do not touch them. --release 8
#    keeps Buffer.position() & co. linkable on any JVM >= 8, as upstream intended.
stamp=$scratch/mpi.jar.built-from
if [ -s "$MPI_JAR" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$src_ver" ]; then
  log "$MPI_JAR already built from openmpi $src_ver"
else
  mkdir -p "$scratch"
  chown _apt "$scratch" 2>/dev/null || true   # apt-get downloads as user _apt
  cd "$scratch"
  orig() { compgen -G "openmpi_$ompi_ver.orig.tar.*" | grep -v '\.asc$' || true; }
  if [ -z "$(orig)" ]; then
    apt-cache showsrc --only-source openmpi 2>/dev/null | grep -cx "Version: $src_ver" >/dev/null || apt-get update -q
    apt-get source --download-only "openmpi=$src_ver" </dev/null
  fi
  rm -rf java classes && mkdir java classes
  tar -xf "$(orig)" -C java --strip-components=5 --wildcards '*/ompi/mpi/java/java/*.java'
  "$jdk_bin/javac" --release 8 -encoding UTF-8 -Xlint:-options -d classes java/*.java   # 36 files
  "$jdk_bin/jar" --create --file "$MPI_JAR.tmp" -C classes mpi
  mv -f "$MPI_JAR.tmp" "$MPI_JAR" && echo "$src_ver" > "$stamp"
  srcs=(java/*.java)
  log "built $MPI_JAR from ${#srcs[@]} sources of openmpi $src_ver"
fi

# 4. Maven artifact org.open-mpi:mpi:<version> for the modules that compile against
#    the bindings. Run outside the reactor so mvn does not read the project's pom.
m2_jar=${HOME:-/root}/.m2/repository/org/open-mpi/mpi/$ompi_ver/mpi-$ompi_ver.jar
if cmp -s "$MPI_JAR" "$m2_jar"; then
  log "org.open-mpi:mpi:$ompi_ver already in the local Maven repository"
else
  (cd / && mvn -B -q org.apache.maven.plugins:maven-install-plugin:3.1.3:install-file \
    -Dfile="$MPI_JAR" -DgroupId=org.open-mpi -DartifactId=mpi -Dversion="$ompi_ver" -Dpackaging=jar </dev/null)
  log "installed org.open-mpi:mpi:$ompi_ver into the local Maven repository"
fi

# 5. Smoke test (always run; ~1 s): two ranks allReduce one double from a double[] and
#    from a direct ByteBuffer. Catches a jar/JNI mismatch or a broken mpirun setup.
smoke=$(mktemp -d)
trap 'rm -rf "$smoke"' EXIT
"$jdk_bin/javac" -cp "$MPI_JAR" -d "$smoke" "$ci_dir/mpi-smoke/MpiSmoke.java"
# shellcheck disable=SC2086  # the flag variables are word lists on purpose
out=$(mpirun $MPIRUN_FLAGS -np 2 "$jdk_bin/java" $MPI_JAVA_OPTS -cp "$MPI_JAR:$smoke" MpiSmoke </dev/null) || true
echo "$out"
[ "$out" = "mpi-smoke: OK" ] || { echo "setup-mpi.sh: MPI smoke test failed" >&2; exit 1; }
log "done in ${SECONDS}s"
