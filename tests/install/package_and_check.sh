#!/usr/bin/env bash
# Builds the Debian package with CPack into OUT_DIR and checks it: its dependencies come from dpkg-shlibdeps (LibTorch
# and Qt among them), and unpacked with dpkg -x into a scratch root (works as root and as a normal user) the installed
# programs run, the Python reader imports and the desktop files validate (check_install.sh); lintian, where it is
# installed, reports no errors. Used by scripts/package.sh and by ctest.
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
# Description: the synopsis, then extended lines that each start with one space, none with a CMake list's ";".
description=$(dpkg-deb --field "$deb" Description)
if grep -q '^ ;' <<<"$description"; then fail "Description has lines starting with ';':"$'\n'"$description"; fi
[[ $(sed -n 2p <<<"$description") == " ICL Workbench trains"* ]] || fail "Description: no extended description"
recommends=$(dpkg-deb --field "$deb" Recommends)
for p in python3-h5py python3-numpy; do
    grep -qw "$p" <<<"$recommends" || fail "Recommends has no $p (the Python reader needs it): $recommends"
done
# The Python reader's folder is on Debian's python3 path, so `import icl_workbench` works after apt install.
/usr/bin/python3 -c 'import sys; sys.exit("/usr/lib/python3/dist-packages" not in sys.path)' ||
    fail "/usr/lib/python3/dist-packages is not on /usr/bin/python3's sys.path"
# python/pyproject.toml (pip install ./python, tests/python/pip_install.sh) names the package's version too.
/usr/bin/python3 - "$src/python/pyproject.toml" "$version" <<'PY' || fail "python/pyproject.toml"
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
assert project["version"] == sys.argv[2], f"version {project['version']}, the package's {sys.argv[2]}"
PY
# lintian, where it is installed (scripts/install-deps.sh installs it): no errors; warnings are listed.
if command -v lintian >/dev/null; then
    rc=0
    lintian --tag-display-limit 0 --fail-on error "$deb" >"$out/lintian.log" 2>&1 || rc=$?
    grep -E '^[EW]: ' "$out/lintian.log" || true
    if grep -q '^E: ' "$out/lintian.log"; then fail "lintian reports errors (above; $out/lintian.log)"; fi
    ((rc == 0)) || fail "lintian failed (exit $rc): $(cat "$out/lintian.log")"
    echo "package_and_check: lintian: no errors, $(grep -c '^W: ' "$out/lintian.log") warnings"
else
    echo "package_and_check: lintian not installed: not run (scripts/install-deps.sh installs it)"
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg -x "$deb" "$root"
for exe in icl-cli icl-workbench; do
    if readelf -d "$root/usr/bin/$exe" | grep -E 'R(UN)?PATH' | grep -q '/usr/lib'; then
        fail "$exe keeps a RUNPATH into /usr/lib: $(readelf -d "$root/usr/bin/$exe" | grep -E 'R(UN)?PATH')"
    fi
done
bash "$(dirname "$0")/check_install.sh" "$root" "$src" "$version"
rm -rf "$out/_CPack_Packages"
