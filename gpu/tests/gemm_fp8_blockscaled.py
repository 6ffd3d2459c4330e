"""Benchmark program benchmarks/gemm_fp8_blockscaled.tile (issue 27): DeepSeek-V3's block-scaled float8 GEMM,
C = (sa * A) @ (sb * B)^T with A (M, K) and B stored (N, K) in e4m3, A_scale (M, ceil(K/128)) one float32 per
1 x 128 slice of A's rows, B_scale (ceil(N/128), ceil(K/128)) one per 128 x 128 block of B, bfloat16 out.

Correctness, every instantiation in full, against float64 from the dequantized inputs (Ad = A * sa broadcast
over its 128 columns, Bd likewise): |C - R| <= 4 u sum_k |ad_ik bd_jk| + u_out |R| with u = 2^-9 and u_out =
2^-8. The e4m3 products are exact in float32; what rounds is the tensor cores' float8 accumulation inside one
128-wide K block (DeepSeek-V3 reports about 14 bits kept: 2^-9 leaves margin), the float32 promotion and the
bfloat16 output. The scales are powers of two from 2^-3 to 2^3 drawn per block, so a scale applied to the wrong
rows, columns or K block is off by a factor of 2 or more on that block's contribution.

Benchmarks at DeepGEMM's shapes (4096x7168x16384, 4096x24576x1536, decode 128x7168x16384). The baseline the
output is compared with and the ratio is taken against: cuBLAS's block-scaled fp8 GEMM through torch._scaled_mm
(scale_a (M, K/128), scale_b (K/128, N/128): BlockWise1x128 x BlockWise128x128) where this torch has it; else
torch.matmul in bfloat16 on the dequantized inputs (named so). Timed beside it: cuBLAS's per-tensor fp8 GEMM
(torch._scaled_mm with unit scales: the same tensor-core work without the per-block promotion; its output is
not the same product, so it is timed only). Issue 27's bars: >= 1.0 x the best baseline, >= 1400 TFLOP/s on
4096x7168x16384 (read the TFLOP/s of the line)."""
import core as C
import refs as R

LIB = "gemm_fp8_blockscaled"
PARAMS = ("M", "N", "K")
GROUP = 128
U_ACC = 2.0 ** -9
BENCHES = ("gemm_fp8_bs_4096x7168x16384", "gemm_fp8_bs_4096x24576x1536", "gemm_fp8_bs_128x7168x16384")


def kernels():
    out = {}
    for name, (args, kw, _) in C.instantiations(LIB, "benchmarks/gemm_fp8_blockscaled.tile", "matmul").items():
        p = dict(zip(PARAMS, args))
        p.update((k, v) for k, v in kw.items() if k in PARAMS)
        out[name] = p
    return out


cdiv = R.cdiv


def inputs(ctx, M, N, K):
    a = ctx.randn((M, K), "float8_e4m3")
    b = ctx.randn((N, K), "float8_e4m3")
    sa = R.pow2_scales(ctx, (M, cdiv(K, GROUP)))
    sb = R.pow2_scales(ctx, (cdiv(N, GROUP), cdiv(K, GROUP)))
    return a, b, sa, sb


def dequantized(a, b, sa, sb):
    """Ad, Bd in float64: each element times its block's scale."""
    M, K = a.shape
    N = b.shape[0]
    ad = a.double() * sa.double().repeat_interleave(GROUP, dim=1)[:, :K]
    bd = b.double() * sb.double().repeat_interleave(GROUP, dim=0)[:N].repeat_interleave(GROUP, dim=1)[:, :K]
    return ad, bd


def test(p):
    def fn(ctx, name):
        a, b, sa, sb = inputs(ctx, p["M"], p["N"], p["K"])
        c = ctx.output((p["M"], p["N"]), "bfloat16")
        ctx.call(name, a, b, sa, sb, c)
        ad, bd = dequantized(a, b, sa, sb)
        Rm, S = R.gemm_reference(ad, bd, trans_B=True)
        bound = 4.0 * U_ACC * S + R.U_OUT["bfloat16"] * Rm.abs()
        return ctx.expect_bound(c, Rm, "bfloat16", ulps=0, extra=bound, what="4u sum|ab| + u_out |R|, u = 2^-9",
                                show_ulp=False) + " (block scales 2^-3..2^3)"
    return fn


def tests():
    for name, p in kernels().items():
        yield C.Test(LIB, name, test(p), small=name == "gemm_fp8_bs_odd", graph=name == "gemm_fp8_bs_odd",
                     variants=False)


def blockwise_cublas(a, b, sa, sb):
    """torch._scaled_mm with DeepSeek-V3's block scales (cuBLAS's VEC128 x BLK128x128 scaling), or None where this
    torch or GPU does not take them. The scales are tried as given and outer-dimension-major (cuBLAS's layout)."""
    t = C.torch()
    for sa_, sb_ in ((sa, sb.t()), (sa.t().contiguous().t(), sb.t().contiguous().t()), (sa, sb.t().contiguous())):
        try:
            out = t._scaled_mm(a, b.t(), sa_, sb_, out_dtype=t.bfloat16)
            t.cuda.synchronize()
        except Exception:  # no block-wise scaling in this torch / cuBLAS, or another scale layout wanted
            continue
        return lambda: t._scaled_mm(a, b.t(), sa_, sb_, out_dtype=t.bfloat16), out
    return None


def bench(p, b_):
    """b_: the Bench, whose torch_name says which baseline this torch gave."""
    def fn(ctx, name):
        t = C.torch()
        M, N, K = p["M"], p["N"], p["K"]
        a, b, sa, sb = inputs(ctx, M, N, K)
        c = ctx.output((M, N), "bfloat16")
        one = t.tensor(1.0, device="cuda")
        others = {"torch._scaled_mm per-tensor (cuBLAS fp8, no block scales)":
                  lambda: t._scaled_mm(a, b.t(), one, one, out_dtype=t.bfloat16)}
        found = blockwise_cublas(a, b, sa, sb)
        if found is not None:
            run, out = found
            ad, bd = dequantized(a[:256], b[:256], sa[:256], sb[:2])
            want = (ad @ bd.t())
            if float((out[:256, :256].double() - want).norm() / want.norm()) < 1e-2:
                b_.torch_name = "torch._scaled_mm block-scaled (cuBLAS)"
                return (a, b, sa, sb, c), [c], run, others
        ad, bd = dequantized(a, b, sa, sb)
        a16, b16 = ad.to(t.bfloat16), bd.to(t.bfloat16)
        del ad, bd
        ref = t.empty((M, N), dtype=t.bfloat16, device="cuda")
        b_.torch_name = "torch.matmul bf16 on dequantized inputs (no block-scaled torch._scaled_mm here)"
        return (a, b, sa, sb, c), [c], lambda: t.matmul(a16, b16.t(), out=ref), others
    return fn


def benches():
    ks = kernels()
    for name in BENCHES:
        p = ks[name]
        M, N, K = p["M"], p["N"], p["K"]
        b = C.Bench(LIB, name, None, nbytes=M * K + N * K + 2 * M * N + 4 * (M + N // GROUP) * cdiv(K, GROUP),
                    shape="%dx%dx%d e4m3 1x128/128x128 scales" % (M, N, K), bar=1.0, target=1.0,
                    torch_name="torch._scaled_mm block-scaled (cuBLAS)", flops=R.gemm_flops(M, N, K))
        b.make = bench(p, b)
        yield b
