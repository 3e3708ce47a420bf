#!/usr/bin/env bash
# Renders the PNG sizes of the hicolor icon theme from icl-workbench.svg (committed; re-run after editing the SVG).
# Needs rsvg-convert (Debian: librsvg2-bin).
set -euo pipefail
cd "$(dirname "$0")"
for s in 16 24 32 48 64 128 256 512; do
    mkdir -p "hicolor/${s}x${s}"
    rsvg-convert -w "$s" -h "$s" icl-workbench.svg -o "hicolor/${s}x${s}/icl-workbench.png"
done
