"""Y = softmax(X) along rows in float16 (examples/softmax.tile), float32 inside.

Bound per element, R the float64 softmax of the float16 inputs:
  |Y - R| <= 2 ulp_f16(R) + (N + 32) * 2^-24 * |R|
the second term bounds the float32 rounding before the final conversion: the row sum of N positive terms
(gamma_N relative to the sum), the exponential of an argument up to ~10 in magnitude with its own rounding,
and the division (32 units of float32 roundoff)."""
import core as C
import numerics as Nm

# softmax_small and softmax_odd are added by tools/gpu/prepare.sh (gpu/examples.txt)
SHAPES = {"softmax_4096": (4096, 4096), "softmax_1000": (4096, 1000), "softmax_small": (37, 1000),
          "softmax_odd": (64, 1001)}


def check(M, N):
    def fn(ctx, k):
        t = C.torch()
        x = ctx.randn((M, N), "float16", scale=2.0)
        y = ctx.output((M, N), "float16")
        ctx.call(k, x, y)
        r = t.softmax(x.double(), dim=1)
        return ctx.expect_bound(y, r, "float16", ulps=2, extra=(N + 32) * Nm.U_F32 * r,
                                what="2 ulp + (N+32) u_f32 |R|")
    return fn


def tests():
    yield C.Test("softmax", "softmax_4096", check(*SHAPES["softmax_4096"]), graph=True)
    yield C.Test("softmax", "softmax_1000", check(*SHAPES["softmax_1000"]))
    yield C.Test("softmax", "softmax_small", check(*SHAPES["softmax_small"]), small=True)
    yield C.Test("softmax", "softmax_odd", check(*SHAPES["softmax_odd"]), small=True)


def make(M, N):
    def fn(ctx, k):
        t = C.torch()
        x = ctx.randn((M, N), "float16", scale=2.0)
        y = ctx.output((M, N), "float16")
        return (x, y), [y], lambda: t.softmax(x, dim=1)
    return fn


def benches():
    for k, bar in (("softmax_4096", 0.85), ("softmax_1000", None)):
        M, N = SHAPES[k]
        yield C.Bench("softmax", k, make(M, N), nbytes=2 * 2 * M * N, shape="%dx%d f16" % (M, N), bar=bar,
                      torch_name="torch.softmax")
