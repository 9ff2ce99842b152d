#!/usr/bin/env bash
# Installs everything the build and the tests need on a Debian 12 machine (idempotent; root
# for the first run): a JDK and Maven if missing, gcc/make for the SHARP emulator, UCX (libucx0,
# the native side of the fallback module's jucx), then Open MPI, iproute2 and mpi.jar (setup-mpi.sh).
# Then Slurm with its PMIx plugin (setup-slurm.sh), for the tests on the Slurm rig.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive

need=()
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
# Headless PNG plots (osu-bench PlotCsv) need fontconfig and one font.
command -v fc-list >/dev/null 2>&1 || need+=(fontconfig)
[ -d /usr/share/fonts/truetype/dejavu ] || need+=(fonts-dejavu-core)
# UCX for the inter-node host path (jucx loads the system's libucp.so.0); Debian 12 ships 1.13.1.
dpkg -s libucx0 >/dev/null 2>&1 || need+=(libucx0)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing ${need[*]}; run as root or: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  apt-get update -q </dev/null
  apt-get install -y -q --no-install-recommends "${need[@]}" </dev/null
fi
bash "$here/setup-mpi.sh"
bash "$here/setup-slurm.sh"   # slurmctld, slurmd, srun with its PMIx plugin: for SlurmNetnsOsuTest on the Slurm rig
