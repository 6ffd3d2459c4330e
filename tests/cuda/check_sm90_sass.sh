#!/usr/bin/env bash
# The sm_90 path (TMA and mbarriers without wgmma or setmaxnreg: src/lower/SpecializeWarps.cpp,
# gemm_ss_panels in stdlib/tilec/mma.cuh) in machine code, checked without a GPU: tilec -arch=sm_90 on a GEMM,
# nvcc to an sm_90 cubin (ptxas -v), then
#   ptxas: no warning, no entry with a stack frame or spills;
#   _v0 (warp roles): UTMALDG (TMA loads), SYNCS (mbarriers) and HMMA (mma.sync) present; no HGMMA (wgmma)
#       and no USETMAXREG (neither exists on sm_90), no LDGSTS (cp.async) left;
#       FENCE (fence.proxy.async: the consumers' ldmatrix reads ordered before the release lets TMA rewrite
#       the stage);
#   _v1 (the cp.async variant for arguments TMA cannot take): HMMA and LDGSTS present, no UTMALDG.
# Without cuobjdump (find_cuobjdump.sh): exit 77 (ctest's SKIP) after the ptxas check passed.
# Usage: check_sm90_sass.sh TILEC NVCC TILE_FILE WORKDIR NAME [tilec options...]
set -uo pipefail
TILEC=$1 NVCC=$2 SRC=$3 WORK=$4 NAME=$5
shift 5
. "$(dirname "$0")/sass_ops.sh"
compile_tile sm_90 "$@" || exit $?
if grep -E "warning" "$log"; then echo "FAIL: ptxas warned (above)"; fail=1; fi
expect v0 UTMALDG 1 1000000
expect v0 SYNCS 1 1000000
expect v0 HMMA 1 1000000
expect v0 FENCE 1 1000000
expect v0 HGMMA 0 0
expect v0 USETMAXREG 0 0
expect v0 LDGSTS 0 0
expect v1 HMMA 1 1000000
expect v1 LDGSTS 1 1000000
expect v1 UTMALDG 0 0
exit $fail
