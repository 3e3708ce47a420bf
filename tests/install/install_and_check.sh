#!/usr/bin/env bash
# ctest: cmake --install of the build tree into a scratch prefix, then check_install.sh on it.
# (scripts/package.sh does the same checks on the .deb unpacked with dpkg -x.)
# Usage: install_and_check.sh BUILD_DIR SOURCE_DIR VERSION STAGE_DIR
set -euo pipefail
build=$1 src=$2 version=$3 stage=$4
rm -rf "$stage"
cmake --install "$build" --prefix "$stage/usr" >"$stage.log" 2>&1 || { cat "$stage.log"; exit 1; }
bash "$(dirname "$0")/check_install.sh" "$stage" "$src" "$version"
rm -rf "$stage" "$stage.log"
