"""Benchmark program benchmarks/gemm_fp8.tile: float8 GEMM through the compiler, C = A @ B^T with A (M, K) and
B stored (N, K) in float8 e4m3 (one kernel e5m2), float32 accumulation, bfloat16 out, against cuBLAS's fp8 GEMM
(torch._scaled_mm with unit scales and bfloat16 out: the same product, same process, same timing).

Bars (issue 9): at 4096^3 and 8192^3 tilec / cuBLAS fp8 >= 1.0 required, 1.2 the goal. Correctness first, every
instantiation in full, by the GEMM rule of docs/INTERFACE.md with u = 2^-4 (float8's unit roundoff does not enter:
the inputs are exact float8 values and the products exact in float32) and u_out = 2^-8 (bfloat16 out):
|C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|; the odd shapes cover TMA's zero fill (K = 1008) and the cp.async
path (K = 1000, rows not 16-byte aligned)."""
import core as C
import refs as R

LIB = "gemm_fp8"
KERNELS = [("gemm_fp8_4096", 4096, 4096, 4096, "float8_e4m3", 1.0),
           ("gemm_fp8_8192", 8192, 8192, 8192, "float8_e4m3", 1.0),
           ("gemm_fp8_odd", 1000, 1000, 1008, "float8_e4m3", None),
           ("gemm_fp8_odd_k", 1000, 1000, 1000, "float8_e4m3", None),
           ("gemm_fp8_e5m2_small", 256, 512, 256, "float8_e5m2", None)]
TARGET = 1.2


def tests():
    for k, M, N, K, dtype, _ in KERNELS:
        yield C.Test(LIB, k, R.gemm_test(M, N, K, dtype, "bfloat16", trans_B=True), small=K <= 256,
                     graph=k == "gemm_fp8_odd")


def bench_make(M, N, K, dtype):
    def fn(ctx, k):
        t = C.torch()
        a, b = R.gemm_inputs(ctx, M, N, K, dtype, trans_B=True)
        c = ctx.output((M, N), "bfloat16")
        one = t.tensor(1.0, device="cuda")
        return (a, b, c), [c], lambda: t._scaled_mm(a, b.t(), one, one, out_dtype=t.bfloat16)
    return fn


def benches():
    for k, M, N, K, dtype, bar in KERNELS:
        if bar is None:
            continue
        yield C.Bench(LIB, k, bench_make(M, N, K, dtype), nbytes=M * K + N * K + 2 * M * N,
                      shape="%dx%dx%d e4m3 B(n,k)" % (M, N, K), bar=bar, target=TARGET,
                      torch_name="torch._scaled_mm (cuBLAS fp8)", flops=R.gemm_flops(M, N, K))
