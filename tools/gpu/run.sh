#!/usr/bin/env bash
# The one command that runs on the GPU machine (through the device tool, carry: gpu-build):
#   bash tools/gpu/run.sh [--only REGEX] [--skip STEP,...]        STEP: selfcheck test bench memcheck racecheck
# 1. compiles every generated gpu-build/*.cu (tools/gpu/prepare.sh made them here) and the hand-written
#    gpu/handwritten/*.cu with nvcc into one shared library each (sm_90a; NAME.sm80.cu for compute_80 -> sm_90);
# 2. runs the harness's self-check, then every correctness test (gpu/harness.py --mode test);
# 3. the benchmarks against the copy bandwidth and PyTorch, in the same process;
# 4. compute-sanitizer memcheck and racecheck over the small tests;
# 5. prints the table last (gpu/report.py) and exits non-zero when anything FAILed.
# Every step runs under `timeout`, clipped to what is left of TILEC_GPU_BUDGET_S (default 540 s, inside the
# device tool's 600 s); a hung test is recorded as FAIL by the harness's watchdog and the step resumes after it.
# Logs: $OUT/{build,test,bench,memcheck,racecheck}.log, summary.txt, results.json (7 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
ONLY=()
SKIP=","
while [ $# -gt 0 ]; do
    case $1 in
    --only) ONLY=(--only "$2"); shift 2 ;;
    --skip) SKIP=",$2,"; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
GB=${GPU_BUILD:-gpu-build}
OUT=${OUT:-/tmp/tilec-gpu-out}
BUDGET=${TILEC_GPU_BUDGET_S:-540}
SEED=${TILEC_GPU_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) & 0x3FFFFFFF ))}
START=$SECONDS
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/tilec-gpu-work.XXXXXX)
LIB=$GB/lib
rm -rf "$LIB"
mkdir -p "$LIB" "$WORK/build"
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
[ -f "$GB/manifest.tsv" ] && cp "$GB/manifest.tsv" "$WORK/manifest.tsv"
: >"$WORK/steps.tsv"

# seconds a step may take: what it asks for, clipped so that 25 s stay for the report
allow() {
    local left=$(( BUDGET - (SECONDS - START) - 25 ))
    (( left < $1 )) && echo $(( left > 1 ? left : 1 )) || echo "$1"   # never 0: timeout 0 means no limit
}
skipped() { [[ $SKIP == *",$1,"* ]]; }
record() { printf '%s\t%s\t%s\n' "$@" >>"$WORK/steps.tsv"; }

# resumable NAME WANT_SECONDS CMD...: runs CMD under timeout; after a watchdog exit (124) runs it again with
# --resume, which skips what the results file already holds, while time is left
resumable() {
    local name=$1 want=$2 rc=0 t0=$SECONDS
    shift 2
    for attempt in 1 2 3 4; do
        local t
        t=$(allow $(( want - (SECONDS - t0) )))     # what is left of this step's share and of the budget
        if (( t < 10 )); then
            echo "run.sh: no time left for $name (attempt $attempt)" >>"$WORK/$name.log"
            [ "$attempt" = 1 ] && rc=skip
            break
        fi
        timeout -k 10 "$t" "$@" $([ "$attempt" -gt 1 ] && echo --resume) >>"$WORK/$name.log" 2>&1
        rc=$?
        [ "$rc" = 124 ] || break
        echo "run.sh: $name attempt $attempt ended by a timeout; resuming after the recorded item" >>"$WORK/$name.log"
    done
    if [ "$rc" = skip ]; then record "$name" skip "no time left"; else record "$name" "$rc" $(( SECONDS - t0 )); fi
}

# ------------------------------------------------------------------ 0. environment
{
    echo "== environment"
    date -u
    nvidia-smi -L 2>&1
    nvcc --version 2>&1 | tail -2
    python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")' 2>&1
    compute-sanitizer --version 2>&1 | tail -1
    echo "seed $SEED, budget $BUDGET s"
} >"$WORK/build.log"

# ------------------------------------------------------------------ 1. nvcc builds
NVFLAGS=(-O3 -std=c++17 -lineinfo -Xcompiler -fPIC -shared)
build_one() {   # SRC NAME: compiles SRC into $LIB/NAME.so and copies its header beside it
    local src=$1 name=$2 gencode=(-gencode=arch=compute_90a,code=sm_90a) t0=$SECONDS
    case $name in *.sm80) gencode=(-gencode=arch=compute_80,code=sm_90) ;; esac
    local log=$WORK/build/$name.log
    echo "nvcc ${NVFLAGS[*]} ${gencode[*]} -o $LIB/$name.so $src" >"$log"
    if timeout -k 5 "$(allow 240)" nvcc "${NVFLAGS[@]}" "${gencode[@]}" -o "$LIB/$name.so" "$src" >>"$log" 2>&1 \
        && cp "${src%.cu}.h" "$LIB/$name.h" 2>>"$log"; then
        printf '%s\tok\t%ss\n' "$name" $(( SECONDS - t0 )) >"$WORK/build/$name.status"
    else
        printf '%s\tfailed\t%s\n' "$name" "$(grep -m1 -E 'error' "$log" | tr '\t' ' ' | cut -c1-200)" \
            >"$WORK/build/$name.status"
    fi
}
t0=$SECONDS
jobs_max=$(nproc 2>/dev/null || echo 8)
for src in gpu/handwritten/*.cu "$GB"/*.cu; do
    [ -e "$src" ] || continue
    while (( $(jobs -rp | wc -l) >= jobs_max )); do wait -n; done
    build_one "$src" "$(basename "$src" .cu)" &
done
wait
cat "$WORK"/build/*.status >"$WORK/build.tsv" 2>/dev/null
for f in "$WORK"/build/*.log; do echo "== $(basename "$f" .log)"; cat "$f"; done >>"$WORK/build.log" 2>/dev/null
record build 0 $(( SECONDS - t0 ))

# ------------------------------------------------------------------ 2. self-check and correctness tests
H=(python3 gpu/harness.py --libdir "$LIB" --seed "$SEED" "${ONLY[@]}")
if ! skipped selfcheck; then
    t0=$SECONDS
    { echo "== harness self-check"; timeout -k 5 "$(allow 90)" python3 gpu/harness.py --self-check; } >>"$WORK/build.log" 2>&1
    record selfcheck $? $(( SECONDS - t0 ))
fi
skipped test || resumable test 180 "${H[@]}" --mode test --results "$WORK/test.jsonl" --timeout 90

# ------------------------------------------------------------------ 3. benchmarks
skipped bench || resumable bench 180 "${H[@]}" --mode bench --results "$WORK/bench.jsonl" --timeout 120

# ------------------------------------------------------------------ 4. compute-sanitizer on the small tests
if command -v compute-sanitizer >/dev/null; then
    SAN=(compute-sanitizer --print-limit 100)
    compute-sanitizer --help 2>&1 | grep -q -- --report-api-errors && SAN+=(--report-api-errors no)
    # no caching allocator: each tensor is its own cudaMalloc, so memcheck sees every tensor's true end
    export PYTORCH_NO_CUDA_MEMORY_CACHING=1
    for tool in memcheck racecheck; do
        skipped $tool && continue
        resumable $tool 200 "${SAN[@]}" --tool $tool "${H[@]}" --mode sanitize \
            --results "$WORK/$tool.jsonl" --timeout 150
    done
else
    for tool in memcheck racecheck; do record $tool skip "compute-sanitizer is not installed"; done
fi

# ------------------------------------------------------------------ 5. the table, last
for f in build test bench memcheck racecheck; do
    [ -f "$WORK/$f.log" ] && tail -c 15000000 "$WORK/$f.log" >"$OUT/$f.log"
done
python3 gpu/report.py "$WORK" "$OUT"
rc=$?
echo "run.sh: $(( SECONDS - START )) s; logs in \$OUT (build, test, bench, memcheck, racecheck .log; summary.txt; results.json)"
exit $rc
