#!/usr/bin/env bash
# \file Runs the TileKernels manifest (tests/tilekernels/manifest.tsv) on DeepSeek's TileKernels package: for each
# kernel factory, tilec on the unchanged package file with the manifest's --export call, then nvcc (sm_90a) on the
# CUDA it wrote. Prints one row per kernel (ok / error: the first located diagnostic / crash) and the count.
#
#   tools/compat/tilekernels.sh PACKAGE_DIR [--tilec PATH] [--no-nvcc] [--keep DIR]
#
# PACKAGE_DIR is the folder that holds the package `tile_kernels/` (an unpacked wheel: `pip download
# tile-kernels==1.0.0 --no-deps && unzip tile_kernels-1.0.0-py3-none-any.whl -d DIR`). tilec runs in the kernel
# file's folder on the file itself; its imports (`from tile_kernels.utils import align`, `from .common import *`)
# are found in the package by walking up its __init__.py folders. Nothing of the package is copied.
# Exit status: 0 when every kernel does at least as well as the manifest's expected column (a kernel expected "ok"
# that is not ok, or any crash, fails), 1 otherwise, 2 for a bad command line, 77 when there is no package.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tools/compat/classify.sh"
MANIFEST=$ROOT/tests/tilekernels/manifest.tsv
TILEC=$ROOT/build/tilec
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
NO_NVCC=0 KEEP=""
PACKAGE=${1:-}
(($#)) && shift
factory_options tilekernels.sh 0 "$@"
if [[ -z $PACKAGE ]]; then
    echo "SKIP: no TileKernels package (set TILEKERNELS_SRC for ctest, or run tools/compat/tilekernels.sh PACKAGE_DIR); CI has none"
    exit 77
fi
if [[ ! -f $PACKAGE/tile_kernels/__init__.py ]]; then
    echo "tilekernels.sh: '$PACKAGE' holds no package tile_kernels/ (unpack tile_kernels-1.0.0-py3-none-any.whl there)" >&2
    exit 2
fi
factory_setup tilekernels.sh

TOTAL=0 ROWS_OK=0 FAIL=0 STALE=0
printf '%-52s %-40s %-8s %s\n' FILE KERNEL RESULT DETAIL
while IFS=$'\t' read -r file name call expected; do
    [[ $file == \#* || -z $file ]] && continue
    factory_row "$PACKAGE/tile_kernels/$file" "$name" "$call" "$expected"
    TOTAL=$((TOTAL + 1))
    printf '%-52s %-40s %-8s %s%s\n' "$file" "$name" "$RESULT" "$DETAIL" "$MARK"
done <"$MANIFEST"
what="tilec and nvcc"; ((NO_NVCC)) && what="tilec"
echo "TileKernels: $ROWS_OK of $TOTAL kernel factories compile unchanged with $what"
((STALE)) && echo "TileKernels: $STALE row(s) marked BETTER compile although the manifest expects an error"
exit $FAIL
