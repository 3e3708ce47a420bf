#!/usr/bin/env bash
# Sets everything up and runs the main job: the default experiment (von Oswald et al.: one linear
# self-attention layer against one step of gradient descent), trained live.
#  - with a display: the GUI opens on the Train page and trains it;
#  - without one: the same job headless (icl-cli train + icl-cli report), printing where results are.
# Usage: scripts/run.sh [--scale quick|paper]
set -euo pipefail
cd "$(dirname "$0")/.."
scale=quick
if [ "${1:-}" = "--scale" ] && [ -n "${2:-}" ]; then scale=$2; fi
scripts/build.sh

preset=vonoswald-lsa-1layer
mkdir -p runs
stamp=$(date +%Y%m%d-%H%M%S)
run="runs/${preset}-${scale}-${stamp}.h5"

if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    echo "Opening ICL Workbench: training ${preset} (${scale}) into ${run}"
    exec build/app/gui/icl-workbench --preset "$preset" --scale "$scale" --train --out "$run"
fi

echo "No display found: running ${preset} (${scale}) headless."
build/app/cli/icl-cli train --preset "$preset" --scale "$scale" --out "$run"
report="reports/${preset}-${scale}-${stamp}"
build/app/cli/icl-cli report "$run" --out "$report"
echo
echo "Experiment file: $run   (inspect: build/app/cli/icl-cli info $run)"
echo "Plots and summary.json: $report/"
