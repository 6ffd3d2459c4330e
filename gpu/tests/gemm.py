"""C = A @ B in float16 with float32 accumulation (examples/gemm.tile: 128 x 128 x 64 tiles, 3 stages).

GEMM rule of docs/INTERFACE.md, every element: |C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|, u = u_out = 2^-11
(float16 operands and output), R in float64 (gpu/refs.py derives it). gemm_odd (1000^3) and gemm_777
(777 x 1999 x 515: rows not 16-byte aligned) leave partial tiles in every dimension; gemm_small has fewer
k-tiles (2) than stages (3), gemm_one_k a single one: the pipeline's prologue and epilogue alone. The extra
kernels come from gpu/examples.txt; gemm_4096_wg2 (sm_90a only) is the seed's tile over two consumer warpgroups
(threads=256), timed beside gemm_4096 (one warpgroup, two blocks per SM) as the A/B of that split."""
import core as C
import refs as R

SHAPES = {"gemm": (1024, 1024, 1024), "gemm_4096": (4096, 4096, 4096), "gemm_odd": (1000, 1000, 1000),
          "gemm_777": (777, 1999, 515), "gemm_small": (256, 256, 128), "gemm_one_k": (128, 256, 64),
          "gemm_4096_wg2": (4096, 4096, 4096)}


def tests():
    for k, (M, N, K) in SHAPES.items():
        yield C.Test("gemm", k, R.gemm_test(M, N, K, "float16", "float16"),
                     small=k in ("gemm_small", "gemm_one_k"), graph=k == "gemm_odd")


def benches():
    for k in ("gemm_4096", "gemm_4096_wg2"):
        M, N, K = SHAPES[k]
        yield C.Bench("gemm", k, R.gemm_bench(M, N, K), nbytes=2 * (M * K + K * N + M * N),
                      shape="%dx%dx%d f16" % (M, N, K), torch_name="torch.matmul (cuBLAS)",
                      flops=R.gemm_flops(M, N, K), variants=k == "gemm_4096")
