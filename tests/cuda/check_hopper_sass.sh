#!/usr/bin/env bash
# The Hopper path's machine code, checked without a GPU: compiles a .cu for sm_90a with ptxas's report, then
#   1. ptxas: no warning C7508 (setmaxnreg ignored), no "Potential Performance Loss" (C7510..C7515: wgmma
#      serialized), no warpgroup.wait/arrive "injected" (C7517, C7519: waits between wgmmas because other
#      instructions touch their registers), every entry 0 bytes of stack frame and 0 spill bytes;
#   2. the SASS (cuobjdump -sass): HGMMA, UTMALDG (TMA loads), SYNCS (mbarriers) and USETMAXREG present,
#      no HMMA (the mma.sync path) and no local-memory access (LDL/STL).
# cuobjdump comes with the CUDA toolkit or from PyPI (pip install nvidia-cuda-cuobjdump: it runs on machines
# without a GPU); it is looked for on PATH, beside nvcc, then in Python's nvidia/*/bin. Without it, step 2 is
# skipped: exit 77 (ctest's SKIP) after step 1 passed, with a message saying so.
# Usage: check_hopper_sass.sh NVCC SOURCE.cu WORKDIR [extra nvcc flags...]
set -uo pipefail
NVCC=$1 SRC=$2 WORK=$3
shift 3
mkdir -p "$WORK"
name=$(basename "$SRC" .cu)
cubin=$WORK/$name.sm_90a.cubin log=$WORK/$name.ptxas.log
if ! "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -cubin -Xptxas -v "$@" -o "$cubin" "$SRC" \
    >"$log" 2>&1; then
    cat "$log"
    echo "FAIL: nvcc could not compile $SRC for sm_90a"
    exit 1
fi
fail=0
if grep -E "C7508|Potential Performance Loss|is injected|warning" "$log"; then
    echo "FAIL: ptxas ignored setmaxnreg, serialized wgmma or injected waits between them, or warned (above)"
    fail=1
fi
"$(dirname "$0")/ptxas_no_spills.sh" "$log" || fail=1
[ $fail = 0 ] && echo "ptxas: no C7508 or wgmma serialization"

CUOBJDUMP=$("$(dirname "$0")/find_cuobjdump.sh" "$NVCC" | head -1)
if [ -z "$CUOBJDUMP" ]; then
    [ $fail = 0 ] || exit 1
    echo "SKIP: no cuobjdump (pip install nvidia-cuda-cuobjdump): the SASS of $name was not checked"
    exit 77
fi
sass=$WORK/$name.sass
if ! "$CUOBJDUMP" -sass "$cubin" >"$sass" 2>&1; then
    cat "$sass"
    echo "FAIL: $CUOBJDUMP could not read $cubin"
    exit 1
fi
for op in HGMMA UTMALDG SYNCS USETMAXREG; do
    n=$(grep -c "\b$op" "$sass")
    echo "SASS: $op x$n"
    [ "$n" -gt 0 ] || { echo "FAIL: no $op in the SASS of $name"; fail=1; }
done
for op in HMMA LDL STL; do
    if grep -q "\b$op\b" "$sass"; then
        grep -m3 "\b$op\b" "$sass"
        echo "FAIL: $op in the SASS of $name"
        fail=1
    fi
done
exit $fail
