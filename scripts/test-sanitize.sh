#!/usr/bin/env bash
# Builds the sanitize preset (core's file readers, their tests and the fuzz harnesses under ASan + UBSan, clang;
# no LibTorch, no Qt) in ./build-sanitize and runs its tests: the io tests and the replay of every fuzz corpus
# (tests/fuzz/corpus, tests/fuzz/regressions). Called by scripts/test.sh; docs/security.md. Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize
status=0
ctest --preset sanitize -j 2 "$@" || status=$?
# A harness stopped by a sanitizer leaves its scratch folder (/dev/shm/icl-fuzz-PID): remove those of dead processes.
for d in /dev/shm/icl-fuzz-*; do
    [ -d "$d" ] && ! kill -0 "${d##*-}" 2>/dev/null && rm -rf "$d"
done
exit $status
