"""Y = X @ W^T in bfloat16 with float32 accumulation and a row count m known only at run time
(examples/gemm_dynamic_m.tile; the launcher takes int64_t m after the tensors and sizes the grid from it).

GEMM rule of docs/INTERFACE.md with u = u_out = 2^-8 (bfloat16): |Y - R| <= 4 u sum_k |x_ik w_jk| + u_out |R|.
m runs over 1 (one row in a 128-row tile), 7, 128, 1000, 1001, 4096 and 5000; m = 0 is an empty batch:
TILEC_SUCCESS, nothing launched, nothing written (docs/INTERFACE.md). linear_small (N = 256, K = 128, for the sanitizers) comes from
gpu/examples.txt."""
import core as C
import refs as R

KERNELS = {"linear_4096x4096": (4096, 4096), "linear_small": (256, 128)}
MS = (1, 7, 128, 1000, 1001, 4096, 5000)


def check(N, K, m):
    return R.gemm_test(m, N, K, "bfloat16", "bfloat16", trans_B=True, scalars=(m,))


def empty(N, K):
    def fn(ctx, k):
        x = ctx.randn((8, K), "bfloat16")[:0]       # an empty view of real memory: a non-null pointer
        w = ctx.randn((N, K), "bfloat16")
        return ctx.expect_empty(k, "m = 0", x, w, ctx.output((0, N), "bfloat16"), 0)
    return fn


def tests():
    N, K = KERNELS["linear_4096x4096"]
    for m in MS:
        yield C.Test("gemm_dynamic_m", "linear_4096x4096", check(N, K, m), label="m%d" % m, graph=m == 1000)
    yield C.Test("gemm_dynamic_m", "linear_4096x4096", empty(N, K), label="m0")
    N, K = KERNELS["linear_small"]
    for m in (1, 37, 300):
        yield C.Test("gemm_dynamic_m", "linear_small", check(N, K, m), label="m%d" % m, small=True)


def make(m, N, K):
    def fn(ctx, k):
        t = C.torch()
        x, w = R.gemm_inputs(ctx, m, N, K, "bfloat16", trans_B=True)
        y = ctx.output((m, N), "bfloat16")
        ref = t.empty((m, N), dtype=t.bfloat16, device="cuda")
        return (x, w, y, m), [y], lambda: t.matmul(x, w.t(), out=ref)
    return fn


def benches():
    N, K = KERNELS["linear_4096x4096"]
    for m in (4096, 128):
        yield C.Bench("gemm_dynamic_m", "linear_4096x4096", make(m, N, K), nbytes=2 * (m * K + N * K + m * N),
                      shape="m=%d %dx%d bf16" % (m, N, K), torch_name="torch.matmul (cuBLAS)",
                      flops=R.gemm_flops(m, N, K), variants=True, label="m%d" % m)
