"""L2 traffic model of the grouped GEMM's persistent walk (docs/PERFORMANCE.md, session 39): the resident set is
the 132 consecutive tiles of the walk (blocks in lockstep); per K block each distinct A row-tile slice and each
distinct (group, N tile) B slice comes from DRAM once (16 KiB at 128 x 64 bfloat16), and every tile moves its A
and B slice from L2 into the SM (a cluster's shared A slice once). Group sizes as gpu/tests/gemm_grouped.py's
routed() makes them; the order as stdlib/tilec/raster.cuh's rasterize. No GPU needed: python3 THIS."""
import random, sys
def routed(groups, m_total, seed):
    rng = random.Random(seed)
    w = [0.0 if rng.random() < 0.125 else rng.paretovariate(1.5) for _ in range(groups)]
    if sum(w) == 0: w[0] = 1.0
    tot = sum(w); s = [int(m_total * x / tot) for x in w]
    s[max(range(groups), key=lambda i: w[i])] += m_total - sum(s)
    return s
def rasterize(panel, bx, by, gx, gy):
    linear = bx + by * gx; p = linear // (panel * gx); left = gy - p * panel
    rows = min(left, panel); inn = linear - p * panel * gx
    return inn // rows, p * panel + inn % rows
def model(groups, N, m_total, seed, panel, cluster, res=132):
    sizes = routed(groups, m_total, seed)
    tg = [g for g, s in enumerate(sizes) for _ in range((s + 127) // 128)]
    tiles = len(tg); gx = N // 128 // (2 if cluster else 1)
    units = gx * tiles; per = res // (2 if cluster else 1)
    dram = egress = waves = 0
    for start in range(0, units, per):
        A, B, eg = set(), set(), 0
        for u in range(start, min(units, start + per)):
            x, y = u % gx, u // gx
            if panel: x, y = rasterize(panel, x, y, gx, tiles)
            for r in (range(2) if cluster else range(1)):
                bx = x * (2 if cluster else 1) + r
                A.add(y); B.add((tg[y], bx)); eg += 1
            eg += 1 if cluster else 0   # cluster: 2 B + 1 A (multicast) = 3 slices per pair; else 2 per tile
        egress += (eg if cluster else 2 * eg); dram += len(A) + len(B); waves += 1
    return sizes, tiles, waves, dram / waves, egress / waves
for (G, N, M, seed) in ((8, 4096, 8192, 1), (32, 4096, 16384, 2), (256, 7168, 32768, 3)):
    for cluster in (False, True):
        for panel in (0, 4, 8, 16):
            sizes, tiles, waves, d, e = model(G, N, M, seed, panel, cluster)
            print(f"{G}x{N} m={M} tiles={tiles}x{N//128} waves={waves} cluster={int(cluster)} panel={panel:2d}: "
                  f"DRAM->L2 {d:6.1f} slices ({d*16/1024:5.2f} MiB), L2->SM {e:6.1f} slices ({e*16/1024:5.2f} MiB) per K block")
