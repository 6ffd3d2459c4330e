#!/usr/bin/env bash
# A crash-fuzzer campaign of the whole compiler on a machine with many cores, from the folder that
# tools/fuzz/device-prepare.sh assembled (fuzz-device/: the binary, seed corpus, dictionary, commit).
#   tools/fuzz/device-campaign.sh [WORKERS] [SECONDS]       (default: every core, 520 s)
# libFuzzer's fork mode runs WORKERS processes for SECONDS in all, each input limited to 10 s and 4 GiB, and
# keeps going past crashes, timeouts and out-of-memory inputs. Written to $OUT (default ./fuzz-out):
#   summary.txt      date, commit, workers, seconds, executions, executions per second, crashes, timeouts,
#                    out-of-memory inputs, corpus before/after, the PERFORMANCE.md table row
#   crashes/         every crashing, timing-out or out-of-memory input (libFuzzer's crash-*, timeout-*, oom-*)
#   fuzzer.log       the last 2000 lines of libFuzzer's output (reports are unsymbolized: symbolize them where
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
WORK=$(mktemp -d /tmp/tilec-fuzz.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cp -r "$D/corpus" "$WORK/corpus"
before=$(ls "$WORK/corpus" | wc -l)
start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$(date +%s)
# ASan reports go to the log; leaks count as failures; no symbolizer is assumed on this machine. Allocation
# stacks of 5 frames and libFuzzer's plain (not entropic) schedule: together 4x fewer CPU seconds per
# execution at the same coverage (docs/PERFORMANCE.md).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=0:handle_abort=1:malloc_context_size=5
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:symbolize=0
timeout -k 10 $((SECONDS_TOTAL + 30)) "$D/tilec_fuzz" -fork="$WORKERS" -max_total_time="$SECONDS_TOTAL" \
  -entropic=0 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -timeout=10 -rss_limit_mb=4096 -max_len=8192 \
  -dict="$D/tile.dict" -artifact_prefix="$OUT/crashes/" -print_final_stats=1 \
  "$WORK/corpus" >"$WORK/log" 2>&1
rc=$?
t1=$(date +%s)
tail -n 2000 "$WORK/log" >"$OUT/fuzzer.log"
# Fork mode's status lines: `#EXECS: cov: C ft: F corp: N exec/s R oom/timeout/crash: O/T/X time: Ss job: J`.
last=$(grep -E '^#[0-9]+: cov:' "$WORK/log" | tail -1)
execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
otc=$(sed -E 's/.*oom\/timeout\/crash: ([0-9]+)\/([0-9]+)\/([0-9]+).*/\1 \2 \3/' <<<"$last")
read -r ooms timeouts crashes <<<"${otc:-? ? ?}"
secs=$((t1 - t0))
rate=$([ -n "$execs" ] && [ "$secs" -gt 0 ] && echo $((execs / secs)) || echo "?")
after=$(ls "$WORK/corpus" | wc -l)
files=$(ls "$OUT/crashes" | wc -l)
commit=$(head -1 "$D/COMMIT" 2>/dev/null || echo unknown)
comm -13 <(ls "$D/corpus" | sort) <(ls "$WORK/corpus" | sort) >"$WORK/new.txt"
if [ -s "$WORK/new.txt" ]; then
  tar -C "$WORK/corpus" -czf "$WORK/new-corpus.tar.gz" -T "$WORK/new.txt"
  [ "$(stat -c %s "$WORK/new-corpus.tar.gz")" -lt 16777216 ] && cp "$WORK/new-corpus.tar.gz" "$OUT/"
fi
{
  echo "date:        $start"
  echo "commit:      $commit"
  echo "machine:     $(nproc) cores, $(uname -r)"
  echo "command:     tools/fuzz/device-campaign.sh $WORKERS $SECONDS_TOTAL (tilec_fuzz -fork=$WORKERS -max_total_time=$SECONDS_TOTAL, exit $rc)"
  echo "workers:     $WORKERS"
  echo "seconds:     $secs"
  echo "executions:  ${execs:-?}"
  echo "exec/s:      $rate"
  echo "crashes:     ${crashes} (timeouts ${timeouts}, out of memory ${ooms}; $files files in crashes/)"
  echo "corpus:      $before -> $after"
  echo "table row:   | ${start%%T*} | \`$(cut -c1-7 <<<"$commit")\` | $WORKERS | $secs | ${execs:-?} | $rate | $crashes | $timeouts | $ooms | $before -> $after |"
} | tee "$OUT/summary.txt"
[ "$files" -eq 0 ] && [ -n "$execs" ]
