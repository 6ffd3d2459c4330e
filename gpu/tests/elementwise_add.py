"""C = A + B in float16 (examples/elementwise_add.tile), run first on the hand-written library hand_add,
which implements the same C interface by hand and proves the harness before generated code is judged by it.
Element-wise rule: within 2 ulp of float16 (the sum is correctly rounded in practice: 0 ulp)."""
import core as C

LIBS = ("hand_add", "elementwise_add")


def check(M, N):
    def fn(ctx, k):
        a, b = ctx.randn((M, N), "float16"), ctx.randn((M, N), "float16")
        c = ctx.output((M, N), "float16")
        ctx.call(k, a, b, c)
        return ctx.expect_ulp(c, a.double() + b.double(), "float16", ulps=2)
    return fn


def tests():
    for lib in LIBS:
        yield C.Test(lib, "add_odd", check(1000, 3000), small=True, graph=True)   # tiles do not divide it
        yield C.Test(lib, "add_8192", check(8192, 8192))


def make(M, N):
    def fn(ctx, k):
        t = C.torch()
        a, b = ctx.randn((M, N), "float16"), ctx.randn((M, N), "float16")
        c, c_ref = ctx.output((M, N), "float16"), t.empty((M, N), dtype=t.float16, device="cuda")
        return (a, b, c), [c], lambda: t.add(a, b, out=c_ref)
    return fn


def benches():
    for lib in LIBS:
        yield C.Bench(lib, "add_8192", make(8192, 8192), nbytes=3 * 2 * 8192 * 8192, shape="8192x8192 f16",
                      bar=0.90, torch_name="torch.add")
