#!/usr/bin/env bash
# The block-scaled and grouped GEMMs (benchmarks/gemm_fp8_blockscaled.tile, benchmarks/gemm_grouped.tile) in
# machine code, checked without a GPU: tilec -arch=sm_90a on the kernels named, nvcc to a cubin (ptxas -v), then
#   ptxas: no entry with a stack frame or spills, no setmaxnreg ignored (C7508);
#   _v0 (warp roles): GMMA (wgmma: QGMMA for float8, HGMMA for 16-bit operands), UTMALDG (the producer's TMA
#       loads), SYNCS (mbarriers) and USETMAXREG present; no HMMA (mma.sync) and no LDGSTS (cp.async) left in
#       it, no local memory (LDL/STL).
# The kernels go into one .cu, so each variant's counts are over all of them.
# Without cuobjdump (find_cuobjdump.sh): exit 77 (ctest's SKIP) after the ptxas checks passed.
# Usage: check_gemm_family_sass.sh TILEC NVCC TILE_FILE WORKDIR NAME GMMA [tilec options...]
#   GMMA: the wgmma opcode expected (QGMMA or HGMMA)
set -uo pipefail
TILEC=$1 NVCC=$2 SRC=$3 WORK=$4 NAME=$5 GMMA=$6
shift 6
. "$(dirname "$0")/sass_ops.sh"
compile_tile sm_90a "$@"
rc=$?
if grep -q "C7508" "$log" 2>/dev/null; then echo "FAIL: ptxas ignored setmaxnreg (C7508)"; exit 1; fi
[ $rc = 0 ] || exit $rc
expect v0 "$GMMA" 1 1000000
expect v0 UTMALDG 1 1000000
expect v0 SYNCS 1 1000000
expect v0 USETMAXREG 1 1000000
expect v0 HMMA 0 0
expect v0 LDGSTS 0 0
expect v0 LDL 0 0
expect v0 STL 0 0
exit $fail
