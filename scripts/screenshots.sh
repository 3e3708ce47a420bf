#!/usr/bin/env bash
# Screenshots of every GUI page (and the GD alignment tabs the README shows) at 1280 × 800 and 1920 × 1080,
# off-screen, into docs/screenshots/<page>[-<tab>]-<W>x<H>.png (the README's GUI tour uses the 1280 × 800 ones).
#
# Usage: scripts/screenshots.sh [BUILD_DIR] [--out DIR] [--work DIR] [--sizes "1280x800 1920x1080"] [--only REGEX]
#   BUILD_DIR  where app/cli/icl-cli and app/gui/icl-workbench are (default: build/)
#   --out      where the PNGs go (default: docs/screenshots/)
#   --work     keep the trained runs in DIR and reuse them on the next call (default: a temporary folder, removed)
#   --sizes    window sizes (default: 1280x800 1920x1080)
#   --only     only the screenshots whose name (e.g. gd-alignment-eta) matches the extended regex
#
# It first trains short runs with `icl-cli train --steps` (about 3 minutes on 2 cores): a 1-layer LSA (GD
# alignment, Train, Experiments), a softmax-attention layer (Kernel view), a Garg et al. GPT-2 (ICL curve, Probes,
# Attention, Patching, Algorithm map), a Guo et al. pasting parent (Pasting) and a Chan et al. few-shot classifier
# (ICL vs IWL), each with its preset's seed on one thread; the settings live in a fresh $HOME (no remembered window,
# no recent files), and each screenshot is killed after SHOT_TIMEOUT seconds with a message (default 600; the
# pasting, 1,000 steps of two models, takes 1–4 minutes on 2 busy cores).
# The PNGs are palette-quantised with pngquant when it is installed (Debian's pngquant; the repository carries them).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build out=docs/screenshots work="" sizes="1280x800 1920x1080" only=""
while (($#)); do
    case $1 in
    --out) out=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "screenshots: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build=$1; shift ;;
    esac
done
cli=$build/app/cli/icl-cli gui=$build/app/gui/icl-workbench
for b in "$cli" "$gui"; do
    [[ -x $b ]] || { echo "screenshots: $b: no such program (build it: cmake --build $build --target icl-cli icl-workbench)" >&2; exit 1; }
done
cli=$(realpath "$cli") gui=$(realpath "$gui")
shot_timeout=${SHOT_TIMEOUT:-600}
if [[ -z $work ]]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/icl-screenshots.XXXXXX")
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work" "$out"
work=$(realpath "$work")
mkdir -p "$work/home/runtime"
chmod 700 "$work/home/runtime"
# A first start: no remembered geometry, splitters or recent files; Qt's offscreen warnings are not our output.
export QT_QPA_PLATFORM=offscreen QT_SCALE_FACTOR=1 HOME=$work/home XDG_CONFIG_HOME=$work/home/config \
    XDG_RUNTIME_DIR=$work/home/runtime QT_LOGGING_RULES="default.warning=false" LC_ALL=C.UTF-8 TZ=UTC

# Trains NAME.h5 in $work unless it is there from an earlier call with --work: NAME PRESET [STEPS] (default: the
# quick preset's). The presets' seeds (0).
train() {
    local name=$1 preset=$2 steps=()
    [[ -n ${3:-} ]] && steps=(--steps "$3")
    [[ -f $work/$name.h5 ]] && return 0
    echo "screenshots: training $name ($preset${3:+, $3 steps})"
    local start=$SECONDS
    if ! "$cli" train --preset "$preset" "${steps[@]}" --threads 1 --out "$work/$name.tmp.h5" \
        >/dev/null 2>"$work/train.err"; then
        echo "screenshots: icl-cli train --preset $preset failed: $(tail -1 "$work/train.err")" >&2
        exit 1
    fi
    mv "$work/$name.tmp.h5" "$work/$name.h5"
    echo "screenshots:   $((SECONDS - start)) s"
}
train lsa vonoswald-lsa-1layer
train kernel renliu-kernel
train garg garg-linear-regression 1500
train guo guo-pasting 500
train chan chan-bursty 3000

# name | run | arguments
SHOTS=(
    "experiments|lsa|--page experiments"
    "train|lsa|--page train"
    "gd-alignment-training|lsa|--page gd-alignment --tab training"
    "gd-alignment-scatter|lsa|--page gd-alignment --tab scatter"
    "gd-alignment-weights|lsa|--page gd-alignment --tab weights"
    "gd-alignment-eta|lsa|--page gd-alignment --tab eta"
    "kernel|kernel|--page kernel"
    "icl-curve|garg|--page icl-curve"
    "probes|garg|--page probes"
    "pasting|guo|--page pasting --run"
    "attention|garg|--page attention"
    "patching|garg|--page patching --run"
    "icl-iwl|chan|--page icl-iwl --tab training"
    "algorithm-map|garg|--page algorithm-map"
)
quantise=$(command -v pngquant || true)
[[ -n $quantise ]] || echo "screenshots: pngquant is not installed; the PNGs stay full-colour (apt-get install pngquant)"
failed=0 count=0
for size in $sizes; do
    for entry in "${SHOTS[@]}"; do
        IFS='|' read -r name run args <<<"$entry"
        [[ -z $only || $name =~ $only ]] || continue
        png=$out/$name-$size.png
        # --run writes the pasted model next to its parent and refuses an existing one: a fresh one each time.
        rm -f "$work/$run".paste-*.h5
        start=$SECONDS rc=0
        # shellcheck disable=SC2086 # $args: the options, split on purpose
        timeout --kill-after=10 "$shot_timeout" "$gui" "$work/$run.h5" $args --size "$size" \
            --screenshot "$work/shot.png" --quit >/dev/null 2>"$work/shot.err" || rc=$?
        if ((rc == 124 || rc == 137)); then
            echo "screenshots: $name at $size: no screenshot within $shot_timeout s (SHOT_TIMEOUT)" >&2
            failed=$((failed + 1))
            continue
        elif ((rc != 0)) || [[ ! -s $work/shot.png ]]; then
            echo "screenshots: $name at $size: icl-workbench exit $rc: $(tail -3 "$work/shot.err")" >&2
            failed=$((failed + 1))
            continue
        fi
        if [[ -n $quantise ]]; then
            "$quantise" --force --skip-if-larger --strip --speed 1 --output "$png" 256 -- "$work/shot.png" ||
                cp "$work/shot.png" "$png"
        else
            cp "$work/shot.png" "$png"
        fi
        rm -f "$work/shot.png"
        count=$((count + 1))
        echo "screenshots: $png ($((SECONDS - start)) s)"
    done
done
echo "screenshots: $count written to $out/ ($(du -ch "$out"/*.png 2>/dev/null | tail -1 | cut -f1) in all)"
if ((failed)); then
    echo "screenshots: $failed failed" >&2
    exit 1
fi
