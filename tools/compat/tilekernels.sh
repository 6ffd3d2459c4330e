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
while (($#)); do
    case $1 in
    --tilec) TILEC=$2; shift 2 ;;
    --no-nvcc) NO_NVCC=1; shift ;;
    --keep) KEEP=$2; shift 2 ;;
    *) echo "tilekernels.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
if [[ -z $PACKAGE ]]; then
    echo "SKIP: no TileKernels package (set TILEKERNELS_SRC for ctest, or run tools/compat/tilekernels.sh PACKAGE_DIR); CI has none"
    exit 77
fi
if [[ ! -f $PACKAGE/tile_kernels/__init__.py ]]; then
    echo "tilekernels.sh: '$PACKAGE' holds no package tile_kernels/ (unpack tile_kernels-1.0.0-py3-none-any.whl there)" >&2
    exit 2
fi
[[ -x $TILEC ]] || { echo "tilekernels.sh: no tilec at '$TILEC' (build first, or --tilec PATH)" >&2; exit 2; }
TILEC=$(cd "$(dirname "$TILEC")" && pwd)/$(basename "$TILEC")
WORK=${KEEP:-$(mktemp -d)}
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
[[ -z $KEEP ]] && trap 'rm -rf "$WORK"' EXIT

# classify FILE NAME CALL -> prints "RESULT<TAB>DETAIL"
classify() {
    local file=$1 name=$2 call=$3 out=$WORK/$2
    mkdir -p "$out"
    (cd "$(dirname "$PACKAGE/tile_kernels/$file")" &&
        timeout 120 "$TILEC" "$(basename "$file")" --kernel "$name" --export "$name=$call" -o "$out/$name.cu") \
        >"$out/tilec.log" 2>&1
    classify_run $? "$out" "$out/$name.cu"
}

TOTAL=0 OK=0 FAIL=0 STALE=0
printf '%-52s %-40s %-8s %s\n' FILE KERNEL RESULT DETAIL
while IFS=$'\t' read -r file name call expected; do
    [[ $file == \#* || -z $file ]] && continue
    IFS=$'\t' read -r result detail < <(classify "$file" "$name" "$call")
    TOTAL=$((TOTAL + 1))
    [[ $result == ok ]] && OK=$((OK + 1))
    mark=""
    if [[ $result == crash || ($expected == ok && $result != ok) ]]; then mark=" [REGRESSION: expected $expected]"; FAIL=1; fi
    # a row that does better than the manifest says: its expected column is stale (flip it once the kernel is
    # checked on the CPU simulator and the GPU), said here so that the manifest's count stays honest
    if [[ $expected != ok && $result == ok ]]; then mark=" [BETTER: expected $expected; update the manifest]"; STALE=$((STALE + 1)); fi
    printf '%-52s %-40s %-8s %s%s\n' "$file" "$name" "$result" "$detail" "$mark"
done <"$MANIFEST"
what="tilec and nvcc"; ((NO_NVCC)) && what="tilec"
echo "TileKernels: $OK of $TOTAL kernel factories compile unchanged with $what"
((STALE)) && echo "TileKernels: $STALE row(s) marked BETTER compile although the manifest expects an error"
exit $FAIL
