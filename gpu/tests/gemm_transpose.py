"""float16 GEMM in every transpose combination (tests/gpu/gemm_transpose.tile): A stored (M, K) or (K, M),
B stored (K, N) or (N, K); C = op(A) @ op(B) in float16, float32 accumulation.

GEMM rule of docs/INTERFACE.md, u = u_out = 2^-11: |C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|, R in float64 from
the operands as stored (transposed there). Each combination runs at 1024 x 768 x 512 and at an odd size
(777 x 1999 x 515 or 1000^3); the *_small kernels are for the sanitizers."""
import core as C
import refs as R

KERNELS = {
    "gemm_nn": (1024, 768, 512, False, False), "gemm_nt": (1024, 768, 512, False, True),
    "gemm_tn": (1024, 768, 512, True, False), "gemm_tt": (1024, 768, 512, True, True),
    "gemm_nn_odd": (777, 1999, 515, False, False), "gemm_nt_odd": (777, 1999, 515, False, True),
    "gemm_tn_odd": (777, 1999, 515, True, False), "gemm_tt_odd": (1000, 1000, 1000, True, True),
    "gemm_nt_small": (200, 136, 72, False, True), "gemm_tn_small": (136, 200, 72, True, False),
}


def tests():
    for k, (M, N, K, ta, tb) in KERNELS.items():
        yield C.Test("gemm_transpose", k, R.gemm_test(M, N, K, "float16", "float16", trans_A=ta, trans_B=tb),
                     small=k.endswith("_small"))
