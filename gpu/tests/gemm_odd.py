"""float16 GEMMs whose sizes the tiles do not divide (tests/gpu/gemm_odd.tile): M, N, K = 1000, and
777 x 1999 x 515 (rows of 515 and 1999 halves: no 16-byte copies), with float16 and float32 output and with
64 x 64 x 64 tiles; gemm_small_odd (33 x 40 x 48 in 32 x 32 x 32 tiles) has a row tile holding one row and
fewer k-tiles than stages.

GEMM rule of CONTRACT.md with u = 2^-11 (float16 operands), u_out = 2^-11 (float16 out) or 2^-24 (float32
out): |C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|, R in float64."""
import core as C
import refs as R

KERNELS = {"gemm_1000": (1000, 1000, 1000, "float16"), "gemm_777": (777, 1999, 515, "float16"),
           "gemm_777_f32": (777, 1999, 515, "float32"), "gemm_777_k64": (777, 1999, 515, "float16"),
           "gemm_small_odd": (33, 40, 48, "float16")}


def tests():
    for k, (M, N, K, out) in KERNELS.items():
        yield C.Test("gemm_odd", k, R.gemm_test(M, N, K, "float16", out), small=k == "gemm_small_odd",
                     graph=k == "gemm_777")
