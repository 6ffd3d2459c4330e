"""tilec's float64 references for kernels that compile but disagreed with TileLang in the side by side without a
reference to say which side is right (issue 23), re-exported by gpu/tlcompat_refs.py (`tilec_refs.NAME` in
tests/tilelang_compat/reference.tsv and tests/tilekernels/reference.tsv). Each is the kernel's mathematics in
float64 with the kernel's own roundings where it stores to 16-bit buffers; inputs the kernels take as tf32 are
given tf32-exact by the reference lines' setups (tf32()), so that a tensor-core GEMM's products are exact.

  mhc_pre_gemm_sqrsum  (examples/deepseek_mhc/example_mhc_pre.py) out = x fn^T, sqrsum = sum x^2 per token
  indexer_bwd          (examples/dsa_sparse_finetune/indexer_bwd.py) the backward of the sparse indexer's scores
                       relu(k . q_h * scale) weighted by w_h over each token's top-k keys (see the function)
  gdn_chunk_delta_bwd_dhu  (examples/gdn/example_chunk_delta_bwd.py) the backward state recurrence, one gate per
                       token (kda_chunk_delta_bwd_dhu's gdn form)
  pre_norm_fn_bwd_mul  (TileKernels mhc/norm_fn_kernel.py) x_grad += G fn + 2 x sqrsum_grad, fn_grad = G^T x
  gdn_wy_fast_bwd_split  (examples/gdn/example_wy_fast_bwd_split.py, tilelang_wy_fast_bwd_split) the second kernel of
                       the WY backward: dA through A's inverse, dk, dbeta's key part, the gate terms dA * (beta k) k^T
  gdn_chunk_o_bwd_dqkwg  (examples/gdn/example_chunk_o_bwd.py, use_g and use_dw) dq, dk, dw and the gate gradient per
                       key slice, as that kernel computes them (its quirks included: see the function)
  gdn_chunk_o          (examples/gdn/example_chunk_o.py, use_g) the forward output, inter- plus intra-chunk
  index_set_mismatch   a judge of top-k index sets (deepseek_v32/topk_selector.py)
  mqa_logits           (deepseek_v32/fp8_lighting_indexer.py, dsa_hisa/pool_mqa_fp8.py) the fp8 indexer's logits
                       where each query's key range defines them, judged by masked_mismatch there only
  int4_gemv            (dequantize_gemm/example_dequant_gemv_fp16xint4.py) the fp16 x uint4 GEMV of interleave_int4's
                       bytes, with its float16 accumulation's bound (the file's own reference reads the interleaved
                       bytes as if plain, which its atol of 1e3 hides)
  sparse_mla_bwd       (deepseek_v32 and dsa_sparse_finetune sparse_mla_bwd.py) in gpu/tlcompat_refs_mla.py, with
                       sparse_mla_topk, sparse_mla_lse and its judge bound_excess, re-exported and self-checked here

Needs torch only when called."""


from tlcompat_refs_mla import bound_excess, sparse_mla_bwd, sparse_mla_lse, sparse_mla_topk  # noqa: F401,E402
import tlcompat_refs_mla  # noqa: E402


def tf32(x):
    """float32 x rounded to tf32 (10 mantissa bits, to nearest, ties away from zero: cvt.rna.tf32.f32)."""
    import torch
    b = x.float().contiguous().view(torch.int32)
    return ((b + 0x1000) & ~0x1FFF).view(torch.float32)


def _b16(x, dtype):
    """x (float64) as the kernel stores it in a 16-bit buffer, back in float64."""
    return x.float().to(dtype).double()


def mhc_pre_gemm_sqrsum(x, fn):
    """(out, sqrsum): out[t, j] = sum_k x[t, k] fn[j, k], sqrsum[t] = sum_k x[t, k]^2, float64."""
    xd = x.double()
    return xd @ fn.double().T, (xd * xd).sum(-1)


def indexer_topk(Offsets, TokenIndices, topk, valid=8, future=4, seed=0):
    """Top-k slots for indexer_bwd: token t (local index i of its sequence) lists positions i, i - 1, ...,
    i - valid + 1 (those >= 0) and `future` positions after it (which the kernel masks: pos > i), in random slots of
    its `topk`; every other slot -1. Each key position then takes at most `valid` tokens' gradients, so the
    kernel's bfloat16 atomic sums of dIndexK round a few terms each."""
    import torch
    g = torch.Generator(device=TokenIndices.device).manual_seed(seed)
    n = TokenIndices.shape[0]
    i = TokenIndices[:, 1].long()
    pos = torch.cat([i[:, None] - torch.arange(valid, device=i.device), i[:, None] + 1 + torch.arange(future, device=i.device)], 1)
    pos[pos < 0] = -1
    slots = torch.rand(n, topk, generator=g, device=i.device).argsort(-1)[:, :valid + future]
    out = torch.full((n, topk), -1, dtype=torch.int32, device=i.device)
    return out.scatter_(1, slots, pos.int())


def indexer_bwd(IndexQ, Weights, IndexK, AttnScore, IndexScore, TopkIndices, Offsets, TokenIndices, sm_scale=None):
    """(dIndexQ, dWeights, dIndexK) of tl_indexer_bwd_impl, float64 but for the kernel's bfloat16 roundings. Token r
    (sequence b, local index i, bos = Offsets[b]) with q' = bf16(q_r * scale) [H, D] and, per top-k slot s whose
    position p = TopkIndices[r, s] satisfies 0 <= p <= i, k_s = IndexK[bos + p] (else 0):
      l[s, h] = relu(k_s . q'_h),  e_s = IndexScore[r, s] - AttnScore[r, s]
      dWeights[r, h] = sum_s e_s l[s, h]
      g[s, h] = bf16(e_s [l[s, h] > 0] Weights[r, h])                  (the kernel's bf16 copies of d_logits_qk)
      dIndexQ[r, h] = scale sum_s g[s, h] k_s,   dIndexK[bos + p_s] += sum_h g[s, h] q'_h  (summed over tokens)
    Outputs rounded to bfloat16 (dIndexK: its float64 total, the kernel's atomic sums round each term)."""
    import torch
    S, H, D = IndexQ.shape
    scale = D ** -0.5 if sm_scale is None else sm_scale
    bos = Offsets.long()[TokenIndices[:, 0].long()]
    i = TokenIndices[:, 1].long()
    pos = TopkIndices.long()
    ok = (pos > -1) & (pos <= i[:, None])
    order = torch.sort((~ok).int(), dim=1, stable=True).indices      # valid slots first
    m = max(int(ok.sum(1).max()), 1)
    slot = order[:, :m]
    okm = torch.gather(ok, 1, slot)
    row = torch.where(okm, bos[:, None] + torch.gather(pos, 1, slot), torch.zeros_like(slot))
    k = IndexK.double()[row] * okm[..., None]                            # [S, m, D]
    q = _b16(IndexQ.double() * scale, IndexQ.dtype)                     # [S, H, D]
    e = (torch.gather(IndexScore.float(), 1, slot) - torch.gather(AttnScore.float(), 1, slot)).double() * okm
    logits = torch.relu(torch.einsum("smd,shd->smh", k, q))
    dW = torch.einsum("sm,smh->sh", e, logits)
    g = _b16(e[..., None] * (logits > 0) * Weights.double()[:, None, :], IndexQ.dtype)
    dQ = scale * torch.einsum("smh,smd->shd", g, k)
    contrib = torch.einsum("smh,shd->smd", g, q)[okm]
    dK = torch.zeros(IndexK.shape, dtype=torch.float64, device=IndexK.device).index_add_(0, row[okm], contrib)
    return _b16(dQ, IndexQ.dtype), _b16(dW, Weights.dtype), _b16(dK, IndexK.dtype)


def gdn_chunk_delta_bwd_dhu(Q, K, W, G, dht, dO, dv, scale, chunk=64):
    """(dh, dh0, dv2) of examples/gdn/example_chunk_delta_bwd.py (use_g, an initial state, a final-state gradient),
    float64 but for the kernel's bfloat16 stores. The gradient D [B, H, DK, DV] starts at dht and runs over the
    chunks backwards: dh[c] = D16 (its bfloat16 shared copy), dv2_c = bf16(K_c D16 * e^(G_last - G_t) (0 where
    that exponent is positive) + dv_c), D <- e^G_last D + scale (e^G_t Q_c)^T dO_c - W_c^T dv2_c; dh0 the last D."""
    import torch
    Bn, S, H, _ = K.shape
    grad, dhs, dvs = dht.double(), [None] * (S // chunk), [None] * (S // chunk)
    for c in reversed(range(S // chunk)):
        part = slice(c * chunk, (c + 1) * chunk)
        g = G[:, part].double()                              # [B, chunk, H]
        last = g[:, -1:]                                     # [B, 1, H]
        d16 = _b16(grad, K.dtype)
        decay = torch.where(last - g <= 0, torch.exp(last - g), torch.zeros_like(g))[..., None]
        v16 = _b16(torch.einsum("bthk,bhkv->bthv", K[:, part].double(), d16) * decay + dv[:, part].double(), K.dtype)
        dhs[c], dvs[c] = d16, v16
        qg = Q[:, part].double() * torch.exp(g)[..., None] * scale
        grad = (grad * torch.exp(last[:, 0])[..., None, None] + torch.einsum("bthk,bthv->bhkv", qg, dO[:, part].double())
                - torch.einsum("bthk,bthv->bhkv", W[:, part].double(), v16))
    return torch.stack(dhs, 1), grad, torch.cat(dvs, 1)


def pre_norm_fn_bwd_mul(out_mul_grad, sqrsum_grad, x, fn, x_grad0):
    """(x_grad, fn_grad) of TileKernels' _mhc_pre_norm_fn_bwd_mul (one RMS group): G = out_mul_grad [T, M],
    x_grad = bf16(x_grad0 + G fn + 2 x sqrsum_grad) (the kernel adds into the x_grad it is given), fn_grad = G^T x."""
    G = out_mul_grad.double().reshape(x.shape[0], -1)
    xd = x.double()
    xg = x_grad0.double() + G @ fn.double() + 2 * xd * sqrsum_grad.double().reshape(-1, 1)
    return _b16(xg, x.dtype), G.T @ xd


def gdn_wy_fast_bwd_split(K, Beta, G, A, dA, dk0, chunk=64):
    """(dk, dbeta_k, dg_A_positive, dg_A_negative) of tilelang_wy_fast_bwd_split, float64 but for the kernel's 16-bit
    shared copies. Per chunk (A, dA its [chunk, chunk] blocks, L = strictly lower, gates g per token, kb = bf16(beta k)):
      X = bf16(L(dA) A^T),  D = -L(A^T X) * e^(g_i - g_j) where g_i - g_j <= 0 (else 0),  D16 = bf16(D)
      dk = bf16(dk0 + D16^T kb + bf16((D16 k) * beta)),  dbeta_k = bf16(sum_k (D16 k) * k)
      dg_A_positive[i, j] = D[i, j] (kb k^T)[i, j],  dg_A_negative[j, i] = the same (the kernel's float32 D, not D16)."""
    import torch
    from tlcompat_refs_wy import chunked, unchunked
    lo = K.dtype
    c, back = chunked(chunk), unchunked
    k, beta, g, a = c(K), c(Beta)[..., None], c(G), c(A)
    low = torch.tril(torch.ones(chunk, chunk, dtype=torch.float64, device=K.device), -1)
    x16 = _b16((c(dA) * low) @ a.transpose(-1, -2), lo)
    diff = g[..., :, None] - g[..., None, :]
    d = torch.where(diff <= 0, -(a.transpose(-1, -2) @ x16) * low * torch.exp(torch.clamp(diff, max=0)), torch.zeros_like(diff))
    d16 = _b16(d, lo)
    kb = c((K.float() * Beta.float()[..., None]).to(lo))
    dkb = d16 @ k
    dk = _b16(c(dk0) + d16.transpose(-1, -2) @ kb + _b16(dkb * beta, lo), lo)
    dga = d * (kb @ k.transpose(-1, -2))
    return back(dk), _b16(back((dkb * k).sum(-1)[..., None])[..., 0], lo), back(dga), back(dga.transpose(-1, -2))


def gdn_chunk_o_bwd_dqkwg(Q, K, V, h, G, dO, dh, dv, scale, chunk=64, block_DK=64):
    """(dq, dk, dw, dg) of tilelang_chunk_o_bwd_dqkwg (use_g, use_dw), float64 but for its bf16 outputs and its bf16
    copy of ds, as the kernel computes them per chunk and key slice of block_DK (g the chunk's gates, q k the slice):
      ds = dO V^T,  dq0 = (dO h^T) e^g scale,  dk0 = (V dh^T) e^(-g) where -g <= 0 (else 0: the kernel's
      G_last_local is a cleared alloc_var never set),  dw = bf16(-(dv h^T))
      D = ds e^(g_i - g_j) scale where g_i - g_j <= 0 (else 0),  P = D * (q k^T),  D16 = bf16(D)
      dq = bf16(dq0 + D16 k),  dk = bf16(dk0 + D16^T q)
      dg[slice, token i] = sum_k dq0 q - sum_k dk0 k + sum_j P[i, j] - sum_j P[j, i] + g_last e^g_last + sum dk0 k
    (the kernel sets dg_last_local_0 to g_last e^g_last over its sum of h dh; dg is split by key slice: [NK, B, S, H])."""
    import torch
    from tlcompat_refs_wy import chunked, unchunked
    c = chunked(chunk)
    lo, DK = Q.dtype, Q.shape[-1]
    nk = DK // block_DK
    q, k, v, do, g = c(Q), c(K), c(V), c(dO), c(G)
    hh, dhh = h.double().permute(0, 2, 1, 3, 4), dh.double().permute(0, 2, 1, 3, 4)   # [B, H, N, DK, DV]
    dq0 = (do @ hh.transpose(-1, -2)) * torch.exp(g)[..., None] * scale
    dk0 = torch.where(-g[..., None] <= 0, (v @ dhh.transpose(-1, -2)) * torch.exp(-g)[..., None], torch.zeros_like(q))
    dw = -(c(dv) @ hh.transpose(-1, -2))
    diff = g[..., :, None] - g[..., None, :]
    d = torch.where(diff <= 0, (do @ v.transpose(-1, -2)) * torch.exp(torch.clamp(diff, max=0)) * scale, torch.zeros_like(diff))
    d16 = _b16(d, lo)

    def sl(x):      # [..., S, DK] -> [..., NK, S, block_DK]
        return x.reshape(*x.shape[:-1], nk, block_DK).transpose(-2, -3)
    p = d[..., None, :, :] * (sl(q) @ sl(k).transpose(-1, -2))                      # [B, H, N, NK, S, S]
    last = g[..., -1]
    dg = ((sl(dq0) * sl(q)).sum(-1) - (sl(dk0) * sl(k)).sum(-1) + p.sum(-1) - p.sum(-2)
          + (last * torch.exp(last))[..., None, None] + (sl(dk0) * sl(k)).sum((-1, -2))[..., None])
    dq, dk = _b16(dq0 + d16 @ k, lo), _b16(dk0 + d16.transpose(-1, -2) @ q, lo)
    dg = dg.permute(3, 0, 2, 4, 1)                                                   # [NK, B, N, S, H]
    return unchunked(dq), unchunked(dk), _b16(unchunked(dw), lo), dg.reshape(nk, dg.shape[1], -1, dg.shape[-1])


def gdn_chunk_o(Q, K, V, HIDDEN, G, scale, chunk=64):
    """O of tilelang_chunk_fwd_o (use_g), float64 but for its bf16 A tile: per chunk c and token i,
    O_i = scale (e^g_i q_i HIDDEN[c] + sum_j A16_ij v_j), A_ij = (q_i . k_j) e^(g_i - g_j) where j <= i and
    g_i <= g_j, else 0 (the kernel tests the gate difference itself: G is a gate per token, not a cumulative sum),
    A16 that float32 value rounded to Q's dtype, as the kernel's shared tile holds it for its GEMM with V."""
    import torch
    B, S, H, _ = Q.shape
    n = S // chunk

    def c(x):
        return x.reshape(B, n, chunk, H, *x.shape[3:]).double()
    q, k, v, g = c(Q), c(K), c(V), c(G)                        # g [B, n, chunk, H]
    diff = g[:, :, :, None, :] - g[:, :, None, :, :]          # [B, n, i, j, H]
    idx = torch.arange(chunk, device=Q.device)
    keep = (diff <= 0) & (idx[:, None] >= idx[None, :])[None, None, :, :, None]
    a = torch.einsum("bnihd,bnjhd->bnijh", q, k)
    a16 = _b16(torch.where(keep, a * torch.exp(diff.clamp(max=0)), torch.zeros_like(a)), Q.dtype)
    inter = torch.einsum("bnihk,bnhkv->bnihv", q, HIDDEN.double()) * torch.exp(g)[..., None]
    intra = torch.einsum("bnijh,bnjhv->bnihv", a16, v)
    return ((inter + intra) * scale).reshape(B, S, H, V.shape[-1])


def mqa_logits(IndexQ, IndexK, IndexKScale, Weights, KS, KE):
    """Logits [S, N] of the fp8 MQA indexers (mqa_attn_return_logits, pool_mqa_attn_return_logits_fp8), float64:
    logits[m, n] = sum_h relu(q_mh . k_n kscale_n) w_mh for KS[m] <= n < KE[m], NaN elsewhere. The kernels write
    the union of their query tile's ranges (unmasked values) and leave the rest unwritten, so only the defined
    entries are judged (masked_mismatch)."""
    import torch
    S, H = Weights.shape
    q = IndexQ.double().reshape(S, H, -1)
    k = IndexK.double() * IndexKScale.double()[:, None]
    logits = (torch.einsum("mhd,nd->mnh", q, k).clamp(min=0) * Weights.double()[:, None, :]).sum(-1)
    n = torch.arange(k.shape[0], device=k.device)
    defined = (n[None, :] >= KS.long()[:, None]) & (n[None, :] < KE.long()[:, None])
    return torch.where(defined, logits, torch.full_like(logits, float("nan")))


def interleave_int4(qweight):
    """The byte layout dequantize_gemm's fast decoding (decode_i4u_to_f16, lop3) reads: in each little-endian
    32-bit word of 8 nibbles, nibble o moves to nibble (o % 2) * 4 + o // 2 (the decoder's i-th pair of halves is
    nibbles i and 4 + i), so the decoder gives back the original order. int8 [..., n], n a multiple of 4."""
    import torch
    w = qweight.contiguous().view(torch.int32).long() & 0xFFFFFFFF
    out = torch.zeros_like(w)
    for o in range(8):
        out |= ((w >> (4 * o)) & 0xF) << (4 * ((o % 2) * 4 + o // 2))
    return torch.where(out >= 2 ** 31, out - 2 ** 32, out).to(torch.int32).view(torch.int8).view(qweight.shape)


def ladder_int4_b(qB):
    """BitBLAS's LadderPermutate of transform_kind 3 (transpose_matrix, float16 target, 4-bit values two to an int8)
    of the weights qB [N, K / 2], as dequantize_gemm/example_dequant_gemm_fine_grained.py has bitblas make its B:
    [N / 16, K / 16, 16, 8] byte tiles, stage 2 the ldmatrix.trans permutation of float16 16 x 16 tiles and stage 3
    the inverse of its per-lane map, both taken on element columns 2 c and halved back to bytes (a byte's two
    nibbles move together). Feed the result to interleave_int4 (BitBLAS's LOP3Permutate) for the kernel's B."""
    import torch

    def intra(i, j):            # stage 2 on a byte (i, j): ldmatrix_trans_32x8_to_shared_16x16_layout
        t, l = i * 2 + (2 * j) // 8, (2 * j) % 8
        return 8 * (t // 16) + t % 8, (8 * ((t % 16) // 8) + l) // 2

    def stage3(i, j):           # shared_32x8_to_mma_32x8_layout, forward
        t, l = i * 2 + (2 * j) // 8, (2 * j) % 8
        nt, nl = (t % 8) * 4 + l // 2, (t // 8) * 2 + l % 2
        return (nt * 8 + nl) // 16, ((nt * 8 + nl) % 16) // 2

    inv = {stage3(i, j): (i, j) for i in range(16) for j in range(8)}
    src = [intra(*inv[(a, b)]) for a in range(16) for b in range(8)]
    rows = torch.tensor([r for r, _ in src]).view(16, 8)
    cols = torch.tensor([c for _, c in src]).view(16, 8)
    N, KB = qB.shape
    tiles = qB.view(N // 16, 16, KB // 8, 8).permute(0, 2, 1, 3)             # [N / 16, K / 16, 16, 8]
    return tiles[:, :, rows.to(qB.device), cols.to(qB.device)].contiguous()


def int4_gemv(A, qweight, reduce_thread=32, micro_k=8):
    """C = A W^T (float64), W [N, K] the unsigned nibbles of qweight [N, K / 2] (low nibble first), before
    interleave_int4: what example_dequant_gemv_fp16xint4.py's kernel computes from the interleaved bytes. Its
    accumulator is float16: thread kr sums the products k = ko * (reduce_thread * micro_k) + kr * micro_k + v in
    order (ko, v), then the threads' sums meet in a tree of log2(reduce_thread) levels. The result carries as
    `tilec_bound` (judged by bound_excess) twice the first-order error of that: u (|each product| + |each
    partial sum| + levels |each thread's sum|) + one float16 step of the output, u = 2^-11."""
    import math
    import torch
    q = qweight.view(torch.uint8).long()
    Wt = torch.stack((q & 0xF, q >> 4), dim=-1).reshape(q.shape[0], -1).double()
    N, K = Wt.shape
    p = A.double()[:, None, :] * Wt[None, :, :]                            # [M, N, K]
    M = p.shape[0]
    seq = p.view(M, N, K // (reduce_thread * micro_k), reduce_thread, micro_k).transpose(2, 3).reshape(M, N, reduce_thread, -1)
    partial = seq.cumsum(-1)
    threads = partial[..., -1]
    levels = math.ceil(math.log2(reduce_thread))
    u = 2.0 ** -11
    R = threads.sum(-1)
    first = u * (p.abs().sum(-1) + partial.abs().sum((-1, -2)) + levels * threads.abs().sum(-1))
    R.tilec_bound = 2 * first + 2.0 ** -10 * R.abs()
    return R


E2M1_TIES_UP = (0.75, 1.75, 3.5)        # midpoints whose even neighbour is the larger magnitude


def fp4_block_quant(x, group=32):
    """deepseek_v4/act_quant.py's fp4_quant_kernel in its float32 arithmetic: per row and group, amax =
    max(max |x|, 6 * 2^-126), s = 2^ceil(log2(amax * f32(1/6))) (fast_round_scale's exponent bits), codes of
    clamp(x / s, -6, 6) in e2m1 to nearest, ties to even (the file's reference takes the smaller magnitude at the
    ties 0.75, 1.75 and 3.5, about 1% of bfloat16 inputs, which its test allows), sign bit for negatives; two codes a
    byte, the even element in the low nibble. Returns (codes int8 [M, N / 2], scales float32 [M, N / group])."""
    import torch
    M, N = x.shape
    xf = x.float().reshape(M, N // group, group)
    amax = xf.abs().amax(-1).clamp(min=6 * 2.0 ** -126)
    t = amax * torch.tensor(1 / 6.0, dtype=torch.float32, device=x.device)
    m, e = torch.frexp(t)
    s = ((torch.where(m == 0.5, e - 1, e).to(torch.int32) + 127) << 23).view(torch.float32)
    y = (xf / s[..., None]).clamp(-6.0, 6.0).reshape(M, N)
    a = y.abs()
    code = torch.zeros_like(a, dtype=torch.int32)
    for lo, hi in ((0.0, 0.5), (0.5, 1.0), (1.0, 1.5), (1.5, 2.0), (2.0, 3.0), (3.0, 4.0), (4.0, 6.0)):
        mid = (lo + hi) / 2
        code += ((a > mid) | ((a == mid) & (mid in E2M1_TIES_UP))).int()
    code += (y < 0).int() * 8
    pairs = code.view(M, N // 2, 2)
    return (pairs[..., 0] | (pairs[..., 1] << 4)).to(torch.uint8).view(torch.int8), s


def masked_mismatch(rtol, atol):
    """A judge for similar(): the fraction of the entries where the reference is defined (not NaN) whose output lies
    outside |out - ref| <= atol + rtol |ref| (an output NaN there counts as outside)."""
    def masked_mismatch(out, ref):
        import torch
        r = ref.double().to(out.device)
        keep = ~torch.isnan(r)
        total = int(keep.sum())
        if total == 0:
            return float("inf")
        return int((~torch.isclose(out.double()[keep], r[keep], rtol=rtol, atol=atol)).sum()) / total
    return masked_mismatch


def index_set_mismatch(out, ref):
    """A judge for similar() of top-k selectors, whose rows list a set in no set order: the fraction of entries at
    which each row sorted differs from the reference row sorted."""
    import torch
    o, r = out.long().sort(-1)[0], ref.long().to(out.device).sort(-1)[0]
    return float((o != r).double().mean()) if o.shape == r.shape else float("inf")


def self_check(torch):
    """Each reference against its definition written out by loops at single positions, on small shapes."""
    problems = []
    g = torch.Generator().manual_seed(230)
    t = tf32(torch.tensor([1 + 2 ** -11, 1 + 2 ** -12, -(1 + 3 * 2 ** -12)]))
    if t.tolist() != [1 + 2 ** -10, 1.0, -(1 + 2 ** -10)]:
        problems.append("tf32 rounds %r" % t.tolist())
    x, fn = torch.randn(5, 8, generator=g).bfloat16(), torch.randn(3, 8, generator=g)
    out, sq = mhc_pre_gemm_sqrsum(x, fn)
    if abs(float(out[4, 2]) - sum(float(x[4, k]) * float(fn[2, k]) for k in range(8))) > 1e-9 or \
            abs(float(sq[1]) - sum(float(x[1, k]) ** 2 for k in range(8))) > 1e-9:
        problems.append("mhc_pre_gemm_sqrsum at one position")
    G, sg, x0 = torch.randn(5, 1, 3, generator=g), torch.randn(5, 1, generator=g), torch.randn(5, 8, generator=g).bfloat16()
    xg, fg = pre_norm_fn_bwd_mul(G, sg, x, fn, x0)
    want = float(x0[3, 6]) + sum(float(G[3, 0, j]) * float(fn[j, 6]) for j in range(3)) + 2 * float(x[3, 6]) * float(sg[3, 0])
    if float(xg[3, 6]) != float(torch.tensor(want).float().bfloat16()) or \
            abs(float(fg[1, 5]) - sum(float(G[r, 0, 1]) * float(x[r, 5]) for r in range(5))) > 1e-9:
        problems.append("pre_norm_fn_bwd_mul at one position")
    return problems + _indexer_self_check(torch, g) + _delta_bwd_self_check(torch, g) + _split_self_check(torch, g) + \
        _chunk_o_self_check(torch, g) + _chunk_o_fwd_self_check(torch, g) + _mqa_self_check(torch, g) + \
        tlcompat_refs_mla.self_check(torch) + _int4_self_check(torch, g) + _fp4_self_check(torch, g) + \
        _ladder_self_check(torch)


def _ladder_self_check(torch):
    """ladder_int4_b then interleave_int4 against mma.sync's B fragment (the PTX ISA's m16n8k16 layout): the word of
    lane l in a 16 x 8 byte tile, decoded as decode_i4u_to_f16 reads it (value e from bits 4 (e / 2) + 16 (e % 2)),
    must be B[n, k] with n = 8 (e / 4) + l / 4, k = 2 (l % 4) + 8 ((e % 4) / 2) + e % 2 of the tile."""
    N, K = 16, 16
    nib = torch.randint(0, 16, (N, K), generator=torch.Generator().manual_seed(24))
    qB = (nib[:, 0::2] | (nib[:, 1::2] << 4)).to(torch.uint8).view(torch.int8)
    words = interleave_int4(ladder_int4_b(qB)).view(torch.int32).view(-1).tolist()
    for lane in range(32):
        w = words[lane] & 0xFFFFFFFF
        for e in range(8):
            got = (w >> (4 * (e // 2) + 16 * (e % 2))) & 0xF
            n, k = 8 * (e // 4) + lane // 4, 2 * (lane % 4) + 8 * ((e % 4) // 2) + e % 2
            if got != int(nib[n, k]):
                return ["ladder_int4_b + interleave_int4: lane %d element %d" % (lane, e)]
    return []


def _fp4_self_check(torch, g):
    """fp4_block_quant on worked values (amax 6: scale 1): each tie to its even code, negatives' sign bit, the
    nibble order; and amax 14: scale 2^ceil(log2(14 / 6)) = 4."""
    row = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.75, 6.0, -0.1, 0.3, -6.0] + [0.0] * 20
    want = [0, 2, 2, 4, 4, 6, 6, 10, 7, 8, 1, 15] + [0] * 20
    codes, s = fp4_block_quant(torch.tensor([row, [14.0] + [0.0] * 31]).bfloat16())
    b = codes.view(torch.uint8)[0].tolist()
    got = [(b[i // 2] >> (4 * (i % 2))) & 0xF for i in range(32)]
    out = [] if got == want else ["fp4_block_quant's codes %s, not %s" % (got[:12], want[:12])]
    if s[:, 0].tolist() != [1.0, 4.0]:
        out.append("fp4_block_quant's scales %s, not [1, 4]" % s[:, 0].tolist())
    return out


def _int4_self_check(torch, g):
    """interleave_int4 read back as decode_i4u_to_f16 reads it (nibbles i and 4 + i of each word, pair by pair)
    gives the original nibbles; int4_gemv against a float16 emulation of the kernel's order (within its bound)
    and against the file's own reading of the interleaved bytes (past it)."""
    out = []
    q = torch.randint(-128, 128, (6, 16), generator=g, dtype=torch.int8)
    words = interleave_int4(q).view(torch.int32).long() & 0xFFFFFFFF
    decoded = torch.stack([(words >> s) & 0xF for i in range(4) for s in (4 * i, 16 + 4 * i)], -1).reshape(6, 32)
    u = q.view(torch.uint8).long()
    if not torch.equal(decoded, torch.stack((u & 0xF, u >> 4), -1).reshape(6, 32)):
        out.append("interleave_int4 read by the fast decoder does not give the original nibbles")
    A = torch.randn(1, 512, generator=g).half()
    q = torch.randint(-128, 128, (8, 256), generator=g, dtype=torch.int8)
    R = int4_gemv(A, q)
    u = q.view(torch.uint8).long()
    W = torch.stack((u & 0xF, u >> 4), -1).reshape(8, 512).half()
    acc = torch.zeros(8, 32, dtype=torch.float16)                           # thread kr's float16 sum, in order
    for ko in range(2):
        for v in range(8):
            k = ko * 256 + torch.arange(32) * 8 + v
            acc = acc + A[0, k][None, :] * W[:, k]
    while acc.shape[1] > 1:                                                 # the tree, in float16
        acc = acc[:, : acc.shape[1] // 2] + acc[:, acc.shape[1] // 2:]
    if not bound_excess(acc.view(1, 8), R) < 1:
        out.append("int4_gemv: a float16 emulation of the kernel is past the bound (%g)" % bound_excess(acc.view(1, 8), R))
    plain = A.double() @ torch.stack((interleave_int4(q).view(torch.uint8).long() & 0xF,
                                      interleave_int4(q).view(torch.uint8).long() >> 4), -1).reshape(8, 512).double().T
    if not bound_excess(plain, R) > 1:
        out.append("int4_gemv passes the interleaved bytes read as plain nibbles")
    return out


def _indexer_self_check(torch, g):
    """indexer_bwd on two sequences (3 and 4 tokens, top-4 slots) against its formulas by loops."""
    S, H, D, topk = 7, 2, 4, 4
    Offsets = torch.tensor([0, 3, 7], dtype=torch.int32)
    TokenIndices = torch.tensor([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [1, 3]], dtype=torch.int32)
    Q, K = torch.randn(S, H, D, generator=g).bfloat16(), torch.randn(S, D, generator=g).bfloat16()
    Wt = torch.randn(S, H, generator=g).bfloat16()
    AS, IS = torch.rand(S, topk, generator=g), torch.rand(S, topk, generator=g)
    P = indexer_topk(Offsets, TokenIndices, topk, valid=3, future=1)
    dQ, dW, dK = indexer_bwd(Q, Wt, K, AS, IS, P, Offsets, TokenIndices)
    b16 = lambda v: float(torch.tensor(v, dtype=torch.float64).float().bfloat16())     # noqa: E731
    sc = D ** -0.5
    wQ, wW, wK = torch.zeros(S, H, D, dtype=torch.float64), torch.zeros(S, H, dtype=torch.float64), torch.zeros(S, D, dtype=torch.float64)
    for r in range(S):
        b, i = int(TokenIndices[r, 0]), int(TokenIndices[r, 1])
        bos = int(Offsets[b])
        qp = [[b16(float(Q[r, h, d]) * sc) for d in range(D)] for h in range(H)]
        for s in range(topk):
            p = int(P[r, s])
            if not 0 <= p <= i:
                continue
            k = [float(K[bos + p, d]) for d in range(D)]
            e = float(torch.tensor(float(IS[r, s])) - torch.tensor(float(AS[r, s])))
            for h in range(H):
                lg = max(sum(k[d] * qp[h][d] for d in range(D)), 0.0)
                wW[r, h] += e * lg
                gg = b16(e * (lg > 0) * float(Wt[r, h]))
                for d in range(D):
                    wQ[r, h, d] += sc * gg * k[d]
                    wK[bos + p, d] += gg * qp[h][d]
    for name, got, want in (("dIndexQ", dQ, wQ), ("dWeights", dW, wW), ("dIndexK", dK, wK)):
        if not torch.equal(got, want.float().bfloat16().double()):
            d = (got - want.float().bfloat16().double()).abs()
            if float(d.max()) > 1e-2 * float(want.abs().max()):
                return ["indexer_bwd's %s differs from its formulas by loops (%g)" % (name, float(d.max()))]
    if int(((P > -1) & (P <= TokenIndices[:, 1:].long())).sum()) != 15:     # min(i + 1, 3) over i = 0..2, 0..3
        return ["indexer_topk: %d valid slots, want 15" % int(((P > -1) & (P <= TokenIndices[:, 1:].long())).sum())]
    return []


def _delta_bwd_self_check(torch, g):
    """gdn_chunk_delta_bwd_dhu over two chunks of 2 tokens against the backward recurrence written out by loops."""
    import math
    Q, K, W, dO, dv = (torch.randn(1, 4, 1, 3, generator=g).bfloat16() for _ in range(5))
    G, dht = -torch.rand(1, 4, 1, generator=g).cumsum(1), torch.randn(1, 1, 3, 3, generator=g).bfloat16()
    G[0, 1, 0] = G[0, 0, 0] + 0.5       # one exponent G_last - G_t above 0: that token's dv2 takes no K D16 term
    dh, dh0, dv2 = gdn_chunk_delta_bwd_dhu(Q, K, W, G, dht, dO, dv, 0.5, 2)
    b16 = lambda v: float(torch.tensor(v, dtype=torch.float64).float().bfloat16())     # noqa: E731
    d = [[float(dht[0, 0, k, v]) for v in range(3)] for k in range(3)]
    for c in (1, 0):
        last = float(G[0, 2 * c + 1, 0])
        d16 = [[b16(x) for x in row] for row in d]
        v16 = []
        for t in (2 * c, 2 * c + 1):
            gt = float(G[0, t, 0])
            f = math.exp(last - gt) if last - gt <= 0 else 0.0
            v16.append([b16(sum(float(K[0, t, 0, k]) * d16[k][v] for k in range(3)) * f + float(dv[0, t, 0, v])) for v in range(3)])
        if any(float(dh[0, c, 0, k, v]) != d16[k][v] for k in range(3) for v in range(3)) or \
                any(abs(float(dv2[0, 2 * c + i, 0, v]) - v16[i][v]) > 1e-12 for i in range(2) for v in range(3)):
            return ["gdn_chunk_delta_bwd_dhu's dh or dv2 in chunk %d" % c]
        d = [[d[k][v] * math.exp(last) + sum(0.5 * math.exp(float(G[0, 2 * c + i, 0])) * float(Q[0, 2 * c + i, 0, k]) *
                                             float(dO[0, 2 * c + i, 0, v]) - float(W[0, 2 * c + i, 0, k]) * v16[i][v]
                                             for i in range(2)) for v in range(3)] for k in range(3)]
    if any(abs(float(dh0[0, 0, k, v]) - d[k][v]) > 1e-9 for k in range(3) for v in range(3)):
        return ["gdn_chunk_delta_bwd_dhu's dh0: %r, want %r" % (dh0[0, 0].tolist(), d)]
    return []


def _split_self_check(torch, g):
    """gdn_wy_fast_bwd_split in the second of 2 chunks of 3 tokens against its formulas written out by loops."""
    import math
    Bn, S, H, D, C = 1, 6, 1, 2, 3
    K, dA, dk0 = (torch.randn(Bn, S, H, n, generator=g).bfloat16() for n in (D, C, D))
    Beta, G, A = torch.randn(Bn, S, H, generator=g).bfloat16(), torch.randn(Bn, S, H, generator=g), \
        torch.randn(Bn, S, H, C, generator=g).bfloat16()
    dk, dbeta, dgp, dgn = gdn_wy_fast_bwd_split(K, Beta, G, A, dA, dk0, C)
    b16 = lambda v: float(torch.tensor(v, dtype=torch.float64).float().bfloat16())     # noqa: E731
    f = lambda t, *i: float(t[(0, 3 + i[0], 0) + tuple(i[1:])])      # noqa: E731 - token i of the second chunk
    x = [[b16(sum(f(dA, i, m) * f(A, j, m) for m in range(C) if i > m)) for j in range(C)] for i in range(C)]
    d = [[0.0] * C for _ in range(C)]
    for i in range(C):
        for j in range(C):
            e = f(G, i) - f(G, j)
            if i > j and e <= 0:
                d[i][j] = -sum(f(A, m, i) * x[m][j] for m in range(C)) * math.exp(e)
    d16 = [[b16(v) for v in row] for row in d]
    kb = [[b16(float(torch.tensor(f(K, i, e)).float() * torch.tensor(f(Beta, i)).float())) for e in range(D)] for i in range(C)]
    problems = []
    for i in range(C):
        dkb = [sum(d16[i][m] * f(K, m, e) for m in range(C)) for e in range(D)]
        for e in range(D):
            want = b16(f(dk0, i, e) + sum(d16[m][i] * kb[m][e] for m in range(C)) + b16(dkb[e] * f(Beta, i)))
            if float(dk[0, 3 + i, 0, e]) != want:
                problems.append("gdn_wy_fast_bwd_split's dk at (%d, %d): %r, want %r" % (i, e, float(dk[0, 3 + i, 0, e]), want))
        if float(dbeta[0, 3 + i, 0]) != b16(sum(dkb[e] * f(K, i, e) for e in range(D))):
            problems.append("gdn_wy_fast_bwd_split's dbeta_k at token %d" % i)
        for j in range(C):
            want = d[i][j] * sum(kb[i][e] * f(K, j, e) for e in range(D))
            if abs(float(dgp[0, 3 + i, 0, j]) - want) > 1e-9 or abs(float(dgn[0, 3 + j, 0, i]) - want) > 1e-9:
                problems.append("gdn_wy_fast_bwd_split's dg_A at (%d, %d)" % (i, j))
    return problems


def _chunk_o_self_check(torch, g):
    """gdn_chunk_o_bwd_dqkwg in the second of 2 chunks of 3 tokens (key slices of 1 of 2 dims) against its formulas
    by loops."""
    import math
    Bn, S, H, D, DV, C = 1, 6, 1, 2, 2, 3
    Q, K, V, dO, dv = (torch.randn(Bn, S, H, n, generator=g).bfloat16() for n in (D, D, DV, DV, DV))
    h, dh = (torch.randn(Bn, 2, H, D, DV, generator=g).bfloat16() for _ in range(2))
    G = torch.randn(Bn, S, H, generator=g)
    dq, dk, dw, dg = gdn_chunk_o_bwd_dqkwg(Q, K, V, h, G, dO, dh, dv, 0.5, C, 1)
    b16 = lambda x: float(torch.tensor(x, dtype=torch.float64).float().bfloat16())     # noqa: E731
    f = lambda t, *i: float(t[(0, 3 + i[0], 0) + tuple(i[1:])])      # noqa: E731 - token i of the second chunk
    hf = lambda t, a, b: float(t[0, 1, 0, a, b])      # noqa: E731
    gt = [f(G, i) for i in range(C)]
    dq0 = [[sum(f(dO, i, w) * hf(h, e, w) for w in range(DV)) * math.exp(gt[i]) * 0.5 for e in range(D)] for i in range(C)]
    dk0 = [[sum(f(V, i, w) * hf(dh, e, w) for w in range(DV)) * math.exp(-gt[i]) if gt[i] >= 0 else 0.0 for e in range(D)]
           for i in range(C)]
    d = [[sum(f(dO, i, w) * f(V, j, w) for w in range(DV)) * math.exp(gt[i] - gt[j]) * 0.5 if gt[i] <= gt[j] else 0.0
          for j in range(C)] for i in range(C)]
    problems = []
    for e in range(D):      # key slice e (block_DK = 1)
        p = [[d[i][j] * f(Q, i, e) * f(K, j, e) for j in range(C)] for i in range(C)]
        const = gt[-1] * math.exp(gt[-1]) + sum(dk0[i][e] * f(K, i, e) for i in range(C))
        for i in range(C):
            want = (dq0[i][e] * f(Q, i, e) - dk0[i][e] * f(K, i, e) + sum(p[i]) - sum(p[j][i] for j in range(C)) + const)
            if abs(float(dg[e, 0, 3 + i, 0]) - want) > 1e-9 * max(1.0, abs(want)):
                problems.append("gdn_chunk_o_bwd_dqkwg's dg at (slice %d, token %d): %r, want %r" % (e, i, float(dg[e, 0, 3 + i, 0]), want))
            wq = b16(dq0[i][e] + sum(b16(d[i][j]) * f(K, j, e) for j in range(C)))
            wk = b16(dk0[i][e] + sum(b16(d[j][i]) * f(Q, j, e) for j in range(C)))
            ww = b16(-sum(f(dv, i, w) * hf(h, e, w) for w in range(DV)))
            if (float(dq[0, 3 + i, 0, e]), float(dk[0, 3 + i, 0, e]), float(dw[0, 3 + i, 0, e])) != (wq, wk, ww):
                problems.append("gdn_chunk_o_bwd_dqkwg's dq, dk, dw at (%d, %d)" % (i, e))
    return problems


def _chunk_o_fwd_self_check(torch, g):
    """gdn_chunk_o on 2 chunks of 3 tokens against its sums written out by loops at every token of the second."""
    import math
    Bn, S, H, D, DV, C = 1, 6, 1, 2, 2, 3
    Q, K, V = (torch.randn(Bn, S, H, n, generator=g).bfloat16() for n in (D, D, DV))
    Hd, G = torch.randn(Bn, 2, H, D, DV, generator=g).bfloat16(), torch.randn(Bn, S, H, generator=g)
    O = gdn_chunk_o(Q, K, V, Hd, G, 0.5, C)
    b16 = lambda x: float(torch.tensor(x, dtype=torch.float64).float().bfloat16())     # noqa: E731
    f = lambda t, *i: float(t[(0, 3 + i[0], 0) + tuple(i[1:])])      # noqa: E731 - token i of the second chunk
    problems = []
    for i in range(C):
        for w in range(DV):
            inter = math.exp(f(G, i)) * sum(f(Q, i, e) * float(Hd[0, 1, 0, e, w]) for e in range(D))
            intra = sum(b16(sum(f(Q, i, e) * f(K, j, e) for e in range(D)) * math.exp(f(G, i) - f(G, j))) * f(V, j, w)
                        for j in range(i + 1) if f(G, i) <= f(G, j))
            want = 0.5 * (inter + intra)
            if abs(float(O[0, 3 + i, 0, w]) - want) > 1e-9 * max(1.0, abs(want)):
                problems.append("gdn_chunk_o's O at (%d, %d): %r, want %r" % (i, w, float(O[0, 3 + i, 0, w]), want))
    return problems


def _mqa_self_check(torch, g):
    """mqa_logits at every entry of 3 queries of 2 heads over 5 keys against the sum by loops (NaN outside each
    query's range), and masked_mismatch counting only the defined entries."""
    S, H, D, N = 3, 2, 4, 5
    q = torch.randn(S * H, D, generator=g).to(torch.float8_e4m3fn)
    k, ks = torch.randn(N, D, generator=g).to(torch.float8_e4m3fn), torch.rand(N, generator=g) + 0.5
    w, lo, hi = torch.randn(S, H, generator=g), torch.tensor([0, 1, 4]), torch.tensor([2, 5, 5])
    got = mqa_logits(q, k, ks, w, lo, hi)
    problems = []
    for m in range(S):
        for n in range(N):
            want = sum(max(0.0, sum(float(q[m * H + h, d]) * float(k[n, d]) for d in range(D)) * float(ks[n])) *
                       float(w[m, h]) for h in range(H))
            defined = int(lo[m]) <= n < int(hi[m])
            v = float(got[m, n])
            if (defined and abs(v - want) > 1e-9) or (not defined and v == v):
                problems.append("mqa_logits at (%d, %d): %r, want %r" % (m, n, v, want if defined else "NaN"))
    out = torch.where(torch.isnan(got), torch.zeros_like(got), got)
    out[2, 4] += 1.0
    if masked_mismatch(1e-2, 1e-2)(out, got) != 1 / int((~torch.isnan(got)).sum()):
        problems.append("masked_mismatch does not count exactly the one defined entry that is off")
    a, b = torch.tensor([[5, 1, 3], [0, 2, 4]]), torch.tensor([[1, 3, 5], [4, 2, 0]])
    if index_set_mismatch(a, b) != 0.0 or index_set_mismatch(a, torch.tensor([[1, 3, 6], [4, 2, 0]])) != 1 / 6:
        problems.append("index_set_mismatch: sets in another order are not equal, or one differing index is not 1/6")
    return problems
