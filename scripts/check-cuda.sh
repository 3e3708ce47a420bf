#!/usr/bin/env bash
# Checks the CUDA path on a machine with an NVIDIA GPU: builds the core, icl-cli, the CUDA test suite and the
# benchmarks against a CUDA LibTorch (without the GUI), runs tests/core/cuda (every model, training, resume,
# divergence and the ICL/IWL analysis on the GPU, each compared with the CPU), then the CUDA benchmarks.
#
#   scripts/check-cuda.sh [BUILD_DIR]          (default: build-cuda)
#
# LibTorch: TORCH_PREFIX (a folder holding share/cmake/Torch), else the one shipped with python3's torch package.
# Further CMake arguments (e.g. where HDF5 is): CMAKE_ARGS. The other dependencies as in scripts/install-deps.sh.
# CI has no GPU and does not run this; cuda_tests fails at once on a machine without CUDA.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-cuda}
prefix=${TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')}

# shellcheck disable=SC2086  # CMAKE_ARGS is a list of arguments
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DICL_BUILD_GUI=OFF \
    -DCMAKE_PREFIX_PATH="$prefix${CMAKE_PREFIX_PATH:+;$CMAKE_PREFIX_PATH}" ${CMAKE_ARGS:-}
targets=(cuda_tests icl-cli)
if ninja -C "$build" -t targets all 2>/dev/null | grep -q '^core_benchmarks:'; then
    targets+=(core_benchmarks)
fi
cmake --build "$build" --target "${targets[@]}" -j "$(nproc)" -- -k 0

status=0
"$build/tests/core/cuda_tests" || status=$?
if [[ -x "$build/tests/benchmarks/core_benchmarks" ]]; then
    "$build/tests/benchmarks/core_benchmarks" --benchmark_filter='Cuda' || status=$?
    # The same step in PyTorch eager on the same GPU, in the same run: divide the steps_per_s above by these.
    python3 "$root/tests/benchmarks/reference/pytorch_gpt2_step.py" cuda || status=$?
else
    echo "check-cuda: Google Benchmark not found, CUDA benchmarks not built" >&2
fi
exit "$status"
