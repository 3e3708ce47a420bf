#!/usr/bin/env bash
# Sets everything up (dependencies, build) and runs every test with ctest.
# GUI tests run off-screen (QT_QPA_PLATFORM=offscreen), so no display is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build --output-on-failure -j 2 "$@"
