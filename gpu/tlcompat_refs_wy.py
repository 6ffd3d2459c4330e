"""tilec's float64 references for the backward of the WY representation of examples/kda/wy_fast_bwd.py (issue 23),
re-exported by gpu/tlcompat_refs.py (`tilec_refs.NAME` in tests/tilelang_compat/reference.tsv). The file compares
with flash-linear-attention's prepare_wy_repr_bwd, which the GPU machine does not have.

Per chunk of `chunk` tokens, batch b and head h (k_i, v_i the rows of token i, beta_i its scalar, g_i = 2^gk_i its
gate per key dimension, A the chunk's [chunk, chunk] matrix with rows by token), from the forward W = A (beta g k)
and U = A (beta v) and the incoming gradients dw, du, dk, dg:

  dk2   = (A^T dw) * beta * g + dk              dv    = (A^T du) * beta
  dg2   = (A^T dw) * (beta g k) + dg            dbeta = sum_k (A^T dw) * g k + sum_v (A^T du) * v
  dA    = -tril((A^T tril(dw (beta g k)^T + du (beta v)^T) A^T), -1)      (tril(., -1): strictly lower)

The kernel takes float32 inputs through tensor-core GEMMs, which compute in tf32 (10-bit mantissas); its dA chains
three of them, so it is judged by rel_l2_err, the relative 2-norm error of each output (a tf32 GEMM chain: about
1e-3), not element by element (a numpy emulation of tf32 puts 1.5% of dA outside close(1e-2, 1e-2) of float64,
as tilec and TileLang, each in tf32, are apart). Needs torch only when called."""


def kda_wy_fast_bwd(K, V, Beta, GK, A, dw, du, dk, dg, chunk=64):
    """(dA, dk2, dv, dbeta, dg2), float64, in the kernel's output order."""
    import torch
    c, back = chunked(chunk), unchunked
    k, v, beta, g, a, dwc, duc = c(K), c(V), c(Beta)[..., None], torch.exp2(c(GK)), c(A), c(dw), c(du)
    at = a.transpose(-1, -2)
    dkb, dvb = at @ dwc, at @ duc
    kbg = k * beta * g
    dacc = torch.tril(dwc @ kbg.transpose(-1, -2) + duc @ (v * beta).transpose(-1, -2), -1)
    dA = -torch.tril(at @ (dacc @ at), -1)
    dk2 = dkb * beta * g + c(dk)
    dg2 = dkb * kbg + c(dg)
    dbeta = (dkb * g * k).sum(-1) + (dvb * v).sum(-1)
    return back(dA), back(dk2), back(dvb * beta), back(dbeta[..., None])[..., 0], back(dg2)


def gdn_wy_fast_bwd(K, V, Beta, G, A, dw, du, chunk=64):
    """(dA, dk, dv, dbeta, dg), float64 but for the kernel's 16-bit operands, of tilelang_wy_fast_bwd in
    examples/gdn/example_wy_fast_bwd_split.py: the gdn form of the backward above, one gate g_i = e^G_i per token and
    no incoming dk, dg, dA left as the chunk's dw (beta g k)^T + du (beta v)^T (the split kernel finishes it):

      dk = (A^T dw) * beta * g      dv = (A^T du) * beta      dg = sum_k (A^T dw) * beta g k
      dbeta = sum_k (A^T dw) * g k + sum_v (A^T du) * v

    beta g k and beta v are formed in float32 and rounded to the input dtype, as the kernel's shared tiles hold them
    for its GEMMs."""
    import torch
    lo = K.dtype
    c, back = chunked(chunk), unchunked
    g = torch.exp(G.float())[..., None]
    kbg = c((K.float() * Beta.float()[..., None] * g).to(lo))
    vb = c((V.float() * Beta.float()[..., None]).to(lo))
    k, v, g, beta, at = c(K), c(V), c(g), c(Beta)[..., None], c(A).transpose(-1, -2)
    dkb, dvb = at @ c(dw), at @ c(du)
    dA = c(dw) @ kbg.transpose(-1, -2) + c(du) @ vb.transpose(-1, -2)
    dbeta = (dkb * g * k).sum(-1) + (dvb * v).sum(-1)
    dg = (dkb * g * k * beta).sum(-1)
    return back(dA), back(dkb * beta * g), back(dvb * beta), back(dbeta[..., None])[..., 0], back(dg[..., None])[..., 0]


def kda_inter_solve_fused(Q, K, GK, Beta, Akk_diag, scale, chunk=64, sub=16):
    """(Aqk, Akk) of examples/kda/chunk_inter_solve_fused.py, float64. Per chunk, for sub-chunks s > t (rows i of s,
    columns j of t): Aqk[i, j] = scale sum_k q_ik k_jk 2^(gk_ik - gk_jk), the off-diagonal blocks of the chunk's
    strictly lower A[i, j] = beta_i sum_k k_ik k_jk 2^(gk_ik - gk_jk), A's diagonal blocks the strictly lower part of
    Akk_diag's sub-chunk rows; Akk = (I + A)^-1. Aqk's diagonal and upper blocks and Akk's upper blocks are not
    written by the kernel: zeros here (the reference line's setup zero-fills the outputs)."""
    import torch
    c, back = chunked(chunk), unchunked
    A = inter_solve_matrix(Q, K, GK, Beta, Akk_diag, chunk, sub)
    q, k, g = c(Q), c(K), c(GK)
    aqk = torch.zeros_like(A)
    for s in range(1, chunk // sub):
        rows = slice(s * sub, (s + 1) * sub)
        gn = g[..., s * sub:s * sub + 1, :]                     # the decays split at sub-chunk s's first token
        qs = q[..., rows, :] * torch.exp2(g[..., rows, :] - gn)
        kt = k[..., :s * sub, :] * torch.exp2(gn - g[..., :s * sub, :])
        aqk[..., rows, :s * sub] = scale * (qs @ kt.transpose(-1, -2))
    eye = torch.eye(chunk, dtype=A.dtype, device=A.device).expand_as(A)
    Akk = torch.linalg.solve_triangular(eye + A, eye, upper=False, unitriangular=True)
    return back(aqk), back(Akk)


def inter_solve_matrix(Q, K, GK, Beta, Akk_diag, chunk, sub):
    """The strictly lower [B, H, N, chunk, chunk] matrix A that kda_inter_solve_fused inverts (I + A), float64."""
    import torch
    c = chunked(chunk)
    k, g, beta, diag = c(K), c(GK), c(Beta)[..., None], c(Akk_diag)
    A = torch.zeros(*k.shape[:-1], chunk, dtype=torch.float64, device=K.device)
    for s in range(chunk // sub):
        rows = slice(s * sub, (s + 1) * sub)
        A[..., rows, rows] = torch.tril(diag[..., rows, :], -1)
        if s:
            gn = g[..., s * sub:s * sub + 1, :]
            ks = k[..., rows, :] * torch.exp2(g[..., rows, :] - gn) * beta[..., rows, :]
            kt = k[..., :s * sub, :] * torch.exp2(gn - g[..., :s * sub, :])
            A[..., rows, :s * sub] = ks @ kt.transpose(-1, -2)
    return A


def mamba_chunk_scan(cb, x, dt, dA_cumsum, C, prev_states, D):
    """Output of examples/linear_attention/example_mamba_chunk_scan.py, float64 but for the kernel's two float16
    roundings of the intra-chunk factor (its cb fragment is float16): per batch b, chunk c, head h and positions
    l, s of the chunk, A[l, s] = r16(r16(cb[l, s] e^(dA_l - dA_s)) dt_s) for s <= l, else 0, and
    out[l] = sum_s A[l, s] x[s] + e^(dA_l) C[l] . prev_states[c] + D[h] x[l]. The file's ref_program rounds
    differently (its decay in float16 arithmetic, products through float16 einsums), so at its tolerances 1.3 %
    of the outputs of a correct kernel lie outside (H200, session 19)."""
    import torch
    Bn, L, H, P = x.shape
    nc, cs, G = cb.shape[1], cb.shape[3], cb.shape[2]
    r16 = lambda t: t.float().half().double()                   # noqa: E731
    out = torch.empty(Bn, L, H, P, dtype=torch.float64, device=x.device)
    causal = torch.tril(torch.ones(cs, cs, dtype=torch.bool, device=x.device))
    heads = torch.arange(H, device=x.device) // (H // G)
    for b in range(Bn):
        da, d_t = dA_cumsum[b].double(), dt[b].double()                     # [H, nc, cs]
        cbh = cb[b].double()[:, heads]                                       # [nc, H, cs, cs]
        decay = torch.exp(da[:, :, :, None] - da[:, :, None, :]).transpose(0, 1)      # [nc, H, l, s]
        A = r16(r16(cbh * decay) * d_t.transpose(0, 1)[:, :, None, :])
        A = torch.where(causal, A, torch.zeros_like(A))
        xc = x[b].double().reshape(nc, cs, H, P).transpose(1, 2)             # [nc, H, cs, P]
        Cc = C[b].double().reshape(nc, cs, G, -1)[:, :, heads].transpose(1, 2)   # [nc, H, cs, N]
        inter = (Cc @ prev_states[b].double().transpose(-1, -2)) * torch.exp(da.transpose(0, 1))[..., None]
        o = A @ xc + inter + D.double()[None, :, None, None] * xc
        out[b] = o.transpose(1, 2).reshape(L, H, P)
    return out


def kda_bwd_dqkwg(Q, K, V, G, h, dv, DO, Dh, scale, chunk=64):
    """(dq, dk, dw, dg) of examples/kda/chunk_bwd_dqkwg.py (issue 24), float64. Per chunk of `chunk` tokens and head,
    with the chunk's state h and its gradient dh ([DK, DV]) and gn the gate of the chunk's last token:
      dq = scale 2^g (do h^T),  dk = 2^(gn - g) (v dh^T),  dw = -(dv h^T),
      dg = q dq - k dk, plus on the chunk's last token sum_s dk k + 2^gn sum_v h dh.
    The file compares with fla's chunk_kda_bwd_dqkwg (Triton), which the GPU machine lacks."""
    import torch
    c, back = chunked(chunk), unchunked
    q, k, v, g, dvc, do = c(Q), c(K), c(V), c(G), c(dv), c(DO)      # [b, h, chunk index, t, d]
    hs, dhs = (x.double().permute(0, 2, 1, 3, 4) for x in (h, Dh))     # [b, h, chunk index, DK, DV]
    gn = g[..., -1:, :]                                                # the chunk's last token
    dq = (do @ hs.transpose(-1, -2)) * scale * torch.exp2(g)
    dk = (v @ dhs.transpose(-1, -2)) * torch.exp2(gn - g)
    dw = -(dvc @ hs.transpose(-1, -2))
    dg = q * dq - k * dk
    dg[..., -1, :] += (dk * k).sum(-2) + (hs * dhs).sum(-1) * torch.exp2(gn[..., 0, :])
    return back(dq), back(dk), back(dw), back(dg)


def kda_bwd_intra(q, k, g, beta, dAqk, dAkk, dq, dk, dg, block_dk, chunk=64):
    """(dq2, dk2, db2, dg2) of examples/kda/chunk_bwd_intra.py (issue 23: tilec and TileLang disagreed on dq2 with
    no reference to say which is right), float64. Within each chunk of `chunk` tokens, per batch and head, for token
    positions r, c of the chunk (c < S) and per key dimension, with e(r, c) = 2^(g_r - g_c):
      dq'_r  = sum_{c <= r} dAqk[r, c] k_c e(r, c),   dk'_r = sum_{c <= r} dAkk[r, c] k_c e(r, c)
      dkt_r  = sum_{c >= r} (dAqk[c, r] q_c + dAkk[c, r] beta_c k_c) e(c, r)
      dq2 = dq' + dq,  dk2 = beta dk' + dk + dkt,  dg2 = q dq' + (beta dk' - dkt) k + dg,
      db2[i]_r = sum over the key dimensions of block i (block_dk wide) of dk'_r k_r.
    The kernel reaches the same sums through the gate of a sub-chunk's first or last token (2^(gn - g_c) 2^(g_r -
    gn)); dAqk / dAkk hold a token's row over the positions of its chunk."""
    import torch
    Bn, S, H, DK = q.shape
    nk = -(-DK // block_dk)
    f64 = lambda x: x.double().to(q.device)                              # noqa: E731
    dq2, dk2, dg2 = (torch.empty(Bn, S, H, DK, dtype=torch.float64, device=q.device) for _ in range(3))
    db2 = torch.empty(nk, Bn, S, H, dtype=torch.float64, device=q.device)
    for s0 in range(0, S, chunk):
        n = min(chunk, S - s0)
        qc, kc, gc, dqc, dkc, dgc = (f64(x[:, s0:s0 + n]).permute(0, 2, 1, 3) for x in (q, k, g, dq, dk, dg))
        bc = f64(beta[:, s0:s0 + n]).permute(0, 2, 1)[..., None]                    # [B, H, n, 1]
        aq, ak = (f64(x[:, s0:s0 + n, :, :n]).permute(0, 2, 1, 3) for x in (dAqk, dAkk))  # [B, H, row, col]
        e = torch.exp2(gc[:, :, :, None, :] - gc[:, :, None, :, :])                 # e[.., i, j, d] = e(i, j)
        low = torch.tril(torch.ones(n, n, dtype=torch.float64, device=q.device))   # [i, j]: j <= i
        dqp = torch.einsum("bhrc,bhrcd,bhcd->bhrd", aq * low, e, kc)
        dkp = torch.einsum("bhrc,bhrcd,bhcd->bhrd", ak * low, e, kc)
        dkt = torch.einsum("bhcr,bhcrd,bhcd->bhrd", aq * low, e, qc) + \
            torch.einsum("bhcr,bhcrd,bhcd->bhrd", ak * low, e, bc * kc)
        dq2[:, s0:s0 + n] = (dqp + dqc).permute(0, 2, 1, 3)
        dk2[:, s0:s0 + n] = (bc * dkp + dkc + dkt).permute(0, 2, 1, 3)
        dg2[:, s0:s0 + n] = (qc * dqp + (bc * dkp - dkt) * kc + dgc).permute(0, 2, 1, 3)
        for i in range(nk):
            db2[i, :, s0:s0 + n] = (dkp * kc)[..., i * block_dk:(i + 1) * block_dk].sum(-1).permute(0, 2, 1)
    return dq2, dk2, db2, dg2


def _bwd_intra_self_check(torch, gen):
    """kda_bwd_intra on 5 tokens in chunks of 3 (the last one partial), 2 heads, 4 key dimensions in blocks of 2,
    against its sums written out by loops."""
    Bn, S, H, DK, C, BK = 1, 5, 2, 4, 3, 2
    q, k, g, dq, dk, dg = (torch.randn(Bn, S, H, DK, generator=gen) for _ in range(6))
    beta = torch.randn(Bn, S, H, generator=gen)
    dAqk, dAkk = torch.randn(Bn, S, H, C, generator=gen), torch.randn(Bn, S, H, C, generator=gen)
    out = kda_bwd_intra(q, k, g, beta, dAqk, dAkk, dq, dk, dg, BK, C)
    f, problems = float, []
    for h in range(H):
        for r in range(S):
            base = r // C * C
            toks = range(base, min(base + C, S))
            e = lambda i, j, d: 2.0 ** (f(g[0, i, h, d]) - f(g[0, j, h, d]))      # noqa: E731
            for d in range(DK):
                dqp = sum(f(dAqk[0, r, h, c - base]) * f(k[0, c, h, d]) * e(r, c, d) for c in toks if c <= r)
                dkp = sum(f(dAkk[0, r, h, c - base]) * f(k[0, c, h, d]) * e(r, c, d) for c in toks if c <= r)
                dkt = sum((f(dAqk[0, c, h, r - base]) * f(q[0, c, h, d]) +
                           f(dAkk[0, c, h, r - base]) * f(beta[0, c, h]) * f(k[0, c, h, d])) * e(c, r, d)
                          for c in toks if c >= r)
                b = f(beta[0, r, h])
                want = (dqp + f(dq[0, r, h, d]), b * dkp + f(dk[0, r, h, d]) + dkt,
                        f(q[0, r, h, d]) * dqp + (b * dkp - dkt) * f(k[0, r, h, d]) + f(dg[0, r, h, d]))
                got = (f(out[0][0, r, h, d]), f(out[1][0, r, h, d]), f(out[3][0, r, h, d]))
                if max(abs(x - y) for x, y in zip(got, want)) > 1e-9 * max(1.0, max(abs(y) for y in want)):
                    problems.append("kda_bwd_intra's dq2, dk2, dg2 at (%d, %d, %d): %r, want %r" % (r, h, d, got, want))
            for i in range(DK // BK):
                want = sum(sum(f(dAkk[0, r, h, c - base]) * f(k[0, c, h, d]) * e(r, c, d) for c in toks if c <= r) *
                           f(k[0, r, h, d]) for d in range(i * BK, (i + 1) * BK))
                if abs(f(out[2][i, 0, r, h]) - want) > 1e-9 * max(1.0, abs(want)):
                    problems.append("kda_bwd_intra's db2[%d] at (%d, %d): %r, want %r" % (i, r, h, f(out[2][i, 0, r, h]), want))
    return problems


def chunked(chunk):
    """x [B, S, H, ...] -> [B, H, S // chunk, chunk, ...] in float64, as a function."""
    def c(x):
        x = x.reshape(x.shape[0], x.shape[1] // chunk, chunk, *x.shape[2:])
        return x.permute(0, 3, 1, 2, *range(4, x.dim())).double()
    return c


def unchunked(x):
    """The inverse of chunked(chunk)(x): [B, H, N, chunk, ...] -> [B, N * chunk, H, ...]."""
    x = x.permute(0, 2, 3, 1, *range(4, x.dim()))
    return x.reshape(x.shape[0], x.shape[1] * x.shape[2], x.shape[3], *x.shape[4:])


def rel_l2_err(out, ref):
    """||out - ref|| / ||ref|| over the whole tensor (NaN or inf anywhere: inf)."""
    import torch
    o = out.double()
    if not bool(torch.isfinite(o).all()):
        return float("inf")
    r = ref.double().to(o.device)
    return float((o - r).norm() / r.norm().clamp(min=1e-300))


def self_check(torch):
    """kda_wy_fast_bwd at single positions against the formulas written out by loops, on 2 chunks of 3 tokens."""
    g = torch.Generator().manual_seed(23)
    Bn, S, H, D, C = 1, 6, 2, 2, 3
    K, V, GK, dw, du, dk, dg = (torch.randn(Bn, S, H, D, generator=g) for _ in range(7))
    Beta, A = torch.randn(Bn, S, H, generator=g), torch.randn(Bn, S, H, C, generator=g)
    dA, dk2, dv, dbeta, dg2 = kda_wy_fast_bwd(K, V, Beta, GK, A, dw, du, dk, dg, C)
    problems = []
    b, h, base = 0, 1, 3
    f = lambda t, *i: float(t[(b, base + i[0], h) + tuple(i[1:])])      # noqa: E731 - token i of the chunk
    gate = lambda i, d: 2.0 ** f(GK, i, d)                               # noqa: E731
    atdw = [[sum(f(A, s, j) * f(dw, s, d) for s in range(C)) for d in range(D)] for j in range(C)]
    atdu = [[sum(f(A, s, j) * f(du, s, d) for s in range(C)) for d in range(D)] for j in range(C)]
    acc = [[sum(f(dw, i, d) * f(K, j, d) * f(Beta, j) * gate(j, d) + f(du, i, d) * f(V, j, d) * f(Beta, j)
                for d in range(D)) if i > j else 0.0 for j in range(C)] for i in range(C)]
    t1 = [[sum(acc[i][m] * f(A, j, m) for m in range(C)) for j in range(C)] for i in range(C)]
    for j in range(C):
        want_beta = sum(atdw[j][d] * gate(j, d) * f(K, j, d) + atdu[j][d] * f(V, j, d) for d in range(D))
        if abs(float(dbeta[b, base + j, h]) - want_beta) > 1e-9:
            problems.append("kda_wy_fast_bwd's dbeta at token %d: %r, want %r" % (j, float(dbeta[b, base + j, h]), want_beta))
        for d in range(D):
            want = (atdw[j][d] * f(Beta, j) * gate(j, d) + f(dk, j, d), atdu[j][d] * f(Beta, j),
                    atdw[j][d] * f(K, j, d) * f(Beta, j) * gate(j, d) + f(dg, j, d))
            got = (float(dk2[b, base + j, h, d]), float(dv[b, base + j, h, d]), float(dg2[b, base + j, h, d]))
            if max(abs(x - y) for x, y in zip(got, want)) > 1e-9:
                problems.append("kda_wy_fast_bwd's dk2, dv, dg2 at (%d, %d): %r, want %r" % (j, d, got, want))
        for i in range(C):
            want = -sum(f(A, m, i) * t1[m][j] for m in range(C)) if i > j else 0.0
            if abs(float(dA[b, base + i, h, j]) - want) > 1e-9:
                problems.append("kda_wy_fast_bwd's dA at (%d, %d): %r, want %r" % (i, j, float(dA[b, base + i, h, j]), want))
    return problems + _gdn_self_check(torch, g) + _inter_solve_self_check(torch, g) + \
        _chunk_scan_self_check(torch, g) + _dqkwg_self_check(torch, g) + \
        _bwd_intra_self_check(torch, g)


def _dqkwg_self_check(torch, g):
    """kda_bwd_dqkwg on 2 chunks of 3 tokens against the kernel's sums written out by loops."""
    Bn, S, H, DK, DV, C = 1, 6, 2, 2, 3, 3
    Q, K, G, dv = (torch.randn(Bn, S, H, d, generator=g) for d in (DK, DK, DK, DV))
    V, DO = torch.randn(Bn, S, H, DV, generator=g), torch.randn(Bn, S, H, DV, generator=g)
    hs, dh = torch.randn(Bn, S // C, H, DK, DV, generator=g), torch.randn(Bn, S // C, H, DK, DV, generator=g)
    out = kda_bwd_dqkwg(Q, K, V, G, hs, dv, DO, dh, 0.5, C)
    f, problems = float, []
    for t in range(S):
        for hh in range(H):
            c, last = t // C, t // C * C + C - 1
            for d in range(DK):
                gn = f(G[0, last, hh, d])
                dq = 0.5 * 2 ** f(G[0, t, hh, d]) * sum(f(DO[0, t, hh, e]) * f(hs[0, c, hh, d, e]) for e in range(DV))
                dkf = lambda s: 2 ** (gn - f(G[0, s, hh, d])) * sum(                      # noqa: E731
                    f(V[0, s, hh, e]) * f(dh[0, c, hh, d, e]) for e in range(DV))
                dw = -sum(f(dv[0, t, hh, e]) * f(hs[0, c, hh, d, e]) for e in range(DV))
                dg = f(Q[0, t, hh, d]) * dq - f(K[0, t, hh, d]) * dkf(t)
                if t == last:
                    dg += sum(dkf(s) * f(K[0, s, hh, d]) for s in range(c * C, last + 1))
                    dg += 2 ** gn * sum(f(hs[0, c, hh, d, e]) * f(dh[0, c, hh, d, e]) for e in range(DV))
                for name, got, want in zip("dq dk dw dg".split(), out, (dq, dkf(t), dw, dg)):
                    if abs(float(got[0, t, hh, d]) - want) > 1e-9 * max(1.0, abs(want)):
                        problems.append("kda_bwd_dqkwg's %s at (%d, %d, %d): %r, want %r" % (
                            name, t, hh, d, float(got[0, t, hh, d]), want))
    return problems


def _gdn_self_check(torch, g):
    """gdn_wy_fast_bwd at the tokens of the second of 2 chunks of 3 against its formulas written out by loops."""
    Bn, S, H, D, C = 1, 6, 2, 2, 3
    K, V, dw, du = (torch.randn(Bn, S, H, D, generator=g).bfloat16() for _ in range(4))
    Beta, G, A = torch.randn(Bn, S, H, generator=g).bfloat16(), torch.randn(Bn, S, H, generator=g), \
        torch.randn(Bn, S, H, C, generator=g).bfloat16()
    dA, dk, dv, dbeta, dg = gdn_wy_fast_bwd(K, V, Beta, G, A, dw, du, C)
    problems = []
    b, h, base = 0, 0, 3
    f = lambda t, *i: float(t[(b, base + i[0], h) + tuple(i[1:])])      # noqa: E731
    gate = lambda i: float(torch.exp(torch.tensor(f(G, i), dtype=torch.float32)))     # noqa: E731 - float32, as the kernel
    b16 = lambda x: float(torch.tensor(x, dtype=torch.float32).bfloat16())     # noqa: E731
    kbg = [[b16(f(K, i, d) * f(Beta, i) * gate(i)) for d in range(D)]
           for i in range(C)]
    atdw = [[sum(f(A, s, j) * f(dw, s, d) for s in range(C)) for d in range(D)] for j in range(C)]
    atdu = [[sum(f(A, s, j) * f(du, s, d) for s in range(C)) for d in range(D)] for j in range(C)]
    for i in range(C):
        for j in range(C):
            want = sum(f(dw, i, d) * kbg[j][d] + f(du, i, d) * b16(f(V, j, d) * f(Beta, j)) for d in range(D))
            if abs(float(dA[b, base + i, h, j]) - want) > 1e-6:
                problems.append("gdn_wy_fast_bwd's dA at (%d, %d): %r, want %r" % (i, j, float(dA[b, base + i, h, j]), want))
        want = (sum(atdw[i][d] * gate(i) * f(K, i, d) + atdu[i][d] * f(V, i, d) for d in range(D)),
                sum(atdw[i][d] * gate(i) * f(K, i, d) * f(Beta, i) for d in range(D)),
                atdw[i][1] * f(Beta, i) * gate(i), atdu[i][1] * f(Beta, i))
        got = (float(dbeta[b, base + i, h]), float(dg[b, base + i, h]), float(dk[b, base + i, h, 1]),
               float(dv[b, base + i, h, 1]))
        if max(abs(x - y) for x, y in zip(got, want)) > 1e-6:
            problems.append("gdn_wy_fast_bwd's dbeta, dg, dk, dv at token %d: %r, want %r" % (i, got, want))
    return problems


def _inter_solve_self_check(torch, g):
    """kda_inter_solve_fused on 2 chunks of 4 tokens in sub-chunks of 2: Aqk and A entry by entry against their sums
    written out by loops, Akk (I + A) = I, and Akk lower triangular with a unit diagonal."""
    Bn, S, H, D, C, sub = 1, 8, 2, 3, 4, 2
    Q, K = torch.randn(Bn, S, H, D, generator=g).bfloat16(), torch.randn(Bn, S, H, D, generator=g).bfloat16()
    GK, Beta = -torch.rand(Bn, S, H, D, generator=g) * 3, torch.rand(Bn, S, H, generator=g).bfloat16()
    diag = torch.randn(Bn, S, H, sub, generator=g)
    Aqk, Akk = kda_inter_solve_fused(Q, K, GK, Beta, diag, 0.5, C, sub)
    A = unchunked(inter_solve_matrix(Q, K, GK, Beta, diag, C, sub))
    h, problems = 1, []
    for t in range(4, 8):                                  # the second chunk
        for col in range(C):
            j = 4 + col
            dot = lambda X: sum(float(X[0, t, h, d]) * float(K[0, j, h, d]) *            # noqa: E731
                                2.0 ** (float(GK[0, t, h, d]) - float(GK[0, j, h, d])) for d in range(D))
            off = col // sub < (t - 4) // sub
            want_q = 0.5 * dot(Q) if off else 0.0
            want_a = float(Beta[0, t, h]) * dot(K) if off else \
                (float(diag[0, t, h, col % sub]) if col // sub == (t - 4) // sub and col < t - 4 else 0.0)
            if abs(float(Aqk[0, t, h, col]) - want_q) > 1e-9 or abs(float(A[0, t, h, col]) - want_a) > 1e-9:
                problems.append("kda_inter_solve_fused's Aqk or A at (%d, %d): %r, %r, want %r, %r" % (
                    t, col, float(Aqk[0, t, h, col]), float(A[0, t, h, col]), want_q, want_a))
    X = Akk[0, 4:8, h].double()
    M = torch.eye(C, dtype=torch.float64) + A[0, 4:8, h].double()
    if float((X @ M - torch.eye(C, dtype=torch.float64)).abs().max()) > 1e-9 or \
            float(torch.triu(X, 1).abs().max()) != 0.0 or float((X.diagonal() - 1).abs().max()) > 1e-12:
        problems.append("kda_inter_solve_fused's Akk is not (I + A)^-1: %r" % X.tolist())
    return problems


def _chunk_scan_self_check(torch, g):
    """mamba_chunk_scan on 2 chunks of 3 positions, 2 heads of one group, against its sums written out by loops."""
    import math
    Bn, nc, cs, H, P, N = 1, 2, 3, 2, 2, 2
    cb = torch.randn(Bn, nc, 1, cs, cs, generator=g).half()
    x, dt = torch.randn(Bn, nc * cs, H, P, generator=g).half(), torch.rand(Bn, H, nc, cs, generator=g).half()
    dA, C = torch.randn(Bn, H, nc, cs, generator=g).half(), torch.randn(Bn, nc * cs, 1, N, generator=g).half()
    prev, D = torch.randn(Bn, nc, H, P, N, generator=g).half(), torch.randn(H, generator=g).half()
    out = mamba_chunk_scan(cb, x, dt, dA, C, prev, D)
    r16 = lambda v: float(torch.tensor(v, dtype=torch.float64).float().half())     # noqa: E731
    f = float
    problems = []
    for c in range(nc):
        for h in range(H):
            for l in range(cs):
                for p in range(P):
                    t = c * cs + l
                    want = sum(r16(r16(f(cb[0, c, 0, l, s]) * math.exp(f(dA[0, h, c, l]) - f(dA[0, h, c, s]))) *
                                   f(dt[0, h, c, s])) * f(x[0, c * cs + s, h, p]) for s in range(l + 1))
                    want += math.exp(f(dA[0, h, c, l])) * sum(f(C[0, t, 0, n]) * f(prev[0, c, h, p, n]) for n in range(N))
                    want += f(D[h]) * f(x[0, t, h, p])
                    if abs(float(out[0, t, h, p]) - want) > 1e-9 * max(1.0, abs(want)):
                        problems.append("mamba_chunk_scan at (%d, %d, %d): %r, want %r" % (t, h, p, float(out[0, t, h, p]), want))
    return problems
