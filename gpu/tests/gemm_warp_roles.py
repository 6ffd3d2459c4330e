"""C = A @ B in float16 with float32 accumulation, written with TileLang's explicit warp roles
(tests/gpu/gemm_warp_roles.tile: T.ws blocks, T.alloc_barrier mbarriers, T.tma_copy; sm_90a only).

GEMM rule of CONTRACT.md, every element: |C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|, u = u_out = 2^-11,
R in float64. ws_gemm_1024: one tile per operand, producer T.ws(1) (TileLang's copy_1_gemm_0 and
softpipe_stage2); ws_gemm_producer_0: the producer is T.ws(0) (copy_0_gemm_1); ws_ring_gemm_1024: a ring of two
stages with full and empty barriers (barrierpipe_stage2). The _odd kernels (gpu/examples.txt) leave partial
tiles in every dimension (TMA fills the outside with zeros)."""
import core as C
import refs as R

SHAPES = {"ws_gemm_1024": (1024, 1024, 1024), "ws_gemm_producer_0": (1024, 1024, 1024),
          "ws_ring_gemm_1024": (1024, 1024, 1024), "ws_gemm_odd": (1000, 1000, 1000),
          "ws_ring_gemm_odd": (1000, 1000, 1000)}


def tests():
    for k, (M, N, K) in SHAPES.items():
        yield C.Test("gemm_warp_roles", k, R.gemm_test(M, N, K, "float16", "float16"), graph=k == "ws_gemm_odd")
