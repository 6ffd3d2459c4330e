"""float32 GEMM computed as tf32 by the tensor cores (mma.sync m16n8k8), in the transpose combinations
(tests/gpu/gemm_tf32.tile): 32-bit operands that are not K-major cannot use ldmatrix.

GEMM rule of docs/INTERFACE.md with u = 2^-11 (tf32 operands) and u_out = 2^-24 (float32 output):
|C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|, R in float64 from the float32 inputs."""
import core as C
import refs as R

KERNELS = {"tf32_nn": (1024, 1024, 1024, False, False), "tf32_nt": (1024, 1024, 1024, False, True),
           "tf32_tn": (1024, 1024, 1024, True, False), "tf32_nn_odd": (777, 1999, 515, False, False),
           "tf32_nt_odd": (1000, 1000, 1000, False, True), "tf32_small": (136, 200, 36, False, False)}


def tests():
    for k, (M, N, K, ta, tb) in KERNELS.items():
        yield C.Test("gemm_tf32", k, R.gemm_test(M, N, K, "float32", "float32", trans_A=ta, trans_B=tb),
                     small=k.endswith("_small"))
