#!/usr/bin/env bash
# Runs THERE (the GPU machine): builds gpu/binary/check.c and the binary-mode C of prepare.sh with cc, links
# -lcuda only (the toolkit's stub at link time, the driver at run time), runs it, and again under
# compute-sanitizer's memcheck. No nvcc, no libcudart.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${GPU_BUILD:-gpu-build}/binary
CUDA=${CUDA_HOME:-/usr/local/cuda}
LIB=$CUDA/lib64/stubs
[ -e "$LIB/libcuda.so" ] || LIB=$CUDA/targets/x86_64-linux/lib/stubs
CC=${CC:-cc}
cd "$DIR"
for f in kernels gemm gemm_jit gemm_none cluster; do
    $CC -std=c11 -Wall -Wextra -Werror -O2 -fPIC -I"$CUDA/include" -c $f.c -o $f.o
done
$CC -std=c11 -Wall -Werror -O2 -I"$CUDA/include" -I. check.c kernels.o gemm.o gemm_jit.o gemm_none.o cluster.o \
    -L"$LIB" -lcuda -ldl -pthread -lm -o check
echo "check links: $(ldd ./check | awk '/cuda|cudart/ {print $1}' | tr '\n' ' ')"
timeout 120 ./check
if command -v compute-sanitizer >/dev/null; then
    timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 ./check | tail -3
fi
