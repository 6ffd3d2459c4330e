#!/usr/bin/env bash
# Runs THERE (the GPU machine), with a tilec built HERE by tools/gpu/build-static-tilec.sh (carry: build-static/tilec):
#   bash tools/gpu/tune-check.sh
# 1. tune:        `tilec tune` of benchmarks/gemm_fp16.tile at 4096^3 over SPACE (72 configurations), timed;
# 2. exhaustive:  the same space again with many more timed runs per configuration (--warmup 10 --reps 200), the
#                 reference: is the configuration step 1 chose within 2% of the best this one measures?
# 3. dynamic m:   examples/gemm_dynamic_m.tile tuned at m = 1, 16, 128, 1024, 8192; per m the best configuration
#                 (what the generated dispatcher calls) against the single configuration best over all m together;
# 4. --tuned:     the dynamic table built back into a .cu with its dispatcher and compiled by nvcc.
# Prints a short table last; $OUT (default /tmp/tilec-tune-out) receives the three tables, steps.log (every
# step's output) and summary.txt.
# TUNE_SPACE / TUNE_DYN_SPACE replace the spaces; TUNE_JOBS the parallel compilations (default: all cores).
set -uo pipefail
cd "$(dirname "$0")/../.."
TILEC=${TILEC:-build-static/tilec}
OUT=${OUT:-/tmp/tilec-tune-out}     # the device tool's $OUT: at most 5 files land here (it brings back 8)
WORK=$(mktemp -d /tmp/tilec-tune-check.XXXXXX)
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin" CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
command -v cc >/dev/null 2>&1 || export CC=${CC:-gcc}
SPACE=${TUNE_SPACE:-'block_M=64,128,256;block_N=128,256;block_K=32,64;num_stages=2,3,4;threads=128,256'}
DYN_SPACE=${TUNE_DYN_SPACE:-'block_M=32,64,128;block_N=64,128,256;num_stages=2,3;threads=128,256'}
JOBS=(); [ -n "${TUNE_JOBS:-}" ] && JOBS=(-j "$TUNE_JOBS")
if [ ! -x "$TILEC" ]; then echo "tune-check: no $TILEC (build it with tools/gpu/build-static-tilec.sh and carry it)"; exit 2; fi
{ nvidia-smi -L; nvcc --version | tail -1; "$TILEC" --version; } 2>&1 | tee "$WORK/steps.log"
status=0
step() { # NAME SECONDS COMMAND...: runs under a timeout; its time in $WORK/NAME.time, its log appended to steps.log
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    timeout -k 5 "$limit" "$@" >"$WORK/$name.log" 2>&1
    local rc=$?
    echo $(( SECONDS - t0 )) >"$WORK/$name.time"
    echo "tune-check: $name exit $rc in $(( SECONDS - t0 )) s"
    { echo "== $name (exit $rc, $(( SECONDS - t0 )) s)"; cat "$WORK/$name.log"; } >>"$WORK/steps.log"
    [ $rc = 0 ] || { status=1; tail -5 "$WORK/$name.log"; }
}
step tune 180 "$TILEC" tune benchmarks/gemm_fp16.tile --kernel gemm_fp16_4096 --space "$SPACE" "${JOBS[@]}" \
    --budget 150 -o "$WORK/gemm.tune.json"
step exhaustive 140 "$TILEC" tune benchmarks/gemm_fp16.tile --kernel gemm_fp16_4096 --space "$SPACE" "${JOBS[@]}" \
    --warmup 10 --reps 200 --budget 115 -o "$WORK/gemm.exhaustive.json"
step dynamic 150 "$TILEC" tune examples/gemm_dynamic_m.tile --kernel linear_4096x4096 --space "$DYN_SPACE" "${JOBS[@]}" \
    --sizes 'm=1,16,128,1024,8192' --budget 125 -o "$WORK/linear.tune.json"
if [ -f "$WORK/linear.tune.json" ]; then
    step tuned-build 60 bash -c "'$TILEC' examples/gemm_dynamic_m.tile --tuned '$WORK/linear.tune.json' -o '$WORK/linear_tuned.cu' &&
        nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -c '$WORK/linear_tuned.cu' -o '$WORK/linear_tuned.o' &&
        grep -A8 'extern \"C\" tilec_status linear_4096x4096(' '$WORK/linear_tuned.cu'"
fi
python3 tools/gpu/tune_compare.py "$WORK" >"$WORK/summary.txt" 2>&1
cp "$WORK/steps.log" "$WORK/summary.txt" "$OUT/"
for f in gemm.tune.json gemm.exhaustive.json linear.tune.json; do [ -f "$WORK/$f" ] && cp "$WORK/$f" "$OUT/"; done
cat "$WORK/summary.txt"
exit $status
