"""T.dynamic sizes of 0 (tests/gpu/zero_dims.tile, issue 23 item 2), on the sm_90a build (the TMA variant
first: maps of tensors with no elements read the zero tile) and on the sm_80 build (cp.async):

- K = 0 GEMMs return TILEC_SUCCESS and C = 0 exactly (an empty sum; PyTorch and cuBLAS give zeros), with A and
  B as null pointers (PyTorch's empty tensors) and as empty views at an odd address (a tensor with no
  elements is never accessed, so no alignment rule applies to it); K = 72 and 1024 beside them, judged by the
  GEMM rule of docs/INTERFACE.md. ws_gemm_k (explicit warp roles: TMA in every variant) is in the sm_90a
  build only.
- M = 0 and N = 0 GEMMs empty the grid: TILEC_SUCCESS, nothing launched, nothing written (ctx.expect_empty:
  the outputs' guard zones and poison untouched).
- A row reduction over 0 columns gives every row the identities, sum 0 and max -inf; over 256 columns the sums
  within the reduction rule and the maxima exact.
- An element-wise kernel over 0 elements: an empty batch, as above; over 5000 its exact doubling."""
import core as C
import refs as R

GEMMS = {"gemm_k": ("k", 1024, 1024, None), "gemm_m": ("m", None, 1024, 1024), "gemm_n": ("n", 1024, None, 1024)}


def gemm_zero_k(name, null):
    """K = 0: C = 0 exactly, every element (the poison is NaN)."""
    def fn(ctx, k):
        t = C.torch()
        M, N = 1024, 1024
        if null:
            a, b = ctx.randn((M, 0), "float16"), ctx.randn((0, N), "float16")
        else:                                        # views of real memory, 2 bytes past 16-byte alignment
            a, b = ctx.randn((M, 9), "float16")[:, 1:1], ctx.randn((9, N), "float16")[1:1]
        c = ctx.output((M, N), "float16")
        ctx.call(k, a, b, c, 0)
        detail = ctx.expect_equal(c, t.zeros((M, N), dtype=t.float16, device="cuda"))
        return "k = 0 (A and B %s): C = 0, %s" % ("null" if null else "empty views at odd addresses", detail)
    return fn


def gemm_empty(name):
    """M = 0 or N = 0: an empty batch."""
    def fn(ctx, k):
        size, M, N, K = GEMMS[name]
        M, N = M or 0, N or 0
        a = ctx.randn((max(M, 8), K), "float16")[:M]     # empty views of real memory: non-null pointers
        b = ctx.randn((K, max(N, 8)), "float16")[:, :N]
        return ctx.expect_empty(k, "%s = 0" % size, a, b, ctx.output((M, N), "float16"), 0)
    return fn


def gemm_sized(name, value):
    size, M, N, K = GEMMS[name]
    return R.gemm_test(M or value, N or value, K or value, "float16", "float16", scalars=(value,))


def rows(n):
    def fn(ctx, k):
        t = C.torch()
        M = 256
        a = ctx.randn((M, n), "float32")
        s, x = ctx.output((M,), "float32"), ctx.output((M,), "float32")
        ctx.call(k, a, s, x, n)
        if n == 0:
            ctx.expect_equal(s, t.zeros((M,), dtype=t.float32, device="cuda"))
            ctx.expect_equal(x, t.full((M,), float("-inf"), dtype=t.float32, device="cuda"))
            return "n = 0: every sum 0 and every max -inf"
        ref = a.double().sum(dim=1)
        # float32 sums of n terms: n u sum|a| bounds the accumulated rounding (u = 2^-24)
        extra = a.double().abs().sum(dim=1) * n * 2.0 ** -24
        detail = ctx.expect_bound(s, ref, "float32", ulps=1, extra=extra, what="n u sum|a|")
        return "n = %d: sums %s; maxima %s" % (n, detail, ctx.expect_equal(x, a.max(dim=1).values))
    return fn


def doubled(n):
    def fn(ctx, k):
        if n == 0:
            a = ctx.randn((8,), "float32")[:0]
            return ctx.expect_empty(k, "n = 0", a, ctx.output((0,), "float32"), 0)
        a = ctx.randn((n,), "float32")
        b = ctx.output((n,), "float32")
        ctx.call(k, a, b, n)
        return "n = %d: %s" % (n, ctx.expect_equal(b, a * 2))
    return fn


def tests():
    for null in (True, False):
        yield C.Test("zero_dims", "gemm_k", gemm_zero_k("gemm_k", null), label="k0_null" if null else "k0_views")
        yield C.Test("zero_dims", "ws_gemm_k", gemm_zero_k("ws_gemm_k", null), variants=False,
                     label="k0_null" if null else "k0_views")
    for v in (72, 1024):
        yield C.Test("zero_dims", "gemm_k", gemm_sized("gemm_k", v), label="k%d" % v)
        yield C.Test("zero_dims", "ws_gemm_k", gemm_sized("gemm_k", v), variants=False, label="k%d" % v)
    for name in ("gemm_m", "gemm_n"):
        size = GEMMS[name][0]
        yield C.Test("zero_dims", name, gemm_empty(name), label="%s0" % size)
        yield C.Test("zero_dims", name, gemm_sized(name, 200), label="%s200" % size)
    for n in (0, 256):
        yield C.Test("zero_dims", "rows", rows(n), label="n%d" % n, small=True)
    for n in (0, 5000):
        yield C.Test("zero_dims", "doubled", doubled(n), label="n%d" % n, small=True)
