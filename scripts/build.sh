#!/usr/bin/env bash
# Installs dependencies (idempotent) and builds the release tree in ./build.
# Usage: scripts/build.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release "$@" >/dev/null
cmake --build --preset release
