"""2:4 structured-sparse GEMM, C = A @ B or A @ B^T in float32 (tests/gpu/gemm_sp.tile: T.gemm_sp on wgmma.mma_async.sp
m64nNk32 on sm_90a, mma.sp m16n8k32 elsewhere; gemm_sp_wide: 128x256 tiles over two
warpgroups).

A is made 2:4 sparse along K (in each group of 4, two positions drawn at random are kept, so the metadata takes
every ordered pair), compressed as TileLang's examples/gemm_sp/sparse_utils.py compress does
(tlcompat_refs_chunk.compress_2to4: the kept values in K order, a nibble p0 | p1 << 2 per group, four to an int16),
and the kernel's product judged against the float64 product of the dense A by the GEMM rule of docs/INTERFACE.md:
|C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|. M = N = 1000 leave partial tiles (rows of A, E and C past the end)."""
import core as C
import refs as R
from tlcompat_refs_chunk import compress_2to4

KERNELS = {"gemm_sp_f16": (2048, 1536, 1024, "float16", False), "gemm_sp_bf16_nt": (1024, 1024, 2048, "bfloat16", True),
           "gemm_sp_odd": (1000, 1000, 1024, "float16", False), "gemm_sp_small": (136, 200, 128, "float16", False),
           "gemm_sp_wide": (2048, 2048, 1024, "float16", False)}


def sparse_test(M, N, K, dtype, trans_B):
    def fn(ctx, k):
        t = C.torch()
        a, b = R.gemm_inputs(ctx, M, N, K, dtype, False, trans_B)
        keep = t.rand((M, K // 4, 4), generator=ctx.gen, device="cuda").argsort(-1)[..., :2]
        mask = t.zeros((M, K // 4, 4), dtype=t.bool, device="cuda").scatter_(-1, keep, True).view(M, K)
        a = t.where(mask & (a != 0), a, t.zeros_like(a))
        a = t.where(mask & (a == 0), t.ones_like(a), a)  # randn's rare exact zeros kept as ones: two kept per group
        values, meta = compress_2to4(a)
        c = ctx.output((M, N), "float32")
        ctx.call(k, values.contiguous(), meta.contiguous(), b, c)
        ref, S = R.gemm_reference(a, b, False, trans_B)
        return R.judge_gemm(ctx, c, ref, S, dtype, "float32")
    return fn


def tests():
    for k, (M, N, K, dtype, tb) in KERNELS.items():
        yield C.Test("gemm_sp", k, sparse_test(M, N, K, dtype, tb), small=k.endswith("_small"))
