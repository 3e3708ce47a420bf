#!/usr/bin/env bash
# Builds the Debian package with CPack into OUT_DIR and checks it: its dependencies come from dpkg-shlibdeps (LibTorch
# and Qt among them), and unpacked with dpkg -x into a scratch root (works as root and as a normal user) the installed
# programs run and the desktop files validate (check_install.sh). Used by scripts/package.sh and by ctest.
# Usage: package_and_check.sh BUILD_DIR SOURCE_DIR VERSION OUT_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$2 version=$3 out=$4
fail() { echo "package_and_check: FAIL: $*" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; fail "cpack"; }
deb=$out/icl-workbench_${version}_$(dpkg --print-architecture).deb
[[ -f $deb ]] || fail "no $deb (cpack wrote: $(ls "$out"))"
echo "package_and_check: $deb ($(du -h "$deb" | cut -f1))"
depends=$(dpkg-deb --field "$deb" Depends)
echo "package_and_check: Depends: $depends"
for lib in libtorch libqt6widgets6 libhdf5 libc6; do
    grep -q "$lib" <<<"$depends" || fail "Depends has no $lib: dpkg-shlibdeps did not run?"
done
[[ $(dpkg-deb --field "$deb" Package) == icl-workbench ]] || fail "package name"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg -x "$deb" "$root"
bash "$(dirname "$0")/check_install.sh" "$root" "$src" "$version"
rm -rf "$out/_CPack_Packages"
