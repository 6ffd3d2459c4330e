#!/usr/bin/env python3
"""The summary of tools/gpu/tune-check.sh, from the tables it wrote into OUT: the tuning run's time and choice
against the exhaustive run of the same space, and the dynamic-m GEMM's per-m choice against the single best."""
import json
import os
import sys

out = sys.argv[1]


def load(name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        print(f"  {name}: missing (see the step's log in {out})")
        return None
    return json.load(open(path))


def seconds(name):
    try:
        return int(open(os.path.join(out, name + ".time")).read())
    except OSError:
        return None


def label(c):
    return " ".join(f"{k}={v}" for k, v in c.items()) or "default"


def ok(t, size=None):
    return [r for r in t["results"] if r["status"] == "ok" and (size is None or r.get("size") == size)]


print("== tilec tune check")
tune, exh = load("gemm.tune.json"), load("gemm.exhaustive.json")
if tune and exh:
    env = tune["environment"]
    counts = {}
    for r in tune["results"]:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"GPU {env['gpu']} ({env['sm_count']} SMs, cc {env['compute_capability']}), driver {env['driver_version']}")
    print(f"gemm_fp16 4096^3: {len(tune['results'])} configurations tuned in {tune['seconds']:.1f} s "
          f"(step {seconds('tune')} s); statuses {counts}")
    pick = min(ok(tune), key=lambda r: r["ms"])
    best = min(ok(exh), key=lambda r: r["ms"])
    same = [r for r in ok(exh) if r["config"] == pick["config"]]
    dflt = [r for r in ok(exh) if not r["config"]]
    tflops = lambda ms: 2 * 4096 ** 3 / (ms * 1e-3) / 1e12
    print(f"  tune's choice  {label(pick['config'])}: {pick['ms']:.4f} ms in the tuning run")
    if same:
        gap = same[0]["ms"] / best["ms"] - 1
        print(f"  exhaustive     best {label(best['config'])}: {best['ms']:.4f} ms ({tflops(best['ms']):.0f} TFLOP/s);"
              f" tune's choice there {same[0]['ms']:.4f} ms: {100 * gap:+.2f}% ({'within' if gap <= 0.02 else 'NOT within'} 2%)")
    if dflt:
        print(f"  default        {dflt[0]['ms']:.4f} ms; speed-up of the best {dflt[0]['ms'] / best['ms']:.3f}x")
dyn = load("linear.tune.json")
if dyn:
    sizes = sorted({r["size"]["m"] for r in dyn["results"]})
    configs = []
    for r in dyn["results"]:
        if r["config"] not in configs:
            configs.append(r["config"])
    def t(c, m):
        for r in ok(dyn, {"m": m}):
            if r["config"] == c:
                return r["ms"]
        return None
    full = [c for c in configs if all(t(c, m) is not None for m in sizes)]
    single = min(full, key=lambda c: sum(t(c, m) for m in sizes)) if full else None
    print(f"linear_4096x4096 (bf16, dynamic m): {len(configs)} configurations x {len(sizes)} sizes in "
          f"{dyn['seconds']:.1f} s; single best over all m: {label(single) if single is not None else '-'}")
    print(f"  {'m':>6}  {'per-m best ms':>13}  {'single ms':>10}  {'speed-up':>8}  per-m best configuration")
    for m in sizes:
        rs = ok(dyn, {"m": m})
        if not rs or single is None:
            print(f"  {m:>6}  no working configuration")
            continue
        b = min(rs, key=lambda r: r["ms"])
        s = t(single, m)
        print(f"  {m:>6}  {b['ms']:>13.4f}  {s:>10.4f}  {s / b['ms']:>7.3f}x  {label(b['config'])}")
