"""tilec's float64 reference for minference/example_vertical_slash_sparse_attn.py's kernel (issue 24), re-exported by
gpu/tlcompat_refs.py (`tilec_refs.NAME` in tests/tilelang_compat/reference.tsv), and index tables for it.

The file builds its index tables with a torch C++ extension (convert_vertical_slash_indexes, compiled at run time)
and checks the kernel against a Triton kernel: neither is on the GPU machine. The kernel's arithmetic, for query
block m (rows 64 m .. 64 m + 63) of each batch and head:

  keys: for each of BlockCount[m] slash blocks, the 64 keys from BlockOffset[m, i] that a row reaches causally
        (row >= key), and the ColumnCount[m] columns ColumnIndex[m, :count] (no causal mask: the tables list only
        columns before the block)
  Output[row] = sum over those keys (with multiplicity) of softmax(q . k / sqrt(dim)) v

vs_sparse_indices makes such tables: each block's own diagonal block (so every row sees a key), up to `slash` other
slash blocks at random starts before it, up to `vertical` random distinct columns before the block.

Needs torch only when called."""

BLOCK = 64
ROWS = 2048             # query rows per step of the reference (memory: a [ROWS, seq_len] float64 score tile)


def vs_sparse_indices(seq_len, vertical, slash, seed=0, device="cuda"):
    """(BlockCount, BlockOffset, ColumnCount, ColumnIndex) for one batch and head, int32, [1, 1, blocks(, n)]."""
    import torch
    g = torch.Generator().manual_seed(seed)
    nb = (seq_len + BLOCK - 1) // BLOCK
    bc, cc = torch.zeros(nb, dtype=torch.int32), torch.zeros(nb, dtype=torch.int32)
    bo, ci = torch.zeros(nb, slash, dtype=torch.int32), torch.zeros(nb, vertical, dtype=torch.int32)
    for m in range(nb):
        start = m * BLOCK
        extra = int(torch.randint(0, min(slash - 1, start) + 1, (1,), generator=g)) if start else 0
        offs = torch.randint(0, start + 1, (extra,), generator=g).sort(descending=True)[0]
        bo[m, 0], bo[m, 1:1 + extra], bc[m] = start, offs, 1 + extra
        n = int(torch.randint(0, min(vertical, start) + 1, (1,), generator=g))
        ci[m, :n], cc[m] = torch.randperm(start, generator=g)[:n].sort()[0], n
    return tuple(x.view(1, 1, *x.shape).to(device) for x in (bc, bo, cc, ci))


def _counts(rows, seq_len, bc, bo, cc, ci):
    """[len(rows), seq_len] float64: how many times each row's softmax takes each key (one batch and head)."""
    import torch
    dev = bo.device
    m = rows // BLOCK
    nb = bo.shape[0]
    diff = torch.zeros(nb, seq_len + BLOCK + 1, dtype=torch.float64, device=dev)
    live = (torch.arange(bo.shape[1], device=dev)[None, :] < bc[:, None]).double()
    diff.scatter_add_(1, bo.long(), live)
    diff.scatter_add_(1, bo.long() + BLOCK, -live)
    slash = diff.cumsum(1)[:, :seq_len]
    cols = torch.zeros(nb, seq_len + 1, dtype=torch.float64, device=dev)
    used = torch.arange(ci.shape[1], device=dev)[None, :] < cc[:, None]
    cols.scatter_add_(1, torch.where(used, ci.long(), torch.full_like(ci.long(), seq_len)), used.double())
    keys = torch.arange(seq_len, device=dev)
    return slash[m] * (rows[:, None] >= keys[None, :]).double() + cols[m, :seq_len]


def vs_sparse_attention(Q, K, V, BlockCount, BlockOffset, ColumnCount, ColumnIndex):
    """The kernel's Output [B, H, S, D] in float64 (module doc)."""
    import torch
    B, H, S, D = Q.shape
    out = torch.empty(B, H, S, D, dtype=torch.float64, device=Q.device)
    for b in range(B):
        for h in range(H):
            q, k, v = (x[b, h].double() for x in (Q, K, V))
            tables = (BlockCount[b, h], BlockOffset[b, h], ColumnCount[b, h], ColumnIndex[b, h])
            for r0 in range(0, S, ROWS):
                rows = torch.arange(r0, min(S, r0 + ROWS), device=Q.device)
                c = _counts(rows, S, *tables)
                s = q[rows] @ k.T * D ** -0.5
                s = s.masked_fill(c == 0, float("-inf"))
                p = c * torch.exp(s - s.max(-1, keepdim=True)[0])
                out[b, h, rows] = (p @ v) / p.sum(-1, keepdim=True)
    return out


def self_check(torch):
    """The counts and the output against their definitions by loops, on a small sequence."""
    problems = []
    S, D = 3 * BLOCK, 4
    bc, bo, cc, ci = (x[0, 0] for x in vs_sparse_indices(S, 5, 3, seed=2, device="cpu"))
    g = torch.Generator().manual_seed(5)
    Q, K, V = (torch.randn(1, 1, S, D, generator=g) for _ in range(3))
    for row in (0, 70, 150, 191):
        m = row // BLOCK
        want = [0.0] * S
        for i in range(int(bc[m])):
            for key in range(int(bo[m, i]), min(S, int(bo[m, i]) + BLOCK)):
                want[key] += key <= row
        for i in range(int(cc[m])):
            want[int(ci[m, i])] += 1
        got = _counts(torch.tensor([row]), S, bc, bo, cc, ci)[0].tolist()
        if got != want or want[row] < 1:
            problems.append("vs_sparse counts at row %d" % row)
            continue
        w = [c * float(torch.exp(Q[0, 0, row].double() @ K[0, 0, j].double() * D ** -0.5)) for j, c in enumerate(want)]
        o = sum(wj * V[0, 0, j].double() for j, wj in enumerate(w)) / sum(w)
        ref = vs_sparse_attention(Q, K, V, *(x.view(1, 1, *x.shape) for x in (bc, bo, cc, ci)))[0, 0, row]
        if (ref - o).abs().max() > 1e-9:
            problems.append("vs_sparse_attention at row %d" % row)
    return problems
