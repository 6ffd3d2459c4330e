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
mkdir -p "$WORK"
cu=$WORK/$NAME.cu cubin=$WORK/$NAME.sm_90a.cubin log=$WORK/$NAME.ptxas.log sass=$WORK/$NAME.sass
"$TILEC" "$SRC" -arch=sm_90a "$@" -o "$cu" || { echo "FAIL: tilec"; exit 1; }
if ! "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -cubin -Xptxas -v -o "$cubin" "$cu" >"$log" 2>&1; then
    cat "$log"
    echo "FAIL: nvcc could not compile $cu"
    exit 1
fi
fail=0
"$(dirname "$0")/ptxas_no_spills.sh" "$log" || fail=1
grep -E "entry function|registers" "$log"
CUOBJDUMP=$("$(dirname "$0")/find_cuobjdump.sh" "$NVCC" | head -1)
if [ -z "$CUOBJDUMP" ]; then
    [ $fail = 0 ] || exit 1
    echo "SKIP: no cuobjdump (pip install nvidia-cuda-cuobjdump): the SASS of $NAME was not checked"
    exit 77
fi
"$CUOBJDUMP" -sass "$cubin" >"$sass" 2>&1 || { cat "$sass"; echo "FAIL: $CUOBJDUMP could not read $cubin"; exit 1; }
# ops VARIANT PREFIX: the instructions of the variant's function whose opcode starts with PREFIX
ops() {
    awk -v v="_$1" -v op="$2" '
        /Function :/ { inside = index($0, v "P") > 0 || substr($0, length($0) - length(v) + 1) == v }
        inside && /\/\*[0-9a-f]+\*\// { for (i = 1; i <= NF; ++i) if (index($i, op) == 1) { n++; break } }
        END { print n + 0 }' "$sass"
}
expect() { # VARIANT PREFIX least most
    local n
    n=$(ops "$1" "$2")
    echo "SASS: $1 $2 x$n"
    if [ "$n" -lt "$3" ] || [ "$n" -gt "$4" ]; then echo "FAIL: $1 has $n $2, expected $3 to $4"; fail=1; fi
}
expect v0 STSM 1 1000000
expect v0 UTMASTG 1 1000000
expect v0 STG 0 0
expect v1 STG 1 1000000
expect v1 UTMASTG 0 0
exit $fail
