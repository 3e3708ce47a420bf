#!/usr/bin/env bash
# Regenerates the seed corpora of tests/fuzz/corpus from the sanitize build (fuzz_make_seeds) and make_seeds.py.
# Usage: tests/fuzz/make_seeds.sh [BUILD_DIR]   (default build-sanitize; run `cmake --preset sanitize` and build
# fuzz_make_seeds first). Seeds are replaced; of tests/fuzz/regressions only the forged journals are rewritten.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-sanitize}
out=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ASAN_OPTIONS=detect_leaks=0 "$build/tests/fuzz/fuzz_make_seeds" "$tmp"
/usr/bin/python3 tests/fuzz/make_seeds.py "$tmp"
mkdir -p tests/fuzz/regressions/journal
cp "$tmp"/journal_forged/* tests/fuzz/regressions/journal/
rm -rf "$tmp"/journal_forged "$out"
mkdir -p "$out"
cp -r "$tmp"/. "$out"/
find "$out" -type f | sort | sed 's/^/  /'
echo "make_seeds: $(find "$out" -type f | wc -l) seeds, $(du -sh "$out" | cut -f1) in $out"
