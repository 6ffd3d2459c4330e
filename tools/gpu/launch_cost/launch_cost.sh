#!/usr/bin/env bash
# Issue 27's launch-cost benchmark: a small TMA GEMM and a small element-wise kernel, 50 000 launches each
# through the generated launch function and bare (<<<>>>), in µs per launch (launch_cost.cu says how).
#   HERE (where tilec builds):   bash tools/gpu/launch_cost/launch_cost.sh prepare [BUILD_DIR]
#                                (writes gpu-build/launch_cost/; run it after tools/gpu/prepare.sh, which
#                                empties gpu-build/)
#   ON THE GPU (carry gpu-build): bash tools/gpu/launch_cost/launch_cost.sh run
set -euo pipefail
cd "$(dirname "$0")/../../.."
GB=${GPU_BUILD:-gpu-build}
DIR=$GB/launch_cost
case ${1:-} in
prepare)
    TILEC=${TILEC:-${2:-build}/tilec}
    mkdir -p "$DIR"
    "$TILEC" tools/gpu/launch_cost/launch_cost.tile -arch=sm_90a -o "$DIR/generated.cu"
    # The kernels' file-local names (the TMA GEMM's variant 0, the element-wise kernel's only one).
    tma=$(grep -o 'tilec_gemm_small_[0-9a-f]*_v0(' "$DIR/generated.cu" | head -1 | tr -d '(')
    add=$(grep -o '__global__ void [^ ]* *tilec_add_small_[0-9a-f]*(' "$DIR/generated.cu" | grep -o 'tilec_add_small_[0-9a-f]*' | head -1)
    [ -n "$tma" ] && [ -n "$add" ] || { echo "launch_cost: kernel names not found in $DIR/generated.cu" >&2; exit 1; }
    printf '%s %s\n' "$tma" "$add" >"$DIR/kernels.txt"
    cp tools/gpu/launch_cost/launch_cost.cu "$DIR/"
    echo "launch_cost: prepared $DIR ($tma, $add)"
    ;;
run)
    read -r tma add <"$DIR/kernels.txt"
    NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I"$DIR" -DGENERATED='"generated.cu"' \
        -DTMA_KERNEL="$tma" -DADD_KERNEL="$add" "$DIR/launch_cost.cu" -o "$DIR/launch_cost"
    "$DIR/launch_cost"
    ;;
*)
    echo "usage: $0 prepare [BUILD_DIR] | run" >&2
    exit 2
    ;;
esac
