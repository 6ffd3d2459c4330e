"""Benchmark program benchmarks/gemm_fp16.tile: float16 and bfloat16 GEMM (C = A @ B, float32 accumulation,
output in the input type) at the shapes of the Hopper GEMM issue (4096^3, 8192^3, 4096x1024x8192,
4096x8192x8192, 4096x28672x8192) and two decode shapes (M = 16 and 128, N = K = 8192), each against cuBLAS
(torch.matmul, same shape, same process, same timing).

Bars (issue 9): per shape tilec / cuBLAS >= 0.85 required, 0.95 the target (the geometric mean the issue asks
for); the decode shapes are reported without a bar. FLOPs 2 M N K. Correctness first, every instantiation in
full, by the GEMM rule of docs/INTERFACE.md with u = u_out = 2^-11 (float16) or 2^-8 (bfloat16):
|C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|; gemm_fp16_odd (1000^3) and gemm_fp16_small come from
gpu/examples.txt."""
import core as C
import refs as R

ISSUE_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 1024, 8192), (4096, 8192, 8192),
                (4096, 28672, 8192)]
DECODE_SHAPES = [(16, 8192, 8192), (128, 8192, 8192)]
BAR, TARGET = 0.85, 0.95


def name(prefix, M, N, K):
    return "%s_%d" % (prefix, M) if M == N == K else "%s_%dx%dx%d" % (prefix, M, N, K)


def kernels():
    """(kernel, M, N, K, dtype, bar) of every instantiation the file exports."""
    for dtype, prefix in (("float16", "gemm_fp16"), ("bfloat16", "gemm_bf16")):
        for (M, N, K) in ISSUE_SHAPES:
            yield name(prefix, M, N, K), M, N, K, dtype, BAR
    for (M, N, K) in DECODE_SHAPES:
        yield name("gemm_fp16", M, N, K), M, N, K, "float16", None
    yield "gemm_fp16_odd", 1000, 1000, 1000, "float16", None
    yield "gemm_fp16_small", 256, 512, 128, "float16", None


def tests():
    for k, M, N, K, dtype, _ in kernels():
        yield C.Test("gemm_fp16", k, R.gemm_test(M, N, K, dtype, dtype), small=k == "gemm_fp16_small",
                     graph=k == "gemm_fp16_odd")


def benches():
    for k, M, N, K, dtype, bar in kernels():
        if k in ("gemm_fp16_odd", "gemm_fp16_small"):
            continue
        yield C.Bench("gemm_fp16", k, R.gemm_bench(M, N, K, dtype, dtype), nbytes=2 * (M * K + K * N + M * N),
                      shape="%dx%dx%d %s" % (M, N, K, "f16" if dtype == "float16" else "bf16"), bar=bar,
                      target=TARGET if bar else None, torch_name="cuBLAS", flops=R.gemm_flops(M, N, K))
