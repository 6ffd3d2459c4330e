"""C = A @ B in float16 with float32 accumulation, written with TileLang's explicit warp roles
(tests/gpu/gemm_warp_roles.tile: T.ws blocks, T.alloc_barrier mbarriers, T.tma_copy; sm_90a only).

GEMM rule of docs/INTERFACE.md, every element: |C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|, u = u_out = 2^-11,
R in float64. ws_gemm_1024: one tile per operand, producer T.ws(1) (TileLang's copy_1_gemm_0 and
softpipe_stage2); ws_gemm_producer_0: the producer is T.ws(0) (copy_0_gemm_1); ws_ring_gemm_1024: a ring of two
stages with full and empty barriers (barrierpipe_stage2); tx_prologue_gemm_*: the roles as branches on the thread
index (`if tx < 128:` / `elif`) after code both roles need (a shared table of K offsets the producer's TMA
positions read, handed over through tilec's prologue_done mbarrier). The _odd kernels (gpu/examples.txt) leave partial
tiles in every dimension (TMA fills the outside with zeros). Every variant of such a kernel loads by TMA, so an A
that TMA cannot read (2 bytes past 16-byte alignment) must be refused with TILEC_ERROR_MISALIGNED, nothing
written, not launched and not reported as "no device code"."""
import core as C
import refs as R

SHAPES = {"ws_gemm_1024": (1024, 1024, 1024), "ws_gemm_producer_0": (1024, 1024, 1024),
          "ws_ring_gemm_1024": (1024, 1024, 1024), "ws_gemm_odd": (1000, 1000, 1000),
          "ws_ring_gemm_odd": (1000, 1000, 1000), "tx_prologue_gemm_1024": (1024, 1024, 1024),
          "tx_prologue_gemm_odd": (1000, 1000, 1000)}


def misaligned_a(M, N, K):
    def fn(ctx, k):
        a, b = R.gemm_inputs(ctx, M, N, K, "float16")
        a = C.torch().cat([a.flatten()[:1], a.flatten()])[1:].view(M, K)
        c = ctx.output((M, N), "float16")
        status = ctx.call_status(k, a, b, c)
        C.torch().cuda.synchronize()
        if status != 2:
            raise C.Fail("status %d (%s), expected TILEC_ERROR_MISALIGNED" % (status, ctx.lib.status_string(status)))
        if not bool(c.isnan().all()):
            raise C.Fail("a refused launch wrote C")
        return "A at %d bytes past 16: %s, nothing written" % (a.data_ptr() % 16, ctx.lib.status_string(status))
    return fn


def tests():
    for k, (M, N, K) in SHAPES.items():
        yield C.Test("gemm_warp_roles", k, R.gemm_test(M, N, K, "float16", "float16"), graph=k == "ws_gemm_odd")
    yield C.Test("gemm_warp_roles", "ws_gemm_1024", misaligned_a(1024, 1024, 1024), label="misaligned_a")
