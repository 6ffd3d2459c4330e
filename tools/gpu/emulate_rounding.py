#!/usr/bin/env python3
"""Numpy emulations behind two tolerances of tests/tilelang_compat/reference.tsv (issue 23): how far a kernel's own
arithmetic lies from the float64 reference when both are right, at the kernel's sizes, on the CPU.

  tools/gpu/emulate_rounding.py dhu [HEADS]   kda chunk_delta_bwd (dhu): the gradient carried in float32 (the kernel)
      against float64 (tilec_refs.kda_chunk_delta_bwd_dhu), both storing its bfloat16 copy and dv2 as the kernel does;
      prints, per head, the fraction of dh outside close(1e-2, 1e-2), the largest difference, and dv2's and dh0's counts
  tools/gpu/emulate_rounding.py wy [CHUNKS]    kda wy_fast_bwd's dA through tf32 GEMMs (operands rounded, or truncated)
      against float64: the fraction outside close(1e-2, 1e-2) and the relative 2-norm error
  tools/gpu/emulate_rounding.py intra [HEADS]  kda chunk_bwd_intra's db2 (dk' k summed over 32 key dimensions) at the
      file's sizes (S 8192, DK 128, chunks of 64 in sub-chunks of 16): the earlier sub-chunks' products through tf32
      GEMMs (operands rounded, or truncated), the diagonal sub-chunk in float32, against float64: elements outside
      close(5e-2, 5e-2) of the 65,536 x 4 per 8 heads
Needs numpy only."""
import sys

import numpy as np


def bf16(x):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


def tf32(x, mode):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return (((b + (0x1000 if mode == "rna" else 0)) >> 13) << 13).astype(np.uint32).view(np.float32)


def outside(a, ref):
    return np.abs(np.asarray(a, np.float64) - ref) > 1e-2 + 1e-2 * np.abs(ref)


def dhu(heads, S=8192, DK=128, DV=128, C=64, seed=0):
    rng = np.random.default_rng(seed)
    norm = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)      # noqa: E731
    bad = tot = vb = hb = 0
    for h in range(heads):
        Q, dO = (bf16(rng.standard_normal((S, d), np.float32) * 0.01) for d in (DK, DV))
        K, W = (bf16(norm(rng.standard_normal((S, DK), np.float32))) for _ in range(2))
        GK = (-np.logaddexp(0, -rng.standard_normal((S, DK)))).astype(np.float32)
        GK = GK.reshape(S // C, C, DK).cumsum(1, dtype=np.float32).reshape(S, DK)
        D32 = bf16(rng.standard_normal((DK, DV), np.float32))
        dv = bf16(rng.standard_normal((S, DV), np.float32))
        D64, worst = D32.astype(np.float64), 0.0
        for c in reversed(range(S // C)):
            p = slice(c * C, (c + 1) * C)
            d16k, d16r = bf16(D32), bf16(D64)
            bad += int(outside(d16k, d16r.astype(np.float64)).sum())
            tot += d16k.size
            worst = max(worst, float(np.abs(d16k.astype(np.float64) - d16r).max()))
            v16k = bf16(K[p] @ d16k + dv[p])
            v16r = bf16(K[p].astype(np.float64) @ d16r.astype(np.float64) + dv[p])
            vb += int(outside(v16k, v16r.astype(np.float64)).sum())
            dec = np.exp2(GK[(c + 1) * C - 1])[:, None]
            D32 = D32 * dec + (Q[p].T @ dO[p]) * np.float32(128 ** -0.5) - W[p].T @ v16k
            D64 = D64 * dec + 128 ** -0.5 * (Q[p].T.astype(np.float64) @ dO[p]) - W[p].T.astype(np.float64) @ v16r
        hb += int(outside(D32, D64).sum())
        print("head %d: dh %.5f%% outside (largest difference %.4g); dv2 %d, dh0 %d outside so far"
              % (h, 100 * bad / tot, worst, vb, hb), flush=True)


def wy(chunks, seed=0):
    rng = np.random.default_rng(seed)

    def dA(mode, K, V, Beta, GK, A, dw, du):
        mm = (lambda a, b: a.astype(np.float64) @ b.astype(np.float64)) if mode == "f64" else \
            (lambda a, b: (tf32(a, mode).astype(np.float64) @ tf32(b, mode).astype(np.float64)).astype(np.float32))
        f = np.float64 if mode == "f64" else np.float32
        kbg = K.astype(f) * Beta.astype(f)[:, None] * np.exp2(GK.astype(f))
        acc = np.tril(mm(dw, kbg.T) + mm(du, (V.astype(f) * Beta.astype(f)[:, None]).T), -1)
        return -np.tril(mm(A.T, mm(acc, A.T)), -1)
    out = {m: [] for m in ("f64", "rna", "trunc")}
    for _ in range(chunks):
        K, V, GK, dw, du = (rng.standard_normal((64, 128)).astype(np.float32) for _ in range(5))
        Beta, A = rng.standard_normal(64).astype(np.float32), rng.standard_normal((64, 64)).astype(np.float32)
        for m in out:
            out[m].append(dA(m, K, V, Beta, GK, A, dw, du))
    R = {m: np.stack(v).astype(np.float64) for m, v in out.items()}
    for m in ("rna", "trunc"):
        print("tf32 (%s operands): %.2f%% of dA outside close(1e-2, 1e-2) of float64, relative 2-norm error %.2g"
              % (m, 100 * outside(R[m], R["f64"]).mean(), np.linalg.norm(R[m] - R["f64"]) / np.linalg.norm(R["f64"])))


def intra(heads, S=8192, DK=128, BT=64, BC=16, bdk=32, seed=0):
    rng = np.random.default_rng(seed)
    bad = {"rna": 0, "trunc": 0}
    for _ in range(heads):
        K, G = (rng.standard_normal((S, DK)).astype(np.float32) for _ in range(2))
        dA = rng.standard_normal((S, BT)).astype(np.float32)
        for c0 in range(0, S, BT):
            k, g, a = (x[c0:c0 + BT].astype(np.float64) for x in (K, G, dA))
            low = np.tril(np.ones((BT, BT)))
            ref = np.einsum("rc,rcd,cd->rd", a * low, np.exp2(g[:, None, :] - g[None, :, :]), k)
            db_ref = (ref * k).reshape(BT, -1, bdk).sum(-1)
            for mode in bad:
                dk = np.zeros((BT, DK))
                for i in range(BT // BC):
                    rows, gn = slice(i * BC, (i + 1) * BC), g[i * BC]
                    acc = np.zeros((BC, DK))
                    for j in range(i):                      # T.gemm(dAkk_prev, kg): tf32 operands
                        cols = slice(j * BC, (j + 1) * BC)
                        kg = (k[cols] * np.exp2(gn - g[cols])).astype(np.float32)
                        acc += tf32(a[rows, cols].astype(np.float32), mode).astype(np.float64) @ \
                            tf32(kg, mode).astype(np.float64)
                    acc = acc.astype(np.float32) * np.exp2(g[rows] - gn).astype(np.float32)
                    for jj in range(BC):                    # the diagonal sub-chunk, element by element
                        c = i * BC + jj
                        kgj = (k[c] * np.exp2(g[rows] - g[c])).astype(np.float32)
                        acc += (np.arange(BC) >= jj)[:, None] * a[rows, c:c + 1].astype(np.float32) * kgj
                    dk[rows] = acc
                bad[mode] += int(outside5((dk * k).reshape(BT, -1, bdk).sum(-1), db_ref).sum())
    n = heads * S * DK // bdk
    print("db2 over %d heads: %d of %d outside close(5e-2, 5e-2) with rounded tf32 operands, %d truncated (1e-4: %d)"
          % (heads, bad["rna"], n, bad["trunc"], n // 10000))


def outside5(a, ref):
    return np.abs(np.asarray(a, np.float64) - ref) > 5e-2 + 5e-2 * np.abs(ref)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if what == "dhu":
        dhu(n or 2)
    elif what == "wy":
        wy(n or 64)
    elif what == "intra":
        intra(n or 8)
    else:
        sys.exit(__doc__)
