"""GEMM and attention: float64 references, the bounds they are judged by, and the makers of their tests and
benchmarks, shared by the test modules of issue 4 (gpu/tests/gemm*.py, flash*.py) and by tools/sweep/.

GEMM rule (docs/INTERFACE.md), R = op(A) @ op(B) in float64 from the inputs as stored:
  |C - R| <= 4 u sum_k |a_ik b_kj| + u_out |R|
u is the unit roundoff of the operands as the tensor cores take them: 2^-11 for float16 and for tf32 (10
stored mantissa bits, so float32 operands rounded or truncated to tf32 lose up to 2^-10 relative each, and a
product up to ~2^-9 = 4u: the bound holds even when the conversion truncates), 2^-8 for bfloat16, 2^-4 for
float8. u_out is the unit roundoff of the output type (2^-11 float16, 2^-8 bfloat16, 2^-24 float32): the last
rounding of the float32 accumulator. The float32 accumulation itself (gamma_K u_f32 sum|ab|, 2^-12 sum|ab| at
K = 4096) sits well inside 4u. core.Context.expect_bound applies it with ulps=0 and extra = the whole bound,
so the bound is exactly the contract's (not its ulp form). int8 -> int32 is exact: expect_equal.

Attention rule: within 2e-2 absolute (float16; 3e-2 bfloat16, ATTN_ABS) of softmax(Q K^T / sqrt(D) [+ causal
mask]) V computed in float64, K and V shared by groups of query heads for grouped-query attention.

Everything is computed on the GPU in float64 (cuBLAS DGEMM); 8192^3 takes tens of milliseconds, and the
attention reference is computed a few heads at a time, so every element of even the largest benchmark
instantiations is checked.
"""
import math

import core as C

# unit roundoff of the operands as the tensor cores use them (float32 operands are tf32)
U_IN = {"float16": 2.0 ** -11, "float32": 2.0 ** -11, "bfloat16": 2.0 ** -8,
        "float8_e4m3": 2.0 ** -4, "float8_e5m2": 2.0 ** -4}
# unit roundoff of the output type (the last rounding of the accumulator)
U_OUT = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24}
INT_TYPES = ("int8",)
# attention: absolute error allowed against float64 (docs/INTERFACE.md's 2e-2 for float16). bfloat16 rounds P, V and
# the output with 8 mantissa bits instead of 11: one rounding of an output near |v| ~ 4 alone is 4 * 2^-9 ~ 8e-3,
# and P's rounding adds as much again, so 3e-2 (a wrong mask or a lost block is off by O(0.1..1) either way)
ATTN_ABS = {"float16": 2e-2, "bfloat16": 3e-2}


def u_text(u):
    return "2^%d" % round(math.log2(u))


# ---------------------------------------------------------------------------------------------- GEMM
def gemm_inputs(ctx, M, N, K, dtype, trans_A=False, trans_B=False):
    """A and B as stored: A (M, K) or (K, M) with trans_A, B (K, N) or (N, K) with trans_B; fresh random
    values (normal for floats, uniform over -128..127 for int8)."""
    a_shape = (K, M) if trans_A else (M, K)
    b_shape = (N, K) if trans_B else (K, N)
    if dtype in INT_TYPES:
        return ctx.randint(a_shape, -128, 128, dtype), ctx.randint(b_shape, -128, 128, dtype)
    return ctx.randn(a_shape, dtype), ctx.randn(b_shape, dtype)


def gemm_reference(a, b, trans_A=False, trans_B=False, need_abs=True):
    """(R, S): R = op(A) @ op(B) and S = |op(A)| @ |op(B)| in float64 (S is None without need_abs)."""
    A = a.double()
    B = b.double()
    if trans_A:
        A = A.t()
    if trans_B:
        B = B.t()
    R = A @ B
    S = A.abs() @ B.abs() if need_abs else None
    return R, S


def gemm_bound(R, S, in_dtype, out_dtype):
    return 4.0 * U_IN[in_dtype] * S + U_OUT[out_dtype] * R.abs()


def judge_gemm(ctx, c, R, S, in_dtype, out_dtype):
    if in_dtype in INT_TYPES:
        return ctx.expect_equal(c, R.round().to(C.torch().int64))
    detail = ctx.expect_bound(c, R, out_dtype, ulps=0, extra=gemm_bound(R, S, in_dtype, out_dtype),
                              what="4u sum|ab| + u_out |R|, u = %s" % u_text(U_IN[in_dtype]), show_ulp=False)
    return detail + " (u %s, u_out %s)" % (u_text(U_IN[in_dtype]), u_text(U_OUT[out_dtype]))


def gemm_test(M, N, K, dtype, out_dtype, trans_A=False, trans_B=False, scalars=()):
    """A test function: C = op(A) @ op(B), called as kernel(A, B, C, *scalars), every element judged."""
    def fn(ctx, k):
        a, b = gemm_inputs(ctx, M, N, K, dtype, trans_A, trans_B)
        c = ctx.output((M, N), out_dtype)
        ctx.call(k, a, b, c, *scalars)
        R, S = gemm_reference(a, b, trans_A, trans_B, need_abs=dtype not in INT_TYPES)
        return judge_gemm(ctx, c, R, S, dtype, out_dtype)
    return fn


def gemm_bench(M, N, K, dtype="float16", out_dtype="float16"):
    """A Bench make function: tilec's C = A @ B against torch.matmul (cuBLAS) on the same inputs."""
    def fn(ctx, k):
        t = C.torch()
        a, b = gemm_inputs(ctx, M, N, K, dtype)
        c = ctx.output((M, N), out_dtype)
        ref = t.empty((M, N), dtype=getattr(t, out_dtype), device="cuda")
        return (a, b, c), [c], lambda: t.matmul(a, b, out=ref)
    return fn


def gemm_flops(M, N, K):
    return 2.0 * M * N * K


def cdiv(a, b):
    return -(-a // b)


def pow2_scales(ctx, shape):
    """Float32 dequantization scales for block-scaled tests: powers of two 2^-3 .. 2^3, one per block (a scale
    applied to the wrong block is off by a factor of 2 or more; products with them stay exact)."""
    t = C.torch()
    return t.pow(2.0, t.randint(-3, 4, shape, generator=ctx.gen, device="cuda").float())


# ----------------------------------------------------------------------------------------- attention
def attention_reference(q, k, v, causal, chunk_bytes=2 << 30):
    """softmax(Q K^T / sqrt(D) + mask) V in float64 for (batch, seq, heads, dim) tensors, as many heads at a
    time as fit in chunk_bytes of scores. The causal mask lets query i see keys j <= i (examples/flash_attn).
    K and V may have fewer heads than Q (grouped-query attention): query head h reads key head
    h // (heads / heads_kv)."""
    t = C.torch()
    Bt, S, H, D = q.shape
    group = H // k.shape[2]
    out = t.empty((Bt, S, H, D), dtype=t.float64, device=q.device)
    scale = 1.0 / math.sqrt(D)
    per = max(1, min(H, chunk_bytes // (S * S * 8)))
    mask = t.ones((S, S), dtype=t.bool, device=q.device).triu(1) if causal else None
    for b in range(Bt):
        for h0 in range(0, H, per):
            h1 = min(H, h0 + per)
            kv = t.arange(h0, h1, device=q.device) // group     # the key/value head of each query head
            qh = q[b, :, h0:h1].double().permute(1, 0, 2)          # (h, S, D)
            kh = k[b][:, kv].double().permute(1, 0, 2)
            vh = v[b][:, kv].double().permute(1, 0, 2)
            s = t.matmul(qh, kh.transpose(1, 2)) * scale
            if mask is not None:
                s.masked_fill_(mask, -math.inf)
            p = t.softmax(s, dim=-1)
            del s
            out[b, :, h0:h1] = t.matmul(p, vh).permute(1, 0, 2)
            del p
    return out


def attention_inputs(ctx, batch, heads, seq, dim, dtype="float16", heads_kv=None):
    """Q (batch, seq, heads, dim); K and V with heads_kv heads (default: heads)."""
    kv_shape = (batch, seq, heads if heads_kv is None else heads_kv, dim)
    return ctx.randn((batch, seq, heads, dim), dtype), ctx.randn(kv_shape, dtype), ctx.randn(kv_shape, dtype)


def judge_attention(ctx, o, ref, dtype="float16"):
    tol = ATTN_ABS[dtype]
    return ctx.expect_bound(o, ref, dtype, ulps=0, extra=tol, what="%g absolute" % tol, show_ulp=False)


def attention_test(batch, heads, seq, dim, causal, dtype="float16", heads_kv=None, scalars=()):
    """scalars: the launch function's arguments after the tensors (a T.dynamic sequence length)."""
    def fn(ctx, k):
        q, kk, v = attention_inputs(ctx, batch, heads, seq, dim, dtype, heads_kv)
        o = ctx.output((batch, seq, heads, dim), dtype)
        ctx.call(k, q, kk, v, o, *scalars)
        return judge_attention(ctx, o, attention_reference(q, kk, v, causal), dtype) + (
            " (causal)" if causal else "") + (" (%s, D %d%s)" % (dtype, dim, ", GQA %d/%d" % (heads, heads_kv)
                                                                  if heads_kv else ""))
    return fn


SDPA_BACKENDS = {"SDPA flash": "FLASH_ATTENTION", "SDPA cuDNN": "CUDNN_ATTENTION"}


def sdpa(q, k, v, causal, name="SDPA flash"):
    """PyTorch's scaled_dot_product_attention with one back end forced (SDPA_BACKENDS: the flash one is
    FlashAttention-2, an mma.sync kernel; cuDNN's is NVIDIA's Hopper kernel), on (B, H, S, D) views of the
    (B, S, H, D) tensors; returns a function that runs it (the result in the same layout)."""
    t = C.torch()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = getattr(SDPBackend, SDPA_BACKENDS[name])
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    F = t.nn.functional

    def run():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
    return run


def sdpa_flash(q, k, v, causal):
    return sdpa(q, k, v, causal)


def attention_bench(batch, heads, seq, dim, causal, dtype="float16", others=()):
    """A Bench make function: tilec against SDPA's flash back end, and the back ends named in `others`
    (SDPA_BACKENDS) as further baselines, all on the same inputs."""
    def fn(ctx, k):
        q, kk, v = attention_inputs(ctx, batch, heads, seq, dim, dtype)
        o = ctx.output((batch, seq, heads, dim), dtype)
        return (q, kk, v, o), [o], sdpa_flash(q, kk, v, causal), {n: sdpa(q, kk, v, causal, n) for n in others}
    return fn


def attention_flops(batch, heads, seq, dim, causal):
    f = 4.0 * batch * heads * seq * seq * dim
    return f / 2 if causal else f
