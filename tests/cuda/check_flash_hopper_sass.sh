#!/usr/bin/env bash
# FlashAttention on the Hopper path in machine code, checked without a GPU: tilec -arch=sm_90a on a .tile file
# with one kernel (benchmarks/flash_fwd.tile through --export), nvcc to a cubin with ptxas's report, then in the
# TMA variant (_v0):
#   ptxas: no C7508 (setmaxnreg ignored), 0 bytes of stack frame and spills (of _v0; the cp.async variant beside
#   it is the portable path's);
#   SASS: HGMMA with a register A operand (the RS form: P.V with P in registers) and with both operands from
#   descriptors (QK^T), UTMALDG (TMA loads), SYNCS (mbarriers), USETMAXREG; the epilogue through shared memory
#   (STSM: stmatrix) and TMA stores (UTMASTG), no STG (no store of O from registers); no HMMA (mma.sync), no LDL/STL;
#   in the key-block loop, the conversions in pairs and the descriptors uniform (see there).
# Prints ptxas's remarks on wgmma (the FA3 schedule is not done: waits between the GEMMs are expected).
# Without cuobjdump (find_cuobjdump.sh): exit 77 (ctest's SKIP) after the ptxas checks passed.
# float8 (benchmarks/flash_fwd_fp8.tile): QGMMA for HGMMA, and CVT_PER_RS 8 (P's 32 e4m3 bytes per RS
# instruction in pairs: cvt.rn.satfinite.e4m3x2.f32), against 4 for 16-bit P.
# FLAGS: tilec's schedule options ("--no-intra-overlap --no-pingpong": the loop in order). SCHEDULE "fa3" (or
# FLAGS asking for --intra-overlap): the kernel is in FlashAttention-3's schedule (the default from head
# dimension 128 on, 16-bit operands): then ptxas must not serialize any wgmma (no info C7510-C7519) and the
# consumers get 240 registers (setmaxnreg).
# LOOP_MAX: "OP=N ..." -- at most N instructions of opcode OP in the key-block loop (the seed's file: FSETP=2,
# its float16 P's exponentials without the subnormal range fix, CodegenExpr.cpp's narrowed(); the two left are
# the float rescale's).
# LOOP_MIN: "OP=N ..." -- at least N instructions of opcode OP in the key-block loop. With VOTE (the output's
# rescale under a warp vote, skipUnitRescales): each VOTE.ANY of the TMA variant is followed by a branch over at
# least 32 FMUL (the multiplies skipped as a block, not predicated one by one).
# Usage: check_flash_hopper_sass.sh TILEC NVCC TILE_FILE EXPORT WORKDIR [CVT_PER_RS [FLAGS [SCHEDULE [LOOP_MAX [LOOP_MIN]]]]]
set -uo pipefail
TILEC=$1 NVCC=$2 SRC=$3 EXPORT=$4 WORK=$5 CVT_PER_RS=${6:-4} FLAGS=${7:-} SCHEDULE=${8:-} LOOP_MAX=${9:-} LOOP_MIN=${10:-}
[[ $FLAGS == *--intra-overlap* ]] && SCHEDULE=fa3
mkdir -p "$WORK"
cu=$WORK/flash_hopper.cu cubin=$WORK/flash_hopper.sm_90a.cubin log=$WORK/flash_hopper.ptxas.log sass=$WORK/flash_hopper.sass
# shellcheck disable=SC2086 # FLAGS is a list of options
"$TILEC" "$SRC" $FLAGS --export "$EXPORT" --kernel k -arch=sm_90a -o "$cu" || { echo "FAIL: tilec"; exit 1; }
if ! "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -cubin -Xptxas -v -o "$cubin" "$cu" >"$log" 2>&1; then
    cat "$log"
    echo "FAIL: nvcc could not compile $cu"
    exit 1
fi
fail=0
grep -E "entry function|registers|C75[0-9][0-9]" "$log"
if grep -q "C7508" "$log"; then echo "FAIL: ptxas ignored setmaxnreg (C7508)"; fail=1; fi
if [ "$SCHEDULE" = fa3 ]; then
    if grep -q "C751[0-9]" "$log"; then echo "FAIL: ptxas serialized wgmmas in FlashAttention-3's schedule ($FLAGS)"; fail=1; fi
    if ! grep -q "setmaxnreg_inc<240>" "$cu"; then echo "FAIL: the consumers do not get 240 registers"; fail=1; fi
fi
# the TMA variant's frame (the cp.async variant beside it is the portable path's business)
frame=$(grep -A1 "Function properties for .*_v0P" "$log" | tail -1)
if ! echo "$frame" | grep -qE "^\s*0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"; then
    echo "FAIL: the TMA variant has a stack frame or spills: $frame"
    fail=1
fi
CUOBJDUMP=$("$(dirname "$0")/find_cuobjdump.sh" "$NVCC" | head -1)
if [ -z "$CUOBJDUMP" ]; then
    [ $fail = 0 ] || exit 1
    echo "SKIP: no cuobjdump (pip install nvidia-cuda-cuobjdump): the SASS was not checked"
    exit 77
fi
"$CUOBJDUMP" -sass "$cubin" >"$sass" 2>&1 || { cat "$sass"; echo "FAIL: $CUOBJDUMP could not read $cubin"; exit 1; }
# the lines of the TMA variant's function
v0=$WORK/flash_hopper.v0.sass
awk '/Function :/ { inside = index($0, "_v0P") > 0 } inside' "$sass" >"$v0"
# count REGEX: the v0 instructions matching it
count() { grep -cE "$1" "$v0"; }
expect() { # NAME REGEX least
    local n
    n=$(count "$2")
    echo "SASS: $1 x$n"
    if [ "$n" -lt "$3" ]; then echo "FAIL: $1: $n, expected at least $3"; fail=1; fi
}
expect "HGMMA RS (A in registers)" '\b[HQ]GMMA\.[^ ]+ +R[0-9]+, +R[0-9]+, +gdesc' 1
expect "HGMMA SS (A and B descriptors)" '\b[HQ]GMMA\.[^ ]+ +R[0-9]+, +gdesc' 1
expect UTMALDG '\bUTMALDG' 1
expect SYNCS '\bSYNCS' 1
expect USETMAXREG '\bUSETMAXREG' 1
expect "STSM (the epilogue's stmatrix)" '\bSTSM' 1
expect "UTMASTG (the epilogue's TMA stores)" '\bUTMASTG' 1
# The key-block loop (sass_loop.py): probabilities converted to the RS operand in pairs, one F2FP per A
# register (4 per RS HGMMA; one element at a time takes twice as many, F2FP or F2F, and a PRMT per register
# to pack them -- PRMT is printed, not checked: bfloat16 probabilities widened to float use it too);
# the wgmma descriptors in uniform registers (one base per operand made once, constant offsets by UIADD3:
# R2UR only for the warpgroup index, against two per descriptor per HGMMA when they were vector sums).
loop=$(python3 "$(dirname "$0")/sass_loop.py" "$sass" _v0P HGMMA QGMMA F2FP F2F PRMT R2UR IADD3 FSETP MUFU VOTE) || { echo "FAIL: $loop"; exit 1; }
echo "$loop" | tr '\n' ' '; echo
in_loop() { echo "$loop" | awk -v op="$1" '$1 == op { print $2 }'; }
rs=$(grep -cE '\b[HQ]GMMA\.[^ ]+ +R[0-9]+, +R[0-9]+, +gdesc' "$v0")
cvt=$(($(in_loop F2FP) + $(in_loop F2F)))   # float16: F2FP (one or two elements), bfloat16 one at a time: F2F
if [ "$cvt" -gt $((CVT_PER_RS * rs)) ]; then echo "FAIL: $cvt conversions in the loop: more than $CVT_PER_RS per RS HGMMA ($rs)"; fail=1; fi
if [ "$(in_loop R2UR)" -gt 2 ]; then echo "FAIL: R2UR in the loop: descriptors computed in vector registers"; fail=1; fi
for limit in $LOOP_MAX; do
    n=$(in_loop "${limit%%=*}")
    if [ "${n:-0}" -gt "${limit#*=}" ]; then echo "FAIL: ${limit%%=*} x$n in the loop, more than ${limit#*=}"; fail=1; fi
done
for limit in $LOOP_MIN; do
    n=$(in_loop "${limit%%=*}")
    if [ "${n:-0}" -lt "${limit#*=}" ]; then echo "FAIL: ${limit%%=*} x${n:-0} in the loop, fewer than ${limit#*=}"; fail=1; fi
done
if [[ " $LOOP_MIN" == *" VOTE="* ]]; then
    # each vote: the first predicated branch after it (within 64 instructions) jumps over at least 32 FMUL
    skips=$(python3 - "$v0" <<'PY'
import re, sys
insns = []
for line in open(sys.argv[1]):
    m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(@!?P[0-9] )?([A-Z0-9_.]+)\s*([^;]*)", line)
    if m:
        insns.append((int(m.group(1), 16), bool(m.group(2)), m.group(3).split(".")[0], m.group(4)))
out = []
for i, (a, _, op, _) in enumerate(insns):
    if op != "VOTE":
        continue
    n = 0
    for b, pred, op2, rest in insns[i + 1:i + 64]:
        t = re.search(r"0x([0-9a-f]+)", rest) if op2 == "BRA" and pred else None
        if t:
            n = sum(1 for c, _, o, _ in insns if b < c < int(t.group(1), 16) and o == "FMUL")
            break
    out.append(str(n))
print(" ".join(out))
PY
)
    echo "SASS: FMUL skipped by each vote's branch: ${skips:-none}"
    for n in ${skips:-0}; do
        if [ "$n" -lt 32 ]; then echo "FAIL: a vote whose branch skips $n FMUL (the rescale predicated or not guarded)"; fail=1; fi
    done
fi
for op in HMMA LDL STL STG; do
    if grep -qE "\b$op\b" "$v0"; then grep -m3 -E "\b$op\b" "$v0"; echo "FAIL: $op in the TMA variant"; fail=1; fi
done
exit $fail
