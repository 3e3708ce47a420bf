#!/usr/bin/env bash
# Trains each preset on each seed (resuming what is done), runs the analyses behind each paper's headline
# number and writes reproduce/summary.md and summary.json (mean ± sd over seeds, the paper's value, pass/fail).
# Usage: scripts/reproduce.sh [--scale quick|paper] [--seeds 0,1,2] [--presets a,b,…] [--jobs J] [--list]
# Builds first when build/app/cli/icl-cli is missing. Run by hand: the quick scale takes hours on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/app/cli/icl-cli ] || scripts/build.sh
exec /usr/bin/python3 scripts/reproduce.py "$@"
