"""What only the hand-written library has: a kernel with run-time sizes (int64_t m, n as a T.dynamic kernel
gets them), empty and one-element shapes, a misaligned tensor, and a rejected size. They prove that the
harness passes int64 arguments and judges statuses right, which the generated kernels of later issues need."""
import core as C


def dyn(M, N, misalign=False):
    def fn(ctx, k):
        t = C.torch()
        a, b = ctx.randn((M, N), "float16"), ctx.randn((M, N), "float16")
        c = ctx.output((M, N), "float16")
        if M * N == 0:   # torch gives empty tensors a null data pointer; an empty view of real memory has none
            a, b = ctx.randn((8,), "float16")[:0].view(M, N), ctx.randn((8,), "float16")[:0].view(M, N)
        if misalign:   # views 1 element into a bigger buffer: 2-byte aligned pointers
            a = t.cat([ctx.randn((1,), "float16"), a.flatten()])[1:].view(M, N)
            b = t.cat([ctx.randn((1,), "float16"), b.flatten()])[1:].view(M, N)
        if M * N == 0:
            # torch gives empty tensors null pointers; the launcher may reject them (as generated launchers
            # reject sizes below 1) or accept the empty launch, but must not crash or write anything
            status = ctx.call_status(k, a, b, c, M, N)
            C.torch().cuda.synchronize()
            return "empty: status %d (%s), nothing written" % (status, ctx.lib.status_string(status))
        ctx.call(k, a, b, c, M, N)
        return ctx.expect_ulp(c, a.double() + b.double(), "float16", ulps=2)
    return fn


def negative(ctx, k):
    a, b = ctx.randn((4, 4), "float16"), ctx.randn((4, 4), "float16")
    c = ctx.output((4, 4), "float16")
    status = ctx.call_status(k, a, b, c, -1, 4)
    if status == 0:
        raise C.Fail("m = -1 was accepted")
    C.torch().cuda.synchronize()
    if not bool(c.float().isnan().all()):
        raise C.Fail("a rejected call wrote its output")
    return "m = -1 rejected: %s" % ctx.lib.status_string(status)


def tests():
    yield C.Test("hand_add", "add_dyn", dyn(1000, 3000), small=True, label="1000x3000", variants=False)
    yield C.Test("hand_add", "add_dyn", dyn(1, 1), label="1x1", variants=False)
    yield C.Test("hand_add", "add_dyn", dyn(3, 8197), label="3x8197", variants=False)
    yield C.Test("hand_add", "add_dyn", dyn(0, 5), label="0x5", variants=False)
    yield C.Test("hand_add", "add_dyn", dyn(77, 1001, misalign=True), label="misaligned", variants=False)
    yield C.Test("hand_add", "add_dyn", negative, label="bad-size", variants=False)
