#!/usr/bin/env bash
# ctest: a Garg et al. run folder written by PyTorch → icl-cli import → icl-cli export-weights --layout garg → loaded by
# PyTorch into Garg's TransformerModel with load_state_dict(strict=True), predictions checked against the float64
# reference (check_garg_export.py). Exits 77 (a visible ctest skip) only when Debian's python3-torch is not installed.
# Usage: garg_export_roundtrip.sh ICL_CLI FOREIGN_DIR WORK_DIR PYTHON
set -euo pipefail
cli=$1 foreign=$2 work=$3 python=$4
mkdir -p "$work"
run="$work/garg_roundtrip_$$.h5"
pt="$work/garg_roundtrip_$$.pt"
trap 'rm -f "$run" "$pt"' EXIT
"$cli" import "$foreign/garg_run" --out "$run" --force --set eval.n_prompts=200 --threads 1 >/dev/null
"$cli" export-weights "$run" --out "$pt" --checkpoint 300 --layout garg >/dev/null
"$python" "$(dirname "$0")/check_garg_export.py" "$pt" "$foreign/reference.json"
