#!/usr/bin/env bash
# The Hopper GEMM epilogue (src/lower/StageEpilogue.cpp, stdlib/tilec/sm90_store.cuh) in machine code, checked
# without a GPU: tilec -arch=sm_90a on a GEMM, nvcc to a cubin (ptxas -v), then
#   ptxas: no entry with a stack frame or spills;
#   _v0 (warp roles, TMA): STSM (stmatrix) and UTMASTG (TMA stores) present, no STG (no store from registers
#       to global memory left);
#   _v1 (the cp.async variant for arguments TMA cannot take): STG present, no UTMASTG (today's stores).
# Without cuobjdump (find_cuobjdump.sh): exit 77 (ctest's SKIP) after the ptxas check passed.
# Usage: check_epilogue_sass.sh TILEC NVCC TILE_FILE WORKDIR NAME [tilec options...]
set -uo pipefail
TILEC=$1 NVCC=$2 SRC=$3 WORK=$4 NAME=$5
shift 5
. "$(dirname "$0")/sass_ops.sh"
compile_tile sm_90a "$@" || exit $?
expect v0 STSM 1 1000000
expect v0 UTMASTG 1 1000000
expect v0 STG 0 0
expect v1 STG 1 1000000
expect v1 UTMASTG 0 0
exit $fail
