# \file Sourced by the compat runners (run.sh, tilekernels.sh, pypi.sh): what one tilec run on an unchanged program
# came to, and (for the runners of packages' kernel factories, tilekernels.sh and pypi.sh) the options, the tilec
# run of one manifest row and its judgment against the manifest's expected column.
#
# classify_run RC OUTDIR CU: tilec exited with RC, its output is in OUTDIR/tilec.log and the CUDA it wrote in CU;
# nvcc (sm_90a, unless NO_NVCC=1) compiles CU to OUTDIR. Prints "RESULT<TAB>DETAIL": ok, error (the first located
# diagnostic) or crash (any other exit, or CUDA nvcc rejects). Needs NVCC, ROOT and NO_NVCC set.
classify_run() {
    local rc=$1 out=$2 cu=$3 first
    first=$(grep -m1 -E '^.+:[0-9]+:[0-9]+: error: ' "$out/tilec.log")
    if ((rc == 0)); then
        if ((NO_NVCC)); then printf 'ok\ttilec only\n'; return; fi
        if "$NVCC" -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I"$ROOT/include" -c "$cu" \
            -o "${cu%.cu}.o" >"$out/nvcc.log" 2>&1; then
            printf 'ok\t\n'
        else
            printf 'crash\tnvcc rejects the CUDA: %s\n' "$(grep -m1 -i error "$out/nvcc.log" | cut -c1-150)"
        fi
    elif ((rc == 1)) && [[ -n $first ]]; then
        printf 'error\t%s\n' "$(echo "$first" | cut -c1-200)"
    else
        printf 'crash\texit %d: %s\n' "$rc" "$(head -c 150 "$out/tilec.log" | tr '\n' ' ')"
    fi
}

# factory_options SCRIPT ONLY_OK ARGS...: the options of a factory runner (--tilec PATH, --no-nvcc, --keep DIR, and
# --only PKG where ONLY_OK is 1) into TILEC, NO_NVCC, KEEP and ONLY; anything else exits 2.
factory_options() {
    local script=$1 only_ok=$2
    shift 2
    while (($#)); do
        case $1 in
        --tilec) TILEC=$2; shift 2 ;;
        --no-nvcc) NO_NVCC=1; shift ;;
        --keep) KEEP=$2; shift 2 ;;
        --only) ((only_ok)) || { echo "$script: unknown option '$1'" >&2; exit 2; }; ONLY=$2; shift 2 ;;
        *) echo "$script: unknown option '$1'" >&2; exit 2 ;;
        esac
    done
}

# factory_setup SCRIPT: TILEC made absolute (exits 2 when there is none), WORK the output folder (KEEP, or a
# temporary one removed at exit).
factory_setup() {
    [[ -x $TILEC ]] || { echo "$1: no tilec at '$TILEC' (build first, or --tilec PATH)" >&2; exit 2; }
    TILEC=$(cd "$(dirname "$TILEC")" && pwd)/$(basename "$TILEC")
    WORK=${KEEP:-$(mktemp -d)}
    mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
    [[ -z $KEEP ]] && trap 'rm -rf "$WORK"' EXIT
}

# factory_row FILE NAME CALL EXPECTED: tilec on the package file FILE (in its folder, so that its package imports are
# found by walking up the __init__.py folders) with --export NAME=CALL, then classify_run. Sets RESULT, DETAIL and
# MARK (a REGRESSION: any crash or an expected ok that is not; BETTER: an expected error that compiles, whose
# expected column is stale: flip it once the kernel is checked) and counts FAIL (0/1), STALE, ROWS_OK.
factory_row() {
    local file=$1 name=$2 call=$3 expected=$4 out=$WORK/$2
    mkdir -p "$out"
    (cd "$(dirname "$file")" &&
        timeout 120 "$TILEC" "$(basename "$file")" --kernel "$name" --export "$name=$call" -o "$out/$name.cu") \
        >"$out/tilec.log" 2>&1
    IFS=$'\t' read -r RESULT DETAIL < <(classify_run $? "$out" "$out/$name.cu")
    MARK=""
    [[ $RESULT == ok ]] && ROWS_OK=$((${ROWS_OK:-0} + 1))
    if [[ $RESULT == crash || ($expected == ok && $RESULT != ok) ]]; then MARK=" [REGRESSION: expected $expected]"; FAIL=1; fi
    if [[ $expected != ok && $RESULT == ok ]]; then MARK=" [BETTER: expected $expected; update the manifest]"; STALE=$((${STALE:-0} + 1)); fi
}
