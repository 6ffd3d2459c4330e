#!/usr/bin/env bash
# The two variants of a tile transfer with a run-time row length (tests/lit/codegen/dynamic_row_variants.tile,
# issue 12) in machine code, checked without a GPU: tilec -arch=sm_80, nvcc to a cubin (ptxas -v), then
#   _v0 (assumes 16-byte rows): both operands through 16-byte cp.async (LDGSTS.E.BYPASS.128), no 2-byte load;
#   _v1 (assumes nothing): A through 2-byte loads and stores (LDG.E.U16, STS.U16), B still LDGSTS.E.BYPASS.128.
# Prints each variant's registers and counts. Without cuobjdump (find_cuobjdump.sh): exit 77 (ctest's SKIP).
# Usage: check_wide_rows_sass.sh TILEC NVCC TILE_FILE WORKDIR
set -uo pipefail
TILEC=$1 NVCC=$2 SRC=$3 WORK=$4
mkdir -p "$WORK"
cu=$WORK/wide_rows.cu cubin=$WORK/wide_rows.sm_80.cubin log=$WORK/wide_rows.ptxas.log sass=$WORK/wide_rows.sass
"$TILEC" "$SRC" -arch=sm_80 -o "$cu" || { echo "FAIL: tilec"; exit 1; }
if ! "$NVCC" -O3 -std=c++17 -gencode=arch=compute_80,code=sm_80 -cubin -Xptxas -v -o "$cubin" "$cu" >"$log" 2>&1; then
    cat "$log"
    echo "FAIL: nvcc could not compile $cu"
    exit 1
fi
grep -E "entry function|registers" "$log"
CUOBJDUMP=$("$(dirname "$0")/find_cuobjdump.sh" "$NVCC" | head -1)
[ -n "$CUOBJDUMP" ] || { echo "SKIP: no cuobjdump (pip install nvidia-cuda-cuobjdump): the SASS was not checked"; exit 77; }
"$CUOBJDUMP" -sass "$cubin" >"$sass" 2>&1 || { cat "$sass"; echo "FAIL: $CUOBJDUMP could not read $cubin"; exit 1; }
# count VARIANT OPCODE: the instructions of that opcode in the variant's function, with or without further
# modifiers (LDG.E.U16 counts LDG.E.U16.CONSTANT: read-only __restrict__ tensors load through that cache)
count() {
    awk -v v="_$1" -v op="$2" '
        /Function :/ { inside = index($0, v "P") > 0 }
        inside { for (i = 1; i <= NF; ++i) { t = $i; sub(/;$/, "", t); if (t == op || index(t, op ".") == 1) n++ } }
        END { print n + 0 }' "$sass"
}
fail=0
expect() { # VARIANT OPCODE least most
    local n
    n=$(count "$1" "$2")
    echo "SASS: $1 $2 x$n"
    if [ "$n" -lt "$3" ] || [ "$n" -gt "$4" ]; then echo "FAIL: $1 has $n $2, expected $3 to $4"; fail=1; fi
}
expect v0 LDGSTS.E.BYPASS.128 2 1000000
expect v0 LDG.E.U16 0 0
expect v1 LDGSTS.E.BYPASS.128 1 1000000
expect v1 LDG.E.U16 1 1000000
expect v1 STS.U16 1 1000000
exit $fail
