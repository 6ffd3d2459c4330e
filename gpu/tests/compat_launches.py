"""TileLang patterns (tests/gpu/compat_launches.tile): a prim_func of two launches sharing a T.alloc_global
workspace that the launch function allocates stream-ordered, read through a view of a tensor's data; and
TileLang's convolution example through T.im2col and views of the filter and output.

norms_odd: Out[i] = sqrt(sum_j A[i, j]^2), float32. R the float64 value: the float32 sum of n positive terms
is within gamma_n of the exact one (Higham), the square root halves that, plus 2 ulp of the output:
  |Out - R| <= 2 ulp_f32(R) + gamma_n R.
conv_*: a GEMM of the im2col matrix and the filter viewed as (KH*KW*C, F), so docs/INTERFACE.md's GEMM rule with
u = 2^-11 (float16 operands and output), the sums of |a b| from the float64 convolution of |data| and |filter|."""
import core as C
import numerics as Nm
import refs as R

CONVS = {"conv_example": (128, 128, 64, 64, 128, 3, 1, 1, 1), "conv_odd": (3, 24, 17, 19, 40, 3, 2, 2, 2)}


def norms(n, splits, width):
    def fn(ctx, k):
        a = ctx.randn((n, splits, width), "float32")
        out = ctx.output((n,), "float32")
        ctx.call(k, a, out)
        ref = (a.double() ** 2).sum(dim=(1, 2)).sqrt()
        return ctx.expect_bound(out, ref, "float32", ulps=2, extra=Nm.gamma(splits * width) * ref,
                                what="2 ulp + gamma_n R")
    return fn


def conv(N, Cin, H, W, F, K, S, D, P):
    def fn(ctx, k):
        t = C.torch()
        data = ctx.randn((N, H, W, Cin), "float16")
        filt = ctx.randn((K, K, Cin, F), "float16")
        OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
        OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
        out = ctx.output((N, OH, OW, F), "float16")
        ctx.call(k, data, filt, out)
        x, w = data.double().permute(0, 3, 1, 2), filt.double().permute(3, 2, 0, 1)
        conv2d = t.nn.functional.conv2d
        ref = conv2d(x, w, stride=S, padding=P, dilation=D).permute(0, 2, 3, 1)
        mag = conv2d(x.abs(), w.abs(), stride=S, padding=P, dilation=D).permute(0, 2, 3, 1)
        return R.judge_gemm(ctx, out, ref, mag, "float16", "float16")
    return fn


def tests():
    yield C.Test("compat_launches", "norms_odd", norms(1000, 3, 32), small=True, graph=True)
    for name, shape in CONVS.items():
        yield C.Test("compat_launches", name, conv(*shape), small=name == "conv_odd")
