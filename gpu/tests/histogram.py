"""H[X[i]] += 1 with T.atomic_add over int32 data (examples/histogram.tile). The kernel accumulates into H,
so H is not poisoned but starts from random counts: the test checks H = H0 + bincount(X) exactly, which also
catches a kernel that stores instead of adding. Lengths the block does not divide are part of the suite."""
import core as C

SHAPES = {"hist_1m": (1 << 20, 256), "hist_odd": (100003, 1000)}


def check(n, bins):
    def fn(ctx, k):
        t = C.torch()
        x = ctx.randint((n,), 0, bins)
        h0 = ctx.randint((bins,), 0, 1000)
        h = ctx.output((bins,), "int32", init=h0)
        ctx.call(k, x, h)
        return ctx.expect_equal(h, h0 + t.bincount(x, minlength=bins).to(t.int32))
    return fn


def tests():
    yield C.Test("histogram", "hist_1m", check(*SHAPES["hist_1m"]))
    yield C.Test("histogram", "hist_odd", check(*SHAPES["hist_odd"]), small=True, graph=True)


def make(n, bins):
    def fn(ctx, k):
        t = C.torch()
        x = ctx.randint((n,), 0, bins)
        h = ctx.output((bins,), "int32", init=t.zeros(bins, dtype=t.int32, device="cuda"))
        return (x, h), [h], lambda: t.bincount(x, minlength=bins)
    return fn


def benches():
    n, bins = 1 << 24, 256
    yield C.Bench("histogram", "hist_16m", make(n, bins), nbytes=4 * n + 4 * bins, shape="16M int32, 256 bins",
                  torch_name="torch.bincount")
