#!/usr/bin/env bash
# The gap's anatomy at one GEMM shape, on the GPU machine: Nsight Compute profiles one launch of tilec's kernel
# (through the harness's benchmark of it, like tools/gpu/ncu.sh) and one of TileLang's own kernel at the same
# shape (tools/gpu/tilelang_gemm.py with TL_GEMM_ONLY), with the same sections and metrics, and prints the two
# side by side (tensor-pipe utilisation, L2 and DRAM throughput and hit rate, shared-memory bank conflicts,
# the warp stall reasons).
#   tools/gpu/anatomy.sh MxNxK DTYPE          e.g. tools/gpu/anatomy.sh 4096x1024x8192 float16
#   tools/gpu/anatomy.sh FLASH_BENCH           e.g. tools/gpu/anatomy.sh flash_fwd_s1k_causal: one of
#       gpu/tests/flash_fwd.py's BENCHES against TileLang's FlashAttention at its shape (tools/gpu/tilelang_attn.py
#       with TL_ATTN_ONLY); the library built by an earlier tools/gpu/run.sh in the same call is reused
# Run it there after tools/gpu/prepare.sh here (carry gpu-build and .tilelang: the TileLang bundle from
# `bash ../shared/tools/tilelang/make-bundle.sh .tilelang`). Reports go to $OUT/anatomy-{tilec,tilelang}.txt,
# the table to stdout and $OUT/anatomy.txt. Clocks are not locked (--clock-control none): the figures are those
# of the timed runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
SHAPE=$1 DTYPE=${2:-float16}
OUT=${OUT:-/tmp/anatomy-out}
mkdir -p "$OUT" gpu-build/lib
case $SHAPE in
flash_fwd*) lib=flash_fwd name=$SHAPE ;;
*)  lib=$([ "$DTYPE" = bfloat16 ] && echo gemm_bf16 || echo gemm_fp16)
    IFS=x read -r M N K <<<"$SHAPE"
    name=$([ "$M" = "$N" ] && [ "$N" = "$K" ] && echo "${lib}_$M" || echo "${lib}_$SHAPE") ;;
esac
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
METRICS=gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,\
sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,\
lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,launch__registers_per_thread,launch__grid_size,\
launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum,\
lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,smsp__inst_executed.sum,sm__cycles_active.avg
profile() { # KERNEL_REGEX REPORT COMMAND...
    local kernel=$1 report=$2; shift 2
    timeout 240 "$NCU" --clock-control none --kernel-name "regex:$kernel" --launch-count 1 \
        --section WarpStateStats --metrics "$METRICS" "$@" >"$report" 2>&1
}
if [ ! -f "gpu-build/lib/$lib.so" ]; then
    nvcc -O3 -std=c++17 -lineinfo -Xcompiler -fPIC -shared -gencode=arch=compute_90a,code=sm_90a \
        "gpu-build/$lib.cu" -o "gpu-build/lib/$lib.so" || exit 1
fi
cp "gpu-build/$lib.h" gpu-build/lib/
profile "tilec_${name}_" "$OUT/anatomy-tilec.txt" \
    python3 gpu/harness.py --libdir gpu-build/lib --mode bench --only "$lib:$name\$" --timeout 200
if [ -f .tilelang/site.tar.xz ]; then
    [ -d /tmp/tl-site/tilelang ] || { mkdir -p /tmp/tl-site && tar -xJf .tilelang/site.tar.xz -C /tmp/tl-site; }
    case $lib in
    flash_fwd) TL_ATTN_ONLY="^$name\$" PYTHONPATH=/tmp/tl-site profile "^main" "$OUT/anatomy-tilelang.txt" \
                   python3 tools/gpu/tilelang_attn.py /tmp/anatomy-tl.json ;;
    *) TL_GEMM_ONLY="^$SHAPE $DTYPE\$" PYTHONPATH=/tmp/tl-site profile "^main" "$OUT/anatomy-tilelang.txt" \
           python3 tools/gpu/tilelang_gemm.py /tmp/anatomy-tl.json ;;
    esac
else
    echo "anatomy: no .tilelang/site.tar.xz: TileLang not profiled" >"$OUT/anatomy-tilelang.txt"
fi
python3 - "$OUT/anatomy-tilec.txt" "$OUT/anatomy-tilelang.txt" <<'PY' | tee "$OUT/anatomy.txt"
import re, sys
def rows(path):
    d = {}
    for line in open(path, errors="replace"):
        m = re.match(r"\s{2,}(\S.*?)\s{2,}(\S+)?\s+([-\d.,]+)\s*$", line)
        if m and not line.strip().startswith("-"):
            d.setdefault(m.group(1).strip(), (m.group(3), m.group(2) or ""))
    return d
a, b = rows(sys.argv[1]), rows(sys.argv[2])
keys = [k for k in a if k in b] + [k for k in a if k not in b]
print("%-70s %16s %16s" % ("metric (" + sys.argv[1].split("/")[-1] + " vs tilelang)", "tilec", "TileLang"))
for k in keys:
    va, ua = a[k]
    vb = b.get(k, ("-", ""))[0]
    print("%-70s %16s %16s  %s" % (k[:70], va, vb, ua))
PY
