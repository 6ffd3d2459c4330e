"""Y = X * rsqrt(mean(X^2) + eps) * W in bfloat16 (examples/rms_norm.tile), float32 inside.

Bound per element, R the float64 result of the bfloat16 inputs:
  |Y - R| <= 2 ulp_bf16(R) + (N + 16) * 2^-24 * |R|
the second term bounds the float32 rounding before the final conversion: the sum of N squares (gamma_N,
any summation order), the rsqrt and the two products (16 units of float32 roundoff is generous for those)."""
import core as C
import numerics as Nm

EPS = 1e-6
SHAPES = {"rms_norm_4096": (8192, 4096), "rms_norm_odd": (37, 1000)}   # rms_norm_odd: added by prepare.sh


def reference(x, w):
    t = C.torch()
    x64 = x.double()
    return x64 * t.rsqrt((x64 * x64).mean(dim=1, keepdim=True) + EPS) * w.double()


def check(M, N):
    def fn(ctx, k):
        x, w = ctx.randn((M, N), "bfloat16"), ctx.randn((N,), "bfloat16")
        y = ctx.output((M, N), "bfloat16")
        ctx.call(k, x, w, y)
        r = reference(x, w)
        return ctx.expect_bound(y, r, "bfloat16", ulps=2, extra=(N + 16) * Nm.U_F32 * r.abs(),
                                what="2 ulp + (N+16) u_f32 |R|")
    return fn


def tests():
    yield C.Test("rms_norm", "rms_norm_4096", check(*SHAPES["rms_norm_4096"]), graph=True)
    yield C.Test("rms_norm", "rms_norm_odd", check(*SHAPES["rms_norm_odd"]), small=True)


def make(M, N):
    def fn(ctx, k):
        t = C.torch()
        x, w = ctx.randn((M, N), "bfloat16"), ctx.randn((N,), "bfloat16")
        y = ctx.output((M, N), "bfloat16")
        return (x, w, y), [y], lambda: t.nn.functional.rms_norm(x, (N,), w, EPS)
    return fn


def benches():
    M, N = SHAPES["rms_norm_4096"]
    yield C.Bench("rms_norm", "rms_norm_4096", make(M, N), nbytes=2 * (2 * M * N + N), shape="8192x4096 bf16",
                  bar=0.85, torch_name="F.rms_norm")
