#!/usr/bin/env python3
"""TileLang 0.1.15's own FlashAttention forward at the benchmark shapes of gpu/tests/flash_fwd.py (issue 10),
timed with the harness's timer (gpu/bench.py: L2 flushed before each launch, medians of interleaved CUDA-event
times) against SDPA's flash and cuDNN back ends in the same process, so that tilec / TileLang can be read off
one GPU run as (tilec / SDPA flash) / (TileLang / SDPA flash).

  python3 tools/gpu/tilelang_attn.py OUT.json [BENCH_JSONL]
      on the GPU machine, PYTHONPATH holding the TileLang bundle (bash ../shared/tools/tilelang/make-bundle.sh
      .tilelang); tools/gpu/run.sh runs it after its benchmarks when .tilelang/site.tar.xz is there, with
      BENCH_JSONL = the harness's benchmark results, and then prints tilec / TileLang per shape.
The kernel is TileLang's examples/flash_attention/example_mha_fwd_bshd.py in its own spelling (the mask written
into the scores before QK^T accumulates onto them, exp2 with the scale folded in, T.GemmWarpPolicy.FullRow on
both GEMMs, fast math), at the configuration issue 10 found best for TileLang on the H200: 128 x 128 tiles,
2 stages, 256 threads (without FullRow TileLang's layout inference fails there). If that configuration does
not compile at a shape, 128 x 128 / 1 stage / 128 threads (the example's own) is tried. Each result is checked
against SDPA flash (relative 2-norm error below 1e-2, the harness's sanity check) before it is timed. A total
time budget (TL_ATTN_BUDGET_S, default 200 s) ends the run early with what it has; the JSON is rewritten
after each kernel. TL_ATTN_ONLY=REGEX keeps the benches whose name it matches (one kernel for Nsight Compute).
TL_ATTN_SOURCE_DIR=DIR writes the CUDA source TileLang generated for each kernel to DIR/NAME.cu, so that its
schedule can be read and compiled beside tilec's (ptxas statistics, SASS) on the machine without a GPU."""
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "gpu"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "gpu", "tests"))
import bench  # noqa: E402  the harness's timer
import refs  # noqa: E402  SDPA baselines, FLOPs
import flash_fwd as FF  # noqa: E402  the benchmark shapes

import torch  # noqa: E402
import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402

BUDGET_S = float(os.environ.get("TL_ATTN_BUDGET_S", "200"))
CONFIGS = [(128, 128, 2, 256), (128, 128, 1, 128)]      # block_M, block_N, num_stages, threads


def flashattn(batch, heads, seq, dim, causal, dtype, block_M, block_N, num_stages, threads):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, seq, heads, dim]
    accum = "float32"
    policy = T.GemmWarpPolicy.FullRow

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
             Output: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum)
            m_cur = T.alloc_fragment([block_M], accum)
            m_prev = T.alloc_fragment([block_M], accum)
            m_scale = T.alloc_fragment([block_M], accum)
            s_sum = T.alloc_fragment([block_M], accum)
            logsum = T.alloc_fragment([block_M], accum)

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(m_cur, -T.infinity(accum))
            n_blocks = (T.min(T.ceildiv(seq, block_N), T.ceildiv((bx + 1) * block_M, block_N)) if causal
                        else T.ceildiv(seq, block_N))
            for k in T.Pipelined(n_blocks, num_stages=num_stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
                if causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(accum))
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j >= seq, -T.infinity(accum), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=policy)
                T.copy(m_cur, m_prev)
                T.fill(m_cur, -T.infinity(accum))
                T.reduce_max(acc_s, m_cur, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    m_cur[i] = T.max(m_cur[i], m_prev[i])
                for i in T.Parallel(block_M):
                    m_scale[i] = T.exp2(m_prev[i] * scale - m_cur[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m_cur[i] * scale)
                T.reduce_sum(acc_s, s_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * m_scale[i] + s_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= m_scale[i]
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=policy)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])
    return main


def compile_best(p):
    """(kernel, config text, compile seconds, errors of the configurations tried before it)."""
    errors = []
    for cfg in CONFIGS:
        t0 = time.time()
        try:
            func = flashattn(p["batch"], p["heads"], p["seq"], p["dim"], p["causal"], p["dtype"], *cfg)
            kern = tilelang.compile(func, target="cuda",
                                    pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
            return kern, "%dx%d/%d/%d" % cfg, round(time.time() - t0, 2), errors
        except Exception as e:  # layout inference or shared memory: the next configuration
            errors.append("%dx%d/%d/%d: %s: %s" % (cfg + (type(e).__name__, str(e)[-300:])))
    return None, None, None, errors


def tilec_ratios(path):
    """{bench name: tilec / SDPA flash} from the harness's benchmark results (JSON lines), if given."""
    out = {}
    if path and os.path.exists(path):
        for line in open(path):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("status") == "PASS" and "ratio" in r and r.get("id", "").startswith("flash_fwd:"):
                out[r["id"].split(":")[1]] = r["ratio"]
    return out


def main():
    out_path = sys.argv[1]
    tilec = tilec_ratios(sys.argv[2] if len(sys.argv) > 2 else None)
    t0 = time.time()
    timer = bench.Timer(torch)
    shapes = FF.kernels()
    only = os.environ.get("TL_ATTN_ONLY")
    names = [n for n in FF.BENCHES if not only or re.search(only, n)]
    results = []
    for name in names:
        if time.time() - t0 > BUDGET_S:
            print("tilelang_attn: time budget spent, %d kernels not run" % (len(names) - len(results)))
            break
        p = shapes[name][0]
        row = dict(name=name, shape=FF.shape_text(p), dtype=p["dtype"])
        try:
            kern, row["config"], row["compile_s"], tried = compile_best(p)
            if tried:
                row["not_compiled"] = tried
            if kern is None:
                raise RuntimeError("no configuration compiled: " + " | ".join(tried))
            src_dir = os.environ.get("TL_ATTN_SOURCE_DIR")
            if src_dir:
                os.makedirs(src_dir, exist_ok=True)
                with open(os.path.join(src_dir, name + ".cu"), "w") as f:
                    f.write(kern.get_kernel_source())
            dt = getattr(torch, p["dtype"])
            shape = (p["batch"], p["seq"], p["heads"], p["dim"])
            q, k, v = (torch.randn(shape, device="cuda").to(dt) for _ in range(3))
            o = torch.empty_like(q)
            kern(q, k, v, o)
            flash = refs.sdpa(q, k, v, p["causal"], "SDPA flash")
            cudnn = refs.sdpa(q, k, v, p["causal"], "SDPA cuDNN")
            ref = flash()
            torch.cuda.synchronize()
            rel = ((o.double() - ref.double()).norm() / ref.double().norm()).item()
            row["rel_err"] = rel
            if not rel < 1e-2:
                raise RuntimeError("TileLang's result differs from SDPA flash's: relative error %.3g" % rel)
            fns = [lambda: kern(q, k, v, o), flash]
            try:
                cudnn()
                fns.append(cudnn)
            except Exception as e:  # cuDNN may not take every shape or type
                row["cudnn_error"] = "%s: %s" % (type(e).__name__, str(e)[:200])
            ms = timer.ms_all(fns)
            flops = refs.attention_flops(p["batch"], p["heads"], p["seq"], p["dim"], p["causal"])
            row.update(ms=ms[0], tflops=flops / ms[0] / 1e9, flash_ms=ms[1], ratio_flash=ms[1] / ms[0])
            if len(ms) > 2:
                row.update(cudnn_ms=ms[2], ratio_cudnn=ms[2] / ms[0])
            if name in tilec:
                row["tilec_over_tilelang"] = tilec[name] / row["ratio_flash"]
            print("TileLang %-26s %-24s %-12s %.4f ms %6.1f TFLOP/s  TileLang/SDPA flash %.3f  /cuDNN %s%s"
                  % (name, row["shape"], row["config"], ms[0], row["tflops"], row["ratio_flash"],
                     "%.3f" % row["ratio_cudnn"] if "ratio_cudnn" in row else "-",
                     "  tilec/TileLang %.3f" % row["tilec_over_tilelang"] if "tilec_over_tilelang" in row else ""),
                  flush=True)
            del q, k, v, o, ref
        except Exception as e:  # one failing kernel must not end the run
            row["error"] = "%s: %s" % (type(e).__name__, e)
            print("TileLang %s %s: %s" % (name, row["shape"], row["error"]), flush=True)
        results.append(row)
        torch.cuda.empty_cache()
        with open(out_path, "w") as f:
            json.dump(dict(tilelang=getattr(tilelang, "__version__", "?"), torch=torch.__version__,
                           results=results), f, indent=1)


if __name__ == "__main__":
    main()
