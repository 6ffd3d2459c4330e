"""tilec's float64 references for DeepSeek's sparse MLA backward kernels (issue 23), re-exported by gpu/tlcompat_refs.py
(`tilec_refs.NAME` in tests/tilelang_compat/reference.tsv): deepseek_v32/sparse_mla_bwd.py's `bwd` (batched, Lse in
log2 units) and dsa_sparse_finetune/sparse_mla_bwd.py's `bwd` (variable-length sequences through Offsets and
TokenIndices, natural-log Lse). Both compute, for each query token r of H heads and each of its top-k slots j whose
key row p_j is valid (p_j <= the token's position; the finetune kernel also masks p_j == -1):

  s[h, j]  = Q[r, h] . KV[p_j]                                 (all D + D_tail = 576 dimensions)
  P[h, j]  = 2^(s * scale * 1.44269504 - Lse[r, h])   (v32)   or   exp(s * scale - Lse[r, h])   (finetune)
  dP[h, j] = P[h, j] (dO[r, h] . KV[p_j, :D] - Delta[r, h]) scale
  dQ[r, h] = sum_j bf16(dP[h, j]) KV[p_j]                                        (stored as bfloat16)
  dKV[p_j] += sum_h bf16(dP[h, j]) Q[r, h] + [first D dims] bf16(P[h, j]) dO[r, h]  (float32 atomics)

with 0 for masked slots (P = 2^-inf = 0 and so dP = 0). bf16(.) are the kernel's copies of P and dP in bfloat16
shared tiles (P_shared_cast, dP_shared_cast), which the reference makes from its float64 values.

Tolerance (`bound_excess`): each reference output carries, as its attribute `tilec_bound`, a per-element bound
of |kernel - reference| made of three parts, from the kernel's arithmetic:
  1. Rounding flips: the kernel's float32 P and dP differ from float64 by a few 1e-6 relative (the score's 576
     float32 products and sums, ex2.approx, dO . KV's 512), so its bf16 copies equal the reference's except where a
     value lies that close to a bf16 rounding boundary; there they may be one bf16 step apart. The reference
     finds those values (the two roundings of v -+ ETA (|v| + the dot product's error scale) differ, ETA = 2^-16,
     about 5x the float32 deviation) and adds the step times |the other factor| to every output they feed.
  2. Float32 accumulation in any order (tensor-core sums, the atomics of every token that selects a row):
     LAMBDA sqrt(n) 2^-23 sum|terms|, n the largest number of terms an output element sums (a probabilistic
     bound, Higham & Mary 2019; 2^-23 for truncating accumulators, LAMBDA = 8).
  3. The output's own rounding: one bfloat16 step (2^-7 |R|) for dQ, whose float32 sum may lie on either side
     of R's nearest bfloat16 (half a step, 2^-8, let a float32 emulation of the kernel reach 0.993 of the
     bound); 2^-24 |R| for dKV (float32).
A row no token selects has bound 0: the kernel must leave it exactly as it found it (the setup's zeros).
A wrong scale, mask, index, missing term group or race shows as errors of the terms' own size, far past it.

Needs torch only when called."""

LOG2E_KERNEL = 1.44269504       # the v32 kernel's constant (sm_scale * 1.44269504), not math.log2(math.e)
ETA = 2.0 ** -16
LAMBDA = 8.0
CHUNK = 32                      # query tokens per step of the reference (memory: ~30 MB per token at topk 2048)


def _bf16(x):
    import torch
    return x.to(torch.bfloat16).double()


def _step(v, err):
    """|bf16(v + err) - bf16(v - err)|: the bf16 step the kernel's copy of v may be away from bf16(v)."""
    return (_bf16(v + err) - _bf16(v - err)).abs()


def sparse_mla_topk(S, S_kv, topk, seed=0, device="cuda", offsets=None):
    """Top-k key rows for the sparse MLA backward. Without offsets (v32, [1, S, 1, topk]): token t lists the
    positions 0..t in random order, then positions after t (which the kernel masks) at random, every one a row
    of KV (the example's padding with S_kv is one past the tensor). With offsets (finetune, [S, 1, topk]): the
    same within each sequence, positions local to it; every sequence at least topk long."""
    import torch
    g = torch.Generator(device=device).manual_seed(seed)

    def rows(n_q, n_k):
        pos = torch.arange(n_k, device=device)
        later = (pos[None, :] > torch.arange(n_q, device=device)[:, None]).double()
        keys = torch.rand(n_q, n_k, generator=g, device=device, dtype=torch.float64) + later
        return keys.argsort(-1)[:, :topk].to(torch.int32)
    if offsets is None:
        return rows(S, S_kv).view(1, S, 1, topk)
    b = offsets.tolist()
    return torch.cat([rows(e - a, e - a) for a, e in zip(b, b[1:])]).view(-1, 1, topk)


def _tokens(Q, KV, Indices, Offsets, TokenIndices):
    """(the query token's row of Q [T], key rows [T, topk] into KV's rows, valid [T, topk]) per query token."""
    import torch
    if KV.shape[-2] != 1:
        raise ValueError("sparse_mla_bwd's reference covers kv_group = 1 (the manifest's), not %d" % KV.shape[-2])
    if Offsets is None:                 # v32: [B, S, H, 576], Indices [B, S, 1, topk], KV [B, S_kv, 1, 576]
        B, S = Q.shape[0], Q.shape[1]
        idx = Indices[:, :, 0].long().reshape(B * S, -1)
        pos = torch.arange(S, device=Q.device).repeat(B)
        base = torch.arange(B, device=Q.device).repeat_interleave(S) * KV.shape[1]
        return torch.arange(B * S, device=Q.device), base[:, None] + idx, idx <= pos[:, None]
    b_i, s_i = TokenIndices[:, 0].long(), TokenIndices[:, 1].long()
    bos = Offsets.long()[b_i]
    r = bos + s_i                       # the row the kernel reads Q, Indices, Lse, Delta and writes dQ at
    idx = Indices[r, 0].long()
    return r, bos[:, None] + idx, (idx <= s_i[:, None]) & (idx != -1)


def sparse_mla_lse(Q, KV, Indices, Offsets=None, TokenIndices=None, sm_scale=None, D=512):
    """The Lse a forward would store for these top-k rows ([B, S, H] in the v32 kernel's log2 units without
    Offsets, [S, H] natural with them), float32, so that the backward's P is each head's softmax."""
    import torch
    scale = Q.shape[-1] ** -0.5 if sm_scale is None else sm_scale
    out = torch.empty(Q.shape[:-1], dtype=torch.float64, device=Q.device)
    flatQ, flat_out = Q.reshape(-1, *Q.shape[-2:]), out.view(-1, Q.shape[-2])
    kv = KV.reshape(-1, KV.shape[-1]).double()
    tok, rows, valid = _tokens(Q, KV, Indices, Offsets, TokenIndices)
    for c in range(0, tok.numel(), CHUNK):
        t, rw, ok = tok[c:c + CHUNK], rows[c:c + CHUNK], valid[c:c + CHUNK]
        k = kv[rw.clamp(0, kv.shape[0] - 1)]
        s = torch.einsum("thd,tjd->thj", flatQ[t].double(), k) * scale
        s = s.masked_fill(~ok[:, None, :], float("-inf"))
        flat_out[t] = torch.logsumexp(s, -1)
    return (out * (LOG2E_KERNEL if Offsets is None else 1.0)).float()


def sparse_mla_bwd(Q, KV, dO, Indices, Lse, Delta, Offsets=None, TokenIndices=None, sm_scale=None, D=512,
                   rounded=True):
    """(dKV, dQ) of deepseek_v32's bwd (no Offsets) or (dQ, dKV) of dsa_sparse_finetune's (with Offsets and
    TokenIndices): the order each kernel's header lists its outputs in. float64, each with `tilec_bound`
    (see the module's docstring). rounded=False: no bf16 copies of P and dP (the self-check's autograd)."""
    import torch
    v32 = Offsets is None
    scale = Q.shape[-1] ** -0.5 if sm_scale is None else sm_scale
    H, W = Q.shape[-2], Q.shape[-1]
    flatQ, flatdO = Q.reshape(-1, H, W), dO.reshape(-1, H, D)
    lse, delta = Lse.reshape(-1, H).double(), Delta.reshape(-1, H).double()
    kv = KV.reshape(-1, W).double()
    tok, rows, valid = _tokens(Q, KV, Indices, Offsets, TokenIndices)
    z = lambda *s: torch.zeros(*s, dtype=torch.float64, device=Q.device)  # noqa: E731
    dQ, dQa, dQf = z(flatQ.shape), z(flatQ.shape), z(flatQ.shape)
    dKV, dKVa, dKVf, uses = z(kv.shape), z(kv.shape), z(kv.shape), z(kv.shape[0])
    rnd = _bf16 if rounded else (lambda x: x)
    for c in range(0, tok.numel(), CHUNK):
        t, ok = tok[c:c + CHUNK], valid[c:c + CHUNK]
        rw = rows[c:c + CHUNK].clamp(0, kv.shape[0] - 1)
        k, q, do = kv[rw], flatQ[t].double(), flatdO[t].double()
        s = torch.einsum("thd,tjd->thj", q, k) * scale
        x = s * LOG2E_KERNEL - lse[t][:, :, None] if v32 else s - lse[t][:, :, None]
        P = torch.where(ok[:, None, :], torch.exp2(x) if v32 else torch.exp(x), torch.zeros_like(x))
        dpr = torch.einsum("thd,tjd->thj", do, k[..., :D])
        dP = P * (dpr - delta[t][:, :, None]) * scale
        Pb, dPb = rnd(P), rnd(dP)
        # 1. bf16 steps where the kernel's float32 P, dP may round the other way
        dpr_scale = torch.einsum("thd,tjd->thj", do.abs(), k[..., :D].abs()) + delta[t].abs()[:, :, None]
        fP = _step(P, ETA * P) * ok[:, None, :]
        fdP = _step(dP, ETA * (dP.abs() + P * scale * dpr_scale)) * ok[:, None, :]
        dQ[t] = torch.einsum("thj,tjd->thd", dPb, k)
        dQa[t] = torch.einsum("thj,tjd->thd", dPb.abs(), k.abs())
        dQf[t] = torch.einsum("thj,tjd->thd", fdP, k.abs())
        g = torch.einsum("thj,thd->tjd", dPb, q)
        ga = torch.einsum("thj,thd->tjd", dPb.abs(), q.abs())
        gf = torch.einsum("thj,thd->tjd", fdP, q.abs())
        g[..., :D] += torch.einsum("thj,thd->tjd", Pb, do)
        ga[..., :D] += torch.einsum("thj,thd->tjd", Pb.abs(), do.abs())
        gf[..., :D] += torch.einsum("thj,thd->tjd", fP, do.abs())
        live = rows[c:c + CHUNK][ok]
        dKV.index_add_(0, live, g[ok])
        dKVa.index_add_(0, live, ga[ok])
        dKVf.index_add_(0, live, gf[ok])
        uses.index_add_(0, live, torch.ones_like(live, dtype=torch.float64))
    n_q = float(valid.sum(1).max()) if valid.numel() else 1.0
    n_kv = 2 * H * float(uses.max()) if uses.numel() else 1.0
    dQ.tilec_bound = _bound(dQ, dQa, dQf, n_q, 2.0 ** -7)
    dKV.tilec_bound = _bound(dKV, dKVa, dKVf, n_kv, 2.0 ** -24)
    dQ, dKV = _shaped(dQ, Q.shape), _shaped(dKV, KV.shape)
    return (dKV, dQ) if v32 else (dQ, dKV)


def _bound(R, A, F, n, u_out):
    return F + LAMBDA * max(n, 1.0) ** 0.5 * 2.0 ** -23 * A + u_out * R.abs()


def _shaped(R, shape):
    out = R.view(shape)
    out.tilec_bound = R.tilec_bound.view(shape)
    return out


def bound_excess(out, ref):
    """max |out - ref| / ref.tilec_bound (a reference of sparse_mla_bwd's); < 1 passes. NaN anywhere: inf; a
    difference where the bound is 0 (a row nothing adds to): inf. Against an output without a bound (tilec's
    beside TileLang's in the side by side, where the reference then decides), close(1e-2, 1e-2)'s rule as the
    bound."""
    import torch
    o, r = out.double(), ref.double()
    bound = getattr(ref, "tilec_bound", None)
    bound = 1e-2 + 1e-2 * r.abs() if bound is None else bound.to(o.device)
    diff = (o - r).abs()
    if bool(torch.isnan(diff).any()):
        return float("inf")
    excess = torch.where(diff == 0, torch.zeros_like(diff), diff / bound)
    return float(excess.max()) if excess.numel() else 0.0


def self_check(torch):
    """The references against their definitions by loops (v32 and finetune, the bf16 copies included), the
    unrounded gradients against autograd of the forward they differentiate, the top-k rows' promises and the
    judge's sense, on small shapes."""
    problems = []
    g = torch.Generator().manual_seed(23)
    B, S, Skv, H, D, W, k = 2, 6, 9, 3, 4, 6, 4
    Q, KV = torch.randn(B, S, H, W, generator=g).bfloat16(), torch.randn(B, Skv, 1, W, generator=g).bfloat16()
    dO = torch.randn(B, S, H, D, generator=g).bfloat16()
    Ind = torch.cat([sparse_mla_topk(S, Skv, k, seed=b, device="cpu") for b in range(B)])
    Lse, Delta = torch.randn(B, S, H, generator=g) + 2, torch.randn(B, S, H, generator=g)
    dKV, dQ = sparse_mla_bwd(Q, KV, dO, Ind, Lse, Delta, D=D)
    wKV, wQ = _by_loops(torch, Q.view(B * S, H, W), KV.view(B * Skv, W), dO.view(B * S, H, D), Lse.view(-1, H),
                        Delta.view(-1, H), [(b * S + s, s, b * Skv, Ind[b, s, 0].tolist()) for b in range(B)
                                            for s in range(S)], D, True)
    problems += _differs("v32 dKV", dKV.view(-1, W), wKV) + _differs("v32 dQ", dQ.view(-1, H, W), wQ)
    off = torch.tensor([0, 4, 9], dtype=torch.int32)
    ti = torch.tensor([[0, i] for i in range(4)] + [[1, i] for i in range(5)], dtype=torch.int32)
    Qf, KVf, dOf = Q.view(-1, H, W)[:9], KV.view(-1, 1, W)[:9], dO.view(-1, H, D)[:9]
    Indf = sparse_mla_topk(9, 9, 4, seed=3, device="cpu", offsets=off)
    Indf[2, 0, 1] = -1                                      # a -1 slot: masked
    Lf, Df = Lse.view(-1, H)[:9], Delta.view(-1, H)[:9]
    fQ, fKV = sparse_mla_bwd(Qf, KVf, dOf, Indf, Lf, Df, off, ti, D=D)
    wKV, wQ = _by_loops(torch, Qf, KVf.view(9, W), dOf, Lf, Df, [(int(off[b]) + s, s, int(off[b]),
                        Indf[int(off[b]) + s, 0].tolist()) for b, s in ti.tolist()], D, False)
    problems += _differs("finetune dKV", fKV.view(-1, W), wKV) + _differs("finetune dQ", fQ, wQ)
    problems += _autograd_check(torch, g) + _topk_check(torch) + _judge_check(torch, dKV)
    return problems


def _by_loops(torch, Q, KV, dO, Lse, Delta, tokens, D, v32):
    """(dKV, dQ) by loops over (token row, position, key base, slots): the kernel's formulas one value at a time."""
    import math
    H, W = Q.shape[1], Q.shape[2]
    scale = W ** -0.5
    dKV, dQ = torch.zeros(KV.shape[0], W, dtype=torch.float64), torch.zeros(Q.shape, dtype=torch.float64)
    b16 = lambda v: float(torch.tensor(v, dtype=torch.float64).bfloat16().double())  # noqa: E731
    for r, pos, base, slots in tokens:
        for p in slots:
            if p > pos or p == -1:
                continue
            kv = KV[base + p].double()
            for h in range(H):
                s = float(Q[r, h].double() @ kv) * scale
                P = 2.0 ** (s * LOG2E_KERNEL - float(Lse[r, h])) if v32 else math.exp(s - float(Lse[r, h]))
                dP = P * (float(dO[r, h].double() @ kv[:D]) - float(Delta[r, h])) * scale
                dQ[r, h] += b16(dP) * kv
                dKV[base + p] += b16(dP) * Q[r, h].double()
                dKV[base + p, :D] += b16(P) * dO[r, h].double()
    return dKV, dQ


def _differs(what, got, want):
    d = float((got - want).abs().max())
    return [] if d <= 1e-12 * max(1.0, float(want.abs().max())) else ["sparse_mla_bwd's %s differs from its "
                                                                       "definition by loops by %g" % (what, d)]


def _autograd_check(torch, g):
    """Unrounded, with the forward's own Lse and Delta = rowsum(O dO): autograd's gradients of that forward."""
    S, H, D, W, k = 7, 2, 4, 6, 5
    Q = torch.randn(1, S, H, W, generator=g, dtype=torch.float64)
    KV = torch.randn(1, S, 1, W, generator=g, dtype=torch.float64)
    dO = torch.randn(1, S, H, D, generator=g, dtype=torch.float64)
    Ind = sparse_mla_topk(S, S, k, seed=9, device="cpu")
    Lse = sparse_mla_lse(Q, KV, Ind).double()
    q, kv = Q.clone().requires_grad_(True), KV.clone().requires_grad_(True)
    idx = Ind[0, :, 0].long()
    keys = kv[0, :, 0][idx]                                         # [S, k, W]
    logits = torch.einsum("shd,skd->shk", q[0], keys) * W ** -0.5
    logits = logits.masked_fill((idx > torch.arange(S)[:, None])[:, None, :], float("-inf"))
    O = torch.einsum("shk,skd->shd", torch.softmax(logits, -1), keys[..., :D])
    (O * dO[0]).sum().backward()
    Delta = (O.detach() * dO[0]).sum(-1)[None]
    dKV, dQ = sparse_mla_bwd(Q, KV, dO, Ind, Lse, Delta, D=D, rounded=False)
    out = []
    for name, got, want in (("dQ", dQ, q.grad), ("dKV", dKV, kv.grad)):
        if float((got - want).abs().max()) > 1e-6:      # Lse rounded to float32 as the kernel takes it
            out.append("sparse_mla_bwd's unrounded %s differs from autograd by %g" % (name, float((got - want).abs().max())))
    return out


def _topk_check(torch):
    out = []
    ind = sparse_mla_topk(12, 20, 8, seed=1, device="cpu")[0, :, 0]
    for t in range(12):
        row = ind[t].tolist()
        valid = min(t + 1, 8)
        if len(set(row)) != 8 or not all(0 <= p < 20 for p in row) or sorted(row[:valid]) != list(range(t + 1))[:valid] \
                and not all(p <= t for p in row[:valid]):
            out.append("sparse_mla_topk's row %d: %s" % (t, row))
    return out


def _judge_check(torch, ref):
    out = []
    if bound_excess(ref.clone(), ref) != 0.0:
        out.append("bound_excess: the reference itself is not within its bound")
    far = ref.clone()
    i = int(ref.abs().argmax())
    far.view(-1)[i] *= 1.01
    if not bound_excess(far, ref) > 1:
        out.append("bound_excess passes a 1% error at the largest element")
    nan = ref.clone()
    nan.view(-1)[0] = float("nan")
    if bound_excess(nan, ref) != float("inf"):
        out.append("bound_excess passes a NaN")
    zero = (ref.tilec_bound == 0).nonzero()
    if zero.numel():
        moved = ref.clone()
        moved[tuple(zero[0])] = 1e-30
        if bound_excess(moved, ref) != float("inf"):
            out.append("bound_excess passes a write to a row nothing adds to")
    else:
        out.append("the self-check's v32 case has no row that no token selects")
    return out
