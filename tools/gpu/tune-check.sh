#!/usr/bin/env bash
# Runs THERE (the GPU machine), with a tilec built HERE by tools/gpu/build-static-tilec.sh (carry: build-static/tilec):
#   bash tools/gpu/tune-check.sh
# 1. tune:        `tilec tune` of benchmarks/gemm_fp16.tile at 4096^3 over SPACE (72 configurations), timed;
# 2. exhaustive:  the same space again with many more timed runs per configuration (--warmup 10 --reps 200), the
#                 reference: is the configuration step 1 chose within 2% of the best this one measures?
# 3. dynamic m:   examples/gemm_dynamic_m.tile tuned at m = 1, 16, 128, 1024, 8192; per m the best configuration
#                 (what the generated dispatcher calls) against the single configuration best over all m together;
# 4. --tuned:     the dynamic table built back into a .cu with its dispatcher and compiled by nvcc.
# Prints a short table last; the tables and logs go to $OUT (default /tmp/tilec-tune-out).
# TUNE_SPACE / TUNE_DYN_SPACE replace the spaces; TUNE_JOBS the parallel compilations (default: all cores).
set -uo pipefail
cd "$(dirname "$0")/../.."
TILEC=${TILEC:-build-static/tilec}
OUT=${OUT:-/tmp/tilec-tune-out}
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin" CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
command -v cc >/dev/null 2>&1 || export CC=${CC:-gcc}
SPACE=${TUNE_SPACE:-'block_M=64,128,256;block_N=128,256;block_K=32,64;num_stages=2,3,4;threads=128,256'}
DYN_SPACE=${TUNE_DYN_SPACE:-'block_M=32,64,128;block_N=64,128,256;num_stages=2,3;threads=128,256'}
JOBS=(); [ -n "${TUNE_JOBS:-}" ] && JOBS=(-j "$TUNE_JOBS")
if [ ! -x "$TILEC" ]; then echo "tune-check: no $TILEC (build it with tools/gpu/build-static-tilec.sh and carry it)"; exit 2; fi
nvidia-smi -L 2>&1 | head -2
status=0
step() { # NAME COMMAND...: runs under a timeout, its time in $OUT/NAME.time
    local name=$1 t0=$SECONDS; shift
    timeout -k 5 "${TUNE_STEP_S:-240}" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo $(( SECONDS - t0 )) >"$OUT/$name.time"
    echo "tune-check: $name exit $rc in $(( SECONDS - t0 )) s"
    [ $rc = 0 ] || { status=1; tail -5 "$OUT/$name.log"; }
}
step tune "$TILEC" tune benchmarks/gemm_fp16.tile --kernel gemm_fp16_4096 --space "$SPACE" "${JOBS[@]}" \
    -o "$OUT/gemm.tune.json"
step exhaustive "$TILEC" tune benchmarks/gemm_fp16.tile --kernel gemm_fp16_4096 --space "$SPACE" "${JOBS[@]}" \
    --warmup 10 --reps 200 -o "$OUT/gemm.exhaustive.json"
step dynamic "$TILEC" tune examples/gemm_dynamic_m.tile --kernel linear_4096x4096 --space "$DYN_SPACE" "${JOBS[@]}" \
    --sizes 'm=1,16,128,1024,8192' -o "$OUT/linear.tune.json"
if [ -f "$OUT/linear.tune.json" ]; then
    step tuned-build bash -c "'$TILEC' examples/gemm_dynamic_m.tile --tuned '$OUT/linear.tune.json' -o '$OUT/linear_tuned.cu' &&
        nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -c '$OUT/linear_tuned.cu' -o '$OUT/linear_tuned.o'"
fi
python3 tools/gpu/tune_compare.py "$OUT" | tee "$OUT/summary.txt"
exit $status
