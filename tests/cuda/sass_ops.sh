# Sourced by the SASS checks of tilec's output (check_epilogue_sass.sh, check_sm90_sass.sh).
# Needs TILEC NVCC SRC WORK NAME; sets cu, cubin, log, sass and fail (1 once an expectation fails).
#
# compile_tile ARCH [tilec options...]: tilec -arch=ARCH, nvcc to an ARCH cubin with ptxas's report (printed:
# registers per entry), the ptxas check of no stack frame or spills, then cuobjdump -sass into $sass. Returns 1
# when a step fails, 77 (ctest's SKIP) when no cuobjdump reads the cubin (find_cuobjdump.sh) but ptxas passed.
compile_tile() {
    local arch=$1
    shift
    mkdir -p "$WORK"
    cu=$WORK/$NAME.cu cubin=$WORK/$NAME.$arch.cubin log=$WORK/$NAME.ptxas.log sass=$WORK/$NAME.sass
    fail=0
    "$TILEC" "$SRC" -arch="$arch" "$@" -o "$cu" || { echo "FAIL: tilec"; return 1; }
    if ! "$NVCC" -O3 -std=c++17 -gencode=arch=compute_${arch#sm_},code=$arch -cubin -Xptxas -v -o "$cubin" "$cu" \
        >"$log" 2>&1; then
        cat "$log"
        echo "FAIL: nvcc could not compile $cu for $arch"
        return 1
    fi
    "$(dirname "${BASH_SOURCE[0]}")/ptxas_no_spills.sh" "$log" || fail=1
    grep -E "entry function|registers" "$log"
    local cuobjdump
    cuobjdump=$("$(dirname "${BASH_SOURCE[0]}")/find_cuobjdump.sh" "$NVCC" | head -1)
    if [ -z "$cuobjdump" ]; then
        [ $fail = 0 ] || return 1
        echo "SKIP: no cuobjdump (pip install nvidia-cuda-cuobjdump): the SASS of $NAME was not checked"
        return 77
    fi
    "$cuobjdump" -sass "$cubin" >"$sass" 2>&1 || { cat "$sass"; echo "FAIL: $cuobjdump could not read $cubin"; return 1; }
}

# ops VARIANT PREFIX: the instructions of the variant's function (_v0, _v1, ...) whose opcode starts with PREFIX
ops() {
    awk -v v="_$1" -v op="$2" '
        /Function :/ { inside = index($0, v "P") > 0 || substr($0, length($0) - length(v) + 1) == v }
        inside && /\/\*[0-9a-f]+\*\// { for (i = 1; i <= NF; ++i) if (index($i, op) == 1) { n++; break } }
        END { print n + 0 }' "$sass"
}

# expect VARIANT PREFIX LEAST MOST
expect() {
    local n
    n=$(ops "$1" "$2")
    echo "SASS: $1 $2 x$n"
    if [ "$n" -lt "$3" ] || [ "$n" -gt "$4" ]; then echo "FAIL: $1 has $n $2, expected $3 to $4"; fail=1; fi
}
