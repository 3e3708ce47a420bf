#!/usr/bin/env bash
# Measures how long each GUI page and each `icl-cli analyze` kind takes to its first result on the
# largest quick- and paper-scale preset models, and prints a Markdown table (the one in the README).
# Usage: scripts/measure-first-results.sh [OUT_DIR]     (default: measure/; needs a built tree)
# Each model is written with `icl-cli train --steps 0` (its initial checkpoint and fitted baselines):
# timings depend on the architecture, not on training. GUI pages run off-screen with --timing; the
# Patching page runs with --run (it computes nothing until Run is pressed). Pages that show a first
# look before their full result (Probes: the first 16 fit/test prompts; Patching: the final row, then
# the others one by one) report both times.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-measure}
CLI=build/app/cli/icl-cli
GUI=build/app/gui/icl-workbench
mkdir -p "$OUT"
export QT_QPA_PLATFORM=offscreen

# name | preset | scale | pages | analyses
MODELS=(
    "gpt2 4/4/64 (garg quick)|garg-linear-regression|quick|attention icl-curve probes patching|attention lens patching"
    "gpt2 12/8/256 (garg paper)|garg-linear-regression|paper|attention icl-curve probes patching|attention lens patching"
    "gpt2 12/8/256, Φ* (guo paper)|guo-representation|paper|attention icl-curve probes patching|attention lens patching probe"
    "lsa 3 layers (von Oswald multilayer)|vonoswald-lsa-multilayer|paper|attention icl-curve gd-alignment|attention lens patching gd-alignment eta-scan layers"
    "gpt2 12/8/64 classifier (chan paper)|chan-bursty|paper|icl-iwl|icl-iwl"
    "softmax attention (renliu-kernel)|renliu-kernel|paper|kernel attention|kernel attention"
)

ms() { date +%s%3N; }

printf '| model | what | first look (ms) | first result (ms) |\n|---|---|---|---|\n'
for entry in "${MODELS[@]}"; do
    IFS='|' read -r name preset scale pages analyses <<<"$entry"
    run="$OUT/${preset}-${scale}.h5"
    if [ ! -f "$run" ]; then
        "$CLI" train --preset "$preset" --scale "$scale" --steps 0 --out "$run" >/dev/null 2>"$OUT/train.err" \
            || { echo "train $preset failed: $(tail -1 "$OUT/train.err")" >&2; continue; }
    fi
    for page in $pages; do
        extra=()
        [ "$page" = patching ] && extra=(--run)
        lines=$("$GUI" "$run" --page "$page" "${extra[@]}" --quit --timing 2>&1 >/dev/null | grep "first" || true)
        look=$(sed -n 's/.*first look \([0-9]*\) ms.*/\1/p' <<<"$lines")
        t=$(sed -n 's/.*first result \([0-9]*\) ms.*/\1/p' <<<"$lines")
        printf '| %s | page %s | %s | %s |\n' "$name" "$page" "${look:-—}" "${t:-failed}"
    done
    for kind in $analyses; do
        start=$(ms)
        if "$CLI" analyze "$run" "$kind" --json >/dev/null 2>"$OUT/analyze.err"; then
            printf '| %s | analyze %s | — | %s |\n' "$name" "$kind" "$(($(ms) - start))"
        else
            printf '| %s | analyze %s | — | failed: %s |\n' "$name" "$kind" "$(tail -1 "$OUT/analyze.err")"
        fi
    done
done
