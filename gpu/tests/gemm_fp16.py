"""Benchmark program benchmarks/gemm_fp16.tile: float16 GEMM 4096^3 and 8192^3 (C = A @ B, float32
accumulation, float16 out) against cuBLAS (torch.matmul, same shape, same process, same timing).

Bars (issue 4): tilec / cuBLAS >= 0.5 required, 0.6 the target (cuBLAS uses wgmma, which the mma.sync path
cannot). FLOPs 2 M N K. Correctness first, both instantiations in full, by the GEMM rule of CONTRACT.md with
u = u_out = 2^-11: |C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|; gemm_fp16_odd (1000^3) and gemm_fp16_small
come from gpu/examples.txt."""
import core as C
import refs as R

SHAPES = {"gemm_fp16_4096": (4096, 4096, 4096), "gemm_fp16_8192": (8192, 8192, 8192),
          "gemm_fp16_odd": (1000, 1000, 1000), "gemm_fp16_small": (256, 512, 128)}
BAR, TARGET = 0.5, 0.6


def tests():
    for k, (M, N, K) in SHAPES.items():
        yield C.Test("gemm_fp16", k, R.gemm_test(M, N, K, "float16", "float16"), small=k == "gemm_fp16_small",
                     graph=k == "gemm_fp16_odd")


def benches():
    for k in ("gemm_fp16_4096", "gemm_fp16_8192"):
        M, N, K = SHAPES[k]
        yield C.Bench("gemm_fp16", k, R.gemm_bench(M, N, K), nbytes=2 * (M * K + K * N + M * N),
                      shape="%dx%dx%d f16" % (M, N, K), bar=BAR, target=TARGET, torch_name="cuBLAS",
                      flops=R.gemm_flops(M, N, K), variants=True)
