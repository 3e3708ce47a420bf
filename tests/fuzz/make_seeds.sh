#!/usr/bin/env bash
# Regenerates the seed corpora of tests/fuzz/corpus from the sanitize build (fuzz_make_seeds) and make_seeds.py.
# Usage: tests/fuzz/make_seeds.sh [BUILD_DIR]   (default build-sanitize; run `cmake --preset sanitize` and build
# fuzz_make_seeds first). Seeds are replaced; in tests/fuzz/regressions only the hostile_* inputs and forged journals
# are rewritten (the fuzzers' findings stay).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-sanitize}
out=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ASAN_OPTIONS=detect_leaks=0 "$build/tests/fuzz/fuzz_make_seeds" "$tmp"
/usr/bin/python3 tests/fuzz/make_seeds.py "$tmp"
# Hostile inputs of issue 46 that the fuzzers would take long to find (forged journals, HDF5 attributes of the
# wrong shape, deep nesting, memory bombs) go with the findings in tests/fuzz/regressions.
mkdir -p tests/fuzz/regressions
cp -r "$tmp"/_regressions/. tests/fuzz/regressions/
cp "$tmp"/_journal_base.h5 tests/fuzz/journal_base.h5
rm -rf "$tmp"/_regressions "$tmp"/_journal_base.h5 "$out"
mkdir -p "$out"
cp -r "$tmp"/. "$out"/
find "$out" -type f | sort | sed 's/^/  /'
echo "make_seeds: $(find "$out" -type f | wc -l) seeds, $(du -sh "$out" | cut -f1) in $out"
