"""C = A @ B with float32 operands and output (examples/gemm_fp32.tile), which the tensor cores compute as
tf32 (mma.sync m16n8k8): the operands keep 10 of float32's 23 mantissa bits.

GEMM rule of docs/INTERFACE.md with u = 2^-11 (tf32 operands) and u_out = 2^-24 (float32 output):
|C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|. 4u = 2^-9 also covers a conversion that truncates to tf32
(2^-10 relative per operand). sgemm_odd (1000^3) and sgemm_small (136 x 200 x 72, for the sanitizers) come
from gpu/examples.txt."""
import core as C
import refs as R

SHAPES = {"sgemm_4096": (4096, 4096, 4096), "sgemm_odd": (1000, 1000, 1000), "sgemm_small": (136, 200, 72)}


def tests():
    for k, (M, N, K) in SHAPES.items():
        yield C.Test("gemm_fp32", k, R.gemm_test(M, N, K, "float32", "float32"), small=k == "sgemm_small",
                     graph=k == "sgemm_odd")


def make(M, N, K):
    def fn(ctx, k):
        t = C.torch()
        a, b = R.gemm_inputs(ctx, M, N, K, "float32")
        c = ctx.output((M, N), "float32")
        ref = t.empty((M, N), dtype=t.float32, device="cuda")

        def tf32_matmul():   # the baseline also computes in tf32, as the kernel does
            prev = t.backends.cuda.matmul.allow_tf32
            t.backends.cuda.matmul.allow_tf32 = True
            try:
                return t.matmul(a, b, out=ref)
            finally:
                t.backends.cuda.matmul.allow_tf32 = prev
        return (a, b, c), [c], tf32_matmul
    return fn


def benches():
    M, N, K = SHAPES["sgemm_4096"]
    yield C.Bench("gemm_fp32", "sgemm_4096", make(M, N, K), nbytes=4 * (M * K + K * N + M * N),
                  shape="%dx%dx%d tf32" % (M, N, K), torch_name="torch.matmul tf32 (cuBLAS)",
                  flops=R.gemm_flops(M, N, K), variants=True)
