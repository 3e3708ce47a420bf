#!/usr/bin/env bash
# ctest: icl-workbench --size WxH sets the window's size (what scripts/screenshots.sh relies on): the screenshot has
# exactly that many pixels (the offscreen platform's device pixel ratio is 1), the default stays 1280 × 800, and a
# malformed or out-of-range size is one line on stderr and exit status 2, with no screenshot written.
# Usage: window_size_option.sh ICL_WORKBENCH WORK_DIR
set -euo pipefail
gui=$1 work=$2/window_size_option_$$
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
mkdir -m 700 "$work/runtime"
export QT_QPA_PLATFORM=offscreen QT_SCALE_FACTOR=1 HOME=$work XDG_CONFIG_HOME=$work/config \
    XDG_RUNTIME_DIR=$work/runtime QT_LOGGING_RULES="default.warning=false"
fail() { echo "window_size_option: FAIL: $*" >&2; exit 1; }
# A PNG's width and height: big-endian 32-bit integers at bytes 16 and 20 (the IHDR chunk, PNG spec 11.2.2).
png_size() {
    local b
    read -r -a b < <(od -An -tu1 -j16 -N8 "$1")
    echo "$(((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]))x$(((b[4] << 24) | (b[5] << 16) | (b[6] << 8) | b[7]))"
}
shot() {  # expected WxH, arguments...
    local want=$1
    shift
    rm -f "$work/shot.png"
    "$gui" --page experiments "$@" --screenshot "$work/shot.png" --quit 2>"$work/err" ||
        fail "icl-workbench $*: exit $? ($(cat "$work/err"))"
    [[ -s $work/shot.png ]] || fail "icl-workbench $*: no screenshot"
    [[ $(png_size "$work/shot.png") == "$want" ]] ||
        fail "icl-workbench $*: screenshot is $(png_size "$work/shot.png"), expected $want"
}
shot 1280x800                   # no --size: the first start's window
shot 1920x1080 --size 1920x1080
shot 1366x768 --size 1366x768   # a laptop screen: neither default's width nor its aspect
shot 2560x1440 --size 2560X1440
refused() {  # value, pattern
    local rc=0
    rm -f "$work/shot.png"
    "$gui" --size "$1" --screenshot "$work/shot.png" --quit 2>"$work/err" >/dev/null || rc=$?
    [[ $rc == 2 ]] || fail "--size '$1': exit $rc, expected 2 ($(cat "$work/err"))"
    [[ $(grep -c . "$work/err") == 1 ]] || fail "--size '$1': expected one line on stderr, got: $(cat "$work/err")"
    grep -q -- "$2" "$work/err" || fail "--size '$1': '$(cat "$work/err")' does not say '$2'"
    [[ ! -e $work/shot.png ]] || fail "--size '$1': a screenshot was written"
}
refused abc "--size: expected WIDTHxHEIGHT"
refused 1920x "--size: expected WIDTHxHEIGHT"
refused 1920x1080x2 "--size: expected WIDTHxHEIGHT"
refused -1920x1080 "--size: expected WIDTHxHEIGHT"
refused 0x0 "--size: expected WIDTHxHEIGHT"
refused 99999x1080 "--size: expected WIDTHxHEIGHT"
refused 1920x99999999999 "--size: expected WIDTHxHEIGHT"
refused 320x240 "--size: expected WIDTHxHEIGHT"
refused 640x480 "is smaller than the window's smallest size"   # in range, but below the pages' minimum layout
echo "window_size_option: ok"
