#!/usr/bin/env bash
# Installs Slurm 22.05 from Debian 12 (slurmctld, slurmd, slurm-client; slurm-wlm-basic-plugins
# comes with them and holds the mpi_pmix_v4 plugin, built against libpmix2) for the Slurm rig
# (.ci/slurm-rig.sh) and its tests. Run as root; safe to rerun; needs no stdin.
#
# The packages pull in munge, but the rig does not use it (auth/none, cred/none). Debian's maintainer
# scripts try to start munge, slurmctld and slurmd: where a policy-rc.d forbids it (containers) nothing
# starts; elsewhere the services are stopped and disabled again, so no daemon runs outside the rig.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
log() { echo "[setup-slurm] $*"; }
[ "$(id -u)" -eq 0 ] || { echo "setup-slurm.sh: run as root" >&2; exit 1; }

# slurm-wlm-basic-plugins declares no dependency on PMIx, but its mpi_pmix_v4.so dlopens
# /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so, the unversioned name that only libpmix-dev ships
# (without it: "pmi/pmix: can not load PMIx library"). libpmix2 is also what sharp4j's PMIx bootstrap loads.
pkgs=(slurmctld slurmd slurm-client libpmix2 libpmix-dev)
need=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get update -q </dev/null
  apt-get install -y -q --no-install-recommends "${need[@]}" </dev/null
  if [ -d /run/systemd/system ]; then
    systemctl disable --now slurmctld slurmd munge >/dev/null 2>&1 || true
  else
    for s in slurmctld slurmd munge; do
      [ -x /etc/init.d/$s ] && /etc/init.d/$s stop >/dev/null 2>&1 || true
    done
  fi
else
  log "Slurm $(dpkg-query -W -f '${Version}' slurmd) and libpmix already installed"
fi
plugin=$(dpkg -L slurm-wlm-basic-plugins | grep -m1 '/mpi_pmix_v4\.so$' || true)
[ -n "$plugin" ] || { echo "setup-slurm.sh: slurm-wlm-basic-plugins has no mpi_pmix_v4.so" >&2; exit 1; }
lib=$(dpkg -L libpmix-dev | grep -m1 '/pmix2/lib/libpmix\.so$' || true)
[ -n "$lib" ] && [ -e "$lib" ] || { echo "setup-slurm.sh: libpmix-dev has no pmix2/lib/libpmix.so (mpi_pmix_v4 loads it)" >&2; exit 1; }
log "PMIx plugin: $plugin (loads $lib)"
