#!/usr/bin/env bash
# Fuzzes one reader of untrusted files with libFuzzer under ASan + UBSan (the sanitize preset; docs/security.md).
# Usage:
#   scripts/fuzz.sh NAME MINUTES [libFuzzer options]   fuzz tests/fuzz/fuzz_NAME for MINUTES minutes
#   scripts/fuzz.sh all MINUTES                        every harness in turn, MINUTES each
#   scripts/fuzz.sh minimize NAME FILE                 shrink a crashing input (writes FILE.min)
#   scripts/fuzz.sh triage NAME                        replay each finding of NAME: one line per distinct cause
#   scripts/fuzz.sh list                               the harness names
# NAME: pickle torch_zip safetensors npy npz prompt config_json experiment_file journal idx png.
# The fuzzer starts from tests/fuzz/corpus/NAME and tests/fuzz/regressions/NAME and keeps what it learns in
# build-sanitize/fuzz/NAME/corpus (not committed); findings (crash-*, oom-*, timeout-*, leak-*) go to
# build-sanitize/fuzz/NAME/findings/. Limits per input: 2 GB RSS (malloc included), 10 s. One fuzzer at a time
# on a 2-core machine. Every finding, once minimised, belongs in tests/fuzz/regressions/NAME/ (ctest replays it).
set -euo pipefail
cd "$(dirname "$0")/.."
NAMES=(pickle torch_zip safetensors npy npz prompt config_json experiment_file journal idx png)

build() {
    cmake --preset sanitize >/dev/null
    cmake --build --preset sanitize --target "$@" >/dev/null
}

fuzz_one() {
    local name=$1 minutes=$2
    shift 2
    build "fuzz_$name"
    local dir=build-sanitize/fuzz/$name
    mkdir -p "$dir/corpus" "$dir/findings"
    local seeds=(tests/fuzz/corpus/"$name")
    [ -d "tests/fuzz/regressions/$name" ] && seeds+=(tests/fuzz/regressions/"$name")
    echo "fuzz: $name for $minutes min (findings in $dir/findings)"
    local status=0
    "build-sanitize/tests/fuzz/fuzz_$name" -max_total_time=$((minutes * 60)) -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$dir/findings/" "$@" "$dir/corpus" "${seeds[@]}" \
        2>"$dir/last.log" || status=$?
    # A crash leaves the harness's scratch folder (/dev/shm/icl-fuzz-PID) behind: remove those of dead processes.
    for d in /dev/shm/icl-fuzz-*; do
        [ -d "$d" ] && ! kill -0 "${d##*-}" 2>/dev/null && rm -rf "$d"
    done
    tail -n 25 "$dir/last.log"
    local found
    found=$(find "$dir/findings" -type f | wc -l)
    echo "fuzz: $name exit $status, $found finding(s) in $dir/findings (log: $dir/last.log)"
    return $status
}

case "${1:-}" in
    list)
        printf '%s\n' "${NAMES[@]}"
        ;;
    all)
        status=0
        for n in "${NAMES[@]}"; do
            fuzz_one "$n" "${2:?minutes}" || status=1
        done
        exit $status
        ;;
    minimize)
        name=${2:?name}
        file=${3:?file}
        build "fuzz_$name"
        "build-sanitize/tests/fuzz/fuzz_$name" -minimize_crash=1 -max_total_time=120 -rss_limit_mb=2048 -timeout=10 \
            -exact_artifact_path="$file.min" "$file" || true
        ls -l "$file.min"
        ;;
    triage)
        # The cause of a finding: the sanitizer's or the harness's first line, and the first frame in the workbench.
        name=${2:?name}
        build "fuzz_$name"
        for f in build-sanitize/fuzz/"$name"/findings/*; do
            [ -f "$f" ] || continue
            log=$(timeout 60 "build-sanitize/tests/fuzz/fuzz_$name" -rss_limit_mb=2048 -timeout=10 \
                  -artifact_prefix="build-sanitize/fuzz/$name/replay-" "$f" 2>&1 || true)
            what=$(grep -m1 -E 'FINDING|runtime error|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)' <<<"$log" |
                   sed -E 's/^==[0-9]+==//; s/0x[0-9a-f]+/0x…/g; s/[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?/N/g' | cut -c1-150)
            where=$(grep -m1 -E '#[0-9]+ .* in icl::' <<<"$log" |
                    sed -E 's/.* in //; s/\(anonymous namespace\):://g; s/\[abi:cxx11\]//g; s/\(.*//' | cut -c1-90 || true)
            where2=$(grep -m1 -oE '/core/io/[a-z_0-9]+\.(cpp|h):[0-9]+' <<<"$log" || true)
            printf '%s\t%s\t%s\t%s\t%s\n' "${what:-no finding on replay}" "$where" "$where2" "$(stat -c %s "$f")" "$f"
        done | sort -t$'\t' -k1,1 -k3,3 -k4,4n | awk -F'\t' '!seen[$1 FS $3]++ {print $4 " bytes  " $5 "\n    " $1 "\n    at " $3 " " $2}'
        ;;
    ""|-h|--help)
        sed -n '2,15p' "$0"
        ;;
    *)
        name=$1
        minutes=${2:?minutes}
        shift 2
        fuzz_one "$name" "$minutes" "$@"
        ;;
esac
