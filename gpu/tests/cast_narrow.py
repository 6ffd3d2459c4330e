"""Y = float16(X) and Y = bfloat16(X) from float32 (tests/gpu/cast_narrow.tile), in pairs of lanes.

Judged bit for bit against PyTorch's conversion (round to nearest even, as CUDA's __float2half_rn and
__float2bfloat16_rn): converting two elements by one instruction must round each exactly as converting it
alone does. NaN must stay NaN (its payload is not compared). The inputs cover every rounding case of both
formats: random magnitudes from 2^-30 (below float16's subnormals) to 2^20 (past its 65504), values exactly
halfway between two neighbours of the format (ties to even, both ways), and the specials +-0, +-inf, NaN,
65504, 65519.996 (the largest float rounding down to 65504) and 65520 (rounds to inf)."""
import math

import core as C

SHAPE = (1000, 3000)
KERNELS = {"float16": ("half_direct", "half_staged"), "bfloat16": ("bf16_direct", "bf16_staged")}


def inputs(ctx, dtype, M, N):
    t = C.torch()
    x = ctx.randn((M, N), "float32")
    x = x * t.pow(2.0, (t.arange(M, device="cuda") % 51 - 30).float()).unsqueeze(1)   # 2^-30 .. 2^20 by row
    # Every third column of the first half of the rows: the midpoint of x's rounding and the next code up in
    # magnitude (the raw 16-bit pattern plus one, for either sign), exact in float32; ties to even go up or
    # down with the parity of the rounding. Where that neighbour is inf or NaN, x stays as it was.
    td = C.N.torch_dtype(t, dtype)
    lo = x.to(td)
    code = lo.view(t.int16).to(t.int32) + 1
    code = t.where(code >= 32768, code - 65536, code)
    neighbour = code.to(t.int16).view(td).float()
    tie = (lo.float() + neighbour) / 2
    pick = t.zeros((M, N), dtype=t.bool, device="cuda")
    pick[: M // 2, ::3] = True
    x = t.where(pick & t.isfinite(neighbour) & t.isfinite(tie), tie, x)
    special = [0.0, -0.0, math.inf, -math.inf, math.nan, 65504.0, 65519.996, 65520.0, -65520.0, 2.0 ** -24,
               2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -14, 3.0e38, -3.4e38]
    x[0, :len(special)] = t.tensor(special, dtype=t.float32, device="cuda")
    return x


def check(dtype, M, N):
    def fn(ctx, k):
        t = C.torch()
        x = inputs(ctx, dtype, M, N)
        y = ctx.output((M, N), dtype)
        ctx.call(k, x, y)
        ref = x.to(C.N.torch_dtype(t, dtype))
        nan = ref.isnan()
        if bool((y.isnan() != nan).any()):
            raise C.Fail("NaN where the reference has none, or a number where it has NaN")
        bad = (y.view(t.int16) != ref.view(t.int16)) & ~nan
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0])
            raise C.Fail("%d of %d elements differ from the round-to-nearest-even conversion; first at %s: "
                         "x = %r (0x%08x) gave 0x%04x, want 0x%04x"
                         % (int(bad.sum()), y.numel(), idx, float(x[idx]), int(x.view(t.int32)[idx]) & 0xFFFFFFFF,
                            int(y.view(t.int16)[idx]) & 0xFFFF, int(ref.view(t.int16)[idx]) & 0xFFFF))
        return "bit-exact"
    return fn


def check_exp2(M, N):
    """Y = float16(exp2(X)) with ex2.approx.ftz against W = exp2f(X) (the same kernel's float) rounded by
    PyTorch: equal bit for bit, over arguments from far below -149 (results below float's subnormals) through
    float16's subnormal and normal results to past its overflow, and the specials."""
    def fn(ctx, k):
        t = C.torch()
        x = ctx.randn((M, N), "float32") * 60 - 90
        special = [0.0, -0.0, math.inf, -math.inf, math.nan, -126.0, -126.5, -127.0, -149.0, -150.0, -24.0,
                   -25.0, -24.5, 15.99, 16.0, 17.0, -1e-45]
        x[0, :len(special)] = t.tensor(special, dtype=t.float32, device="cuda")
        w = ctx.output((M, N), "float32")
        y = ctx.output((M, N), "float16")
        ctx.call(k, x, w, y)
        ref = w.to(t.float16)
        nan = ref.isnan()
        bad = ((y.view(t.int16) != ref.view(t.int16)) & ~nan) | (y.isnan() != nan)
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0])
            raise C.Fail("%d of %d elements differ from float16(exp2f(x)); first at %s: x = %r gave 0x%04x, want 0x%04x"
                         % (int(bad.sum()), y.numel(), idx, float(x[idx]), int(y.view(t.int16)[idx]) & 0xFFFF,
                            int(ref.view(t.int16)[idx]) & 0xFFFF))
        return "bit-exact"
    return fn


def tests():
    for dtype, names in KERNELS.items():
        for name in names:
            yield C.Test("cast_narrow", name, check(dtype, *SHAPE), small=True)
    yield C.Test("cast_narrow", "exp2_half", check_exp2(*SHAPE), small=True)
