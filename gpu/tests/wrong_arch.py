"""A .cu that tilec lowered for sm_90a alone, compiled by the user's nvcc for compute_80 (run.sh builds
elementwise_add_wrongarch.sm80 so, as gpu/examples.txt's `wrongarch` directive asks): the kernel body's Hopper
instructions (cp.async.bulk stores) compiled to nothing there, yet the sm_90 SASS that compute_80 PTX becomes runs
on an H100. The launcher must see it (tilec_prepare: the PTX the runtime loaded is older than the variant's target)
and answer TILEC_ERROR_NO_DEVICE_CODE without launching, leaving the poisoned output untouched; before session 40
a kernel of one variant launched and returned success with its stores missing."""
import core as C

LIB = "elementwise_add_wrongarch.sm80"
NO_DEVICE_CODE = 6


def refused(M, N):
    def fn(ctx, k):
        a, b = ctx.randn((M, N), "float16"), ctx.randn((M, N), "float16")
        c = ctx.output((M, N), "float16")
        status = ctx.call_status(k, a, b, c)
        C.torch().cuda.synchronize()
        if status != NO_DEVICE_CODE:
            raise C.Fail("status %d (%s), not TILEC_ERROR_NO_DEVICE_CODE" % (status, ctx.lib.status_string(status)))
        if not bool(c.float().isnan().all()):
            raise C.Fail("the refused call wrote its output")
        return "refused: %s, nothing written" % ctx.lib.status_string(status)
    return fn


def tests():
    yield C.Test(LIB, "add_odd", refused(1000, 3000), small=True, variants=False)
    yield C.Test(LIB, "add_8192", refused(8192, 8192), variants=False)
