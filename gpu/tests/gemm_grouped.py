"""Benchmark program benchmarks/gemm_grouped.tile (issue 27): the MoE grouped GEMM, contiguous layout. A
(m_total, K) holds the tokens sorted by expert, group g's rows at group_offsets[g] (group_sizes[g] of them); B
(groups, N, K) each expert's weight stored (N, K); C[rows of g] = A[rows of g] @ B[g]^T, bfloat16 out. The
launcher takes A, B, A_scale, B_scale, group_sizes, group_offsets, group_tiles, tile_group, C, m_total, tiles
(group_tiles: the prefix sum of ceil(size / block_M); tile_group: each row tile's group; tiles: their count;
the scan variants, TileLang's formulation, read no tile_group and size their grid from m_total and groups).
bfloat16 kernels ignore A_scale and B_scale; the float8 ones are DeepSeek-V3's block-scaled experts (A_scale
(m_total, ceil(K/128)) per 1 x 128 slice, B_scale (groups, ceil(N/128), ceil(K/128)) per 128 x 128 block).

Correctness against float64 of every group (the rows outside every group untouched: C is poisoned with 0xFF
and every row belongs to a group), by the GEMM rule with u = 2^-8 for bfloat16 and u = 2^-9 for the
block-scaled float8 (gemm_fp8_blockscaled.py's reasoning; power-of-two scales 2^-3..2^3 per block), u_out 2^-8.
The group sizes (SIZES) cover empty groups (first, last, several in a row), one-row groups, sizes one past a
tile and a group bigger than the rest together; all groups empty is TILEC_SUCCESS with nothing launched.

Benchmarks (DeepSeek-V3's experts: hidden 7168, expert width 2048; gate/up N = 4096 K = 7168 and down N = 7168
K = 2048) over uneven group sizes with empty groups (routed(), seeded): bfloat16 against torch._grouped_mm
(cuBLAS/CUTLASS grouped GEMM) where this torch has it, else a per-group torch.matmul loop; float8 against a
per-group loop of cuBLAS's block-scaled torch._scaled_mm where this torch has it, else of torch.matmul in
bfloat16 on the dequantized inputs. Issue 27's bar: grouped bfloat16 >= 1.0 x torch's."""
import random

import core as C
import refs as R

LIB = "gemm_grouped"
PARAMS = ("groups", "N", "K")
GROUP = 128
U_FP8 = 2.0 ** -9
# (kernel, m_total, seed of the routing) timed; the scan and cluster variants beside the table's of the same shape
BENCHES = (("gemm_grouped_bf16_8x4096x7168", 8192, 1), ("gemm_grouped_bf16_32x4096x7168", 16384, 2),
           ("gemm_grouped_bf16_256x7168x2048", 32768, 3), ("gemm_grouped_fp8_8x4096x7168", 8192, 1),
           ("gemm_grouped_fp8_256x7168x2048", 32768, 3), ("gemm_grouped_bf16_scan_8x4096x7168", 8192, 1),
           ("gemm_grouped_bf16_cluster_8x4096x7168", 8192, 1), ("gemm_grouped_fp8_cluster_8x4096x7168", 8192, 1),
           # session 39's A/B: the author's cluster_dims=1 (the plain rows as compiled before tilec clustered a
           # run-time tile count), the tiles walked down 8 row tiles first, 128 x 256 tiles
           ("gemm_grouped_bf16_nocluster_8x4096x7168", 8192, 1), ("gemm_grouped_bf16_nocluster_256x7168x2048", 32768, 3),
           ("gemm_grouped_fp8_nocluster_8x4096x7168", 8192, 1), ("gemm_grouped_bf16_panel8_8x4096x7168", 8192, 1),
           ("gemm_grouped_bf16_n256_8x4096x7168", 8192, 1), ("gemm_grouped_bf16_n256_32x4096x7168", 16384, 2),
           ("gemm_grouped_bf16_n256_256x7168x2048", 32768, 3))


def kernels():
    out = {}
    for name, (args, kw, _) in C.instantiations(LIB, "benchmarks/gemm_grouped.tile", "grouped").items():
        p = dict(zip(PARAMS, args), block_M=128, dtype="bfloat16", block_scaled=False, scan=False, cluster=False)
        p.update((k, v) for k, v in kw.items() if k in p)
        out[name] = p
    return out


cdiv = R.cdiv


def sizes_for(groups, kind):
    """Group sizes for the correctness tests: kind 0 empty groups at both ends and in a row, one-row groups,
    one past a tile, one big group; 1 all in the last group; 2 all empty."""
    if kind == 2:
        return [0] * groups
    if kind == 1:
        return [0] * (groups - 1) + [300]
    pattern = [0, 129, 1, 0, 0, 257, 64, 128, 1000, 1]
    s = [pattern[i % len(pattern)] for i in range(groups)]
    s[-1] = 0
    return s


def routed(groups, m_total, seed):
    """Uneven sizes summing to m_total as top-k routing gives them: heavy-tailed shares, about one expert in
    eight left empty (never all)."""
    rng = random.Random(seed)
    w = [0.0 if rng.random() < 0.125 else rng.paretovariate(1.5) for _ in range(groups)]
    if sum(w) == 0:
        w[0] = 1.0
    tot = sum(w)
    s = [int(m_total * x / tot) for x in w]
    s[max(range(groups), key=lambda i: w[i])] += m_total - sum(s)
    return s


def tables(sizes, block_M):
    """(group_sizes, group_offsets, group_tiles, tile_group, tiles) as int32 tensors and the tile count."""
    t = C.torch()
    offs, tiles_before, tg = [], [], []
    o = n = 0
    for g, s in enumerate(sizes):
        offs.append(o), tiles_before.append(n)
        tg += [g] * cdiv(s, block_M)
        o, n = o + s, n + cdiv(s, block_M)

    def i32(x):
        return t.tensor(x, dtype=t.int32, device="cuda")
    # an empty tile table still needs a real pointer
    return i32(sizes), i32(offs), i32(tiles_before), i32(tg if tg else [0]), n


def inputs(ctx, p, m_total):
    G, N, K = p["groups"], p["N"], p["K"]
    a = ctx.randn((max(m_total, 1), K), p["dtype"])[:m_total]
    b = ctx.randn((G, N, K), p["dtype"])
    sa = R.pow2_scales(ctx, (max(m_total, 1), cdiv(K, GROUP)))[:m_total]
    sb = R.pow2_scales(ctx, (G, cdiv(N, GROUP), cdiv(K, GROUP)))
    if not p["block_scaled"]:
        sa.fill_(1.0), sb.fill_(1.0)
    return a, b, sa, sb


def dequantized(a, b, sa, sb, g, lo, hi):
    """Group g's rows lo..hi of A and its expert's weight, dequantized, in float64 (one group at a time: 256
    experts' weights in float64 would take tens of GB)."""
    K = a.shape[1]
    N = b.shape[1]
    ad = a[lo:hi].double() * sa[lo:hi].double().repeat_interleave(GROUP, dim=1)[:, :K]
    bd = b[g].double() * sb[g].double().repeat_interleave(GROUP, dim=0)[:N].repeat_interleave(GROUP, dim=1)[:, :K]
    return ad, bd


def bounds_of(sizes):
    """(lo, hi) row bounds of each group."""
    ends = [sum(sizes[:g + 1]) for g in range(len(sizes))]
    return [(e - s, e) for s, e in zip(sizes, ends)]


def args_of(p, a, b, sa, sb, tabs, c, m_total):
    sizes, offs, gt, tg, tiles = tabs
    return (a, b, sa, sb, sizes, offs, gt, tg, c, m_total, tiles)


def test(p, kind):
    def fn(ctx, name):
        t = C.torch()
        sizes = sizes_for(p["groups"], kind)
        m_total = sum(sizes)
        a, b, sa, sb = inputs(ctx, p, m_total)
        tabs = tables(sizes, p["block_M"])
        if m_total == 0:
            return ctx.expect_empty(name, "every group empty", *args_of(p, a, b, sa, sb, tabs, ctx.output(
                (0, p["N"]), "bfloat16"), 0))
        c = ctx.output((m_total, p["N"]), "bfloat16")
        ctx.call(name, *args_of(p, a, b, sa, sb, tabs, c, m_total))
        Rm = t.empty((m_total, p["N"]), dtype=t.float64, device="cuda")
        S = t.empty_like(Rm)
        for g, (lo, hi) in enumerate(bounds_of(sizes)):
            if hi > lo:
                ad, bd = dequantized(a, b, sa, sb, g, lo, hi)
                Rm[lo:hi] = ad @ bd.t()
                S[lo:hi] = ad.abs() @ bd.abs().t()
        u = U_FP8 if p["block_scaled"] else R.U_IN["bfloat16"]
        bound = 4.0 * u * S + R.U_OUT["bfloat16"] * Rm.abs()
        return ctx.expect_bound(c, Rm, "bfloat16", ulps=0, extra=bound, what="4u sum|ab| + u_out |R|",
                                show_ulp=False) + " (sizes %s)" % sizes
    return fn


def tests():
    for name, p in kernels().items():
        odd = name.endswith("_odd")
        for kind in ((0, 1, 2) if odd else (0,)):
            yield C.Test(LIB, name, test(p, kind), small=odd and kind == 0, graph=odd and kind == 0, variants=False,
                         label="sizes%d" % kind)


def per_group(bounds, out, mm):
    """A function running mm(g, lo, hi) into out[lo:hi] for every non-empty group; returns out."""
    def run():
        for g, (lo, hi) in enumerate(bounds):
            if hi > lo:
                out[lo:hi] = mm(g, lo, hi)
        return out
    return run


def grouped_baseline(p, a, b, sa, sb, sizes):
    """(name, fn) of the baseline computing what the kernel does: torch._grouped_mm (bfloat16) or a per-group
    loop of torch._scaled_mm block-scaled (float8) where this torch has them, else per-group torch.matmul."""
    t = C.torch()
    out = t.empty((a.shape[0], p["N"]), dtype=t.bfloat16, device="cuda")
    bounds = bounds_of(sizes)
    if not p["block_scaled"]:
        offs = t.tensor([hi for _, hi in bounds], dtype=t.int32, device="cuda")
        bt = b.transpose(1, 2)
        try:
            t._grouped_mm(a, bt, offs=offs, out_dtype=t.bfloat16)
            t.cuda.synchronize()
            return "torch._grouped_mm", lambda: t._grouped_mm(a, bt, offs=offs, out_dtype=t.bfloat16)
        except Exception:  # no grouped GEMM in this torch / for this GPU: per-group cuBLAS
            return "per-group torch.matmul (cuBLAS)", per_group(bounds, out, lambda g, lo, hi: t.matmul(a[lo:hi], b[g].t()))
    sbt = [sb[g].t() for g in range(p["groups"])]
    scaled = per_group(bounds, out, lambda g, lo, hi: t._scaled_mm(a[lo:hi], b[g].t(), sa[lo:hi], sbt[g],
                                                                   out_dtype=t.bfloat16))
    try:   # every group once, checked against float64 (a scale layout cuBLAS reads otherwise shows here)
        got = scaled().double()
        t.cuda.synchronize()
        err = ref = 0.0
        for g, (lo, hi) in enumerate(bounds):
            if hi > lo:
                ad, bd = dequantized(a, b, sa, sb, g, lo, hi)
                want = ad @ bd.t()
                err, ref = err + float((got[lo:hi] - want).square().sum()), ref + float(want.square().sum())
        if err <= 1e-4 * ref:
            return "per-group torch._scaled_mm block-scaled (cuBLAS)", scaled
    except Exception:  # no block-wise scaling here: bfloat16 per group on the dequantized inputs
        pass
    deq = {}
    for g, (lo, hi) in enumerate(bounds):
        if hi > lo:
            ad, bd = dequantized(a, b, sa, sb, g, lo, hi)
            deq[g] = (ad.to(t.bfloat16), bd.to(t.bfloat16))
    return "per-group torch.matmul bf16 on dequantized inputs", per_group(
        bounds, out, lambda g, lo, hi: t.matmul(deq[g][0], deq[g][1].t()))


def bench(p, m_total, seed, b_):
    def fn(ctx, name):
        sizes = routed(p["groups"], m_total, seed)
        a, b, sa, sb = inputs(ctx, p, m_total)
        c = ctx.output((m_total, p["N"]), "bfloat16")
        b_.torch_name, run = grouped_baseline(p, a, b, sa, sb, sizes)
        return args_of(p, a, b, sa, sb, tables(sizes, p["block_M"]), c, m_total), [c], run
    return fn


def benches():
    ks = kernels()
    for name, m_total, seed in BENCHES:
        p = ks[name]
        G, N, K = p["groups"], p["N"], p["K"]
        e = 1 if p["dtype"] == "float8_e4m3" else 2
        b = C.Bench(LIB, name, None, nbytes=e * (m_total * K + G * N * K) + 2 * m_total * N,
                    shape="%d experts, %d tokens, N %d K %d %s%s%s" % (G, m_total, N, K, p["dtype"],
                                                                       " (scan)" if p["scan"] else "",
                                                                       " (clusters of 2)" if p["cluster"] else ""),
                    bar=1.0 if p["dtype"] == "bfloat16" else None, target=1.0, torch_name="torch._grouped_mm",
                    flops=R.gemm_flops(m_total, N, K), label="m%d" % m_total)
        b.make = bench(p, m_total, seed, b)
        yield b
