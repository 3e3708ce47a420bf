#!/usr/bin/env bash
# ctest: `pip install ./python` works (pyproject.toml) and installs a package that imports and reads a run.
# In a venv with the system's site packages, so Debian's h5py and NumPy are used (--no-deps: Debian names its h5py
# distribution h5py._debian_h5py_serial, which pip does not count as h5py); offline (--no-index,
# --no-build-isolation: the system's setuptools). A copy of python/ is installed, so no build files land in the tree.
# Usage: pip_install.sh PYTHON SOURCE_DIR WORK_DIR RUN.h5
set -euo pipefail
python=$1 src=$2 work=$3/pip_install_$$ run=$4
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
cp -r "$src/python" "$work/python"
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --no-build-isolation --no-deps "$work/python"
cd "$work"  # not the source tree: the installed package must be the one imported
"$work/venv/bin/python" - "$run" "$work/venv" <<'PY'
import sys
import icl_workbench
assert icl_workbench.__file__.startswith(sys.argv[2]), icl_workbench.__file__
run = icl_workbench.open(sys.argv[1])
assert run.checkpoints, run
print("pip_install: ok:", icl_workbench.__file__, run)
PY
