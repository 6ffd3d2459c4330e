"""tilec's float64 reference for dsa_sparse_finetune/indexer_topk_reducesum.py's kernel (issue 24), re-exported by
gpu/tlcompat_refs.py (`tilec_refs.NAME` in tests/tilelang_compat/reference.tsv), and the judge of its two outputs.

For token t (position p in its sequence of Offsets) and each key position j <= p of the same sequence:

  L[t, j] = sum_h relu(IndexQ[t, h] . IndexK[bos + j] * dim^-0.5) * Weights[t, h]        (-inf for j > p)

TopkIndices[t] lists the topk largest j of L[t] (largest first; -1 where fewer than topk are valid) and
ReduceSum[t] their softmax over those topk values (0 for the -1 slots). The file's ref_index_score computes the same
in float32 and only prints its errors.

Judge (`topk_mismatch(L, logit_atol, rtol, atol)`, for similar(..., 1)): the number of wrong entries. An index row is
judged by the values it selects, not by the indices: the kernel's float32 logits come from tf32 tensor-core products
(about 1e-2 from float64 at the file's sizes), so where two keys' logits lie that close either may be chosen. The
row's indices must be distinct, in range or -1, and L at them, sorted, must match the reference's top values within
logit_atol (a -1 slot matches an -inf one). A score row (float) must match the reference's softmax, largest first,
within rtol and atol. A wrong index, mask or scale moves a selected logit by the logits' own size (about 4), far
past logit_atol.

Needs torch only when called."""


def indexer_topk_logits(IndexQ, Weights, IndexK, Offsets):
    """L [S, longest sequence] in float64: L[t, j] over the key positions j of token t's sequence, -inf past t."""
    import torch
    offs = [int(x) for x in Offsets.tolist()]
    longest = max(b - a for a, b in zip(offs, offs[1:]))
    L = torch.full((IndexQ.shape[0], longest), float("-inf"), dtype=torch.float64, device=IndexQ.device)
    scale = IndexQ.shape[-1] ** -0.5
    for a, b in zip(offs, offs[1:]):
        q, k, w = IndexQ[a:b].double(), IndexK[a:b].double(), Weights[a:b].double()
        s = (torch.einsum("thd,jd->thj", q, k) * scale).clamp(min=0)
        lg = (s * w[:, :, None]).sum(1)
        causal = torch.arange(b - a, device=L.device)[None, :] <= torch.arange(b - a, device=L.device)[:, None]
        L[a:b, :b - a] = lg.masked_fill(~causal, float("-inf"))
    return L


def indexer_topk_reducesum(L, topk):
    """(TopkIndices int32, ReduceSum float64) of the logits L: the topk largest, largest first, -1 where -inf."""
    import torch
    vals, idx = torch.topk(L, topk, dim=-1)
    idx = torch.where(torch.isinf(vals), torch.full_like(idx, -1), idx)
    return idx.int(), torch.softmax(vals, dim=-1)


def topk_mismatch(L, logit_atol, rtol, atol):
    """The judge of module's doc: the number of wrong entries of an index row set or of a score row."""
    def topk_mismatch(out, ref):
        import torch
        r = ref.to(out.device)
        if out.dtype.is_floating_point:
            return int((~torch.isclose(out.double(), r.double(), rtol=rtol, atol=atol)).sum())
        Ld = L.to(out.device)
        o = out.long()
        bad = (o < -1) | (o >= Ld.shape[1])
        so = o.sort(-1)[0]
        bad[:, 1:] |= (so[:, 1:] == so[:, :-1]) & (so[:, 1:] >= 0)        # a key listed twice
        none = torch.full_like(Ld[:, :1], float("-inf"))
        mine, want = (torch.where(x >= 0, Ld.gather(1, x.clamp(0, Ld.shape[1] - 1)), none).sort(-1, descending=True)[0]
                      for x in (o, r.long()))
        both_inf = torch.isinf(mine) & torch.isinf(want)
        bad |= ~(both_inf | ((mine - want).abs() <= logit_atol))
        return int(bad.sum())
    return topk_mismatch


def self_check(torch):
    """L against its definition by loops, the reference's promises and the judge's sense, on small shapes."""
    problems = []
    g = torch.Generator().manual_seed(24)
    H, D, k = 3, 4, 4
    offs = torch.tensor([0, 5, 11], dtype=torch.int32)
    Q, W, K = torch.randn(11, H, D, generator=g), torch.randn(11, H, generator=g), torch.randn(11, D, generator=g)
    L = indexer_topk_logits(Q, W, K, offs)
    t, j, a = 8, 2, 5                                   # token 8 is position 3 of the second sequence
    want = sum(max(0.0, sum(float(Q[t, h, d]) * float(K[a + j, d]) for d in range(D)) * D ** -0.5) * float(W[t, h])
               for h in range(H))
    if abs(float(L[t, j]) - want) > 1e-12 or not torch.isinf(L[t, 4]) or not torch.isinf(L[2, 3]) or L.shape != (11, 6):
        problems.append("indexer_topk_logits at one position or its mask")
    idx, sc = indexer_topk_reducesum(L, k)
    if int(idx[1, 2]) != -1 or float(sc[1, 2]) != 0.0 or abs(float(sc[7].sum()) - 1) > 1e-12:
        problems.append("indexer_topk_reducesum: masked slots or softmax rows")
    judge = topk_mismatch(L, 1e-6, 1e-6, 1e-9)
    swapped = idx.clone()
    swapped[7] = swapped[7].flip(0)                     # the same set in another order: right
    dup = idx.clone()
    dup[7, 1] = dup[7, 0]
    other = idx.clone()
    other[7, 0] = -1                                    # a valid slot dropped
    if judge(swapped, idx) != 0 or judge(dup, idx) == 0 or judge(other, idx) == 0 or judge(sc.float(), sc) != 0 or \
            judge(sc.float() * 1.01, sc) == 0:
        problems.append("topk_mismatch: a right set in another order, a duplicate, a dropped slot or the scores")
    return problems
