#!/usr/bin/env bash
# Install the Debian packages for a single-node SLURM test cluster (slurmctld, slurmd, the client tools
# and munge). Idempotent: exits 0 at once when every binary is already on PATH. Nothing is started or
# enabled here; tests/slurm_cluster.py starts private daemons under a temporary directory.
set -euo pipefail

needed=(slurmctld slurmd sbatch squeue sinfo scancel munged)
missing=()
for binary in "${needed[@]}"; do
    command -v "$binary" >/dev/null 2>&1 || missing+=("$binary")
done
if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-slurm: already installed (slurm $(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null || echo unknown))"
    exit 0
fi
echo "install-slurm: missing ${missing[*]}; installing slurmctld slurmd slurm-client munge"

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
packages=(slurmctld slurmd slurm-client munge)
# Refresh the package lists only when apt does not know the packages yet (a fresh container).
if ! apt-cache show "${packages[@]}" >/dev/null 2>&1; then
    $sudo apt-get -o DPkg::Lock::Timeout=600 update
fi
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${packages[@]}"
echo "install-slurm: installed (slurm $(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null || echo unknown))"
