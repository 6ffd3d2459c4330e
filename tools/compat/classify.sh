# \file Sourced by the compat runners (run.sh, tilekernels.sh): what one tilec run on an unchanged program came to.
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
