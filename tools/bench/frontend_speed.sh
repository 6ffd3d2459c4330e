#!/usr/bin/env bash
# Front-end speed benchmark (not a test): parse + evaluate + check of a large generated .tile file.
# Prints the median over RUNS runs of the passes' own times (--time-passes) and the whole process, in ms per
# 1000 lines.   tools/bench/frontend_speed.sh [COPIES=50] [RUNS=11]
set -euo pipefail
cd "$(dirname "$0")/../.."
COPIES=${1:-50}; RUNS=${2:-11}
TILEC=${TILEC:-build/tilec}
f=$(mktemp --suffix=.tile); trap 'rm -f "$f"' EXIT
python3 tools/bench/gen_large_tile.py "$COPIES" > "$f"
lines=$(wc -l < "$f")
python3 - "$TILEC" "$f" "$lines" "$RUNS" <<'PY'
import re, statistics, subprocess, sys, time
tilec, path, lines, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
passes, walls = {}, []
for _ in range(runs):
    t0 = time.perf_counter()
    r = subprocess.run([tilec, path, "--time-passes"], capture_output=True, text=True)
    walls.append((time.perf_counter() - t0) * 1000)
    if r.returncode != 0:
        sys.exit("tilec failed:\n" + r.stderr[-2000:])
    for m in re.finditer(r"^\s*([\d.]+) ms\s+(\S+)$", r.stderr, re.M):
        passes.setdefault(m.group(2), []).append(float(m.group(1)))
print(f"input: {lines} lines, {runs} runs, medians")
for name, v in passes.items():
    med = statistics.median(v)
    print(f"  {name:10s} {med:9.2f} ms  {med * 1000 / lines:7.2f} ms per 1000 lines")
w = statistics.median(walls)
print(f"  {'process':10s} {w:9.2f} ms  {w * 1000 / lines:7.2f} ms per 1000 lines (whole process)")
PY
