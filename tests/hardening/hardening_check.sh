#!/usr/bin/env bash
# hardening_check.sh HARDENING_CHECK [OPTION...] -- BINARY...: runs Debian's hardening-check (with the OPTIONs) on
# each binary and fails when any check says "no" (hardening-check's own exit status), printing its report.
# ctest: hardening.ReleaseBinaries.
set -uo pipefail
check=$1
shift
options=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    options+=("$1")
    shift
done
[ $# -gt 0 ] && shift
status=0
for binary in "$@"; do
    if [ ! -x "$binary" ]; then
        echo "hardening_check: $binary is not built"
        status=1
        continue
    fi
    if ! "$check" "${options[@]}" "$binary"; then
        status=1
    fi
done
exit $status
