"""T.gemm with an explicit warp policy (tests/gpu/gemm_policy.tile): Square, FullRow, FullCol over a
128 x 128 tile and 8 warps, at 1024^3 and odd sizes.

GEMM rule of docs/INTERFACE.md, u = u_out = 2^-11 (float16): |C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|."""
import core as C
import refs as R

KERNELS = {"gemm_square": (1024, 1024, 1024), "gemm_fullrow": (1024, 1024, 1024),
           "gemm_fullcol": (1024, 1024, 1024), "gemm_fullrow_odd": (1000, 1000, 1000),
           "gemm_fullcol_odd": (777, 1999, 515), "gemm_fullrow_small": (136, 200, 72)}


def tests():
    for k, (M, N, K) in KERNELS.items():
        yield C.Test("gemm_policy", k, R.gemm_test(M, N, K, "float16", "float16"), small=k.endswith("_small"))
