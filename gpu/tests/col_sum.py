"""S[j] = sum_i A[i, j]: float16 in, float32 out (examples/col_sum.tile), a reduction along dim 0 that
accumulates tile after tile (reduce_sum with clear=False) and relies on zero-filled loads past the last row.

Bound per column, R the float64 sum of the float16 inputs:
  |S - R| <= 2 ulp_f32(R) + gamma_M * sum_i |A[i, j]|,   gamma_M = M u / (1 - M u), u = 2^-24
(Higham: any order of float32 summation of M terms, relative to the sum of magnitudes)."""
import core as C
import numerics as Nm

SHAPES = {"col_sum_4096": (4096, 4096), "col_sum_odd": (1000, 3000)}


def check(M, N):
    def fn(ctx, k):
        a = ctx.randn((M, N), "float16")
        s = ctx.output((N,), "float32")
        ctx.call(k, a, s)
        a64 = a.double()
        return ctx.expect_bound(s, a64.sum(dim=0), "float32", ulps=2,
                                extra=Nm.gamma(M) * a64.abs().sum(dim=0), what="2 ulp + gamma_M sum|a|")
    return fn


def tests():
    yield C.Test("col_sum", "col_sum_4096", check(*SHAPES["col_sum_4096"]), graph=True)
    yield C.Test("col_sum", "col_sum_odd", check(*SHAPES["col_sum_odd"]), small=True)


def make(M, N):
    def fn(ctx, k):
        t = C.torch()
        a = ctx.randn((M, N), "float16")
        s = ctx.output((N,), "float32")
        return (a, s), [s], lambda: a.sum(dim=0, dtype=t.float32)
    return fn


def benches():
    M, N = SHAPES["col_sum_4096"]
    yield C.Bench("col_sum", "col_sum_4096", make(M, N), nbytes=2 * M * N + 4 * N, shape="4096x4096 f16",
                  torch_name="sum(dim=0)")
