#!/usr/bin/env bash
# storeMatrices (src/lower/StoreMatrices.cpp) in machine code, checked without a GPU: a GEMM whose accumulator is
# staged through a float16 shared tile (tests/lit/codegen/stmatrix_copies.tile's `wide`: 128 x 128 over two
# warpgroups, 64 accumulators a thread) compiled for sm_90a with and without --no-stmatrix-copies, then
#   ptxas: no entry with a stack frame or spills;
#   by default, both variants (_v0 warp roles, _v1 cp.async): 8 STSM (stmatrix.x4, 8 accumulators each) and no
#       STS (the accumulator's 4-byte stores into the tile are gone);
#   --no-stmatrix-copies: no STSM, the 32 STS of the per-thread pair stores (8-byte vectors merged to 4-byte ones).
# Without cuobjdump (find_cuobjdump.sh): exit 77 (ctest's SKIP) after the ptxas check passed.
# Usage: check_stmatrix_sass.sh TILEC NVCC TILE_FILE WORKDIR
set -uo pipefail
TILEC=$1 NVCC=$2 SRC=$3 WORK=$4
. "$(dirname "$0")/sass_ops.sh"
NAME=stmatrix
compile_tile sm_90a --kernel wide || exit $?
for v in v0 v1; do
    expect $v STSM 8 8
    expect $v STS 8 8 # every STS-prefixed store is one of those STSM
done
on=$fail
NAME=stmatrix_off
compile_tile sm_90a --kernel wide --no-stmatrix-copies || exit $?
for v in v0 v1; do
    expect $v STSM 0 0
    expect $v STS 32 1000000
done
[ "$on" = 0 ] || fail=1
exit $fail
