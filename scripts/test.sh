#!/usr/bin/env bash
# Sets everything up (dependencies, build) and runs every test with ctest.
# GUI tests run off-screen (QT_QPA_PLATFORM=offscreen), so no display is needed.
# Then the file readers under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/test-sanitize.sh: the sanitize
# preset's io tests and every fuzz corpus replayed). Extra arguments go to both ctest runs (e.g. -R pattern).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
export QT_QPA_PLATFORM=offscreen
status=0
ctest --test-dir build --output-on-failure -j 2 "$@" || status=$?
scripts/test-sanitize.sh "$@" || status=$?
exit $status
