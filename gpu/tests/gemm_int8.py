"""int8 GEMM with int32 accumulation and output (tests/gpu/gemm_int8.tile): mma.sync m16n8k32.

Exact: every element equals the integer product (at most K * 128^2 in magnitude, far inside int32), inputs
uniform over -128..127. B both as (N, K) (the instruction's layout) and as (K, N) (a transposing load that
ldmatrix cannot do for 8-bit data); K = 1000 and 515 leave a partial k-tile that must read as zeros."""
import core as C
import refs as R

KERNELS = {"gemm_i8_nt": (1024, 1024, 1024, True), "gemm_i8_nn": (1024, 1024, 1024, False),
           "gemm_i8_odd": (1000, 1000, 1000, True), "gemm_i8_odd2": (777, 1999, 515, False),
           "gemm_i8_small": (136, 200, 72, True)}


def tests():
    for k, (M, N, K, tb) in KERNELS.items():
        yield C.Test("gemm_int8", k, R.gemm_test(M, N, K, "int8", "int32", trans_B=tb),
                     small=k.endswith("_small"), graph=k == "gemm_i8_odd")
