#!/usr/bin/env bash
# Compile-speed benchmark of tilec itself (not a test): for every examples/*.tile, the median over RUNS runs of
#   .cu      the whole process of `tilec F -o x.cu` (wall), and its passes' own total (--time-passes: front end
#            plus code generation, without process start-up)
#   .cubin   the whole process of `tilec F -o x.cubin`, and the NVRTC share: the --time-passes lines that name
#            NVRTC / PTX / cubin / ptxas when tilec times them, else the wall difference .cubin - .cu
# after one warm-up run each. The seed GEMM (examples/gemm.tile) has a bar: front end + code generation <= 20 ms.
#
#   tools/bench/compile_speed.sh [RUNS=11] [ARCH=sm_90a]        (TILEC=/path/to/tilec, default build/tilec)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-11}
ARCH=${2:-sm_90a}
TILEC=${TILEC:-build/tilec}
[ -x "$TILEC" ] || { echo "compile_speed: no tilec at $TILEC (build it, or set TILEC)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
python3 - "$TILEC" "$OUT" "$RUNS" "$ARCH" examples/*.tile <<'PY'
import os, re, statistics, subprocess, sys, time

tilec, out, runs, arch, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
PASS = re.compile(r"^\s*([\d.]+) ms\s+(\S+)\s*$", re.M)
BACKEND = re.compile(r"nvrtc|ptx|cubin|jit", re.I)


def measure(path, ext):
    """median wall ms, median passes' total ms, median back-end ms (None if not timed), or an error string"""
    walls, totals, backs = [], [], []
    for i in range(runs + 1):
        cmd = [tilec, path, f"-arch={arch}", "-o", os.path.join(out, "x" + ext), "--time-passes"]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        wall = (time.perf_counter() - t0) * 1000
        if r.returncode != 0:
            msg = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr.strip()[:200])
            return msg
        if i == 0:
            continue  # warm-up: page cache, dynamic loader, NVRTC's first load
        passes = {m.group(2): float(m.group(1)) for m in PASS.finditer(r.stderr)}
        walls.append(wall)
        totals.append(passes.get("total", sum(v for k, v in passes.items())))
        b = [v for k, v in passes.items() if BACKEND.search(k)]
        backs.append(sum(b) if b else None)
    back = None if any(b is None for b in backs) else statistics.median(backs)
    return statistics.median(walls), statistics.median(totals), back


def ms(x):
    return "-" if x is None else f"{x:8.1f}"


print(f"tilec compile speed: {runs} runs after a warm-up, medians in ms, -arch={arch} ({tilec})")
print(f"{'example':24s} {'.cu wall':>9s} {'passes':>8s}   {'.cubin wall':>11s} {'NVRTC':>8s}  note")
seed = None
for f in files:
    name = os.path.basename(f)[:-5]
    cu = measure(f, ".cu")
    if isinstance(cu, str):
        print(f"{name:24s} {'failed':>9s} {'':8s}   {'':11s} {'':8s}  {cu[:90]}")
        continue
    cubin = measure(f, ".cubin")
    if isinstance(cubin, str):
        note = "no cubin: " + cubin[:80]
        print(f"{name:24s} {ms(cu[0]):>9s} {ms(cu[1])}   {'-':>11s} {'-':>8s}  {note}")
    else:
        nvrtc, note = cubin[2], "NVRTC timed by tilec"
        if nvrtc is None:
            nvrtc, note = cubin[0] - cu[0], "NVRTC = cubin wall - cu wall"
        print(f"{name:24s} {ms(cu[0]):>9s} {ms(cu[1])}   {ms(cubin[0]):>11s} {ms(nvrtc)}  {note}")
    if name == "gemm":
        seed = cu
if seed:
    verdict = "met" if seed[1] <= 20 else "MISSED"
    print(f"seed GEMM (examples/gemm.tile): front end + code generation {seed[1]:.1f} ms in-process, "
          f"{seed[0]:.1f} ms whole process; bar 20 ms: {verdict}")
PY
