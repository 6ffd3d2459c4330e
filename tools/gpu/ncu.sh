#!/usr/bin/env bash
# Profiles one generated kernel with Nsight Compute on the GPU machine (one launch, the Speed-of-Light,
# compute, memory and warp-state sections), through the harness's benchmark of it:
#   tools/gpu/ncu.sh LIB KERNEL_REGEX HARNESS_ID_REGEX      e.g.
#   tools/gpu/ncu.sh gemm_fp16 tilec_gemm_fp16_4096 'gemm_fp16:gemm_fp16_4096$'
# Run it there after tools/gpu/prepare.sh here (carry gpu-build); the report goes to $OUT/ncu.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
LIB=$1 KERNEL=$2 ONLY=$3
OUT=${OUT:-/tmp/ncu-out}
mkdir -p "$OUT" gpu-build/lib
nvcc -O3 -std=c++17 -lineinfo -Xcompiler -fPIC -shared -gencode=arch=compute_90a,code=sm_90a \
    "gpu-build/$LIB.cu" -o "gpu-build/lib/$LIB.so" || exit 1
cp "gpu-build/$LIB.h" gpu-build/lib/
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 300 "$NCU" --kernel-name "regex:$KERNEL" --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy \
    --metrics lts__t_bytes.sum.per_second,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active \
    python3 gpu/harness.py --libdir gpu-build/lib --mode bench --only "$ONLY" --timeout 250 >"$OUT/ncu.txt" 2>&1
rc=$?
grep -E "Throughput|Busy|Ipc|Warp Cycles|Hit Rate|lts__|hmma|Achieved Occupancy|stalled" "$OUT/ncu.txt"
exit $rc
