#!/usr/bin/env bash
# Builds the sanitize preset (core's file readers, their tests and the fuzz harnesses under ASan + UBSan, clang;
# no LibTorch, no Qt) in ./build-sanitize and runs its tests: the io tests and the replay of every fuzz corpus
# (tests/fuzz/corpus, tests/fuzz/regressions). Called by scripts/test.sh; docs/security.md. Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize
ctest --preset sanitize -j 2 "$@"
