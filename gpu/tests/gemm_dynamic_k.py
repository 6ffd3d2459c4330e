"""C = A @ B in float16 with a reduction length K known only at run time (tests/gpu/gemm_dynamic_k.tile,
issue 12): the launcher runs the variant with 16-byte transfers of A's rows when K * 2 bytes is a multiple of
16 and A is 16-byte aligned (on sm_90a the TMA variant, whose rules are the same, comes first), else the
variant copying A element by element. Both are checked, every element, under docs/INTERFACE.md's GEMM rule:
K = 1024 and 1000 (wide), K = 1001, 515 and 7 (narrow: rows not a multiple of 8 halves), and K = 1024 with A
one element past a 16-byte boundary (narrow, from a misaligned pointer). gemm_dk_small (M = N = 256) is the
sanitizers' instantiation (gpu/examples.txt)."""
import core as C
import refs as R

KERNELS = {"gemm_dk": 1024, "gemm_dk_small": 256}


def inputs(ctx, M, N, K, offset):
    """A and B; with `offset`, A starts `offset` elements into a larger allocation (not 16-byte aligned)."""
    t = C.torch()
    a, b = R.gemm_inputs(ctx, M, N, K, "float16")
    if offset:
        view = t.empty((M * K + offset,), dtype=t.float16, device="cuda")[offset:].view(M, K)
        view.copy_(a)
        a = view
    return a, b


def check(M, N, K, offset=0):
    """kernel(A, B, C, K), every element judged."""
    def fn(ctx, k):
        a, b = inputs(ctx, M, N, K, offset)
        c = ctx.output((M, N), "float16")
        ctx.call(k, a, b, c, K)
        Rf, S = R.gemm_reference(a, b)
        where = "" if not offset else ", A at %d bytes past 16-byte alignment" % (a.data_ptr() % 16)
        return R.judge_gemm(ctx, c, Rf, S, "float16", "float16") + where
    return fn


def tests():
    for name, n in KERNELS.items():
        small = name.endswith("_small")
        ks = (1024, 1000, 1001, 515, 7) if not small else (256, 40, 37)
        for K in ks:
            yield C.Test("gemm_dynamic_k", name, check(n, n, K), label="k%d" % K, small=small)
        yield C.Test("gemm_dynamic_k", name, check(n, n, 1024 if not small else 256, offset=1),
                     label="misaligned", small=small)


def make(M, N, K, offset=0):
    def fn(ctx, k):
        t = C.torch()
        a, b = inputs(ctx, M, N, K, offset)
        c = ctx.output((M, N), "float16")
        ref = t.empty((M, N), dtype=t.float16, device="cuda")
        return (a, b, c, K), [c], lambda: t.matmul(a, b, out=ref)
    return fn


def benches():
    M = N = KERNELS["gemm_dk"]
    for K, offset, what in ((4096, 0, "wide"), (4095, 0, "narrow"), (4096, 1, "misaligned")):
        yield C.Bench("gemm_dynamic_k", "gemm_dk", make(M, N, K, offset), nbytes=2 * (M * K + K * N + M * N),
                      shape="%dx%dx%d f16 (%s)" % (M, N, K, what), torch_name="torch.matmul (cuBLAS)",
                      flops=R.gemm_flops(M, N, K), label="k%d_%s" % (K, what))
