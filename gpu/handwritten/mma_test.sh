#!/usr/bin/env bash
# Builds mma_test.cu twice, for sm_90a natively and for compute_80 compiled to sm_90 (the Ampere path on the
# H200), both at once; runs the tests of both, then the benchmark of both. Exit status non-zero if a build or
# a test failed. Usage: gpu/handwritten/mma_test.sh [OUTDIR]   (default: a temporary directory).
# NVCC names the compiler (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$(mktemp -d)}"
nvcc="${NVCC:-nvcc}"
command -v "$nvcc" >/dev/null 2>&1 || nvcc=/usr/local/cuda/bin/nvcc
mkdir -p "$out"
gencodes=(arch=compute_90a,code=sm_90a arch=compute_80,code=sm_90)
pids=()
for gencode in "${gencodes[@]}"; do
    tag="$(echo "$gencode" | tr -c 'a-z0-9\n' '_')"
    "$nvcc" -O3 -std=c++17 -lineinfo -gencode="$gencode" -Werror all-warnings -o "$out/mma_test_$tag" \
        "$here/mma_test.cu" >"$out/build_$tag.log" 2>&1 &
    pids+=($!)
done
status=0
built=()
for i in "${!gencodes[@]}"; do
    tag="$(echo "${gencodes[$i]}" | tr -c 'a-z0-9\n' '_')"
    if wait "${pids[$i]}"; then
        echo "== built ${gencodes[$i]}"
        built+=("$out/mma_test_$tag")
    else
        echo "== BUILD FAILED: ${gencodes[$i]}"
        cat "$out/build_$tag.log"
        status=1
    fi
done
for exe in "${built[@]}"; do
    echo "== test $(basename "$exe")"
    "$exe" || status=1
done
for exe in "${built[@]}"; do
    echo "== bench $(basename "$exe")"
    "$exe" bench || status=1
done
echo "== mma_test.sh: $([ $status = 0 ] && echo PASSED || echo FAILED)"
exit $status
