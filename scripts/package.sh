#!/usr/bin/env bash
# Builds the Debian package build/package/icl-workbench_<version>_<arch>.deb with CPack (runtime dependencies from
# dpkg-shlibdeps) and checks it: unpacked with dpkg -x into a scratch root, the installed programs run from there and
# the desktop files validate (tests/install/package_and_check.sh, also run by the test suite). Works as root and as a
# normal user.
# Usage: scripts/package.sh            then: sudo apt install ./build/package/icl-workbench_<version>_<arch>.deb
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' build/CMakeCache.txt)
bash tests/install/package_and_check.sh build "$PWD" "$version" build/package
echo "install it with: sudo apt install ./build/package/icl-workbench_${version}_$(dpkg --print-architecture).deb"
