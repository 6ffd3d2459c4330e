#!/usr/bin/env python3
"""TileLang 0.1.15 itself on the GEMM shapes of the Hopper GEMM issue, timed with the harness's own timer
(gpu/bench.py: L2 flushed before each launch, median of CUDA-event times) against cuBLAS in the same process,
so that tilec / TileLang can be read off one GPU run as (tilec / cuBLAS) / (TileLang / cuBLAS).

  python3 tools/gpu/tilelang_gemm.py OUT.json      # on the GPU machine, PYTHONPATH holding the TileLang bundle
                                                   # (bash ../shared/tools/tilelang/make-bundle.sh .tilelang)
The kernel is the seed document's GEMM in TileLang's own spelling with T.use_swizzle(10), at TileLang's best
configuration (128x256x64, 3 stages, 256 threads) and the seed's (128x128x64, 3 stages, 128 threads). Every
result is checked against cuBLAS's (relative 2-norm error below 1e-2) before it is timed. A total time budget
(TL_GEMM_BUDGET_S, default 240 s) ends the run early with what it has; the JSON is rewritten after each kernel.
TL_GEMM_ONLY=REGEX keeps the runs whose 'MxNxK dtype' it matches (one kernel for Nsight Compute)."""
import json
import re
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "gpu"))
import bench  # noqa: E402  the harness's timer

import torch  # noqa: E402
import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402

BUDGET_S = float(os.environ.get("TL_GEMM_BUDGET_S", "240"))
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 1024, 8192), (4096, 8192, 8192), (4096, 28672, 8192)]
DECODE = [(16, 8192, 8192), (128, 8192, 8192)]
BEST, SEED = (128, 256, 64, 3, 256), (128, 128, 64, 3, 128)


def gemm(M, N, K, bm, bn, bk, stages, threads, dtype):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bk, bn), dtype)
            acc = T.alloc_fragment((bm, bn), "float")
            T.use_swizzle(10)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * bm, bx * bn])
    return main


def main():
    out_path = sys.argv[1]
    t0 = time.time()
    timer = bench.Timer(torch)
    runs = [(s, BEST, d) for d in ("float16", "bfloat16") for s in SHAPES]
    runs += [((4096, 4096, 4096), SEED, "float16")] + [(s, BEST, "float16") for s in DECODE]
    only = os.environ.get("TL_GEMM_ONLY")   # e.g. '4096x1024x8192 float16': one kernel (for ncu)
    if only:
        runs = [r for r in runs if re.search(only, "%dx%dx%d %s" % (r[0] + (r[2],)))]
    results = []
    for (M, N, K), cfg, dtype in runs:
        if time.time() - t0 > BUDGET_S:
            print("tilelang_gemm: time budget spent, %d kernels not run" % (len(runs) - len(results)))
            break
        row = dict(shape="%dx%dx%d" % (M, N, K), dtype=dtype, config="%dx%dx%d/%d/%d" % cfg)
        try:
            tc = time.time()
            kern = tilelang.compile(gemm(M, N, K, *cfg, dtype), target="cuda")
            row["compile_s"] = round(time.time() - tc, 2)
            dt = getattr(torch, dtype)
            a = torch.randn((M, K), device="cuda").to(dt)
            b = torch.randn((K, N), device="cuda").to(dt)
            c = torch.empty((M, N), device="cuda", dtype=dt)
            ref = torch.empty_like(c)
            kern(a, b, c)
            torch.matmul(a, b, out=ref)
            torch.cuda.synchronize()
            rel = ((c.double() - ref.double()).norm() / ref.double().norm()).item()
            row["rel_err"] = rel
            if not rel < 1e-2:
                raise RuntimeError("TileLang's result differs from cuBLAS's: relative error %.3g" % rel)
            ms = timer.ms(lambda: kern(a, b, c))
            base = timer.ms(lambda: torch.matmul(a, b, out=ref))
            flops = 2.0 * M * N * K
            row.update(ms=ms, tflops=flops / ms / 1e9, cublas_ms=base, cublas_tflops=flops / base / 1e9,
                       ratio=base / ms)
            print("TileLang %-16s %-8s %-14s %.4f ms %6.1f TFLOP/s  cuBLAS %.4f ms  TileLang/cuBLAS %.3f"
                  % (row["shape"], dtype, row["config"], ms, row["tflops"], base, row["ratio"]), flush=True)
            del a, b, c, ref
        except Exception as e:  # one failing kernel must not end the run
            row["error"] = "%s: %s" % (type(e).__name__, e)
            print("TileLang %s %s %s: %s" % (row["shape"], dtype, row["config"], row["error"]), flush=True)
        results.append(row)
        with open(out_path, "w") as f:
            json.dump(dict(tilelang=getattr(tilelang, "__version__", "?"), torch=torch.__version__,
                           results=results), f, indent=1)


if __name__ == "__main__":
    main()
