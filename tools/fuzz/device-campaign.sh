#!/usr/bin/env bash
# A crash-fuzzer campaign of the whole compiler on a machine with many cores, from the folder that
# tools/fuzz/device-prepare.sh assembled (fuzz-device/: the binary, the merged seed corpus, dictionary, commit).
#   tools/fuzz/device-campaign.sh [WORKERS] [SECONDS]       (default: every core, 520 s)
# WORKERS independent libFuzzer processes fuzz for SECONDS. Worker i starts from its share of the seeds (every
# WORKERS-th file, so no seed runs twice at start-up) and from the shared corpus folder, where every worker
# writes the units it finds and from which every worker reloads the others' (libFuzzer's -reload). A worker
# stopped by a failing input (crash, sanitizer report, leak, timeout, out of memory) is restarted for the time
# left; each input is limited to 10 s and 4 GiB. (libFuzzer's fork mode, used before, runs its seed merge on one
# core while the others wait and restarts its jobs every few seconds, each re-running seeds: half the
# executions on 16 cores, docs/PERFORMANCE.md.)
# With TILEC_FUZZ_STATE=DIR the shared corpus and the executions so far are kept in DIR and a second run with
# the same DIR continues the campaign (two device commands on a warm machine make one campaign); the summary
# then counts every run of it. Written to $OUT (default ./fuzz-out):
#   summary.txt      date, commit, workers, seconds, executions, executions per second, crashes, timeouts,
#                    out-of-memory inputs (the whole campaign's, and this run's), corpus before/after, the
#                    PERFORMANCE.md table row
#   crashes/         every failing input (libFuzzer's crash-*, leak-*, timeout-*, oom-*)
#   fuzzer.log       the last 200 lines of each worker's output (reports are unsymbolized: symbolize them where
#                    the binary was built, e.g. `tilec_fuzz CRASH_FILE` there, or llvm-symbolizer-14 --obj)
#   new-corpus.tar.gz the units the campaign added to the corpus (for the next one), when under 16 MiB
# The whole run is bounded (timeout), so it never hangs. Exit status 0 when no input failed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
D=${TILEC_FUZZ_DIR:-fuzz-device}
WORKERS=${1:-$(nproc)}
SECONDS_TOTAL=${2:-520}
OUT=${OUT:-$PWD/fuzz-out}
[ -x "$D/tilec_fuzz" ] || { echo "no $D/tilec_fuzz: run tools/fuzz/device-prepare.sh first" >&2; exit 2; }
mkdir -p "$OUT/crashes"
if [ -n "${TILEC_FUZZ_STATE:-}" ]; then
  STATE=$TILEC_FUZZ_STATE
else
  STATE=$(mktemp -d /tmp/tilec-fuzz.XXXXXX)
  trap 'rm -rf "$STATE"' EXIT
fi
# The clock starts here: SECONDS is the whole run, the sharing out of the corpus included (22,000 files took
# 40 s one cp at a time, and a device command that had left that margin ran past its limit, session 9).
start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$(date +%s)
deadline=$((t0 + SECONDS_TOTAL))
mkdir -p "$STATE/shared" "$STATE/found" "$STATE/logs"
touch "$STATE/runs.tsv" # one line per run of this campaign: start, seconds, executions, corpus
segment=$(($(wc -l <"$STATE/runs.tsv") + 1))
LOGS=$STATE/logs/$segment
rm -rf "$LOGS" "$STATE"/shard.*
mkdir -p "$LOGS"
# What earlier runs of the campaign found is shared out like the seeds, so no worker re-runs all of it.
find "$STATE/shared" -maxdepth 1 -type f -exec mv -t "$STATE/found/" {} +
# libFuzzer names a unit by its SHA-1, so a found file named like a seed is that seed: keep one (two in one cp
# are refused with a warning, and the corpus count would hold it twice)
(cd "$D/corpus" && find . -maxdepth 1 -type f -printf '%f\0') | (cd "$STATE/found" && xargs -0 rm -f --)
seeds=("$D"/corpus/* "$STATE"/found/*)
for ((w = 0; w < WORKERS; w++)); do mkdir -p "$STATE/shard.$w"; done
for ((w = 0; w < WORKERS; w++)); do
  share=()
  for ((i = w; i < ${#seeds[@]}; i += WORKERS)); do [ -f "${seeds[i]}" ] && share+=("${seeds[i]}"); done
  [ ${#share[@]} -gt 0 ] && printf '%s\0' "${share[@]}" | xargs -0 cp -t "$STATE/shard.$w/"
done
before=$(($(ls "$D/corpus" | wc -l) + $(ls "$STATE/found" | wc -l)))
# ASan reports go to the log; leaks count as failures; no symbolizer is assumed on this machine. Allocation
# stacks of 5 frames and libFuzzer's plain (not entropic) schedule: together 4x fewer CPU seconds per
# execution at the same coverage (docs/PERFORMANCE.md).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=0:handle_abort=1:malloc_context_size=5
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:symbolize=0
worker() { # worker index: fuzz until the deadline, restarting after a failing input
  local w=$1 run=0 left
  while left=$((deadline - $(date +%s))) && [ "$left" -ge 5 ]; do
    run=$((run + 1))
    # -max_total_time counts from the end of the worker's seed runs (a share of 20,000 grown inputs: 30 s), so
    # the deadline is the timeout's: libFuzzer stops at SIGTERM, its count read from its last status line
    timeout -k 5 $((left + 2)) "$D/tilec_fuzz" -max_total_time="$left" -entropic=0 -timeout=10 \
      -rss_limit_mb=4096 -max_len=8192 -dict="$D/tile.dict" -artifact_prefix="$OUT/crashes/" -print_final_stats=1 \
      -seed=$((segment * 100000 + w * 1000 + run)) "$STATE/shared" "$STATE/shard.$w" >"$LOGS/$w.$run.log" 2>&1
  done
}
for ((w = 0; w < WORKERS; w++)); do worker "$w" & done
wait
t1=$(date +%s)
secs=$((t1 - t0))
# Executions of one worker run: its final statistics, or (killed before printing them) its last status line.
execs=0
for f in "$LOGS"/*.log; do
  n=$(sed -nE 's/^stat::number_of_executed_units: ([0-9]+)/\1/p' "$f" | tail -1)
  [ -n "$n" ] || n=$(sed -nE 's/^#([0-9]+)\t.*/\1/p' "$f" | tail -1)
  execs=$((execs + ${n:-0}))
done
for f in "$LOGS"/*.log; do echo "== $f"; tail -n 200 "$f"; done >"$OUT/fuzzer.log"
count() { ls "$OUT/crashes" | grep -c "^$1-" || true; }
crashes=$(($(count crash) + $(count leak)))
timeouts=$(count timeout)
ooms=$(count oom)
files=$(ls "$OUT/crashes" | wc -l)
restarts=$(($(ls "$LOGS" | wc -l) - WORKERS))
# runs.tsv: start, seconds, executions, corpus before, and since session 10 workers, crashes, timeouts, out of
# memory
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$start" "$secs" "$execs" "$before" "$WORKERS" "$crashes" "$timeouts" \
  "$ooms" >>"$STATE/runs.tsv"
# The whole campaign: every run of it with this state folder. Its runs may have had different numbers of
# workers (16 on the GPU machine, 2 here): the rate per worker is over worker-seconds; "?" where a run of an
# older campaign recorded neither its workers nor its failures.
read -r first all_secs all_execs runs first_before worker_secs all_workers all_crashes all_timeouts all_ooms < <(
  awk -F'\t' 'NR == 1 { f = $1; b = $4 }
  { s += $2; e += $3; if (NF >= 8) { ws += $2 * $5; w = w (NR > 1 ? "/" : "") $5; c += $6; t += $7; o += $8 } else { old = 1 } }
  END { if (old) { ws = 0; w = c = t = o = "?" } print f, s, e, NR, b, ws, w, c, t, o }' "$STATE/runs.tsv")
rate=$([ "$all_secs" -gt 0 ] && echo $((all_execs / all_secs)) || echo "?")
per_worker=$([ "$worker_secs" -gt 0 ] && echo $((all_execs / worker_secs)) || echo "?")
after=$(($(ls "$D/corpus" | wc -l) + $(ls "$STATE/found" | wc -l) + $(ls "$STATE/shared" | wc -l)))
commit=$(head -1 "$D/COMMIT" 2>/dev/null || echo unknown)
if [ "$after" -gt "$(ls "$D/corpus" | wc -l)" ]; then
  tar -czf "$STATE/new-corpus.tar.gz" -C "$STATE/found" . -C "$STATE/shared" .
  [ "$(stat -c %s "$STATE/new-corpus.tar.gz")" -lt 16777216 ] && cp "$STATE/new-corpus.tar.gz" "$OUT/"
fi
{
  echo "date:        $first (run $runs of the campaign: $start, $secs s, $execs executions)"
  echo "commit:      $commit"
  echo "machine:     $(nproc) cores, $(uname -r)"
  echo "command:     tools/fuzz/device-campaign.sh $WORKERS $SECONDS_TOTAL ($WORKERS libFuzzer workers, $restarts restarts)"
  echo "workers:     $WORKERS"
  echo "seconds:     $all_secs"
  echo "executions:  $all_execs"
  echo "exec/s:      $rate ($per_worker per worker; workers per run: $all_workers)"
  echo "crashes:     $all_crashes (timeouts $all_timeouts, out of memory $all_ooms) in the campaign; in this run" \
    "$crashes (timeouts $timeouts, out of memory $ooms; $files files in crashes/)"
  echo "corpus:      $first_before -> $after (seeds plus what the campaign found)"
  echo "table row:   | ${first%%T*} | \`$(cut -c1-7 <<<"$commit")\` | $all_workers | $all_secs | $all_execs | $rate | $all_crashes | $all_timeouts | $all_ooms | $first_before -> $after |"
} | tee "$OUT/summary.txt"
[ "$files" -eq 0 ] && [ "$all_execs" -gt 0 ]
