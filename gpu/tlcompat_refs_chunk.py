"""tilec's own references for TileLang's chunked linear-attention building blocks (examples/gdn, examples/kda) and
the bitnet int2 weight packing (issue 24). The gdn/kda example files check against flash-linear-attention (fla),
which is not part of TileLang and is not on the GPU machine; these are written from the mathematics those kernels
compute, in float64, and re-exported by gpu/tlcompat_refs.py (`tilec_refs.NAME` in reference.tsv).

Per chunk c of `chunk` consecutive tokens, batch b and head h (k_i, v_i the rows of token i, beta_i, g_i its gate):

  chunk_scaled_dot_kkt   A[i, j] = (beta_i k_i) . k_j * exp(g_i - g_j)   for i > j and g_i - g_j <= 0, else 0
                         (fla's `safe_exp`; G is the gate itself, not a cumulative sum, so the condition matters)
  recompute_w_u          U = A_c (beta v),   W = A_c (beta exp(g) k)                   (gdn: one gate per token)
  kda_recompute_w_u      U = A_c (beta v),   W = A_c (beta exp2(g) * k),
                         KG[i] = k_i * exp2(g_last - g_i)                              (kda: a gate per key dim)

The products beta k, beta v, beta exp(g) k are the 16-bit operands of the kernels' tensor-core GEMMs (and fla's):
each is formed in float32 and rounded to the input dtype, as the kernel stores it, before the float64 product;
without that, bf16 rounding noise of order 1e-2 in absolute terms would swamp the examples' atol of 1e-2.

pack_int2_interleaved(B): bitnet's weight layout (examples/bitnet-1.58b): 2-bit values, each group of 16 values in
one 32-bit word, value o of the group in byte o % 4 at bit 2 * (o // 4), so that the kernel's decode (mask
0x03030303 after a shift by 2i) yields values 4i .. 4i + 3 in bytes 0..3 of output word i.

mla_causal_lse / mla_topk_prob_sum (examples/dsa_sparse_finetune/sparse_mla_topk_reducesum.py): per sequence of the
packed batch (Offsets), the causal softmax of token s over tokens t <= s of its sequence, p[s, h, t] =
exp(scale q_sh . k_t - lse[s, h]); the kernel sums p over heads at each of the token's top-k indices (local to the
sequence; an index past s counts 0). The file's own ref_mla_topk_softmax normalizes that sum afterwards (its
interface does too) and takes the lse of bf16 logits; here the sum itself, and the lse in float64.

Needs torch only when called."""


import math


def _rounded(x, dtype):
    """x (float32 arithmetic) as the kernel stores it in a `dtype` buffer, back in float64."""
    return x.to(dtype).double()


def _chunks(x, chunk):
    """[B, S, H, ...] -> [B, S // chunk, chunk, H, ...]."""
    return x.reshape(x.shape[0], x.shape[1] // chunk, chunk, *x.shape[2:])


def chunk_scaled_dot_kkt(K, Beta, G, chunk=64):
    """A [B, S, H, chunk] (float64) of examples/gdn/example_chunk_scaled_dot_kkt.py (use_g=True)."""
    import torch
    B, S, H, _ = K.shape
    kb = _chunks(_rounded(K.float() * Beta.float()[..., None], K.dtype), chunk)
    k = _chunks(K.double(), chunk)
    A = torch.einsum("bcihd,bcjhd->bcihj", kb, k)
    g = _chunks(G.double(), chunk)                                   # [B, C, chunk, H]
    diff = g[:, :, :, :, None] - g.permute(0, 1, 3, 2)[:, :, None, :, :]
    idx = torch.arange(chunk, device=K.device)
    lower = (idx[:, None] > idx[None, :])[None, None, :, None, :]
    A = torch.where(lower & (diff <= 0), A * torch.exp(diff.clamp(max=0)), torch.zeros_like(A))
    return A.reshape(B, S, H, chunk)


def _apply_chunk_matrix(A, X, chunk):
    """sum_j A[b, c*chunk + i, h, j] X[b, c*chunk + j, h, :] in float64, as [B, S, H, D]."""
    import torch
    B, S, H, D = X.shape
    out = torch.einsum("bcihj,bcjhd->bcihd", _chunks(A.double(), chunk), _chunks(X, chunk))
    return out.reshape(B, S, H, D)


def recompute_w_u(K, V, Beta, G, A, chunk=64):
    """(W, U) of examples/gdn/example_wy_fast.py, float64."""
    beta = Beta.float()[..., None]
    # the kernel's beta * k is a product of two 16-bit values (exact in float32), rounded as TIR types it
    wk = _rounded(_rounded(K.float() * beta, K.dtype).float() * G.float().exp()[..., None], K.dtype)
    uv = _rounded(V.float() * beta, V.dtype)
    return _apply_chunk_matrix(A, wk, chunk), _apply_chunk_matrix(A, uv, chunk)


def kda_recompute_w_u(K, V, Beta, G, A, chunk=64):
    """(W, U, KG) of examples/kda/wy_fast.py (use_qg=False, use_kg=True), float64."""
    import torch
    beta = Beta.float()[..., None]
    wk = _rounded(_rounded(K.float() * beta, K.dtype).float() * torch.exp2(G.float()), K.dtype)
    uv = _rounded(V.float() * beta, V.dtype)
    g = _chunks(G.double(), chunk)
    kg = _chunks(K.double(), chunk) * torch.exp2(g[:, :, -1:] - g)
    return _apply_chunk_matrix(A, wk, chunk), _apply_chunk_matrix(A, uv, chunk), kg.reshape(K.shape)


def _lower(chunk, device):
    """[chunk, chunk] bool, True where i >= j (a token and those before it in its chunk)."""
    import torch
    idx = torch.arange(chunk, device=device)
    return idx[:, None] >= idx[None, :]


def kda_chunk_o(Q, V, GK, A, HIDDEN, scale, chunk=64):
    """O of examples/kda/chunk_o.py, float64: per chunk c, O_i = sum_k gq_ik HIDDEN[c]_k + sum_{j <= i} A_ij v_j with
    gq = (scale q) exp2(gk), both products rounded to Q's dtype as the kernel stores them."""
    import torch
    B, S, H, _ = Q.shape
    gq = _rounded(_rounded(Q.float() * scale, Q.dtype).float() * torch.exp2(GK.float()), Q.dtype)
    inter = torch.einsum("bcihk,bchkv->bcihv", _chunks(gq, chunk), HIDDEN.double())
    a = _chunks(A.double(), chunk) * _lower(chunk, A.device)[None, None, :, None, :]
    intra = torch.einsum("bcihj,bcjhv->bcihv", a, _chunks(V.double(), chunk))
    return (inter + intra).reshape(B, S, H, V.shape[-1])


def kda_chunk_delta_h(K, W, U, GK, h0, chunk=64):
    """(h, final_state, V_new) of examples/kda/chunk_delta_h_fwd.py (use_gk, an initial state, the final state and
    the new values stored), float64 but for the kernel's 16-bit stores. The state S [B, H, DK, DV] starts at h0; per
    chunk c: h[c] = S as the 16-bit shared tile holds it (S16), V_new = U_c - W_c S16 (stored in 16 bits, and that
    copy is what the update multiplies), S <- exp2(gk[last token of c]) (per key row) * S + K_c^T V_new16."""
    import torch
    Bn, S, H, _ = K.shape
    state, hs, vs = h0.double(), [], []
    for c in range(S // chunk):
        part = slice(c * chunk, (c + 1) * chunk)
        s16 = _rounded(state, K.dtype)
        v16 = _rounded(U[:, part].double() - torch.einsum("bthk,bhkv->bthv", W[:, part].double(), s16), K.dtype)
        hs.append(s16)
        vs.append(v16)
        decay = torch.exp2(GK[:, (c + 1) * chunk - 1].double())[..., None]     # [B, H, DK, 1]
        state = state * decay + torch.einsum("bthk,bthv->bhkv", K[:, part].double(), v16)
    return torch.stack(hs, 1), state, torch.cat(vs, 1)


def kda_chunk_delta_bwd_dhu(Q, K, W, GK, dht, dO, dv, scale, chunk=64):
    """(dh, dh0, dv2) of examples/kda/chunk_delta_bwd.py (use_gk, an initial state, a final-state gradient), float64
    but for the kernel's 16-bit stores. The gradient D [B, H, DK, DV] starts at dht and runs over the chunks
    backwards: dh[c] = D as its 16-bit shared tile holds it (D16), dv2_c = K_c D16 + dv_c (stored in 16 bits, the
    copy the update multiplies), D <- exp2(gk[last token of c]) (per key row) * D + scale Q_c^T dO_c - W_c^T dv2_c16;
    dh0 the last D."""
    import torch
    Bn, S, H, _ = K.shape
    grad, dhs, dvs = dht.double(), [None] * (S // chunk), [None] * (S // chunk)
    for c in reversed(range(S // chunk)):
        part = slice(c * chunk, (c + 1) * chunk)
        d16 = _rounded(grad, K.dtype)
        v16 = _rounded(torch.einsum("bthk,bhkv->bthv", K[:, part].double(), d16) + dv[:, part].double(), K.dtype)
        dhs[c], dvs[c] = d16, v16
        decay = torch.exp2(GK[:, (c + 1) * chunk - 1].double())[..., None]
        grad = (grad * decay + scale * torch.einsum("bthk,bthv->bhkv", Q[:, part].double(), dO[:, part].double())
                - torch.einsum("bthk,bthv->bhkv", W[:, part].double(), v16))
    return torch.stack(dhs, 1), grad, torch.cat(dvs, 1)


def kda_intra_token_parallel(Q, K, GK, Beta, chunk=64, sub=16):
    """(Aqk [B, S, H, chunk], Akk [B, S, H, sub]) of examples/kda/chunk_intra_token_parallel.py, float64: token i
    and each token j of its sub-chunk up to it, with d_ij = exp2(gk_i - gk_j) per key dim:
    Aqk[i, j mod chunk] = sum_k q_ik k_jk d_ijk (j <= i), Akk[i, j - start] = sum_k (beta_i k_ik) k_jk d_ijk (j < i),
    beta_i k_i rounded to the input dtype as the kernel's fragment holds it; every other entry 0. The exp2 is
    split into exp2(gk_i) exp2(-gk_j), exact enough in float64 for the gates' range."""
    import torch
    Bn, S, H, D = Q.shape
    n = S // sub

    def subs(x):
        return x.reshape(Bn, n, sub, H, D)
    g = subs(GK.double())
    kj = subs(K.double()) * torch.exp2(-g)
    qi = subs(Q.double()) * torch.exp2(g)
    bi = subs(_rounded(K.float() * Beta.float()[..., None], K.dtype)) * torch.exp2(g)
    idx = torch.arange(sub, device=Q.device)
    aqk = torch.einsum("bnihd,bnjhd->bnihj", qi, kj) * (idx[:, None] >= idx[None, :])[None, None, :, None, :]
    akk = torch.einsum("bnihd,bnjhd->bnihj", bi, kj) * (idx[:, None] > idx[None, :])[None, None, :, None, :]
    Aqk = torch.zeros(Bn, n, sub, H, chunk, dtype=torch.float64, device=Q.device)
    for s in range(chunk // sub):                      # sub-chunk s of each chunk: columns s*sub .. s*sub + sub - 1
        Aqk[:, s::chunk // sub, :, :, s * sub:(s + 1) * sub] = aqk[:, s::chunk // sub]
    return Aqk.reshape(Bn, S, H, chunk), akk.reshape(Bn, S, H, sub)


def chunk_bwd_dv_local(DO, A, chunk=64):
    """dv of examples/kda/chunk_bwd_dv.py, float64: per chunk, dv_j = sum_{i >= j} A_ij do_i."""
    import torch
    B, S, H, D = DO.shape
    a = _chunks(A.double(), chunk) * _lower(chunk, A.device)[None, None, :, None, :]
    return torch.einsum("bcihj,bcihd->bcjhd", a, _chunks(DO.double(), chunk)).reshape(B, S, H, D)


def chunk_gla_bwd_dA(DO, V, scale, chunk=64):
    """dA of examples/kda/chunk_bwd_gla_dA.py, float64: per chunk, dA_ij = scale do_i . v_j for i >= j, else 0."""
    import torch
    B, S, H, _ = DO.shape
    dA = torch.einsum("bcihd,bcjhd->bcihj", _chunks(DO.double(), chunk), _chunks(V.double(), chunk)) * scale
    return (dA * _lower(chunk, DO.device)[None, None, :, None, :]).reshape(B, S, H, chunk)


def pack_int2_interleaved(Bw):
    """Bw [N, K] of 2-bit values (0..3, any integer dtype) as bitnet's interleaved int8 [N, K // 4]."""
    import torch
    N, K = Bw.shape
    v = Bw.to(torch.int32).reshape(N, K // 16, 4, 4)                 # [N, word, o // 4, o % 4]
    shifts = (2 * torch.arange(4, device=Bw.device, dtype=torch.int32))[None, None, :, None]
    packed = (v << shifts).sum(2)                                    # [N, word, byte], each 0..255
    return packed.reshape(N, K // 4).to(torch.uint8).view(torch.int8)


def unpack_int2_by_decode(packed):
    """The kernel's decode of pack_int2_interleaved's bytes, by loops over words, for the self-check."""
    rows = []
    for row in packed.tolist():
        out = []
        for w in range(len(row) // 4):
            word = sum((row[4 * w + b] & 0xFF) << (8 * b) for b in range(4))
            for i in range(4):                                       # output word i: bytes 0..3
                lanes = (word >> (2 * i)) & 0x03030303
                out += [(lanes >> (8 * b)) & 0xFF for b in range(4)]
        rows.append(out)
    return rows


def compress_2to4(dense):
    """(values [M, K / 2], metadata int16 [M, K / 16]) of a 2:4 semi-sparse 16-bit matrix (two nonzeros in each
    group of 4), as examples/gemm_sp/sparse_utils.py's torch_compress gives them: each group's nonzeros in order,
    and a 4-bit code p0 | p1 << 2 of their positions, four codes to an int16, the first in the low bits. A group
    with fewer than two nonzeros (a kept value that rounded to zero in 16 bits: a few per 10^8 elements of randn)
    still takes two distinct positions p0 < p1, its nonzero and the first zeros, as torch_compress's logic gives:
    the same position twice is not a 2:4 code (the tensor cores then count that element twice)."""
    import torch
    m, k = dense.shape
    groups = dense.reshape(m, k // 4, 4)
    pos = torch.arange(4, device=dense.device).expand_as(groups)
    nz = groups != 0
    picked = (nz.to(torch.int64) * 8 + (3 - pos)).topk(2, dim=-1).indices      # nonzeros first, then the lowest zeros
    p0, p1 = picked.amin(-1, keepdim=True), picked.amax(-1, keepdim=True)
    values = torch.cat([groups.gather(-1, p0), groups.gather(-1, p1)], -1).reshape(m, k // 2)
    codes = (p0 | (p1 << 2)).reshape(m, k // 16, 4)
    word = sum(codes[..., i] << (4 * i) for i in range(4))                     # 0 .. 65535
    return values, (word - ((word >> 15) << 16)).to(torch.int16)


def moe_routed(X, Wg, Wu, Wd, weights, sizes):
    """(up_logits, output) of examples/fusedmoe/example_fusedmoe_tilelang.py's routed kernel, float64: the rows of X
    grouped by expert (sizes, in order), up = silu(x Wg[e]^T) * (x Wu[e]^T), output = (up Wd[e]^T) * weight; the
    second GEMM takes up as the kernel stores it (X's dtype), as the file's torch reference does."""
    import torch
    up = torch.empty(X.shape[0], Wg.shape[1], dtype=torch.float64, device=X.device)
    out = torch.empty(X.shape, dtype=torch.float64, device=X.device)
    start = 0
    for e, n in enumerate(int(v) for v in sizes):
        x = X[start:start + n].double()
        gate, lin = x @ Wg[e].double().T, x @ Wu[e].double().T
        up[start:start + n] = gate * torch.sigmoid(gate) * lin
        down = up[start:start + n].to(X.dtype).double() @ Wd[e].double().T
        out[start:start + n] = down * weights[start:start + n].double()[:, None]
        start += n
    return up, out


def sparse_decode_splits(Q, K, V, block_indices, cache_seqlens, num_split, block_N):
    """(glse [B, H, num_split], Output_partial [B, H, num_split, DV]), float64, of the split-KV GQA decode of
    examples/blocksparse_attention/example_tilelang_sparse_gqa_decode_varlen_indice.py: split s of a (batch, kv head)
    takes its share of the selected blocks (the first `rem` splits one more), attends over their positions before
    cache_seqlens[b] and keeps its own softmax: the normalized partial output and the log2-sum-exp of the logits
    (scale DK^-0.5). A split without a valid block (-1 everywhere) leaves 0 in both, as the kernel does."""
    import torch
    B, H, D = Q.shape
    HKV, G, nsel = K.shape[2], H // K.shape[2], block_indices.shape[-1]
    per, rem = divmod(nsel, num_split)
    glse = torch.zeros(B, H, num_split, dtype=torch.float64, device=Q.device)
    part = torch.zeros(B, H, num_split, V.shape[-1], dtype=torch.float64, device=Q.device)
    for b in range(B):
        length = int(cache_seqlens[b])
        for hk in range(HKV):
            idx, q = block_indices[b, hk].tolist(), Q[b, hk * G:(hk + 1) * G].double()
            for s in range(num_split):
                start = per * s + min(s, rem)
                blocks = [i for i in idx[start:start + per + (s < rem)] if i >= 0]
                if not blocks:
                    continue
                pos = torch.cat([torch.arange(i * block_N, min((i + 1) * block_N, length)) for i in blocks]).to(Q.device)
                logits = q @ K[b, pos, hk].double().T * D ** -0.5
                glse[b, hk * G:(hk + 1) * G, s] = torch.logsumexp(logits, -1) / math.log(2)
                part[b, hk * G:(hk + 1) * G, s] = torch.softmax(logits, -1) @ V[b, pos, hk].double()
    return glse, part


def mla_decode_splits(Q, Q_pe, KV, K_pe, num_split):
    """(glse [B, H, num_split], Output_partial [B, H, num_split, D], Output [B, H, D]), float64, of the split MLA
    decode of examples/deepseek_mla/example_mla_decode_persistent.py (one kv head, KV both keys and values): split s
    attends over the kv positions [s L, (s + 1) L), L = seqlen // num_split, with the logits
    (q . kv + q_pe . k_pe) / sqrt(D + D_pe); glse is the split's log2-sum-exp of them, Output_partial its softmax
    times KV, and Output the splits combined by their glse (attention over those positions, as the file's
    ref_program over a sequence that the splits cover)."""
    import torch
    B, H, D = Q.shape
    L = KV.shape[1] // num_split
    scale = (D + Q_pe.shape[-1]) ** -0.5
    f64 = dict(dtype=torch.float64, device=Q.device)
    glse, part, out = torch.empty(B, H, num_split, **f64), torch.empty(B, H, num_split, D, **f64), \
        torch.empty(B, H, D, **f64)
    for b in range(B):
        kv, kpe = KV[b, :L * num_split, 0].double(), K_pe[b, :L * num_split, 0].double()
        logits = (Q[b].double() @ kv.T + Q_pe[b].double() @ kpe.T) * scale            # [H, L * num_split]
        out[b] = torch.softmax(logits, -1) @ kv
        for s in range(num_split):
            piece = logits[:, s * L:(s + 1) * L]
            glse[b, :, s] = torch.logsumexp(piece, -1) / math.log(2)
            part[b, :, s] = torch.softmax(piece, -1) @ kv[s * L:(s + 1) * L]
    return glse, part, out


def _mla_logits(Q, KV, bos, eos, scale):
    """scale q . k over one sequence, float64, -inf above the diagonal: [s, H, t]."""
    import torch
    q, k = Q[bos:eos].double(), KV[bos:eos, 0].double()
    logits = torch.einsum("shd,td->sht", q, k) * scale
    n = eos - bos
    causal = torch.arange(n, device=Q.device)[:, None] >= torch.arange(n, device=Q.device)[None, :]
    return logits.masked_fill(~causal[:, None, :], float("-inf"))


def mla_causal_lse(Q, KV, Offsets, Indices=None, scale=None):
    """lse [S, H] (natural log, float64) of each token's causal logits within its sequence; with Indices
    ([S, 1, topk], local to the sequence), over the indexed positions only (sparse_mla_fwd's Lse)."""
    import torch
    scale = Q.shape[-1] ** -0.5 if scale is None else scale
    bounds, out = Offsets.tolist(), []
    for a, b in zip(bounds, bounds[1:]):
        logits = _mla_logits(Q, KV, a, b, scale)
        if Indices is not None:
            idx = Indices[a:b, 0].long()
            chosen = torch.zeros(b - a, b - a + 1, dtype=torch.bool, device=Q.device)
            chosen.scatter_(1, torch.where((idx >= 0) & (idx < b - a), idx, b - a), True)
            logits = logits.masked_fill(~chosen[:, None, :-1], float("-inf"))
        out.append(torch.logsumexp(logits, -1))
    return torch.cat(out)


def mla_topk_prob_sum(Q, KV, Indices, Offsets, scale=None):
    """ReduceSum [S, 1, 1, topk] (float64): sum over heads of the causal softmax at each top-k index."""
    import torch
    scale = Q.shape[-1] ** -0.5 if scale is None else scale
    bounds, out = Offsets.tolist(), []
    for a, b in zip(bounds, bounds[1:]):
        p = torch.softmax(_mla_logits(Q, KV, a, b, scale), -1).sum(1)            # [s, t]
        idx = Indices[a:b, 0].long()
        valid = (idx >= 0) & (idx <= torch.arange(b - a, device=Q.device)[:, None])
        out.append(torch.where(valid, torch.gather(p, 1, idx.clamp(0, b - a - 1)), torch.zeros_like(p[:, :1])))
    return torch.cat(out)[:, None, None, :]


def self_check(torch):
    """Each reference against its definition by loops at single positions, on small shapes."""
    problems = []
    g = torch.Generator().manual_seed(24)
    Bn, S, H, D, C = 1, 8, 2, 4, 4
    K = torch.randn(Bn, S, H, D, generator=g).bfloat16()
    V = torch.randn(Bn, S, H, D, generator=g).bfloat16()
    Beta = torch.randn(Bn, S, H, generator=g).bfloat16()
    G = torch.randn(Bn, S, H, generator=g)
    A = torch.randn(Bn, S, H, C, generator=g).bfloat16()
    kkt = chunk_scaled_dot_kkt(K, Beta, G, C)
    for (t, h, j) in ((5, 1, 0), (6, 0, 1), (7, 1, 2), (4, 0, 0), (2, 1, 2)):
        i, base = t % C, t - t % C
        d = float(G[0, t, h]) - float(G[0, base + j, h])
        kb = (K[0, t, h].float() * Beta[0, t, h].float()).bfloat16().double()
        want = float((kb * K[0, base + j, h].double()).sum()) * math.exp(d) if i > j and d <= 0 else 0.0
        if abs(float(kkt[0, t, h, j]) - want) > 1e-9:
            problems.append("chunk_scaled_dot_kkt at (%d, %d, %d): %r, want %r" % (t, h, j, float(kkt[0, t, h, j]), want))
    W, U = recompute_w_u(K, V, Beta, G, A, C)
    t, h, e = 6, 1, 3
    base = t - t % C
    w = u = 0.0
    for j in range(C):
        s = base + j
        kb = (K[0, s, h, e].float() * Beta[0, s, h].float()).bfloat16().float()
        w += float(A[0, t, h, j]) * float((kb * G[0, s, h].exp()).bfloat16())
        u += float(A[0, t, h, j]) * float((V[0, s, h, e].float() * Beta[0, s, h].float()).bfloat16())
    if abs(float(W[0, t, h, e]) - w) > 1e-6 or abs(float(U[0, t, h, e]) - u) > 1e-6:
        problems.append("recompute_w_u at one position: %r %r, want %r %r" % (float(W[0, t, h, e]),
                                                                          float(U[0, t, h, e]), w, u))
    Gk = torch.randn(Bn, S, H, D, generator=g)
    W2, U2, KG = kda_recompute_w_u(K, V, Beta, Gk, A, C)
    if not torch.equal(U2, U):
        problems.append("kda_recompute_w_u's U differs from recompute_w_u's")
    want = float(K[0, 5, 1, 2]) * 2.0 ** (float(Gk[0, 7, 1, 2]) - float(Gk[0, 5, 1, 2]))
    if abs(float(KG[0, 5, 1, 2]) - want) > 1e-9:
        problems.append("kda_recompute_w_u's KG: %r, want %r" % (float(KG[0, 5, 1, 2]), want))
    w = sum(float(A[0, 1, 0, j]) * float((((K[0, j, 0, 1].float() * Beta[0, j, 0].float()).bfloat16().float()) *
                                           torch.exp2(Gk[0, j, 0, 1])).bfloat16()) for j in range(C))
    if abs(float(W2[0, 1, 0, 1]) - w) > 1e-6:
        problems.append("kda_recompute_w_u's W: %r, want %r" % (float(W2[0, 1, 0, 1]), w))
    problems += _kda_self_check(torch, g, Bn, S, H, D, C)
    Bw = torch.randint(0, 4, (3, 32), generator=g, dtype=torch.int8)
    packed = pack_int2_interleaved(Bw)
    if tuple(packed.shape) != (3, 8) or packed.dtype != torch.int8:
        problems.append("pack_int2_interleaved's shape/dtype: %s %s" % (tuple(packed.shape), packed.dtype))
    elif unpack_int2_by_decode(packed) != Bw.tolist():
        problems.append("pack_int2_interleaved does not decode back to its input")
    problems += _mla_self_check(torch, g)
    problems += _compress_self_check(torch)
    problems += _moe_self_check(torch, g)
    problems += _decode_self_check(torch, g)
    problems += _mla_decode_self_check(torch, g)
    problems += _delta_h_self_check(torch, g)
    problems += _intra_token_self_check(torch, g)
    problems += _delta_bwd_self_check(torch, g)
    return problems


def _delta_bwd_self_check(torch, g):
    """kda_chunk_delta_bwd_dhu over two chunks of 2 tokens against the backward recurrence written out by loops."""
    Q, K, W, dO, dv = (torch.randn(1, 4, 1, 3, generator=g).bfloat16() for _ in range(5))
    GK, dht = -torch.rand(1, 4, 1, 3, generator=g), torch.randn(1, 1, 3, 3, generator=g).bfloat16()
    dh, dh0, dv2 = kda_chunk_delta_bwd_dhu(Q, K, W, GK, dht, dO, dv, 0.5, 2)

    def b16(x):
        return float(torch.tensor(x, dtype=torch.float64).bfloat16())
    d = [[float(dht[0, 0, k, v]) for v in range(3)] for k in range(3)]
    for c in (1, 0):
        d16 = [[b16(x) for x in row] for row in d]
        v16 = [[b16(sum(float(K[0, t, 0, k]) * d16[k][v] for k in range(3)) + float(dv[0, t, 0, v])) for v in range(3)]
               for t in (2 * c, 2 * c + 1)]
        if any(abs(float(dh[0, c, 0, k, v]) - d16[k][v]) > 1e-12 for k in range(3) for v in range(3)) or \
                any(abs(float(dv2[0, 2 * c + i, 0, v]) - v16[i][v]) > 1e-12 for i in range(2) for v in range(3)):
            return ["kda_chunk_delta_bwd_dhu's dh or dv2 in chunk %d" % c]
        d = [[d[k][v] * 2.0 ** float(GK[0, 2 * c + 1, 0, k]) +
              sum(0.5 * float(Q[0, 2 * c + i, 0, k]) * float(dO[0, 2 * c + i, 0, v]) -
                  float(W[0, 2 * c + i, 0, k]) * v16[i][v] for i in range(2)) for v in range(3)] for k in range(3)]
    if any(abs(float(dh0[0, 0, k, v]) - d[k][v]) > 1e-9 for k in range(3) for v in range(3)):
        return ["kda_chunk_delta_bwd_dhu's dh0: %r, want %r" % (dh0[0, 0].tolist(), d)]
    return []


def _intra_token_self_check(torch, g):
    """kda_intra_token_parallel (chunks of 4 tokens, sub-chunks of 2) against its sums at every entry of two tokens."""
    Q, K = torch.randn(1, 8, 1, 3, generator=g).bfloat16(), torch.randn(1, 8, 1, 3, generator=g).bfloat16()
    GK, Beta = -torch.rand(1, 8, 1, 3, generator=g) * 4, torch.randn(1, 8, 1, generator=g).bfloat16()
    Aqk, Akk = kda_intra_token_parallel(Q, K, GK, Beta, 4, 2)
    for i in (5, 7):                                   # the second sub-chunk of the second chunk: tokens 6, 7
        start = i - i % 2
        for c in range(4):
            j = i - i % 4 + c
            want = 0.0 if not start <= j <= i else sum(
                float(Q[0, i, 0, k]) * float(K[0, j, 0, k]) * 2.0 ** (float(GK[0, i, 0, k]) - float(GK[0, j, 0, k]))
                for k in range(3))
            if abs(float(Aqk[0, i, 0, c]) - want) > 1e-9:
                return ["kda_intra_token_parallel's Aqk[%d, %d]: %r, want %r" % (i, c, float(Aqk[0, i, 0, c]), want)]
        for d in range(2):
            j = start + d
            kb = [float((K[0, i, 0, k].float() * Beta[0, i, 0].float()).bfloat16()) for k in range(3)]
            want = sum(kb[k] * float(K[0, j, 0, k]) * 2.0 ** (float(GK[0, i, 0, k]) - float(GK[0, j, 0, k]))
                       for k in range(3)) if j < i else 0.0
            if abs(float(Akk[0, i, 0, d]) - want) > 1e-9:
                return ["kda_intra_token_parallel's Akk[%d, %d]: %r, want %r" % (i, d, float(Akk[0, i, 0, d]), want)]
    return []


def _delta_h_self_check(torch, g):
    """kda_chunk_delta_h over two chunks of 2 tokens against the recurrence written out by loops."""
    K, W, U = (torch.randn(1, 4, 1, 3, generator=g).half() for _ in range(3))
    GK, h0 = -torch.rand(1, 4, 1, 3, generator=g), torch.randn(1, 1, 3, 3, generator=g).half()
    h, final, vnew = kda_chunk_delta_h(K, W, U, GK, h0, 2)
    st = [[float(h0[0, 0, k, v]) for v in range(3)] for k in range(3)]
    for c in range(2):
        s16 = [[float(torch.tensor(x, dtype=torch.float64).half()) for x in row] for row in st]
        if any(abs(float(h[0, c, 0, k, v]) - s16[k][v]) > 1e-12 for k in range(3) for v in range(3)):
            return ["kda_chunk_delta_h's h[%d] is not the 16-bit state" % c]
        vn = [[float(torch.tensor(float(U[0, t, 0, v]) - sum(float(W[0, t, 0, k]) * s16[k][v] for k in range(3)),
                                  dtype=torch.float64).half()) for v in range(3)] for t in range(2 * c, 2 * c + 2)]
        if any(abs(float(vnew[0, 2 * c + i, 0, v]) - vn[i][v]) > 1e-12 for i in range(2) for v in range(3)):
            return ["kda_chunk_delta_h's V_new in chunk %d" % c]
        st = [[st[k][v] * 2.0 ** float(GK[0, 2 * c + 1, 0, k]) +
               sum(float(K[0, 2 * c + i, 0, k]) * vn[i][v] for i in range(2)) for v in range(3)] for k in range(3)]
    if any(abs(float(final[0, 0, k, v]) - st[k][v]) > 1e-9 for k in range(3) for v in range(3)):
        return ["kda_chunk_delta_h's final state: %r, want %r" % (final[0, 0].tolist(), st)]
    return []


def _decode_self_check(torch, g):
    """sparse_decode_splits: 5 selected blocks (one -1) in 3 splits of 2, 2, 1; the split of blocks (3, 1) with the
    sequence ending inside block 3, and the last split's lone -1 left at 0."""
    Q, K, V = (torch.randn(1, 2, 4, generator=g).half(), torch.randn(1, 16, 1, 4, generator=g).half(),
               torch.randn(1, 16, 1, 3, generator=g).half())
    idx = torch.tensor([[[3, 1, 2, 0, -1]]], dtype=torch.int32)
    glse, part = sparse_decode_splits(Q, K, V, idx, torch.tensor([14], dtype=torch.int32), 3, 4)
    pos = [12, 13, 4, 5, 6, 7]
    problems = []
    for h in range(2):
        logits = [float((Q[0, h].double() * K[0, p, 0].double()).sum()) / 2 for p in pos]
        total = sum(math.exp(x) for x in logits)
        want = [sum(math.exp(x) / total * float(V[0, p, 0, d]) for x, p in zip(logits, pos)) for d in range(3)]
        if abs(float(glse[0, h, 0]) - math.log2(total)) > 1e-9 or \
                max(abs(float(part[0, h, 0, d]) - want[d]) for d in range(3)) > 1e-9:
            problems.append("sparse_decode_splits' first split, head %d: %r %r, want %r %r"
                            % (h, float(glse[0, h, 0]), part[0, h, 0].tolist(), math.log2(total), want))
    if glse[0, :, 2].abs().sum() != 0 or part[0, :, 2].abs().sum() != 0 or not bool((glse[0, :, 1] != 0).all()):
        problems.append("sparse_decode_splits: an empty split is not 0 or a full one is: %r" % glse[0].tolist())
    return problems


def _mla_decode_self_check(torch, g):
    """mla_decode_splits on 2 heads over 6 positions in 2 splits against the sums written out."""
    Q, Q_pe = torch.randn(1, 2, 3, generator=g).half(), torch.randn(1, 2, 2, generator=g).half()
    KV, K_pe = torch.randn(1, 6, 1, 3, generator=g).half(), torch.randn(1, 6, 1, 2, generator=g).half()
    glse, part, out = mla_decode_splits(Q, Q_pe, KV, K_pe, 2)
    problems = []
    for h in range(2):
        logit = [(sum(float(Q[0, h, d]) * float(KV[0, p, 0, d]) for d in range(3)) +
                  sum(float(Q_pe[0, h, d]) * float(K_pe[0, p, 0, d]) for d in range(2))) / math.sqrt(5) for p in range(6)]
        for s, ps in ((0, range(3)), (1, range(3, 6)), (None, range(6))):
            total = sum(math.exp(logit[p]) for p in ps)
            want = [sum(math.exp(logit[p]) / total * float(KV[0, p, 0, d]) for p in ps) for d in range(3)]
            got = out[0, h] if s is None else part[0, h, s]
            if max(abs(float(got[d]) - want[d]) for d in range(3)) > 1e-9 or \
                    (s is not None and abs(float(glse[0, h, s]) - math.log2(total)) > 1e-9):
                problems.append("mla_decode_splits, head %d, split %s: %r, want %r" % (h, s, got.tolist(), want))
    return problems


def _moe_self_check(torch, g):
    """moe_routed at one row of the second of two groups, by its defining sums."""
    X, w = torch.randn(5, 6, generator=g).half(), torch.rand(5, generator=g).half()
    Wg, Wu, Wd = (torch.randn(2, 3, 6, generator=g).half(), torch.randn(2, 3, 6, generator=g).half(),
                  torch.randn(2, 6, 3, generator=g).half())
    up, out = moe_routed(X, Wg, Wu, Wd, w, [2, 3])
    r, e = 3, 1
    gate = [sum(float(X[r, k]) * float(Wg[e, j, k]) for k in range(6)) for j in range(3)]
    lin = [sum(float(X[r, k]) * float(Wu[e, j, k]) for k in range(6)) for j in range(3)]
    u = [gv / (1 + math.exp(-gv)) * lv for gv, lv in zip(gate, lin)]
    o = [sum(float(torch.tensor(u[j], dtype=torch.float64).half()) * float(Wd[e, c, j]) for j in range(3)) * float(w[r]) for c in range(6)]
    if max(abs(float(up[r, j]) - u[j]) for j in range(3)) > 1e-9 or max(abs(float(out[r, c]) - o[c]) for c in range(6)) > 1e-9:
        return ["moe_routed at row %d: %r %r, want %r %r" % (r, up[r].tolist(), out[r].tolist(), u, o)]
    return []


def _compress_self_check(torch):
    """compress_2to4 on a worked row: groups with nonzeros at (0, 1), (1, 3), (2, 3), (0, 3), four to an int16."""
    row = [5, 6, 0, 0, 0, 7, 0, 8, 0, 0, 9, 1, 2, 0, 0, 3] * 2
    values, meta = compress_2to4(torch.tensor([row], dtype=torch.float16))
    codes = [0 | 1 << 2, 1 | 3 << 2, 2 | 3 << 2, 0 | 3 << 2]
    word = sum(c << (4 * i) for i, c in enumerate(codes))
    want_meta = word - 65536 if word >= 32768 else word
    if values.tolist() != [[5, 6, 7, 8, 9, 1, 2, 3] * 2] or meta.dtype != torch.int16 or \
            meta.tolist() != [[want_meta] * 2]:
        return ["compress_2to4 on a worked row: %r %r, want metadata %d" % (values.tolist(), meta.tolist(), want_meta)]
    # fewer than two nonzeros: (3), (1), none, (0, 2) -> positions (0, 3), (0, 1), (0, 1), (0, 2)
    values, meta = compress_2to4(torch.tensor([[0, 0, 0, 4, 0, 5, 0, 0, 0, 0, 0, 0, 6, 0, 7, 0]], dtype=torch.float16))
    word = sum(c << (4 * i) for i, c in enumerate([0 | 3 << 2, 0 | 1 << 2, 0 | 1 << 2, 0 | 2 << 2]))
    if values.tolist() != [[0, 4, 0, 5, 0, 0, 6, 7]] or meta.tolist() != [[word - 65536 if word >= 32768 else word]]:
        return ["compress_2to4 on groups with fewer than two nonzeros: %r %r" % (values.tolist(), meta.tolist())]
    return []


def _kda_self_check(torch, g, Bn, S, H, D, C):
    """kda_chunk_o, chunk_bwd_dv_local and chunk_gla_bwd_dA against their defining sums at single positions."""
    problems = []
    Q, V = torch.randn(Bn, S, H, D, generator=g).bfloat16(), torch.randn(Bn, S, H, D, generator=g).bfloat16()
    GK, A = torch.randn(Bn, S, H, D, generator=g), torch.randn(Bn, S, H, C, generator=g).bfloat16()
    HID = torch.randn(Bn, S // C, H, D, D, generator=g).bfloat16()
    DO = torch.randn(Bn, S, H, D, generator=g)
    O, dv, dA = kda_chunk_o(Q, V, GK, A, HID, 0.5, C), chunk_bwd_dv_local(DO, A, C), chunk_gla_bwd_dA(DO, V, 0.5, C)
    t, h, e = 6, 1, 2                                                # token 2 of chunk 1
    base, i = t - t % C, t % C
    o = sum(float(((Q[0, t, h, k].float() * 0.5).bfloat16().float() * torch.exp2(GK[0, t, h, k])).bfloat16()) *
            float(HID[0, t // C, h, k, e]) for k in range(D))
    o += sum(float(A[0, t, h, j]) * float(V[0, base + j, h, e]) for j in range(i + 1))
    d = sum(float(A[0, base + r, h, i]) * float(DO[0, base + r, h, e]) for r in range(i, C))
    da = [0.5 * float((DO[0, t, h].double() * V[0, base + j, h].double()).sum()) if j <= i else 0.0 for j in range(C)]
    if abs(float(O[0, t, h, e]) - o) > 1e-6:
        problems.append("kda_chunk_o at one position: %r, want %r" % (float(O[0, t, h, e]), o))
    if abs(float(dv[0, t, h, e]) - d) > 1e-9:
        problems.append("chunk_bwd_dv_local at one position: %r, want %r" % (float(dv[0, t, h, e]), d))
    if any(abs(float(dA[0, t, h, j]) - da[j]) > 1e-9 for j in range(C)):
        problems.append("chunk_gla_bwd_dA at token %d: %r, want %r" % (t, dA[0, t, h].tolist(), da))
    return problems


def _mla_self_check(torch, g):
    """mla_causal_lse and mla_topk_prob_sum against their defining sums at single positions of a two-sequence
    batch (indices past the token, and -1)."""
    problems = []
    Q, KV = torch.randn(7, 3, 8, generator=g).bfloat16(), torch.randn(7, 1, 8, generator=g).bfloat16()
    Offsets = torch.tensor([0, 3, 7], dtype=torch.int32)
    Indices = torch.tensor([[2, 0, -1]] * 3 + [[3, 1, 0]] * 4, dtype=torch.int32).view(7, 1, 3)
    lse, got = mla_causal_lse(Q, KV, Offsets), mla_topk_prob_sum(Q, KV, Indices, Offsets)
    if tuple(got.shape) != (7, 1, 1, 3) or tuple(lse.shape) != (7, 3):
        return ["mla references' shapes: %s %s" % (tuple(lse.shape), tuple(got.shape))]
    s, bos = 5, 3                                                   # local token 2 of the second sequence
    logit = [[float((Q[s, h].double() * KV[bos + t, 0].double()).sum()) * 8 ** -0.5 for t in range(3)]
             for h in range(3)]
    want_lse = [math.log(sum(math.exp(x) for x in row)) for row in logit]
    for h in range(3):
        if abs(float(lse[s, h]) - want_lse[h]) > 1e-9:
            problems.append("mla_causal_lse at (%d, %d): %r, want %r" % (s, h, float(lse[s, h]), want_lse[h]))
    sparse = mla_causal_lse(Q, KV, Offsets, Indices)              # token 5 keeps local 1 and 0 (3 is past it)
    want_sparse = [math.log(math.exp(row[1]) + math.exp(row[0])) for row in logit]
    if any(abs(float(sparse[s, h]) - want_sparse[h]) > 1e-9 for h in range(3)):
        problems.append("mla_causal_lse with Indices at token %d: %r, want %r" % (s, sparse[s].tolist(), want_sparse))
    want = [0.0 if t > 2 else sum(math.exp(logit[h][t] - want_lse[h]) for h in range(3)) for t in (3, 1, 0)]
    if any(abs(float(got[s, 0, 0, i]) - want[i]) > 1e-9 for i in range(3)):
        problems.append("mla_topk_prob_sum at token %d: %r, want %r" % (s, got[s, 0, 0].tolist(), want))
    if float(got[1, 0, 0, 0]) != 0.0 or float(got[1, 0, 0, 2]) != 0.0 or not float(got[2, 0, 0, 0]) > 0:
        problems.append("mla_topk_prob_sum counts an index past the token or -1: %r" % got[:3, 0, 0].tolist())
    return problems
