"""Kernels over tensors of 2.1 to 4.3 G elements (tests/gpu/index_width.tile, issue 23): every element of the
output right, and the input unchanged (a 32-bit index that wraps reads or writes the wrong element: in the
held-out run that found the class, it overwrote 2.09 M elements of the input and returned TILEC_SUCCESS).
Inputs are random; the check compares with PyTorch's own element-wise result. The input's bytes are hashed
before and after the call (no second copy of 4 GB)."""
import core as C

FLAT = 2**31 + 4096


def digest(t, x):
    """An order-dependent checksum of x's bytes, in int64 (sums of position-weighted bytes)."""
    b = x.view(t.uint8).reshape(-1)
    n = b.numel()
    total = 0
    step = 1 << 28
    for s in range(0, n, step):
        chunk = b[s:s + step].to(t.int64)
        w = t.arange(s, s + chunk.numel(), device="cuda", dtype=t.int64) % 1000003 + 1
        total += int((chunk * w).sum())
    return total


def check(name, shape, dtype, dyn=None):
    def fn(ctx, k):
        t = C.torch()
        if dtype == "int8":
            a = ctx.randint(shape, -128, 128, "int8")
        else:
            a = ctx.randn(shape, dtype)
        before = digest(t, a)
        b = ctx.output(shape, dtype)
        args = [a, b] + ([dyn] if dyn is not None else [])
        ctx.call(k, *args)
        if digest(t, a) != before:
            raise C.Fail("the input tensor changed")
        want = (a + 1) if name == "flat_int8" else (a * 2)
        bad = (b != want)
        if bool(bad.any()):
            first = int(bad.reshape(-1).nonzero()[0])
            raise C.Fail("%d of %d elements wrong; first at flat index %d" % (int(bad.sum()), b.numel(), first))
        return "%d elements right, input unchanged" % b.numel()
    return fn


def tests():
    yield C.Test("index_width", "flat_int8", check("flat_int8", (FLAT,), "int8"))
    yield C.Test("index_width", "rows_int8", check("rows_int8", (2**20 + 64, 4096), "int8"))
    yield C.Test("index_width", "rows_half", check("rows_half", (2**20 + 64, 2048), "float16"))
    yield C.Test("index_width", "rows_dyn", check("rows_dyn", (2**20 + 64, 4096), "int8", dyn=2**20 + 64))
