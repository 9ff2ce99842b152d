# Sourced by bin/sharp4j-run and bin/sharp4j: makes sure a JDK and Maven exist (installs them as
# root on Debian, else says how), builds osu-bench and the modules it needs on first use or when
# a source is newer than the jar, and sets $SHARP4J_CP to the class path the ranks run with.
# Only osu-bench and its dependencies are built, without tests: the SHARP emulator (gcc) is for the tests.
sharp4j_prepare() {
  local top="$1" me="$2"
  if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then
      echo "$me: installing a JDK and Maven (apt-get) ..." >&2
      DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 </dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless maven >&2 </dev/null
    else
      echo "$me: needs a JDK 17+ and Maven: sudo apt-get install -y openjdk-17-jdk-headless maven" >&2
      return 1
    fi
  fi
  local target="$top/osu-bench/target" jar
  # the main jar, not its -sources/-javadoc companions (mvn package/verify writes those too)
  jar=$(ls "$target"/sharp4j-osu-bench-*.jar 2>/dev/null | grep -v -E -- '-(sources|javadoc|tests)\.jar$' | head -n 1 || true)
  if [ -z "$jar" ] || [ ! -d "$target/lib" ] || \
     [ -n "$(find "$top"/tuning "$top"/hierarchy "$top"/fallback "$top"/sharp-jni "$top"/logplot "$top"/tuner "$top"/mpi "$top"/osu-bench \( -path '*/src/main/*' -o -path '*/src/mpi/*' \) -newer "$jar" -print -quit 2>/dev/null)" ]; then
    echo "$me: building (mvn -q -DskipTests package -pl osu-bench -am) ..." >&2
    (cd "$top" && mvn -B -q -DskipTests package -pl osu-bench -am) >&2
    jar=$(ls "$target"/sharp4j-osu-bench-*.jar | grep -v -E -- '-(sources|javadoc|tests)\.jar$' | head -n 1)
    # Maven leaves an up-to-date jar as it was: mark it built now, or a change in another module
    # (which does not change osu-bench's jar) would rebuild at every start.
    touch "$jar"
  fi
  SHARP4J_CP="$jar:$target/lib/*"
}
