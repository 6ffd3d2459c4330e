#!/usr/bin/env bash
# T.gemm_sp on sm_90a in machine code (issue 25), checked without a GPU: tilec -arch=sm_90a on a .tile of sparse
# GEMMs, nvcc to a cubin (ptxas -v), then
#   ptxas: no entry with a stack frame or spills, no wgmma serialized or waits injected between them (C7510..C7519);
#   default: HGMMA.SP (wgmma.mma_async.sp) present, no HMMA (mma.sp / mma.sync) and no local memory (LDL/STL);
#   with --no-sparse-wgmma: HMMA.SP (mma.sp) present and no HGMMA.
# Without cuobjdump (find_cuobjdump.sh): exit 77 (ctest's SKIP) after the ptxas checks passed.
# Usage: check_gemm_sp_sass.sh TILEC NVCC TILE_FILE WORKDIR NAME
set -uo pipefail
TILEC=$1 NVCC=$2 SRC=$3 WORK=$4 NAME=$5
. "$(dirname "$0")/sass_ops.sh"
count() { grep -c "\b$1" "$sass"; }
compile_tile sm_90a
rc=$?
if grep -E "Potential Performance Loss|is injected" "$log"; then echo "FAIL: ptxas serialized wgmma or injected waits"; exit 1; fi
[ $rc = 0 ] || exit $rc
echo "SASS: HGMMA.SP x$(count HGMMA.SP), HMMA x$(count HMMA)"
[ "$(count HGMMA.SP)" -gt 0 ] || { echo "FAIL: no HGMMA.SP (wgmma.mma_async.sp) in the SASS of $NAME"; fail=1; }
for op in HMMA LDL STL; do
    [ "$(count "$op")" = 0 ] || { grep -m3 "\b$op" "$sass"; echo "FAIL: $op in the SASS of $NAME"; fail=1; }
done
[ $fail = 0 ] || exit 1
NAME=$NAME.mma_sp
compile_tile sm_90a --no-sparse-wgmma || exit $?
echo "SASS (--no-sparse-wgmma): HMMA.SP x$(count HMMA.SP), HGMMA x$(count HGMMA)"
[ "$(count HMMA.SP)" -gt 0 ] || { echo "FAIL: no HMMA.SP (mma.sp) with --no-sparse-wgmma"; fail=1; }
[ "$(count HGMMA)" = 0 ] || { echo "FAIL: HGMMA with --no-sparse-wgmma"; fail=1; }
exit $fail
