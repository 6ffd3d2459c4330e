"""Float64 references and bounds of attention's backward and of split-K decoding (issue 28's benchmarks of
TileLang's example files: gpu/tests/attn_bwd.py, attn_decode.py), computed on the GPU a few heads at a time.

Backward. From float16 Q, K, V, dO (and the causal mask: query i sees keys j <= i), in float64:
  S = Q K^T s (s = 1/sqrt(D)), P = softmax(S), O = P V, lse = log2(sum_j exp(S_ij)) (the base-2 log-sum-exp the
  example files' forward writes and their backward reads: P = exp2(S log2(e) - lse)),
  dP = dO V^T, Delta_i = sum_d O_id dO_id, dS = P (dP - Delta), dQ = dS K s, dK = dS^T Q s, dV = P^T dO.
The kernels get O rounded to float16 and lse rounded to float32, as a forward would hand them over.

Bound (the GEMM rule of docs/INTERFACE.md, |C - R| <= 4u sum|a b| + u_out |R|, applied to each product with
the float16 roundings of its operands as perturbations of the terms):
  dV: the terms are P_ij dO_id; P is rounded to float16 (u) before the product;
  dK, dQ: the terms are dS_ij Q_id s and dS_ij K_jd s; dS is rounded to float16 (u |dS|) after being computed
  from dP (float32 sums of float16 products) and from Delta, which the preprocess sums from the float16 O
  (u sum_d |O_id dO_id| off); so each term is bounded by W_ij = |dS_ij| + P_ij (sum_d |O_id dO_id| +
  sum_d |dO_id V_jd|) times |Q_id| s or |K_jd| s.
  dV: 4u (P^T |dO|) + eta (M^T |dO|);  dK: 4u s (W^T |Q|) + eta (M^T |Q|);  dQ: 4u s (W |K|) + eta (M |K|);
  u = 2^-11; M_ij = 1 where query i sees key j; eta = 2^-25, the absolute error of a rounding of P or of dS (which
  the kernels scale by s before rounding) to float16 where it falls below float16's normal range (a key that few
  queries see has few terms, and there a relative u alone is too small: the self-check's stand-in kernels showed
  dK of the last key off by 1e-8 beyond 4u, session 44). The outputs' own rounding to float16 is judged as 1 ulp of
  float16 on top (ulp_out(R) >= u |R|, and the subnormal spacing below the normal range).
The float32 accumulations (gamma_S 2^-24 sum|terms|, 2^-12 sum|terms| at S = 4096, in any order: dQ's atomic adds),
exp2's approximation (about 2^-22 relative) and lse's float32 rounding (2^-24 |lse| absolute in the exponent) sit
far inside the factor 4. A lost block, a wrong mask or a wrong scale is off by O(|R|).

Decode. Output[b, h] = softmax(Q[b, h] K[b, :, g]^T s + mask) V[b, :, g] with g = h // (heads / kv_heads), keys whose
mask byte is 0 left out, computed in float64; judged by docs/INTERFACE.md's attention rule (2e-2 absolute)."""
import math

import core as C

LOG2E = 1.0 / math.log(2.0)
U16 = 2.0 ** -11
ETA = 2.0 ** -25        # the largest error of a rounding to float16 below its normal range (half its 2^-24 spacing)


def to_bhsd(x, layout):
    """(batch, heads, seq, dim) view of a tensor in the file's layout ('bhsd' or 'bshd')."""
    return x if layout == "bhsd" else x.transpose(1, 2)


def heads_per_chunk(S, H, chunk_bytes):
    return max(1, min(H, chunk_bytes // (S * S * 8)))


def backward_reference(q, k, v, do, causal, layout, bounds=True, chunk_bytes=1 << 30):
    """dict(O, lse, dQ, dK, dV[, dQ_bound, dK_bound, dV_bound]) in float64: O, the gradients and their bounds in
    the file's layout (B, H, S, D) or (B, S, H, D), lse (B, H, S); bounds=False computes O and lse alone."""
    t = C.torch()
    Q4, K4, V4, dO4 = (to_bhsd(x, layout) for x in (q, k, v, do))
    B, H, S, D = Q4.shape
    s = 1.0 / math.sqrt(D)
    out = {n: t.empty((B, H, S, D), dtype=t.float64, device=q.device) for n in ("O", "dQ", "dK", "dV")}
    lse = t.empty((B, H, S), dtype=t.float64, device=q.device)
    if bounds:
        out.update({n: t.empty((B, H, S, D), dtype=t.float64, device=q.device) for n in ("dQ_bound", "dK_bound",
                                                                                        "dV_bound")})
    mask = t.ones((S, S), dtype=t.bool, device=q.device).triu(1) if causal else None
    per = heads_per_chunk(S, H, chunk_bytes)
    for b in range(B):
        for h0 in range(0, H, per):
            sl = (b, slice(h0, min(H, h0 + per)))
            Qh, Kh, Vh, dOh = (x[sl].double() for x in (Q4, K4, V4, dO4))
            sc = t.matmul(Qh, Kh.transpose(1, 2)) * s
            if mask is not None:
                sc.masked_fill_(mask, -math.inf)
            lse[sl] = t.logsumexp(sc, dim=-1) * LOG2E
            P = t.softmax(sc, dim=-1)
            del sc
            O = t.matmul(P, Vh)
            out["O"][sl] = O
            if not bounds:
                continue
            dP = t.matmul(dOh, Vh.transpose(1, 2))
            delta = (O * dOh).sum(-1, keepdim=True)
            dS = P * (dP - delta)
            del dP
            out["dV"][sl] = t.matmul(P.transpose(1, 2), dOh)
            out["dK"][sl] = t.matmul(dS.transpose(1, 2), Qh) * s
            out["dQ"][sl] = t.matmul(dS, Kh) * s
            W = dS.abs_() + P * ((O.abs() * dOh.abs()).sum(-1, keepdim=True) +
                                 t.matmul(dOh.abs(), Vh.abs().transpose(1, 2)))
            M = t.ones((S, S), dtype=t.float64, device=q.device) if mask is None else (~mask).double()
            out["dV_bound"][sl] = 4 * U16 * t.matmul(P.transpose(1, 2), dOh.abs()) + ETA * t.matmul(M.t(), dOh.abs())
            out["dK_bound"][sl] = 4 * U16 * s * t.matmul(W.transpose(1, 2), Qh.abs()) + ETA * t.matmul(M.t(), Qh.abs())
            out["dQ_bound"][sl] = 4 * U16 * s * t.matmul(W, Kh.abs()) + ETA * t.matmul(M, Kh.abs())
            del P, dS, W, M
    res = {n: (x if layout == "bhsd" else x.transpose(1, 2)) for n, x in out.items()}
    res["lse"] = lse
    return res


def backward_flops(batch, heads, seq, dim, causal):
    """The five products of the backward (QK^T again, dO V^T, P^T dO, dS^T Q, dS K): 2.5 x the forward's
    4 B H S^2 D, halved when causal (the example files' own count: 5 x 2 B H S^2 D)."""
    f = 10.0 * batch * heads * seq * seq * dim
    return f / 2 if causal else f


def decode_reference(q, k, v, mask, chunk_batches=8):
    """Output (batch, heads, dim) in float64 of q (batch, heads, dim), k and v (batch, keys, kv_heads, dim), mask
    (batch, keys, kv_heads) uint8 (0: the key is left out), a few batches at a time."""
    t = C.torch()
    Bt, H, D = q.shape
    G = k.shape[2]
    out = t.empty((Bt, H, D), dtype=t.float64, device=q.device)
    s = 1.0 / math.sqrt(D)
    for b0 in range(0, Bt, chunk_batches):
        b1 = min(Bt, b0 + chunk_batches)
        qh = q[b0:b1].double().view(b1 - b0, G, H // G, D)              # (b, g, heads of g, D)
        kh = k[b0:b1].double().permute(0, 2, 1, 3)                      # (b, g, keys, D)
        vh = v[b0:b1].double().permute(0, 2, 1, 3)
        sc = t.matmul(qh, kh.transpose(2, 3)) * s                       # (b, g, heads of g, keys)
        sc.masked_fill_((mask[b0:b1] == 0).permute(0, 2, 1).unsqueeze(2), -math.inf)
        out[b0:b1] = t.matmul(t.softmax(sc, dim=-1), vh).reshape(b1 - b0, H, D)
    return out
