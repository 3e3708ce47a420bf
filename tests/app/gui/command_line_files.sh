#!/usr/bin/env bash
# ctest: icl-workbench with experiment files on the command line, as a file manager's "Open with" passes them
# (resources/desktop: Exec=icl-workbench %F): several files open (the first shown, the others in Open recent), a
# missing or foreign file is one line on stderr and a non-zero exit, never a crash.
# Usage: command_line_files.sh ICL_WORKBENCH ICL_CLI WORK_DIR
set -euo pipefail
gui=$1 cli=$2 work=$3/command_line_files_$$
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
mkdir -m 700 "$work/runtime"
# Qt's own warnings of the offscreen platform ("does not support propagateSizeHints") are not the program's output.
export QT_QPA_PLATFORM=offscreen HOME=$work XDG_CONFIG_HOME=$work/config XDG_RUNTIME_DIR=$work/runtime \
    QT_LOGGING_RULES="default.warning=false"
fail() { echo "command_line_files: FAIL: $*" >&2; exit 1; }
for r in a b; do
    "$cli" train --preset vonoswald-lsa-1layer --steps 0 --set eval.n_prompts=16 --set eval.bootstrap=0 --threads 1 \
        --out "$work/$r.h5" >/dev/null
done
"$gui" "$work/a.h5" "$work/b.h5" --page experiments --screenshot "$work/shot.png" --quit 2>"$work/err" ||
    fail "two experiment files: exit $? ($(cat "$work/err"))"
[[ -s $work/shot.png ]] || fail "no screenshot"
check_error() {  # expected exit status, pattern, arguments...
    local want=$1 pattern=$2 rc=0
    shift 2
    "$gui" "$@" --quit 2>"$work/err" >/dev/null || rc=$?
    [[ $rc == "$want" ]] || fail "icl-workbench $*: exit $rc, expected $want ($(cat "$work/err"))"
    [[ $(grep -c . "$work/err") == 1 ]] || fail "icl-workbench $*: expected one line on stderr, got: $(cat "$work/err")"
    grep -q -- "$pattern" "$work/err" || fail "icl-workbench $*: '$(cat "$work/err")' does not say '$pattern'"
}
check_error 2 "missing.h5: no such experiment file" "$work/a.h5" "$work/missing.h5"
printf 'not hdf5\n' >"$work/text.h5"
check_error 1 "not an ICL Workbench experiment file" "$work/text.h5"
echo "command_line_files: ok"
