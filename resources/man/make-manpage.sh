#!/usr/bin/env bash
# Writes a man page from a program's --help with help2man. For a program with subcommands (icl-cli), each
# subcommand's --help becomes a paragraph of a COMMANDS section, and so does each analysis of analyze.
# Usage: make-manpage.sh PROGRAM OUT.1 [HELP2MAN]
set -euo pipefail
program=$1 out=$2 help2man=${3:-help2man}
name=$(basename "$program")
include=$(mktemp)
trap 'rm -f "$include"' EXIT
export QT_QPA_PLATFORM=offscreen  # the GUI prints --help without a display
case $name in
icl-cli)
    desc="train transformers on in-context-learning tasks and inspect them (command line)"
    {
        echo "[COMMANDS]"
        # CLI11 lists the subcommands after a "SUBCOMMANDS:" (or "Subcommands:") heading.
        "$program" --help | awk 'tolower($0) ~ /^subcommands:/ {on = 1; next} on && NF == 0 {on = 0} on {print $1}' |
            while read -r sub; do
                echo ".SS \"$name $sub\""
                echo ".nf"
                # CLI11 prints argv[0] in "Usage:"; the page names the program as installed.
                "$program" "$sub" --help | sed -e "s#$program#$name#g" -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
                echo ".fi"
                # analyze: each analysis (listed under "Analyses:") has its own options and help.
                "$program" "$sub" --help | awk 'tolower($0) ~ /^analyses:/ {on = 1; next} on && NF == 0 {on = 0} on {print $1}' |
                    while read -r kind; do
                        echo ".SS \"$name $sub file $kind\""
                        echo ".nf"
                        "$program" "$sub" "$kind" --help | sed -e "s#$program#$name#g" -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
                        echo ".fi"
                    done
            done
        printf '[FILES]\nExperiment files (HDF5) are described in /usr/share/doc/icl-workbench/file-format.md.\n'
        printf '[SEE ALSO]\n\\fBicl-workbench\\fR(1)\n'
    } >"$include"
    ;;
*)
    desc="in-context learning workbench (Qt GUI)"
    printf '[SEE ALSO]\n\\fBicl-cli\\fR(1)\n' >"$include"
    ;;
esac
"$help2man" --no-info --no-discard-stderr --name="$desc" --section=1 --include="$include" --output="$out" "$program"
