#!/usr/bin/env bash
# A long differential-fuzzer campaign on a machine with many cores (issue 23: >= 1 M programs with the
# index-width oracle and nvcc-compiled samples):
#   tools/fuzz/diff-campaign.sh [PROGRAMS] [WORKERS] [NVCC_EVERY] [FIRST_SEED]
#       defaults: 1000000 programs, every core, every 500th accepted program compiled by nvcc (sm_80 and sm_90a;
#       0: none), seeds from 10000000
# WORKERS tilec_difffuzz processes (build/tests/tilec_difffuzz, built first) each take a consecutive share of the
# seeds; every 10th seed is a program over tensors past 2^31 elements (the index-width oracle). Written to $OUT
# (default ./difffuzz-out):
#   summary.txt   date, commit, workers, programs, seconds, programs per second, failures, and per outcome and
#                 reason the counts summed over the workers
#   worker-N.txt  each worker's own summary; worker-N.log its failures (seed, category, detail)
#   failures/     every failing program (shrunk .tile files; nvcc failures whole, with `# expect: nvcc`)
# DIFF_SECONDS=S ends every worker after S seconds with what it did (a segment of a campaign that must fit a
# time limit, such as the device tool's 600 s per call; the next segment takes FIRST_SEED past this one's seeds).
# On the GPU machine (16 cores, nvcc, no ANTLR): tools/fuzz/diff-prepare.sh here first, carry difffuzz-device/ and
# run with TILEC_DIFFFUZZ=difffuzz-device/tilec_difffuzz. Exit status 0 when no program failed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
PROGRAMS=${1:-1000000}
WORKERS=${2:-$(nproc)}
NVCC_EVERY=${3:-500}
FIRST=${4:-10000000}
OUT=${OUT:-$PWD/difffuzz-out}
BIN=${TILEC_DIFFFUZZ:-build/tests/tilec_difffuzz}
[ -x "$BIN" ] || { echo "no $BIN: build it first (ninja -C build tilec_difffuzz)" >&2; exit 2; }
mkdir -p "$OUT/failures"
SHARE=$(( (PROGRAMS + WORKERS - 1) / WORKERS ))
START=$(date +%s)
pids=()
for ((w = 0; w < WORKERS; ++w)); do
    "$BIN" --seed $((FIRST + w * SHARE)) --count "$SHARE" ${DIFF_SECONDS:+--seconds "$DIFF_SECONDS"} --nvcc-every "$NVCC_EVERY" --out "$OUT/failures" \
        --summary "$OUT/worker-$w.txt" > /dev/null 2> "$OUT/worker-$w.log" &
    pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
END=$(date +%s)
rm -rf "$OUT"/failures/difffuzz-nvcc-*
secs=$(( END - START > 0 ? END - START : 1 ))
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(head -c 12 "$(dirname "$BIN")/COMMIT" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores"
    echo "workers: $WORKERS, seeds $FIRST..$((FIRST + WORKERS * SHARE - 1)), nvcc every $NVCC_EVERY accepted programs"
    # Each worker's first line: "N programs from seed S in T s (R/s): A agree (...), J rejected, E rejected as
    # expected, K skipped, F failed; B past 2^31 elements (G global accesses ...), C compiled by nvcc ..."
    head -qn1 "$OUT"/worker-*.txt | awk -v secs="$secs" '
        { n += $1 }
        { for (i = 1; i <= NF; ++i) {
              if ($(i+1) == "agree") ag += $i
              if ($(i+1) == "rejected," ) rj += $i
              if ($(i+1) == "rejected" && $(i+2) == "as") rx += $i
              if ($(i+1) == "skipped,") sk += $i
              if ($(i+1) == "failed;") fl += $i
              if ($(i+1) == "past" && $(i+2) == "2^31") big += $i
              if ($(i+1) == "global") acc += substr($i, 2)
              if ($(i+1) == "compiled") nv += $i } }
        END { printf "programs: %d in %d s: %.1f programs/s\n", n, secs, n / secs
              printf "agree %d, rejected %d, rejected as expected %d, skipped %d, FAILED %d\n", ag, rj, rx, sk, fl
              printf "past 2^31 elements: %d programs, %d global accesses checked for index width\n", big, acc
              printf "compiled by nvcc (sm_80 and sm_90a): %d programs\n", nv }'
    echo "per reason (summed over workers):"
    tail -qn +2 "$OUT"/worker-*.txt | awk '{ c = $1; $1 = ""; r[$0] += c } END { for (k in r) printf "  %d %s\n", r[k], k }' | sort -k1,1nr
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
exit $fail
