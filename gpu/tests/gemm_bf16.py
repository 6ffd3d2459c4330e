"""bfloat16 GEMM, C = A @ B or A @ B^T in bfloat16 with float32 accumulation (tests/gpu/gemm_bf16.tile).

GEMM rule of docs/INTERFACE.md with u = u_out = 2^-8 (bfloat16 operands and output):
|C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|, R in float64."""
import core as C
import refs as R

KERNELS = {"gemm_bf16": (2048, 1536, 1024, False), "gemm_bf16_nt": (2048, 1536, 1024, True),
           "gemm_bf16_odd": (1000, 1000, 1000, False), "gemm_bf16_odd2": (777, 1999, 515, True),
           "gemm_bf16_small": (136, 200, 72, False)}


def tests():
    for k, (M, N, K, tb) in KERNELS.items():
        yield C.Test("gemm_bf16", k, R.gemm_test(M, N, K, "bfloat16", "bfloat16", trans_B=tb),
                     small=k.endswith("_small"), graph=k == "gemm_bf16_odd")
