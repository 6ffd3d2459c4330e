#!/usr/bin/env bash
# The one command that runs on the GPU machine (through the device tool, carry: gpu-build):
#   bash tools/gpu/run.sh [--only REGEX] [--skip STEP,...]  STEP: selfcheck test binary app torch bench tilelang
#                                                          memcheck racecheck synccheck (TILEC_GPU_SBS=1 adds
#                                                          the side by side, TILEC_GPU_ANAT=1 its Nsight
#                                                          Compute anatomy)
# 1. compiles every generated gpu-build/*.cu (tools/gpu/prepare.sh made them here) and the hand-written
#    gpu/handwritten/*.cu with nvcc into one shared library each (sm_90a; NAME.sm80.cu for compute_80 -> sm_90);
# 2. runs the harness's self-check, then every correctness test (gpu/harness.py --mode test), binary mode's
#    checks, the example application and the PyTorch operators (tools/gpu/torch_ops.py);
# 3. the benchmarks against the copy bandwidth and PyTorch, in the same process (and TileLang's own
#    FlashAttention when the TileLang bundle is there: .tilelang/site.tar.xz);
# 4. compute-sanitizer memcheck, racecheck and synccheck over the small tests (synccheck's log is appended to
#    racecheck.log in $OUT: the device tool brings back 8 files);
# 5. prints the table last (gpu/report.py) and exits non-zero when anything FAILed.
# Every step runs under `timeout`, clipped to what is left of TILEC_GPU_BUDGET_S (default 540 s, inside the
# device tool's 600 s); a hung test is recorded as FAIL by the harness's watchdog and the step resumes after it.
# TILEC_GPU_GENCODE: nvcc's -gencode for the generated libraries other than NAME.sm80 (default
# -gencode=arch=compute_90a,code=sm_90a; "-gencode=arch=compute_90,code=sm_90" for files prepared with
# TILEC_GPU_ARCH=sm_90).
# Each step's share of the budget: TILEC_GPU_TEST_S (default 180), TILEC_GPU_TORCH_S (150), TILEC_GPU_BENCH_S
# (180), TILEC_GPU_SAN_S (200 per sanitizer tool).
# nvcc results are cached by the hash of the source, its header, the flags and nvcc's version in
# TILEC_GPU_CACHE (default /tmp/tilec-gpu-cache), so a second call on a warm machine rebuilds only what changed.
# TILEC_GPU_SWEEP=1 adds the tile-configuration sweep of tools/sweep/ (gpu-build/sweep/, made here by
# tools/sweep/gen.py) after the benchmarks, within TILEC_SWEEP_BUDGET_S (default 300); skip the other steps
# to give it the time: TILEC_GPU_SWEEP=1 bash tools/gpu/run.sh --skip test,bench,memcheck,racecheck
# TILEC_GPU_WORK=DIR: the work folder (default a fresh /tmp/tilec-gpu-work.XXXXXX, left behind), for a caller
# that removes it after (tools/gpu/parts.sh); TILEC_GPU_TL_SITE=DIR: an unpacked TileLang bundle to use instead of
# unpacking .tilelang/site.tar.xz into the work folder (parts.sh unpacks it once for all its parts).
# Logs: $OUT/{build,test,bench,memcheck,racecheck}.log, summary.txt, results.json (7 files; with the sweep
# also sweep.json, its table printed before the harness's and appended to summary.txt, its log to bench.log:
# the device tool brings back 8 files at most).
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
WORK=${TILEC_GPU_WORK:-$(mktemp -d /tmp/tilec-gpu-work.XXXXXX)}
mkdir -p "$WORK"
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
CACHE=${TILEC_GPU_CACHE:-/tmp/tilec-gpu-cache}
mkdir -p "$CACHE"
NVCC_VERSION=$(nvcc --version 2>&1 | tail -1)
build_one() {   # SRC NAME: compiles SRC into $LIB/NAME.so and copies its header beside it
    local src=$1 name=$2 gencode=(${TILEC_GPU_GENCODE:--gencode=arch=compute_90a,code=sm_90a}) t0=$SECONDS
    case $name in *.sm80) gencode=(-gencode=arch=compute_80,code=sm_90) ;; esac
    case $src in gpu/handwritten/*) gencode=(-gencode=arch=compute_90a,code=sm_90a) ;; esac
    local log=$WORK/build/$name.log key
    key=$({ echo "${NVFLAGS[*]} ${gencode[*]} $NVCC_VERSION"; cat "$src" "${src%.cu}.h"; } 2>/dev/null \
          | sha256sum | cut -c1-40)
    echo "nvcc ${NVFLAGS[*]} ${gencode[*]} -o $LIB/$name.so $src" >"$log"
    if [ -s "$CACHE/$key.so" ] && cp "$CACHE/$key.so" "$LIB/$name.so" && cp "${src%.cu}.h" "$LIB/$name.h"; then
        echo "(unchanged since an earlier call on this machine: taken from $CACHE)" >>"$log"
        printf '%s\tok\tcached\n' "$name" >"$WORK/build/$name.status"
    elif timeout -k 5 "$(allow 240)" nvcc "${NVFLAGS[@]}" "${gencode[@]}" -o "$LIB/$name.so" "$src" >>"$log" 2>&1 \
        && cp "${src%.cu}.h" "$LIB/$name.h" 2>>"$log"; then
        cp "$LIB/$name.so" "$CACHE/$key.so.tmp.$$" && mv "$CACHE/$key.so.tmp.$$" "$CACHE/$key.so"
        printf '%s\tok\t%ss\n' "$name" $(( SECONDS - t0 )) >"$WORK/build/$name.status"
    else
        local why
        why=$(grep -m1 -E 'error' "$log" || tail -1 "$log")
        printf '%s\tfailed\t%s\n' "$name" "$(echo "$why" | tr '\t' ' ' | cut -c1-200)" >"$WORK/build/$name.status"
    fi
}
t0=$SECONDS
jobs_max=$(nproc 2>/dev/null || echo 8)
for src in gpu/handwritten/*.cu "$GB"/*.cu; do
    [ -e "$src" ] || continue
    [ -e "${src%.cu}.h" ] || continue       # a library has its header; other .cu (stand-alone tests) are not built here
    # TILEC_GPU_BUILD_ONLY=REGEX: only the libraries whose name matches (the side by side alone: 'compat_|tk_')
    [[ -z ${TILEC_GPU_BUILD_ONLY:-} || $(basename "$src" .cu) =~ ${TILEC_GPU_BUILD_ONLY:-} ]] || continue
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
skipped test || resumable test "${TILEC_GPU_TEST_S:-180}" "${H[@]}" --mode test --results "$WORK/test.jsonl" \
    --timeout 90

# issue 5: binary mode's checks and the example application (both prepared here by prepare.sh)
for part in binary app; do
    skipped $part && continue
    [ -d "$GB/$part" ] || { record $part skip "not prepared (TILEC_GPU_APP=0?)"; continue; }
    t0=$SECONDS
    if [ $part = binary ]; then cmd=(bash gpu/binary/run.sh); else cmd=(bash tools/check_install.sh --run "$GB/app"); fi
    { echo "== $part: ${cmd[*]}"; GPU_BUILD="$GB" timeout -k 5 "$(allow 120)" "${cmd[@]}"; } >>"$WORK/test.log" 2>&1
    record $part $? $(( SECONDS - t0 ))
done

# issue 29: the PyTorch operators tilec built (tools/gpu/torch_ops.py on $GB/torch, which prepare.sh generated):
# each against the C entry's result and a float64 reference in eager mode, under torch.compile(fullgraph=True),
# in a CUDA graph and from a LibTorch program; then the XLA FFI handlers under JAX where JAX has a GPU. Each
# check is a row of the table (torch.jsonl); TILEC_GPU_TORCH_S (default 150) is its share of the budget.
if ! skipped torch; then
    t0=$SECONDS
    t=$(allow "${TILEC_GPU_TORCH_S:-150}")
    if ! python3 -c 'import torch' >/dev/null 2>&1; then
        record torch skip "PyTorch is not installed"
    elif [ ! -f "$GB/torch/torch_ops.torch.cpp" ]; then
        record torch skip "not prepared ($GB/torch: tools/gpu/prepare.sh)"
    elif (( t < 30 )); then
        record torch skip "no time left (${t} s)"
    else
        cp -r "$GB/torch" "$WORK/torch"       # the libraries it builds stay out of gpu-build
        { echo "== torch: tools/gpu/torch_ops.py --run $WORK/torch"
          timeout -k 10 "$t" python3 tools/gpu/torch_ops.py --run "$WORK/torch" --results "$WORK/torch.jsonl"; } \
            >>"$WORK/test.log" 2>&1
        record torch $? $(( SECONDS - t0 ))
    fi
fi

# ------------------------------------------------------------------ 3. benchmarks (and the sweep, on request)
tl_site() {    # unpacks the TileLang bundle once (or takes TILEC_GPU_TL_SITE's); prints the site folder
    [ -n "${TILEC_GPU_TL_SITE:-}" ] && { echo "$TILEC_GPU_TL_SITE"; return; }
    [ -d "$WORK/tl-site/tilelang" ] || { mkdir -p "$WORK/tl-site" && tar -xJf .tilelang/site.tar.xz -C "$WORK/tl-site"; }
    echo "$WORK/tl-site"
}
have_tl() { [ -d "${TILEC_GPU_TL_SITE:-/nonexistent}/tilelang" ] || [ -f .tilelang/site.tar.xz ]; }
# with the TileLang bundle (TILEC_GPU_TL_SITE, or .tilelang/site.tar.xz), TileLang importable in the benchmarks: a
# benchmark of a TileLang example file times TileLang's own build of it beside tilec's (gpu/tlbeside.py; issue 28)
# TileLang's builds are compiled first, in worker processes, into its disk cache (harness.py --mode tl-precompile,
# within TILEC_GPU_TLPRE_S, default 150, of the bench step's share), so that the timed process gets them at once
BENCH_PY=${PYTHONPATH:-}
export TILELANG_CACHE_DIR=${TILELANG_CACHE_DIR:-/tmp/tilec-tl-cache}
if ! skipped bench && [ "${TILEC_GPU_BENCH_TL:-1}" = 1 ] && have_tl; then
    BENCH_PY=$(tl_site)${PYTHONPATH:+:$PYTHONPATH}
    t0=$SECONDS
    { echo "== TileLang's builds beside the benchmarks (gpu/harness.py --mode tl-precompile)"
      PYTHONPATH="$BENCH_PY" timeout -k 10 "$(allow "${TILEC_GPU_TLPRE_S:-150}")" "${H[@]}" --mode tl-precompile; } \
        >>"$WORK/bench.log" 2>&1
    record tlprecompile $? $(( SECONDS - t0 ))
fi
skipped bench || PYTHONPATH="$BENCH_PY" resumable bench "${TILEC_GPU_BENCH_S:-180}" "${H[@]}" --mode bench \
    --results "$WORK/bench.jsonl" --timeout 120
if [ "${TILEC_GPU_SWEEP:-0}" = 1 ]; then
    t0=$SECONDS
    want=$(allow "${TILEC_SWEEP_BUDGET_S:-300}")
    if (( want < 30 )); then
        record sweep skip "no time left (${want} s)"
    else
        # the sweep keeps to its own budget; the timeout is only the backstop for a hang it cannot interrupt
        timeout -k 10 $(( want + 20 )) bash tools/sweep/run.sh --dir "$GB/sweep" --out "$WORK/sweep-out" \
            --budget "$want" >"$WORK/sweep.log" 2>&1
        record sweep $? $(( SECONDS - t0 ))
        # the device tool brings back 8 files: sweep.json joins them, its table and log go into others
        cp "$WORK/sweep-out/sweep.json" "$OUT/sweep.json" 2>/dev/null
        { echo; echo "== tile-configuration sweep (tools/sweep/run.sh)"; cat "$WORK/sweep.log"; } >>"$WORK/bench.log"
    fi
fi

# issue 25: every general kernel tilec and TileLang 0.1.15 both compile (TileLang's examples, TileKernels: gpu-build's
# SUITE/kernels.tsv, prepared with TILELANG_SRC), side by side in one process (tools/gpu/side_by_side.py: outputs
# compared with each other, CUDA-graph and eager times, a same-bytes copy beside). Opt-in, TILEC_GPU_SBS=1, and
# it needs the TileLang bundle (.tilelang/site.tar.xz); TILEC_GPU_SBS_S (default 420) is its share of the budget,
# so skip the other steps to give it the time, build only its libraries, and split the list over two commands
# (TILEC_GPU_SBS_SHARD=1/2, then 2/2; tools/gpu/side_by_side.py's header has the exact command lines):
#   TILEC_GPU_SBS=1 TILEC_GPU_SBS_SHARD=1/2 TILEC_GPU_SBS_S=500 TILEC_GPU_BUILD_ONLY='^(compat_|tk_)' \
#       bash tools/gpu/run.sh --skip selfcheck,test,binary,app,bench,tilelang,memcheck,racecheck,synccheck
# Its table goes to summary.txt, its log to bench.log, its JSON (sidebyside.json) to $OUT; merge the shards' JSON
# here with tools/gpu/side_by_side.py --merge.
# tl_step STEP SECONDS LOG TITLE SCRIPT ARG...: a Python step over the TileLang bundle (the side by side, the
# anatomy) under timeout, on --only's kernels, its log appended to bench.log; skipped without the bundle or under 60 s
tl_step() {
    local step=$1 t=$2 log=$3 title=$4 t0=$SECONDS
    shift 4
    if ! have_tl; then
        record "$step" skip "no TileLang bundle (.tilelang/site.tar.xz: make-bundle.sh, carry .tilelang)"
    elif (( t < 60 )); then
        record "$step" skip "no time left (${t} s)"
    else
        TILELANG_CACHE_DIR=${TILELANG_CACHE_DIR:-/tmp/tilec-tl-cache} PYTHONPATH="$(tl_site)" GPU_BUILD="$GB" \
            timeout -k 10 $(( t + 10 )) python3 "$@" --gpu-build "$GB" --libdir "$LIB" --out "$OUT" --seed "$SEED" \
            --budget "$t" "${ONLY[@]}" >"$WORK/$log" 2>&1
        record "$step" $? $(( SECONDS - t0 ))
        { echo; echo "== $title"; cat "$WORK/$log"; } >>"$WORK/bench.log"
    fi
}
[ "${TILEC_GPU_SBS:-0}" = 1 ] && tl_step sidebyside "$(allow "${TILEC_GPU_SBS_S:-420}")" sidebyside.log \
    "side by side with TileLang (tools/gpu/side_by_side.py)" tools/gpu/side_by_side.py --work "$WORK/sbs" \
    ${TILEC_GPU_SBS_SHARD:+--shard "$TILEC_GPU_SBS_SHARD"}

# issue 25's anatomy: Nsight Compute on the side by side's kernels that --only names, tilec's and TileLang's launch
# of the same call each profiled once (tools/gpu/sbs_anatomy.py). Opt-in, TILEC_GPU_ANAT=1, needs the TileLang
# bundle like the side by side; TILEC_GPU_ANAT_S (default 240) is its share. Its table goes to summary.txt and
# bench.log, anatomy.json / anatomy.txt / anatomy-raw.tar.xz to $OUT (tools/gpu/parts.sh's mode ncu runs it alone).
[ "${TILEC_GPU_ANAT:-0}" = 1 ] && tl_step anatomy "$(allow "${TILEC_GPU_ANAT_S:-240}")" anatomy.log \
    "Nsight Compute anatomy (tools/gpu/sbs_anatomy.py)" tools/gpu/sbs_anatomy.py --work "$WORK/anat"

# TileLang's own FlashAttention at the same shapes (tools/gpu/tilelang_attn.py), when the TileLang bundle
# travelled (carry .tilelang: bash ../shared/tools/tilelang/make-bundle.sh .tilelang): tilec / TileLang per
# shape from the benchmarks above; its table goes to bench.log and summary.txt, its JSON to $OUT unless the
# sweep's took the eighth file. TILEC_GPU_TL_S (default 150) is its share of the budget.
if ! skipped tilelang && have_tl; then
    t0=$SECONDS
    t=$(allow "${TILEC_GPU_TL_S:-150}")
    if (( t < 30 )); then
        record tilelang skip "no time left (${t} s)"
    else
        TL_ATTN_BUDGET_S=$(( t - 20 )) PYTHONPATH="$(tl_site)" timeout -k 10 "$t" \
            python3 tools/gpu/tilelang_attn.py "$WORK/tilelang_attn.json" "$WORK/bench.jsonl" >"$WORK/tilelang.log" 2>&1
        record tilelang $? $(( SECONDS - t0 ))
        { echo; echo "== TileLang's FlashAttention (tools/gpu/tilelang_attn.py)"; cat "$WORK/tilelang.log"; } >>"$WORK/bench.log"
        [ -f "$OUT/sweep.json" ] || [ -f "$OUT/sidebyside.json" ] || cp "$WORK/tilelang_attn.json" "$OUT/tilelang_attn.json" 2>/dev/null
    fi
fi

# ------------------------------------------------------------------ 4. compute-sanitizer on the small tests
if command -v compute-sanitizer >/dev/null; then
    SAN=(compute-sanitizer --print-limit 100)
    compute-sanitizer --help 2>&1 | grep -q -- --report-api-errors && SAN+=(--report-api-errors no)
    # no caching allocator: each tensor is its own cudaMalloc, so memcheck sees every tensor's true end
    export PYTORCH_NO_CUDA_MEMORY_CACHING=1
    for tool in memcheck racecheck synccheck; do
        skipped $tool && continue
        resumable $tool "${TILEC_GPU_SAN_S:-200}" "${SAN[@]}" --tool $tool "${H[@]}" --mode sanitize \
            --results "$WORK/$tool.jsonl" --timeout 150
    done
else
    for tool in memcheck racecheck synccheck; do record $tool skip "compute-sanitizer is not installed"; done
fi

# ------------------------------------------------------------------ 5. the table, last
for f in build test bench memcheck racecheck; do
    [ -f "$WORK/$f.log" ] && tail -c 15000000 "$WORK/$f.log" >"$OUT/$f.log"
done
[ -f "$WORK/synccheck.log" ] && { echo; echo "== synccheck.log"; tail -c 5000000 "$WORK/synccheck.log"; } >>"$OUT/racecheck.log"
[ -f "$WORK/sweep-out/sweep.txt" ] && cat "$WORK/sweep-out/sweep.txt"
python3 gpu/report.py "$WORK" "$OUT"
rc=$?
[ -f "$WORK/sweep-out/sweep.txt" ] && { echo; cat "$WORK/sweep-out/sweep.txt"; } >>"$OUT/summary.txt"
[ -f "$WORK/sbs/sidebyside.txt" ] && { echo; cat "$WORK/sbs/sidebyside.txt"; } >>"$OUT/summary.txt"
[ -f "$OUT/anatomy.txt" ] && { echo; cat "$OUT/anatomy.txt"; } | tee -a "$OUT/summary.txt"
[ -f "$WORK/sbs/sidebyside.txt" ] && { echo; cat "$WORK/sbs/sidebyside.txt"; }
[ -f "$WORK/tilelang.log" ] && { echo; echo "TileLang's FlashAttention (tools/gpu/tilelang_attn.py)";
                                 grep -E '^TileLang|tilelang_attn' "$WORK/tilelang.log"; } >>"$OUT/summary.txt"
echo "run.sh: $(( SECONDS - START )) s; logs in \$OUT (build, test, bench, memcheck, racecheck .log; summary.txt; results.json)"
exit $rc
