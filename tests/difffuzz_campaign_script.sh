#!/usr/bin/env bash
# tools/fuzz/diff-campaign.sh itself (session 14: a segment on the H200 whose 12 workers all died of one
# SIGFPE reported "programs: 0" and nothing else): a few seconds of a campaign must run programs; a worker whose
# compiler crashes must keep the program, count the crash and go on; a binary that cannot run must fail loudly.
#   tests/difffuzz_campaign_script.sh BUILD/tests/tilec_difffuzz
set -uo pipefail
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SCRIPT=$(cd "$(dirname "$0")/.." && pwd)/tools/fuzz/diff-campaign.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
bad=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; bad=1; fi; }

# 1. A clean short campaign: programs ran, exit 0.
OUT=$T/a DIFF_SECONDS=3 TILEC_DIFFFUZZ=$BIN bash "$SCRIPT" 400 2 0 1 > "$T/a.out" 2>&1
rc=$?
check "a 3-second campaign exits 0 (got $rc)" '[ $rc -eq 0 ]'
check "it ran programs" 'grep -q "^programs: [1-9]" "$T/a/summary.txt"'

# 2. The compiler dies of SIGFPE on worker 0's second seed: a failure, the program kept, the worker goes on.
printf '#!/bin/sh\nexec "%s" "$@" --crash-seed 101\n' "$BIN" > "$T/crashing"
chmod +x "$T/crashing"
OUT=$T/b DIFF_SECONDS=3 TILEC_DIFFFUZZ=$T/crashing bash "$SCRIPT" 8 2 0 100 > "$T/b.out" 2>&1
rc=$?
check "a crash makes the campaign fail with 1 (got $rc)" '[ $rc -eq 1 ]'
check "crashes.txt names seed 101" 'grep -q "^101 SIGFPE 1$" "$T/b/crashes.txt"'
check "the crashing program is kept" 'grep -q "seed 101: crash: SIGFPE" "$T/b/failures/difffuzz-101.tile"'
check "with its text (--print SEED)" 'grep -q "^import tilelang" "$T/b/failures/difffuzz-101.tile"'
check "the summary counts the crash" 'grep -q "^CRASHED (the compiler died of a signal): 1 programs" "$T/b/summary.txt"'
check "worker 0 went on past it (all 8 programs)" 'grep -q "^programs: 8 " "$T/b/summary.txt" && [ -f "$T/b/worker-0.1.txt" ]'

# 3. A binary that dies before its first program (as one whose libraries are missing): exit 3 and a message.
printf '#!/bin/sh\nkill -FPE $$\n' > "$T/dead"
chmod +x "$T/dead"
OUT=$T/c DIFF_SECONDS=3 TILEC_DIFFFUZZ=$T/dead bash "$SCRIPT" 8 2 0 1 > "$T/c.out" 2>&1
rc=$?
check "a binary that runs nothing fails with 3 (got $rc)" '[ $rc -eq 3 ]'
check "and says so" 'grep -q "worker 0 died without naming its seed" "$T/c.out" && grep -q "no program ran" "$T/c.out"'
printf '#!/bin/sh\necho "libfoo.so: cannot open shared object file" >&2; exit 127\n' > "$T/nolib"
chmod +x "$T/nolib"
OUT=$T/d TILEC_DIFFFUZZ=$T/nolib bash "$SCRIPT" 8 2 0 1 > "$T/d.out" 2>&1
rc=$?
check "a binary that cannot load fails with 3 (got $rc)" '[ $rc -eq 3 ]'
check "and shows why" 'grep -q "worker 1 ran no program" "$T/d.out" && grep -q "libfoo.so" "$T/d.out"'
[ $bad -eq 0 ] || { for f in "$T"/*.out; do echo "== $f"; tail -n 20 "$f"; done; }
exit $bad
