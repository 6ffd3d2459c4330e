"""float16 GEMMs whose sizes the tiles do not divide (tests/gpu/gemm_odd.tile): M, N, K = 1000, and
777 x 1999 x 515 (rows of 515 and 1999 halves: no 16-byte copies), with float16 and float32 output and with
64 x 64 x 64 tiles; gemm_small_odd (33 x 40 x 48 in 32 x 32 x 32 tiles) has a row tile holding one row and
fewer k-tiles than stages.

GEMM rule of docs/INTERFACE.md with u = 2^-11 (float16 operands), u_out = 2^-11 (float16 out) or 2^-24 (float32
out): |C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|, R in float64.

gemm_1000 also runs with C one element past a 16-byte boundary: a TMA store cannot take such a C, so the
launcher runs the cp.async variant (stores from registers) instead of the TMA-store epilogue on sm_90a."""
import core as C
import refs as R

KERNELS = {"gemm_1000": (1000, 1000, 1000, "float16"), "gemm_777": (777, 1999, 515, "float16"),
           "gemm_777_f32": (777, 1999, 515, "float32"), "gemm_777_k64": (777, 1999, 515, "float16"),
           "gemm_small_odd": (33, 40, 48, "float16")}


def misaligned_c(M, N, K):
    def fn(ctx, k):
        t = C.torch()
        a, b = R.gemm_inputs(ctx, M, N, K, "float16")
        # Two elements in: 4-byte aligned (what the stores from registers need, docs/INTERFACE.md's header
        # comment says so) but not 16 (TMA's rule), so the launcher must take the cp.async variant.
        whole = ctx.output((M * N + 2,), "float16")
        c = whole[2:].view(M, N)
        ctx.outputs[c.data_ptr()] = (c,) + ctx.outputs[whole.data_ptr()][1:]
        ctx.call(k, a, b, c)
        if any(int(v) != -1 for v in whole[:2].view(t.int16)):
            raise C.Fail("an element before C was written")
        ref, S = R.gemm_reference(a, b, False, False, need_abs=True)
        return R.judge_gemm(ctx, c, ref, S, "float16", "float16") + ", C at %d bytes past 16-byte alignment" % (
            c.data_ptr() % 16)
    return fn


def tests():
    for k, (M, N, K, out) in KERNELS.items():
        yield C.Test("gemm_odd", k, R.gemm_test(M, N, K, "float16", out), small=k == "gemm_small_odd",
                     graph=k == "gemm_777")
    yield C.Test("gemm_odd", "gemm_1000", misaligned_c(1000, 1000, 1000), label="misaligned_c")
