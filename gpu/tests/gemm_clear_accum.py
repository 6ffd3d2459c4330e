"""T.gemm(..., clear_accum=True) (tests/gpu/gemm_clear_accum.tile).

clear_tiles*: each k-tile's product goes to a fragment with clear_accum=True and is added to the
accumulator by hand, so a clear that is lost counts earlier tiles again (an error of the size of R itself);
float32 output. clear_one*: the whole K in one tile, clear_accum=True and no T.clear; float16 output.
GEMM rule of docs/INTERFACE.md with u = 2^-11 (float16 operands), u_out of the output:
|C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|, R in float64."""
import core as C
import refs as R

KERNELS = {"clear_tiles": (1024, 1024, 1024, "float32"), "clear_tiles_odd": (1000, 777, 515, "float32"),
           "clear_one": (1024, 1024, 64, "float16"), "clear_one_odd": (1000, 999, 48, "float16")}


def tests():
    for k, (M, N, K, out) in KERNELS.items():
        yield C.Test("gemm_clear_accum", k, R.gemm_test(M, N, K, "float16", out), small=k == "clear_one_odd")
