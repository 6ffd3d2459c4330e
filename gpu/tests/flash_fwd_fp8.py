"""Benchmark program benchmarks/flash_fwd_fp8.tile: the float8 (e4m3) FlashAttention forward on the Hopper path
(issue 28): Q, K and V^T in e4m3 with float32 dequantization scales (per tensor, scalar arguments; per block with
block_scales=True), bfloat16 out. Every instantiation is tested in full against float64 computed from the
dequantized e4m3 inputs (ATTN_ABS below: P is rounded to e4m3 for P.V, 2^-4 relative, which FlashAttention-3's
fp8 kernels do too). The kernels the file instantiates with dtype="float16" (the same program in float16, V^T
and all) are tested the same way and timed beside the e4m3 ones as "tilec float16".

Timed at 8,16,4096,128 causal and not (BENCHES) against SDPA's cuDNN back end in float16 on the dequantized
inputs (the baseline; its result is what the kernel's output is compared with before timing) and, interleaved
in the same rounds, tilec's float16 instantiation of the same file. FLOPs 4 B H S^2 D, halved when causal.
Issue 28's bar: e4m3 >= 1.6 x tilec's own float16 forward at D = 128 (FlashAttention-3's ratio): read the
"tilec float16" ratio of the bench line (docs/GPU_TESTING.md), or divide by flash_fwd.py's flash_fwd_causal /
flash_fwd_full of the same run."""
import math
import ctypes

import core as C
import refs as R

LIB = "flash_fwd_fp8"
PARAMS = ("batch", "heads", "seq", "dim", "causal", "block_M", "block_N", "num_stages", "threads")
# (e4m3 kernel, its float16 counterpart timed beside it): the file's 128 x 128 and 128 x 256 tiles
BENCHES = (("flash_fwd_fp8_causal", "flash_fwd_fp8_f16_causal"), ("flash_fwd_fp8_full", "flash_fwd_fp8_f16_full"),
           ("flash_fwd_fp8_causal_n256", "flash_fwd_fp8_f16_causal"), ("flash_fwd_fp8_full_n256", "flash_fwd_fp8_f16_full"))
# float16's rule (refs.ATTN_ABS) widened for P in e4m3 (relative 2^-4 on each probability: a few 1e-3 on an
# output of |v| ~ 1 spread over many keys; a wrong block or scale is off by O(0.1) or more)
ATTN_ABS = {"float8_e4m3": 2e-2, "float16": 2e-2}     # against a reference that rounds P as the kernel does
SCALES = (0.75, 1.25, 0.5)   # q_scale, k_scale, v_scale


def kernels():
    out = {}
    for name, (args, kw, _) in C.instantiations(LIB, "benchmarks/flash_fwd_fp8.tile", LIB).items():
        p = dict(dtype="float8_e4m3", out_dtype="bfloat16", heads_kv=None, block_scales=False, block_M=128,
                 block_N=128)   # the file's defaults (BLOCK_M, BLOCK_N)
        p.update(zip(PARAMS, args))
        p.update((k, v) for k, v in kw.items() if k in p)
        out[name] = p
    return out


def inputs(ctx, p):
    """(stored tensors and scales in the launch order, dequantized float64 Q, K, V in (B, S, H, D))."""
    t = C.torch()
    b, h, s, d = p["batch"], p["heads"], p["seq"], p["dim"]
    hk = p["heads_kv"] or h
    q = ctx.randn((b, s, h, d), p["dtype"])
    k = ctx.randn((b, s, hk, d), p["dtype"])
    v = ctx.randn((b, s, hk, d), p["dtype"])
    vt = v.permute(0, 2, 3, 1).contiguous()            # (batch, heads_kv, dim, seq)
    qb, kb = -(-s // p["block_M"]), -(-s // p["block_N"])
    if p["block_scales"]:
        qs = 0.5 + 1.5 * t.rand((b, h, qb), generator=ctx.gen, device="cuda")
        ks = 0.5 + 1.5 * t.rand((b, hk, kb), generator=ctx.gen, device="cuda")
    else:
        qs = t.ones((b, h, qb), device="cuda")
        ks = t.ones((b, hk, kb), device="cuda")
    sq, sk, sv = SCALES
    qd = q.double() * sq * qs.double().repeat_interleave(p["block_M"], dim=2)[:, :, :s].transpose(1, 2)[..., None]
    kd = k.double() * sk * ks.double().repeat_interleave(p["block_N"], dim=2)[:, :, :s].transpose(1, 2)[..., None]
    vd = v.double() * sv
    return (q, k, vt, qs, ks), (qd, kd, vd)


def rounded_p_reference(qd, kd, vd, causal, block_n):
    """The float64 forward with the kernel's own rounding of P: key blocks of block_n in order, a running row
    maximum, each block's probabilities exp(s - m) rounded to e4m3 (round to nearest even) for P.V while the row
    sum takes them unrounded (the float32 scores' reduction), as the online softmax of benchmarks/flash_fwd_fp8.tile
    does. (B, S, H, D) tensors; K and V may have fewer heads (grouped-query)."""
    t = C.torch()
    Bt, S, H, D = qd.shape
    group = H // kd.shape[2]
    q = qd.permute(0, 2, 1, 3)                                  # (B, H, S, D)
    k = kd.repeat_interleave(group, dim=2).permute(0, 2, 1, 3)
    v = vd.repeat_interleave(group, dim=2).permute(0, 2, 1, 3)
    scale = 1.0 / math.sqrt(D)
    pm = t.zeros((Bt, H, S, 1), dtype=t.float64, device=qd.device)       # the row's largest probability
    m = t.full((Bt, H, S, 1), -math.inf, dtype=t.float64, device=qd.device)
    l = t.zeros((Bt, H, S, 1), dtype=t.float64, device=qd.device)
    acc = t.zeros((Bt, H, S, D), dtype=t.float64, device=qd.device)
    rows = t.arange(S, device=qd.device)[:, None]
    for j0 in range(0, S, block_n):
        j1 = min(S, j0 + block_n)
        s = t.matmul(q, k[:, :, j0:j1].transpose(2, 3)) * scale
        if causal:
            s.masked_fill_(t.arange(j0, j1, device=qd.device)[None, :] > rows, -math.inf)
        m_new = t.maximum(m, s.amax(dim=-1, keepdim=True))
        keep = t.where(t.isinf(m_new), t.zeros_like(m), t.exp(m - m_new))
        p = t.exp(s - m_new).nan_to_num(0.0)
        acc = acc * keep + t.matmul(p.float().to(t.float8_e4m3fn).double(), v[:, :, j0:j1])
        l = l * keep + p.sum(dim=-1, keepdim=True)
        pm = t.maximum(pm * keep, p.amax(dim=-1, keepdim=True))
        m = m_new
        del s, p
    vmax = v.abs().amax(dim=2, keepdim=True)                                # (B, H, 1, D)
    return (acc / l).permute(0, 2, 1, 3), (pm / l * vmax).permute(0, 2, 1, 3)


def test(p):
    def fn(ctx, name):
        (q, k, vt, qs, ks), (qd, kd, vd) = inputs(ctx, p)
        o = ctx.output((p["batch"], p["seq"], p["heads"], p["dim"]), p["out_dtype"])
        ctx.call(name, q, k, vt, qs, ks, o, *SCALES)
        tol = ATTN_ABS[p["dtype"]]
        if p["dtype"] == "float8_e4m3":
            # the kernel's float32 exp2 and the reference's float64 exp can round a probability to neighbouring
            # e4m3 values (2^-3 apart, relative): a row's largest contributions may differ by that, once or twice
            ref, top = rounded_p_reference(qd, kd, vd, p["causal"], p["block_N"])
            tol = tol + 2.0 ** -2 * top
        else:
            ref = R.attention_reference(qd, kd, vd, p["causal"])
        return ctx.expect_bound(o, ref, p["out_dtype"], ulps=0, extra=tol, what="%g absolute%s" % (
                                    ATTN_ABS[p["dtype"]], " + e4m3 flips" if p["dtype"] == "float8_e4m3" else ""),
                                show_ulp=False) + " (%s%s%s)" % (p["dtype"], ", causal" if p["causal"] else "",
                                                                  ", block scales" if p["block_scales"] else "")
    return fn


def tests():
    for name, p in kernels().items():
        yield C.Test(LIB, name, test(p), small=p["seq"] <= 256, variants=False)


def bench(p, f16_name):
    def fn(ctx, name):
        t = C.torch()
        (q, k, vt, qs, ks), (qd, kd, vd) = inputs(ctx, p)
        o = ctx.output((p["batch"], p["seq"], p["heads"], p["dim"]), p["out_dtype"])
        # the baseline: SDPA cuDNN in float16 on the dequantized inputs (bfloat16 out, as the kernel's)
        q16, k16, v16 = qd.half(), kd.half(), vd.half()
        cudnn = R.sdpa(q16, k16, v16, p["causal"], "SDPA cuDNN")
        # tilec's float16 instantiation of the same file, on float16 copies of the stored values
        f16 = dict(p, dtype="float16")
        (a16, b16, c16, qs16, ks16), _ = inputs(ctx, f16)
        o16 = ctx.output(o.shape, "float16")
        kf, cargs = ctx._args(f16_name, (a16, b16, c16, qs16, ks16, o16) + SCALES)
        stream = ctypes.c_void_p(t.cuda.current_stream().cuda_stream)
        return ((q, k, vt, qs, ks, o) + SCALES, [o], lambda: cudnn().to(t.bfloat16),
                {"tilec float16": lambda: kf(*cargs, stream)})
    return fn


def benches():
    ks = kernels()
    for name, f16 in BENCHES:
        p = ks[name]
        b, h, s, d = p["batch"], p["heads"], p["seq"], p["dim"]
        yield C.Bench(LIB, name, bench(p, f16), nbytes=4 * b * h * s * d, flops=R.attention_flops(b, h, s, d, p["causal"]),
                      shape="%d,%d,%d,%d%s e4m3" % (b, h, s, d, " causal" if p["causal"] else ""), bar=1.0,
                      target=1.3, torch_name="SDPA cuDNN (float16)", variants=False,
                      rel_limit=4e-2)     # P in e4m3 (2^-4 relative each): 0.021-0.026 measured on the H200
