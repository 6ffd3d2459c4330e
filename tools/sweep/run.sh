#!/usr/bin/env bash
# The tile-configuration sweep on the GPU machine, in one device call (carry: gpu-build):
#   bash tools/sweep/run.sh [--budget SECONDS] [--only REGEX] [--jobs N] [--dir gpu-build/sweep] [--out DIR]
# gpu-build/sweep/ comes from tools/sweep/gen.py, run here first. The sweep keeps within --budget
# (default TILEC_SWEEP_BUDGET_S or 280 s): nvcc builds every configuration on all cores (at most 55% of the
# budget; what is not built by then is listed), then each kernel is checked and timed on every benchmark
# shape, the most promising configurations first, until 15 s before the end; the table sorted by TFLOP/s
# comes last, and with it $OUT/sweep.txt and $OUT/sweep.json. A kernel that hangs is recorded as FAIL by
# the watchdog of tools/sweep/sweep.py and the sweep resumes after it.
set -uo pipefail
cd "$(dirname "$0")/../.."
DIR=gpu-build/sweep
OUT=${OUT:-/tmp/tilec-sweep-out}
BUDGET=${TILEC_SWEEP_BUDGET_S:-280}
JOBS=$(nproc 2>/dev/null || echo 8)
ONLY=()
while [ $# -gt 0 ]; do
    case $1 in
    --budget) BUDGET=$2; shift 2 ;;
    --only) ONLY=(--only "$2"); shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "sweep/run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1
START=$(date +%s)
END=$(( START + BUDGET - 15 ))
RES=$DIR/results.jsonl
mkdir -p "$OUT"
rm -f "$RES"
S=(python3 tools/sweep/sweep.py --dir "$DIR" --results "$RES")

"${S[@]}" --phase build --deadline $(( START + BUDGET * 55 / 100 )) --jobs "$JOBS" "${ONLY[@]}"
rc=$?
[ "$rc" = 2 ] && exit 2          # no manifest: nothing to do
for attempt in 1 2 3 4 5 6; do
    left=$(( END - $(date +%s) ))
    (( left < 10 )) && break
    timeout -k 10 "$left" "${S[@]}" --phase run --deadline "$END" "${ONLY[@]}" $([ "$attempt" -gt 1 ] && echo --resume)
    rc=$?
    [ "$rc" = 124 ] || break
    echo "sweep/run.sh: attempt $attempt ended by a timeout; resuming after the recorded configuration"
done
cp "$RES" "$OUT/sweep-results.jsonl" 2>/dev/null
echo "=================================================================================================="
"${S[@]}" --phase report --out "$OUT"
rc=$?
echo "sweep/run.sh: $(( $(date +%s) - START )) s; \$OUT: sweep.txt, sweep.json, sweep-results.jsonl"
exit $rc
