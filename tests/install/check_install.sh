#!/usr/bin/env bash
# Checks an installed ICL Workbench under ROOT/usr (cmake --install --prefix ROOT/usr, or a .deb unpacked with
# dpkg -x into ROOT): the executables run from there with a bare environment and a foreign working directory (no
# source or build tree), the desktop entry and AppStream metainfo pass their validators, the MIME type tells an
# experiment file from another HDF5 file, the icons, man pages, bash completion, presets and docs are in place.
# Usage: check_install.sh ROOT SOURCE_DIR VERSION
set -euo pipefail
root=$(cd "$1" && pwd) src=$2 version=$3
usr=$root/usr
fail() { echo "check_install: FAIL: $*" >&2; exit 1; }
ok() { echo "check_install: ok: $*"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -m 700 "$work/runtime"
bare=(env -i "PATH=/usr/bin:/bin" "HOME=$work" "XDG_RUNTIME_DIR=$work/runtime" "QT_QPA_PLATFORM=offscreen")

# Executables: no run path into the build tree; icl-cli presets lists every preset of the source tree.
# icl-cli-torch, which the launcher icl-cli starts for the commands that need LibTorch, is in libexec.
for exe in bin/icl-cli bin/icl-workbench libexec/icl-workbench/icl-cli-torch; do
    [[ -x $usr/$exe ]] || fail "$usr/$exe is missing"
    if readelf -d "$usr/$exe" | grep -E 'R(UN)?PATH' | grep -q -e "$src" -e /build; then
        fail "$exe keeps a run path into the source or build tree: $(readelf -d "$usr/$exe" | grep -E 'R(UN)?PATH')"
    fi
done
presets=$("${bare[@]}" "$usr/bin/icl-cli" presets) || fail "icl-cli presets failed"
n=0
for f in "$src"/resources/presets/*.json; do
    name=$(basename "$f" .json)
    grep -qE "^ *$name( |$)" <<<"$presets" || fail "icl-cli presets does not list $name:"$'\n'"$presets"
    [[ -f $usr/share/icl-workbench/presets/$name.json ]] || fail "preset $name.json not installed"
    n=$((n + 1))
done
ok "icl-cli presets lists all $n presets"
v=$("${bare[@]}" "$usr/bin/icl-cli" --version)
[[ $v == *"$version"* ]] || fail "icl-cli --version printed '$v', expected $version"
v=$("${bare[@]}" "$usr/bin/icl-workbench" --version)
[[ $v == *"$version"* ]] || fail "icl-workbench --version printed '$v', expected $version"
ok "icl-cli and icl-workbench --version: $version"
v=$("${bare[@]}" "$usr/bin/icl-cli" runtime) || fail "the installed icl-cli cannot start icl-cli-torch"
[[ $v == "BLAS: "* ]] || fail "icl-cli runtime printed '$v'"
ok "installed icl-cli starts icl-cli-torch: ${v%%$'\n'*}"
run=$work/run.h5
"${bare[@]}" "$usr/bin/icl-cli" train --preset vonoswald-lsa-1layer --steps 0 --set eval.n_prompts=16 \
    --set eval.bootstrap=0 --threads 1 --out "$run" >/dev/null || fail "the installed icl-cli cannot train"
"${bare[@]}" "$usr/bin/icl-cli" info "$run" >/dev/null || fail "the installed icl-cli cannot read its run"
ok "installed icl-cli trains and reads an experiment file"

# The Python reader, in lib/python3/dist-packages (where Debian's python3 looks with the prefix /usr), imported by
# Debian's python3 from there (not from the source tree) and reading the run the installed icl-cli wrote.
pydir=$usr/lib/python3/dist-packages
[[ -f $pydir/icl_workbench/__init__.py ]] || fail "the Python reader is not installed in $pydir/icl_workbench"
[[ -z $(find "$pydir" -name '*.pyc') ]] || fail "byte-code installed: $(find "$pydir" -name '*.pyc')"
py=$("${bare[@]}" "PYTHONPATH=$pydir" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c '
import sys, icl_workbench
run = icl_workbench.open(sys.argv[1])
print(icl_workbench.__file__, icl_workbench.__version__, run.checkpoints)' "$run") ||
    fail "python3 cannot import the installed icl_workbench or read the run with it"
[[ $py == "$pydir/icl_workbench/__init__.py $version [0]" ]] || fail "installed icl_workbench: '$py'"
ok "python3: import icl_workbench from $pydir (version $version) reads the run (checkpoints [0])"

# Desktop entry, AppStream metainfo, icons.
app=org.iclworkbench.icl_workbench
desktop-file-validate "$usr/share/applications/$app.desktop" || fail "desktop-file-validate"
grep -q '^Exec=icl-workbench %F$' "$usr/share/applications/$app.desktop" || fail "desktop entry: Exec"
appstreamcli validate --no-net "$usr/share/metainfo/$app.metainfo.xml" || fail "appstreamcli validate"
ok "desktop-file-validate and appstreamcli validate --no-net pass"
icon=$(sed -n 's/^Icon=//p' "$usr/share/applications/$app.desktop")
[[ -f $usr/share/icons/hicolor/scalable/apps/$icon.svg ]] || fail "no scalable icon $icon.svg"
for s in 16 24 32 48 64 128 256 512; do
    f=$usr/share/icons/hicolor/${s}x${s}/apps/$icon.png
    [[ -f $f ]] || fail "no ${s}x${s} icon"
    file "$f" | grep -q "PNG image data, $s x $s" || fail "$f is not a $s × $s PNG: $(file "$f")"
done
ok "icons: SVG and 8 PNG sizes"

# MIME type: built into a private database; an experiment file is application/x-icl-workbench-experiment, another
# HDF5 file stays application/x-hdf, and the desktop entry handles the type.
mime=$work/share/mime
mkdir -p "$mime/packages"
cp /usr/share/mime/packages/freedesktop.org.xml "$usr/share/mime/packages/icl-workbench.xml" "$mime/packages/"
XDG_DATA_HOME=$work/share update-mime-database "$mime" 2>&1 | tee "$work/mime.log"
[[ ! -s $work/mime.log ]] || fail "update-mime-database warned"
grep -q "MimeType=application/x-icl-workbench-experiment;" "$usr/share/applications/$app.desktop" ||
    fail "the desktop entry does not handle application/x-icl-workbench-experiment"
{
    cp "$run" "$work/experiment.h5"
    printf '\211HDF\r\n\032\n' >"$work/other.h5"
    head -c 2048 /dev/zero >>"$work/other.h5"
    type_of() { XDG_DATA_HOME=$work/share XDG_DATA_DIRS=$work/share gio info -a standard::content-type "$1" |
        sed -n 's/.*standard::content-type: //p'; }
    t=$(type_of "$work/experiment.h5")
    [[ $t == application/x-icl-workbench-experiment ]] || fail "an experiment file is detected as '$t'"
    t=$(type_of "$work/other.h5")
    [[ $t == application/x-hdf ]] || fail "another HDF5 file is detected as '$t'"
    ok "MIME: an experiment file is application/x-icl-workbench-experiment, another HDF5 file application/x-hdf"
}

# Man pages (help2man) and bash completion.
# cmake --install leaves them uncompressed, the .deb has them gzip-compressed (Debian policy).
manpage() { if [[ -f $usr/share/man/man1/$1.1.gz ]]; then echo "$usr/share/man/man1/$1.1.gz"; else echo "$usr/share/man/man1/$1.1"; fi; }
for page in icl-cli icl-workbench; do
    f=$(manpage "$page")
    [[ -f $f ]] || fail "no man page $page.1"
    text=$(MANWIDTH=120 man -l "$f" 2>&1) || fail "man -l $page.1 failed"
    grep -q "$version" <<<"$text" || fail "man page $page.1 has no version"
done
for sub in train info eval analyze export import export-weights sweep aggregate presets; do
    grep -q "icl-cli $sub" <<<"$(MANWIDTH=120 man -l "$(manpage icl-cli)")" ||
        fail "icl-cli.1 has no section for icl-cli $sub"
done
ok "man pages icl-cli.1 (every subcommand) and icl-workbench.1"
complete_words() {
    "${bare[@]}" "PATH=$usr/bin:/usr/bin:/bin" bash -c '
        source /usr/share/bash-completion/bash_completion
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _icl_cli; printf "%s\n" "${COMPREPLY[@]}"' _ "$usr/share/bash-completion/completions/icl-cli" "$@"
}
grep -qx train <<<"$(complete_words icl-cli tr)" || fail "completion: icl-cli tr → train"
grep -qx -- --preset <<<"$(complete_words icl-cli train --pre)" || fail "completion: icl-cli train --pre → --preset"
grep -qx vonoswald-lsa-1layer <<<"$(complete_words icl-cli train --preset vonoswald-lsa-1)" ||
    fail "completion: --preset vonoswald-lsa-1 → vonoswald-lsa-1layer"
grep -qx gd-alignment <<<"$(complete_words icl-cli analyze run.h5 gd-al)" || fail "completion: analyze run.h5 gd-al"
ok "bash completion: subcommands, options, presets, analyses"

for doc in file-format.md weights-formats.md; do
    [[ -f $usr/share/doc/icl-workbench/$doc ]] || fail "doc $doc not installed"
done
ok "docs"
