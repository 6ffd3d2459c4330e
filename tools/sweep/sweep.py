#!/usr/bin/env python3
"""The tile-configuration sweep, part two, run THERE on the GPU machine (tools/sweep/run.sh drives it):
builds every configuration that tools/sweep/gen.py generated into gpu-build/sweep/ with nvcc (all cores),
checks each kernel's result on the benchmark shape, times it, and prints the configurations sorted by
TFLOP/s with the baseline (cuBLAS / SDPA flash) timed in the same process.

  sweep.py --phase build  [--dir gpu-build/sweep] [--jobs N] [--deadline EPOCH]
  sweep.py --phase run    [--dir ...] [--results FILE] [--deadline EPOCH] [--resume] [--only REGEX]
  sweep.py --phase report [--dir ...] [--results FILE] [--out DIR]

Correctness per configuration and shape, on fresh random inputs with the output poisoned (NaN): GEMM by
docs/INTERFACE.md's bound |C - R| <= 4 u sum|a b| + u_out |R| (u = u_out = 2^-11) against a float64 reference made
once per shape; attention within 2e-2 absolute of the float64 attention. A configuration that fails is
listed, never ranked. Timing: gpu/bench.py's Timer (CUDA events, L2 flushed before each call, median).
Every result is appended to --results at once; a watchdog ends the process (exit 124) when one kernel runs
past --timeout, after recording it, so that run.sh can resume after it with --resume.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "gpu"))

import cinterface  # noqa: E402
import core  # noqa: E402
import refs  # noqa: E402
import report as report_module  # noqa: E402

NVFLAGS = ["-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-shared"]
EXIT_TIMEOUT = 124


def gencode(arch):
    """sm_80/86/89 code is built from its PTX for the H200 (compute_XX -> sm_90), as issue 4 asks."""
    if arch == "sm_90a":
        return "-gencode=arch=compute_90a,code=sm_90a"
    return "-gencode=arch=compute_%s,code=sm_90" % arch[3:]


def load_manifest(d):
    with open(os.path.join(d, "sweep.json")) as f:
        return json.load(f)


def append(path, rec):
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")


def read_results(path):
    return report_module.read_jsonl(path) if path else []


def build(args, m):
    libdir = os.path.join(args.dir, "lib")
    os.makedirs(libdir, exist_ok=True)
    cache = os.environ.get("TILEC_GPU_CACHE", "/tmp/tilec-gpu-cache")
    os.makedirs(cache, exist_ok=True)
    gc = gencode(m["arch"])
    ver = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:]
    todo = [c for c in m["configs"] if c["status"] == "ok" and (not args.only or re.search(args.only, c["id"]))]

    def one(c):
        src = os.path.join(args.dir, c["cu"])
        so, h = os.path.join(libdir, c["id"] + ".so"), os.path.join(libdir, c["id"] + ".h")
        left = args.deadline - time.time()
        if left < 5:
            return dict(event="build", id=c["id"], status="skip", detail="no time left to build")
        with open(src, "rb") as f:
            text = f.read()
        with open(src[:-3] + ".h", "rb") as f:
            header = f.read()
        key = hashlib.sha256(" ".join(NVFLAGS + [gc] + ver).encode() + text + header).hexdigest()[:40]
        cached = os.path.join(cache, key + ".so")
        t0 = time.time()
        if os.path.exists(cached) and os.path.getsize(cached) > 0:
            subprocess.run(["cp", cached, so], check=True)
            how = "cached"
        else:
            try:
                r = subprocess.run(["nvcc"] + NVFLAGS + [gc, "-o", so, src], capture_output=True, text=True,
                                   timeout=max(5, left))
            except subprocess.TimeoutExpired:
                return dict(event="build", id=c["id"], status="skip", detail="nvcc ran past the deadline")
            if r.returncode != 0:
                first = next((ln for ln in r.stderr.splitlines() if "error" in ln), r.stderr.strip()[:200])
                return dict(event="build", id=c["id"], status="FAIL", detail="nvcc: " + first[:300])
            subprocess.run(["cp", so, cached + ".tmp%d" % os.getpid()], check=False)
            os.replace(cached + ".tmp%d" % os.getpid(), cached)
            how = "%.0f s" % (time.time() - t0)
        with open(h, "wb") as f:
            f.write(header)
        return dict(event="build", id=c["id"], status="ok", detail=how)

    done = {r["id"] for r in read_results(args.results) if r.get("event") == "build" and r["status"] == "ok"
            and os.path.exists(os.path.join(libdir, r["id"] + ".so"))}
    todo = [c for c in todo if c["id"] not in done]
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        for r in ex.map(one, todo):
            append(args.results, r)
            if r["status"] != "ok":
                print("build %-16s %s: %s" % (r["id"], r["status"], r["detail"]), flush=True)
    print("sweep: built %d configurations in %.0f s with %d jobs (%s)" % (len(todo), time.time() - t0, args.jobs, gc),
          flush=True)
    return 0


# ------------------------------------------------------------------------------------------------ run
class Shape:
    """The inputs, float64 reference and baseline of one benchmark shape, shared by every configuration."""

    def __init__(self, preset, shape, seed, timer, t):
        kind = preset["kind"]
        self.kind, self.shape, self.t = kind, shape, t
        ctx = core.Context(None, seed, guards=False)
        if kind == "gemm":
            # The preset's operand type (float16 by default) and output type; trans_B: B stored (N, K).
            dt, out_dt, nt = preset.get("dtype", "float16"), preset.get("out_dtype", "float16"), preset.get("trans_B", False)
            M, N, K = shape["M"], shape["N"], shape["K"]
            self.flops = refs.gemm_flops(M, N, K)
            self.a, self.b = refs.gemm_inputs(ctx, M, N, K, dt, trans_B=nt)
            R, S = refs.gemm_reference(self.a, self.b, trans_B=nt)
            self.ref, self.bound = R, refs.gemm_bound(R, S, dt, out_dt)
            del S
            self.out_shape, self.out_dtype = (M, N), out_dt
            base_out = t.empty((M, N), dtype=getattr(t, out_dt), device="cuda")
            if dt.startswith("float8"):     # cuBLAS's fp8 GEMM: unit scales, the output type asked for
                one = t.tensor(1.0, device="cuda")
                self.base_fn = lambda: t._scaled_mm(self.a, self.b.t(), one, one, out_dtype=getattr(t, out_dt))
                self.base_name = "cuBLAS fp8"
            else:
                bb = self.b.t() if nt else self.b
                self.base_fn = lambda: t.matmul(self.a, bb, out=base_out)
                self.base_name = "cuBLAS"
        else:
            b, h, s, d, causal = (shape[k] for k in ("batch", "heads", "seq", "dim", "causal"))
            self.flops = refs.attention_flops(b, h, s, d, causal)
            self.q, self.k, self.v = refs.attention_inputs(ctx, b, h, s, d)
            self.ref = refs.attention_reference(self.q, self.k, self.v, causal)
            self.bound = None
            self.out_shape, self.out_dtype = (b, s, h, d), "float16"
            self.base_fn = refs.sdpa_flash(self.q, self.k, self.v, causal)
            self.base_name = "SDPA flash"
        t.cuda.synchronize()
        self.base_ms = timer.ms(self.base_fn, budget_s=0.3, min_reps=10, max_reps=100)

    def inputs(self):
        return (self.a, self.b) if self.kind == "gemm" else (self.q, self.k, self.v)

    def check(self, out):
        """(ok, detail): every element against the reference."""
        t = self.t
        o = out.double()
        finite = bool(t.isfinite(o).all())
        err = (o - self.ref).abs()
        if self.kind == "gemm":
            ratio = float((err / self.bound).max()) if finite else float("inf")
            return finite and ratio <= 1.0, "max err %.2f of bound" % ratio
        worst = float(err.max()) if finite else float("inf")
        limit = refs.ATTN_ABS["float16"]
        return finite and worst <= limit, "max abs err %.2g (limit %g)" % (worst, limit)


def run(args, m):
    import torch as t
    import bench
    libdir = os.path.join(args.dir, "lib")
    old = read_results(args.results) if args.resume else []
    done = {(r["id"], r["shape"]) for r in old if r.get("event") == "run"}
    built = {r["id"] for r in read_results(args.results) if r.get("event") == "build" and r["status"] == "ok"}
    timer = bench.Timer(t)
    def timed_out(rec, seconds):
        rec = dict(rec, status="FAIL", detail="timed out after %d s (a hang?)" % args.timeout)
        append(args.results, rec)
        print("run   %-16s FAIL %s" % (rec["id"], rec["detail"]), flush=True)

    dog = core.Watchdog(args.timeout, timed_out, EXIT_TIMEOUT)
    print("sweep: %s, torch %s, seed %d" % (t.cuda.get_device_name(0), t.__version__, args.seed), flush=True)
    for pname, preset in m["presets"].items():
        cfgs = [c for c in m["configs"] if c["preset"] == pname and c["id"] in built
                and (not args.only or re.search(args.only, c["id"]))]
        for si, shape in enumerate(preset["shapes"]):
            sid = "%s/%d" % (pname, si)
            todo = [c for c in cfgs if (c["id"], sid) not in done]
            if not todo:
                continue
            if time.time() > args.deadline - 10:
                break
            t0 = time.time()
            S = Shape(preset, shape, args.seed + si, timer, t)
            S.sm = int(m["arch"][3:5])
            append(args.results, dict(event="baseline", shape=sid, params=shape, name=S.base_name, ms=S.base_ms,
                                      tflops=S.flops / S.base_ms / 1e9))
            print("sweep: %s %s: %s %.4f ms = %.1f TFLOP/s (reference and baseline %.1f s)"
                  % (pname, shape, S.base_name, S.base_ms, S.flops / S.base_ms / 1e9, time.time() - t0), flush=True)
            libs = {}
            for c in todo:
                if time.time() > args.deadline - 3:
                    print("sweep: out of time; %s and later not run" % c["id"], flush=True)
                    break
                kernel = c["kernels"][si]
                rec = dict(event="run", id=c["id"], shape=sid, kernel=kernel)
                append(args.results, dict(rec, event="start"))
                dog.start(rec)
                try:
                    rec.update(one(c, kernel, S, libdir, libs, timer, t, args.seed + 100 + si))
                except core.Fail as e:
                    rec.update(status="FAIL", detail=str(e))
                except Exception as e:   # a bug or a CUDA error: the configuration fails, the sweep goes on
                    rec.update(status="FAIL", detail="%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
                dog.stop()
                append(args.results, rec)
                print("run   %-16s %-10s %-4s %s" % (c["id"], sid, rec["status"], rec.get("detail", "")), flush=True)
            del S, libs
            t.cuda.empty_cache()
    return 0


def one(c, kernel, S, libdir, libs, timer, t, seed):
    if c["id"] not in libs:
        so, h = os.path.join(libdir, c["id"] + ".so"), os.path.join(libdir, c["id"] + ".h")
        libs[c["id"]] = cinterface.Library(so, h)
    lib = libs[c["id"]]
    ctx = core.Context(lib, seed, guards=False)
    out = ctx.output(S.out_shape, S.out_dtype)
    args = S.inputs() + (out,)
    ctx.call(kernel, *args)                 # status, synchronize
    ok, detail = S.check(out)
    if not ok:
        return dict(status="FAIL", detail="wrong result: " + detail)
    fn, cargs = ctx._args(kernel, args)
    import ctypes
    stream = ctypes.c_void_p(t.cuda.current_stream().cuda_stream)
    # Interleaved with the baseline (Timer.ms_pair): the ratio then carries no clock drift between the
    # configurations of a sweep (identical configurations timed one after the other differed by 5%).
    ms, base_ms = timer.ms_pair(lambda: fn(*cargs, stream), S.base_fn, budget_s=0.4, min_reps=10, max_reps=100)
    tflops = S.flops / ms / 1e9
    sm = S.sm
    return dict(status="PASS", ms=ms, tflops=tflops, ratio=base_ms / ms, base_ms=base_ms, check=detail,
                threads=lib.query(kernel, "threads", sm), smem=lib.query(kernel, "shared_bytes", sm),
                detail="%.4f ms %.1f TFLOP/s (%.2f of %s), %s" % (ms, tflops, base_ms / ms, S.base_name, detail))


# --------------------------------------------------------------------------------------------- report
def params_text(p, flags=()):
    text = " ".join("%s=%s" % (k, v) for k, v in sorted(p.items())) or "(the file's defaults)"
    return text + "".join(" " + f for f in flags)


def report(args, m):
    res = read_results(args.results)
    builds = {r["id"]: r for r in res if r.get("event") == "build"}
    runs = {(r["id"], r["shape"]): r for r in res if r.get("event") == "run"}
    base = {r["shape"]: r for r in res if r.get("event") == "baseline"}
    lines = ["tile-configuration sweep: arch %s (built %s), tilec %s" % (m["arch"], gencode(m["arch"]), m["commit"])]
    if m.get("fake"):
        lines.insert(0, "REHEARSAL: every configuration is FAKE (naive kernels from tools/gpu/fake.py, not tilec's "
                        "code): this table proves the sweep machinery, not any tile configuration")
    summary = dict(arch=m["arch"], commit=m["commit"], presets={})
    for pname, preset in m["presets"].items():
        cfgs = [c for c in m["configs"] if c["preset"] == pname]
        lines.append("")
        lines.append("== %s: %s, %s(...), %d configurations" % (pname, preset["file"], preset["factory"], len(cfgs)))
        rej = [c for c in cfgs if c["status"] != "ok"]
        bad_build = [c for c in cfgs if c["status"] == "ok" and builds.get(c["id"], {}).get("status") not in ("ok",)]
        per_shape = []
        for si, shape in enumerate(preset["shapes"]):
            sid = "%s/%d" % (pname, si)
            b = base.get(sid)
            rows = [(c, runs[(c["id"], sid)]) for c in cfgs if (c["id"], sid) in runs]
            ok = sorted([x for x in rows if x[1]["status"] == "PASS"], key=lambda x: -x[1]["tflops"])
            failed = [x for x in rows if x[1]["status"] != "PASS"]
            lines.append("-- shape %s: %s" % (", ".join("%s=%s" % kv for kv in shape.items()),
                                               "%s %.4f ms, %.1f TFLOP/s" % (b["name"], b["ms"], b["tflops"]) if b
                                               else "baseline not measured"))
            lines.append("   %-16s %9s %8s %6s  %s" % ("config", "ms", "TFLOP/s", "ratio", "parameters"))
            for c, r in ok:
                lines.append("   %-16s %9.4f %8.1f %6.2f  %s" % (c["id"], r["ms"], r["tflops"], r["ratio"],
                                                               params_text(c["params"], c.get("flags", ()))))
            for c, r in failed:
                lines.append("   %-16s FAIL  %s" % (c["id"], r.get("detail", "")[:150]))
            not_run = [c["id"] for c in cfgs if c["status"] == "ok" and builds.get(c["id"], {}).get("status") == "ok"
                       and (c["id"], sid) not in runs]
            if not_run:
                lines.append("   not run (out of time): %s" % " ".join(not_run))
            per_shape.append({c["id"]: r for c, r in ok})
            if ok:
                lines.append("   best: %s %.1f TFLOP/s = %.2f x %s" % (ok[0][0]["id"], ok[0][1]["tflops"],
                                                                       ok[0][1]["ratio"], b["name"] if b else "?"))
        # best overall: the highest geometric mean of TFLOP/s over the shapes, among those correct on every one
        common = set(per_shape[0]) if per_shape else set()
        for d in per_shape[1:]:
            common &= set(d)
        ranked = sorted(common, key=lambda i: -statistics.geometric_mean([d[i]["tflops"] for d in per_shape]))
        best = None
        if ranked:
            best = next(c for c in cfgs if c["id"] == ranked[0])
            defs = " ".join("-D %s=%s" % (preset["defines"].get(k, k), v) for k, v in sorted(best["params"].items()))
            lines.append("BEST %s over all shapes: %s (%s)" % (pname, best["id"], params_text(best["params"])))
            lines.append("     ratios: %s" % ", ".join("%.2f" % d[best["id"]]["ratio"] for d in per_shape))
            lines.append("     reproduce: tilec %s -arch=%s %s" % (preset["file"], m["arch"], defs or "(defaults)"))
        for c in rej:
            lines.append("   %-16s rejected by tilec: %s" % (c["id"], c.get("reason", "")[:150]))
        for c in bad_build:
            r = builds.get(c["id"])
            lines.append("   %-16s not built: %s" % (c["id"], r["detail"] if r else "no build result"))
        summary["presets"][pname] = dict(best=best and dict(id=best["id"], params=best["params"]),
                                         baselines=[base.get("%s/%d" % (pname, i)) for i in range(len(preset["shapes"]))],
                                         rows=[dict(id=c["id"], params=c["params"], results=[runs.get((c["id"], "%s/%d" % (pname, i)))
                                                                                              for i in range(len(preset["shapes"]))])
                                               for c in cfgs])
    text = "\n".join(lines)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "sweep.txt"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(args.out, "sweep.json"), "w") as f:
            json.dump(summary, f, indent=1)
    return 0 if any(r["status"] == "PASS" for r in runs.values()) else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phase", choices=["build", "run", "report"], required=True)
    ap.add_argument("--dir", default=os.path.join(ROOT, "gpu-build", "sweep"))
    ap.add_argument("--results", default=None, help="JSON lines (default DIR/results.jsonl)")
    ap.add_argument("--out", default=None, help="report: write sweep.txt and sweep.json here")
    ap.add_argument("--deadline", type=float, default=None, help="epoch seconds; default now + 280")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per configuration before the watchdog")
    ap.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "little") & 0x3FFFFFFF)
    ap.add_argument("--only", help="regular expression on configuration ids")
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args(argv)
    args.results = args.results or os.path.join(args.dir, "results.jsonl")
    args.deadline = args.deadline or time.time() + 280
    if not os.path.exists(os.path.join(args.dir, "sweep.json")):
        print("sweep: no %s/sweep.json: run tools/sweep/gen.py here first and carry gpu-build" % args.dir)
        return 2
    m = load_manifest(args.dir)
    if args.phase == "run" and args.resume:
        # a configuration begun and never finished was ended from outside (its own watchdog records itself)
        res = read_results(args.results)
        finished = {(r["id"], r["shape"]) for r in res if r.get("event") == "run"}
        for r in res:
            if r.get("event") == "start" and (r["id"], r["shape"]) not in finished:
                append(args.results, dict(r, event="run", status="FAIL", detail="did not finish (a hang?)"))
    return {"build": build, "run": run, "report": report}[args.phase](args, m)


if __name__ == "__main__":
    sys.exit(main())
