#!/usr/bin/env bash
# Idempotent install of everything ICL Workbench needs to build, run and test on Debian 12.
# Usage: scripts/install-deps.sh        (runs apt-get only for packages that are missing)
set -euo pipefail

PACKAGES=(
    build-essential cmake ninja-build ccache pkg-config git
    libtorch-dev libopenblas0-openmp libsleef-dev
    qt6-base-dev qt6-svg-dev libgl-dev libqcustomplot-dev
    libhdf5-dev hdf5-tools libpng-dev zlib1g-dev
    nlohmann-json3-dev libcli11-dev libfmt-dev libzip-dev zipcmp zipmerge ziptool libyaml-cpp-dev libssl-dev
    googletest libgtest-dev libgmock-dev libbenchmark-dev
    # the sanitize preset and its fuzz harnesses (clang, libFuzzer), hardening-check of the release binaries
    clang libclang-rt-dev devscripts
    xvfb xauth
    python3-h5py python3-numpy python3-venv python3-pip
    help2man desktop-file-utils appstream shared-mime-info libglib2.0-bin bash-completion man-db file
    # scripts/screenshots.sh: palette-quantised PNGs for docs/screenshots/
    pngquant
    dataset-fashion-mnist
    # tests/slurm: a one-node Slurm cluster (slurm-wlm's daemons and client) with munge; lintian on the .deb
    munge slurmctld slurmd slurm-client lintian
)

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#PACKAGES[@]} packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
