#!/usr/bin/env bash
# A crash-fuzzer campaign on the GPU machine's CPU cores beside a GPU command, in one device call: the GPU
# suite leaves most of the 16 cores idle, so the fuzzer's workers (nice 19: they take only what the command
# leaves) run for SECONDS while COMMAND runs, and the call returns when both are done. SECONDS is the whole
# campaign, its start-up included; the state archive and summary after it take a few seconds more (4 s for
# 22,000 corpus files): leave 20 s of the device tool's limit beyond both SECONDS and COMMAND.
#   tools/fuzz/beside.sh SECONDS COMMAND [ARGS...]      e.g.
#   OUT=$OUT tools/fuzz/beside.sh 540 bash tools/gpu/run.sh --only flash_fwd
# Needs fuzz-device/ (tools/fuzz/device-prepare.sh), or fuzz-device.tar.xz holding it (unpacked first: the
# ASan binary compresses 5x, which keeps the carry under the device tool's 64 MiB beside gpu-build/ and
# .tilelang/). The campaign's state (tools/fuzz/device-campaign.sh's TILEC_FUZZ_STATE: the corpus it grew and
# its executions so far) is kept in /tmp/fzstate, so a second call on a still-warm machine continues it, and
# is written to $OUT/fuzz/state.tar.gz: carried back as fuzz-state/state.tar.gz, it continues the campaign on a
# fresh machine too (carry fuzz-state in every call: the device tool keeps a machine warm only 30 s after a
# call, and session 10's second command found a fresh one). The campaign's own outputs (summary.txt with every
# run of it counted, crashes/, fuzzer.log) go to $OUT/fuzz/. Exit status: COMMAND's, or 3 when COMMAND passed
# and the fuzzer failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { echo "usage: tools/fuzz/beside.sh SECONDS COMMAND [ARGS...]" >&2; exit 2; }
SECS=$1
shift
OUT=${OUT:-$PWD/beside-out}
STATE=/tmp/fzstate
if [ ! -x fuzz-device/tilec_fuzz ] && [ -f fuzz-device.tar.xz ]; then tar -xJf fuzz-device.tar.xz; fi
if [ ! -f "$STATE/runs.tsv" ] && [ -f fuzz-state/state.tar.gz ]; then
  mkdir -p "$STATE" && tar -xzf fuzz-state/state.tar.gz -C "$STATE"
fi
mkdir -p "$OUT/fuzz"
TILEC_FUZZ_STATE=$STATE OUT=$OUT/fuzz nice -n 19 bash tools/fuzz/device-campaign.sh "$(nproc)" "$SECS" \
  >"$OUT/fuzz/stdout.txt" 2>&1 &
fuzz=$!
"$@"
rc=$?
wait "$fuzz"
frc=$?
tar -czf "$OUT/fuzz/state.tar.gz" -C "$STATE" runs.tsv shared found 2>/dev/null
echo "== fuzzer beside the command (exit $frc)"
cat "$OUT/fuzz/summary.txt" 2>/dev/null || tail -5 "$OUT/fuzz/stdout.txt"
[ "$rc" -ne 0 ] && exit "$rc"
[ "$frc" -ne 0 ] && exit 3
exit 0
