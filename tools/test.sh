#!/usr/bin/env bash
# Second command of the README: builds (if needed) and runs the whole test suite: unit tests, golden tests
# (lit + FileCheck), and the CUDA compile tests where nvcc exists. GPU tests report themselves as skipped here.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
[ -f "$BUILD_DIR/build.ninja" ] || cmake -S . -B "$BUILD_DIR" -G Ninja >/dev/null
ninja -C "$BUILD_DIR"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" "$@"
