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
#   failures/     every failing program (shrunk .tile files; nvcc failures and crashes whole, with `# expect: nvcc`)
#   crashes.txt   the seeds on which the compiler died of a signal (the worker goes on past each: see worker())
# DIFF_SECONDS=S ends every worker after S seconds with what it did (a segment of a campaign that must fit a
# time limit, such as the device tool's 600 s per call; the next segment takes FIRST_SEED past this one's seeds).
# On the GPU machine (16 cores, nvcc, no ANTLR): tools/fuzz/diff-prepare.sh here first, carry difffuzz-device/ and
# run with TILEC_DIFFFUZZ=difffuzz-device/tilec_difffuzz. Exit status 0 when no program failed or crashed, 1
# otherwise, 3 (with a message) when a worker ran no program or no program ran at all.
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
rm -f "$OUT"/worker-*.txt "$OUT"/worker-*.log "$OUT/crashes.txt"
SHARE=$(( (PROGRAMS + WORKERS - 1) / WORKERS ))
START=$(date +%s)
# The last `seed S: crash: signal NAME` line of a worker's log, as "S NAME" (bash alone: the GPU machine has
# bash, coreutils, awk and python3, nothing more can be assumed there).
lastCrash() {
    local line c=""
    while IFS= read -r line; do
        [[ $line =~ ^seed\ ([0-9]+):\ crash:\ signal\ ([A-Z]+) ]] && c="${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
    done < "$1"
    echo "$c"
}
# One worker: its share of the seeds in segments. A segment that dies of a signal (a compiler crash) has named
# its seed in the log (`seed S: crash: signal NAME`, Crash.h): the program is kept as a failure, a line
# "SEED SIGNAL UNCOUNTED" goes to crashes.txt (UNCOUNTED: the segment's programs before it, whose outcomes died
# with it) and the next segment starts past it. Exit status: the last segment's (0 or 1), 1 after a crash,
# 3 when a segment died without naming a seed (a crash before its first program, or a binary without Crash.h).
worker() {
    local w=$1 s=$2 left=$3 seg=0 rc crashed=0
    while [ "$left" -gt 0 ]; do
        local secs=()
        if [ -n "${DIFF_SECONDS:-}" ]; then
            local rem=$(( START + DIFF_SECONDS - $(date +%s) ))
            [ "$rem" -gt 0 ] || break
            secs=(--seconds "$rem")
        fi
        "$BIN" --seed "$s" --count "$left" "${secs[@]}" --nvcc-every "$NVCC_EVERY" --out "$OUT/failures" \
            --summary "$OUT/worker-$w.$seg.txt" > /dev/null 2>> "$OUT/worker-$w.log"
        rc=$?
        [ "$rc" -gt 128 ] || return $(( rc || crashed ))
        local c cs
        c=$(lastCrash "$OUT/worker-$w.log")
        cs=${c% *}
        if [ -z "$c" ] || [ "$cs" -lt "$s" ]; then
            echo "worker $w: tilec_difffuzz died of signal $(( rc - 128 )) from seed $s without naming the seed it died on" >> "$OUT/worker-$w.log"
            return 3
        fi
        echo "$cs ${c##* } $(( cs - s ))" >> "$OUT/crashes.txt"
        { echo "# tilec-difffuzz seed $cs: crash: ${c##* } (the compiler died; replay it with --seed $cs --count 1)"
          "$BIN" --print "$cs"; } > "$OUT/failures/difffuzz-$cs.tile" 2>/dev/null
        crashed=1
        left=$(( left - (cs - s) - 1 ))
        s=$(( cs + 1 ))
        seg=$(( seg + 1 ))
    done
    return "$crashed"
}
pids=()
for ((w = 0; w < WORKERS; ++w)); do
    worker "$w" $((FIRST + w * SHARE)) "$SHARE" &
    pids+=($!)
done
fail=0
for ((w = 0; w < WORKERS; ++w)); do
    wait "${pids[w]}"
    rc=$?
    [ "$rc" -eq 0 ] || [ "$fail" -gt 1 ] || fail=1
    ran=0
    compgen -G "$OUT/worker-$w.*.txt" > /dev/null && ran=1
    [ -n "$(lastCrash "$OUT/worker-$w.log")" ] && ran=1
    if [ "$rc" -gt 1 ] || [ "$ran" -eq 0 ]; then
        what="ran no program"
        [ "$rc" -eq 3 ] && what="died without naming its seed (its counts lost)"
        echo "diff-campaign.sh: worker $w $what (exit $rc); the end of $OUT/worker-$w.log:" >&2
        tail -n5 "$OUT/worker-$w.log" >&2
        fail=3
    fi
done
END=$(date +%s)
rm -rf "$OUT"/failures/difffuzz-nvcc-*
secs=$(( END - START > 0 ? END - START : 1 ))
touch "$OUT/crashes.txt"
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(head -c 12 "$(dirname "$BIN")/COMMIT" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores"
    echo "workers: $WORKERS, seeds $FIRST..$((FIRST + WORKERS * SHARE - 1)), nvcc every $NVCC_EVERY accepted programs"
    # Each segment's first line: "N programs from seed S in T s (R/s): A agree (...), J rejected, E rejected as
    # expected, K skipped, F failed; B past 2^31 elements (G global accesses ...), C compiled by nvcc ..."; then
    # crashes.txt's lines "SEED SIGNAL UNCOUNTED" (3 fields).
    { head -qn1 "$OUT"/worker-*.txt 2>/dev/null; cat "$OUT/crashes.txt"; } | awk -v secs="$secs" '
        NF == 3 { cr += 1; un += $3; n += $3 + 1; next }
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
              printf "CRASHED (the compiler died of a signal): %d programs; the outcomes of the %d programs before them in their segments died with them\n", cr, un
              printf "past 2^31 elements: %d programs, %d global accesses checked for index width\n", big, acc
              printf "compiled by nvcc (sm_80 and sm_90a): %d programs\n", nv }'
    echo "per reason (summed over workers):"
    tail -qn +2 "$OUT"/worker-*.txt 2>/dev/null | awk '{ c = $1; $1 = ""; r[$0] += c } END { for (k in r) printf "  %d %s\n", r[k], k }' | sort -k1,1nr
    awk '{ printf "  1 CRASHED: signal %s (seed %s)\n", $2, $1 }' "$OUT/crashes.txt"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
# A campaign that ran nothing must never look like a clean one (session 14's H200 segment: 0 programs, exit
# status only).
nl=$'\n'
if [[ ! $nl$(< "$OUT/summary.txt") =~ ${nl}programs:\ [1-9] ]]; then
    echo "diff-campaign.sh: FAILED: no program ran (see $OUT/worker-*.log)" >&2
    exit 3
fi
exit $fail
