"""The hand-written warp-specialized sm_90a GEMMs of gpu/handwritten/hopper_gemm.cu (TMA -> mbarrier ring ->
wgmma, setmaxnreg; the device library stdlib/tilec/sm90_*.cuh), called as kernel(A, B, C, m, n, k).

Correctness: the GEMM rule of docs/INTERFACE.md on every element (gpu/refs.py: float64 reference, |C - R| <=
4 u sum|ab| + u_out |R|), poisoned outputs, at 1024^3, at shapes no tile divides (1000^3, 333 x 520 x 1000: TMA
zero fill in m, n and k, masked stores), fewer k-blocks than stages (k = 64) and a single partial k-block
(k = 8); B stored (k, n) ("N-major": the seed's layout) and (n, k) (the *_nt kernels); float8 e4m3 with
bfloat16 output; A through registers (wgmma_gemm_rs, the *_rs kernels). Tensors TMA cannot read (k * 2 bytes not a multiple of 16) are refused with
TILEC_ERROR_UNSUPPORTED and nothing written.

Benchmarks against cuBLAS (torch.matmul; torch._scaled_mm for float8) on the issue's five shapes (M x N x K):
4096^3, 8192^3, 4096 x 1024 x 8192, 4096 x 8192 x 8192, 4096 x 28672 x 8192, and the decode shapes M = 16 and
M = 128 against N = K = 8192. Bars (issue 9): 128x256 tiles >= 0.85 on every shape (geometric mean >= 0.95,
computed by the report's reader); the seed's 128x128 / one consumer warpgroup >= 0.80 at 4096^3."""
import core as C
import refs as R

LIB = "hopper_gemm"
F16 = ["hopper_gemm_f16_128x128", "hopper_gemm_f16_128x256", "hopper_gemm_f16_128x256_s3",
       "hopper_gemm_f16_128x128_2cta", "hopper_gemm_f16_128x256_p", "hopper_gemm_f16_128x256_pc2",
       "hopper_gemm_f16_128x128_p", "hopper_gemm_f16_128x256_rs"]
F16_NT = ["hopper_gemm_f16_128x128_nt", "hopper_gemm_f16_128x256_nt", "hopper_gemm_f16_128x256_nt_pc2"]
BF16 = ["hopper_gemm_bf16_128x128", "hopper_gemm_bf16_128x256", "hopper_gemm_bf16_128x256_pc2"]
BF16_NT = ["hopper_gemm_bf16_128x128_nt", "hopper_gemm_bf16_128x256_nt", "hopper_gemm_bf16_128x128_nt_rs"]
FP8_NT = ["hopper_gemm_e4m3_128x256_nt", "hopper_gemm_e4m3_128x256_nt_pc2"]
SHAPES = [(1024, 1024, 1024), (1000, 1000, 1000), (333, 520, 1000), (256, 384, 64), (200, 136, 8)]
# float8: rows of k bytes must be multiples of 16 for TMA
FP8_SHAPES = [(1024, 1024, 1024), (1000, 1000, 1008), (333, 520, 1008), (256, 384, 128), (200, 136, 16)]
# persistent kernels: more tiles than SMs, and a ring (4 stages) that wraps inside and across tiles
PERSISTENT_SHAPE = (4000, 3000, 200)
SMALL = {(200, 136, 8), (200, 136, 16)}
BENCH_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 1024, 8192), (4096, 8192, 8192),
                (4096, 28672, 8192)]
DECODE_SHAPES = [(16, 8192, 8192), (128, 8192, 8192)]


def label(M, N, K):
    return "%dx%dx%d" % (M, N, K)


def unsupported(kernel, dtype):
    """k = 515: rows of A are 1030 bytes, not a multiple of 16: refused, nothing written."""
    def fn(ctx, k):
        M, N, K = 64, 64, 515
        a, b = R.gemm_inputs(ctx, M, N, K, dtype, trans_B=kernel.endswith("_nt"))
        c = ctx.output((M, N), "float16")
        status = ctx.call_status(k, a, b, c, M, N, K)
        C.torch().cuda.synchronize()
        if status != 4:
            raise C.Fail("k = 515 gave status %d (%s), not TILEC_ERROR_UNSUPPORTED" % (
                status, ctx.lib.status_string(status)))
        if not bool(c.float().isnan().all()):
            raise C.Fail("a refused call wrote its output")
        return "k = 515 refused: %s" % ctx.lib.status_string(status)
    return fn


def tests():
    groups = [(F16, "float16", "float16", False), (F16_NT, "float16", "float16", True),
              (BF16, "bfloat16", "bfloat16", False), (BF16_NT, "bfloat16", "bfloat16", True),
              (FP8_NT, "float8_e4m3", "bfloat16", True)]
    for kernels, dtype, out, nt in groups:
        for kern in kernels:
            shapes = FP8_SHAPES if dtype == "float8_e4m3" else SHAPES
            if "_p" in kern or "_rs" in kern:   # the persistent kernels; float8 rows: k a multiple of 16 bytes
                shapes = shapes + [(4000, 3000, 208) if dtype == "float8_e4m3" else PERSISTENT_SHAPE]
            for (M, N, K) in shapes:
                yield C.Test(LIB, kern, R.gemm_test(M, N, K, dtype, out, trans_B=nt, scalars=(M, N, K)),
                             small=(M, N, K) in SMALL, graph=(M, N) == (1000, 1000), variants=False,
                             label=label(M, N, K))
    yield C.Test(LIB, "hopper_gemm_f16_128x256", unsupported("hopper_gemm_f16_128x256", "float16"),
                 variants=False, label="unaligned-k")


def bench_make(M, N, K, dtype, out, nt):
    def fn(ctx, k):
        t = C.torch()
        a, b = R.gemm_inputs(ctx, M, N, K, dtype, trans_B=nt)
        c = ctx.output((M, N), out)
        if dtype == "float8_e4m3":
            one = t.tensor(1.0, device="cuda")
            return (a, b, c, M, N, K), [c], lambda: t._scaled_mm(a, b.t(), one, one, out_dtype=t.bfloat16)
        ref = t.empty((M, N), dtype=getattr(t, out), device="cuda")
        bb = b.t() if nt else b
        return (a, b, c, M, N, K), [c], lambda: t.matmul(a, bb, out=ref)
    return fn


def benches():
    def one(kern, M, N, K, dtype="float16", out="float16", nt=False, bar=None, target=None):
        name = "torch._scaled_mm (cuBLAS fp8)" if dtype == "float8_e4m3" else "torch.matmul (cuBLAS)"
        return C.Bench(LIB, kern, bench_make(M, N, K, dtype, out, nt),
                       nbytes=C_bytes(M, N, K, dtype, out), shape="%s %s%s" % (label(M, N, K), dtype,
                                                                            " B(n,k)" if nt else ""),
                       torch_name=name, flops=R.gemm_flops(M, N, K), bar=bar, target=target,
                       label=label(M, N, K))
    bf16 = dict(dtype="bfloat16", out="bfloat16")
    for (M, N, K) in BENCH_SHAPES:
        yield one("hopper_gemm_f16_128x256", M, N, K, bar=0.85, target=0.95)
        yield one("hopper_gemm_f16_128x256_p", M, N, K, bar=0.85, target=0.95)
        yield one("hopper_gemm_f16_128x256_pc2", M, N, K, bar=0.85, target=0.95)
        yield one("hopper_gemm_bf16_128x256", M, N, K, bar=0.85, target=0.95, **bf16)
        yield one("hopper_gemm_bf16_128x256_pc2", M, N, K, bar=0.85, target=0.95, **bf16)
    for (M, N, K) in BENCH_SHAPES[:2]:
        yield one("hopper_gemm_f16_128x128", M, N, K, bar=0.80 if (M, N, K) == (4096, 4096, 4096) else None)
        yield one("hopper_gemm_f16_128x128_p", M, N, K, bar=0.80 if (M, N, K) == (4096, 4096, 4096) else None)
        yield one("hopper_gemm_f16_128x256_nt_pc2", M, N, K, nt=True)
        yield one("hopper_gemm_f16_128x256_rs", M, N, K)
        for kern in FP8_NT:
            yield one(kern, M, N, K, dtype="float8_e4m3", out="bfloat16", nt=True, target=1.0)
    for (M, N, K) in DECODE_SHAPES:
        yield one("hopper_gemm_f16_128x256", M, N, K)
        yield one("hopper_gemm_f16_128x128", M, N, K)


def C_bytes(M, N, K, dtype, out):
    size = {"float16": 2, "bfloat16": 2, "float8_e4m3": 1}
    return size[dtype] * (M * K + K * N) + size[out] * M * N
