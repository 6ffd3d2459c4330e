/// \file
/// Variable-length attention backward in small (the shape of TileLang's attention-sink varlen example, written
/// here from its mathematics): K and V tiles copied to shared memory before a loop whose bounds come from
/// cu_seqlens tensors, so that some blocks run it 0 times and some have a start past their end; gradients
/// leave through T.atomic_add into tensors that start non-zero (an atomic written as a store shows), dQ inside
/// the loop, dK and dV through shared tiles after it, their rows past a sequence's end adding zeros into the
/// next sequence's rows. Lowered for sm_80 and sm_90a and run on the CPU simulator against float64: empty
/// sequences (queries without keys, keys without queries, both), a sequence longer than one block, causal
/// and not.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;

namespace {

const char *kVarlenBwd = R"(import tilelang.language as T

def varlen_bwd(batch, heads, groups, UQ, UKV, n_ctx, max_len, dim, causal, BM=64, BN=16, stages=2, threads=128):
    kv_heads = heads // groups
    sm = (1.0 / dim) ** 0.5
    scale = sm * 1.44269504

    @T.prim_func
    def main(Q: T.Tensor((UQ, heads, dim), "float16"), K: T.Tensor((UKV, kv_heads, dim), "float16"),
             V: T.Tensor((UKV, kv_heads, dim), "float16"), dO: T.Tensor((UQ, heads, dim), "float16"),
             lse: T.Tensor((batch, heads, n_ctx), "float32"), Delta: T.Tensor((batch, heads, n_ctx), "float32"),
             cu_q: T.Tensor((batch + 1,), "int32"), cu_k: T.Tensor((batch + 1,), "int32"),
             dQ: T.Tensor((UQ, heads, dim), "float32"), dK: T.Tensor((UKV, kv_heads, dim), "float32"),
             dV: T.Tensor((UKV, kv_heads, dim), "float32")):
        with T.Kernel(heads, T.ceildiv(max_len, BM), batch, threads=threads) as (bx, by, bz):
            k_s = T.alloc_shared((BM, dim), "float16")
            v_s = T.alloc_shared((BM, dim), "float16")
            q_s = T.alloc_shared((BN, dim), "float16")
            do_s = T.alloc_shared((BN, dim), "float16")
            ds_s = T.alloc_shared((BM, BN), "float16")
            lse_s = T.alloc_shared((BN,), "float32")
            delta_s = T.alloc_shared((BN,), "float32")
            dv_s = T.alloc_shared((BM, dim), "float32")
            dk_s = T.alloc_shared((BM, dim), "float32")
            p = T.alloc_fragment((BM, BN), "float32")
            dp = T.alloc_fragment((BM, BN), "float32")
            p16 = T.alloc_fragment((BM, BN), "float16")
            ds16 = T.alloc_fragment((BM, BN), "float16")
            dv = T.alloc_fragment((BM, dim), "float32")
            dk = T.alloc_fragment((BM, dim), "float32")
            dq = T.alloc_fragment((BN, dim), "float32")
            q0 = cu_q[bz]
            k0 = cu_k[bz]
            qlen = cu_q[bz + 1] - q0
            klen = cu_k[bz + 1] - k0
            T.copy(K[k0 + by * BM : k0 + (by + 1) * BM, bx // groups, :], k_s)
            T.copy(V[k0 + by * BM : k0 + (by + 1) * BM, bx // groups, :], v_s)
            T.clear(dv)
            T.clear(dk)
            shift = klen - qlen
            first = T.max(0, T.floordiv(by * BM - shift, BN)) if causal else 0
            for kb in T.Pipelined(first, T.ceildiv(qlen, BN), num_stages=stages):
                T.copy(Q[q0 + kb * BN : q0 + (kb + 1) * BN, bx, :], q_s)
                T.clear(p)
                T.gemm(k_s, q_s, p, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(lse[bz, bx, kb * BN : (kb + 1) * BN], lse_s)
                for i, j in T.Parallel(BM, BN):
                    p[i, j] = T.exp2(p[i, j] * scale - lse_s[j])
                if causal:
                    for i, j in T.Parallel(BM, BN):
                        p[i, j] = T.if_then_else(by * BM + i <= kb * BN + j + shift and by * BM + i < klen and kb * BN + j < qlen, p[i, j], 0)
                else:
                    for i, j in T.Parallel(BM, BN):
                        p[i, j] = T.if_then_else(by * BM + i < klen and kb * BN + j < qlen, p[i, j], 0)
                T.copy(dO[q0 + kb * BN : q0 + (kb + 1) * BN, bx, :], do_s)
                T.clear(dp)
                T.gemm(v_s, do_s, dp, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(p, p16)
                T.gemm(p16, do_s, dv, policy=T.GemmWarpPolicy.FullRow)
                T.copy(Delta[bz, bx, kb * BN : (kb + 1) * BN], delta_s)
                for i, j in T.Parallel(BM, BN):
                    ds16[i, j] = p[i, j] * (dp[i, j] - delta_s[j]) * sm
                T.gemm(ds16, q_s, dk, policy=T.GemmWarpPolicy.FullRow)
                T.copy(ds16, ds_s)
                T.clear(dq)
                T.gemm(ds_s, k_s, dq, transpose_A=True)
                T.atomic_add(dQ[q0 + kb * BN : q0 + (kb + 1) * BN, bx, :], dq)
            T.copy(dv, dv_s)
            T.atomic_add(dV[k0 + by * BM : k0 + (by + 1) * BM, bx // groups, :], dv_s)
            T.copy(dk, dk_s)
            T.atomic_add(dK[k0 + by * BM : k0 + (by + 1) * BM, bx // groups, :], dk_s)

    return main
)";

struct Case {
    std::vector<int> qlens, klens;
    bool causal = true;
    int maxLen = 0; ///< the grid's sequence length (0: the longest sequence)
    int heads = 4, groups = 2, dim = 32, padQ = 3, padK = 5, nctx = 40;
};

struct Tensors {
    std::map<std::string, std::vector<double>> t;
    std::map<std::string, std::vector<double> *> ptrs() {
        std::map<std::string, std::vector<double> *> m;
        for (auto &[n, v] : t) m[n] = &v;
        return m;
    }
};

/// Multiples of 1/16 in [-1, 1] (float16 values), lse in [3, 5] so that the probabilities stay below 2^3.
Tensors inputs(const Case &c, int UQ, int UKV) {
    const int B = (int)c.qlens.size(), H = c.heads, HK = c.heads / c.groups, D = c.dim;
    auto sixteenths = [](size_t n, unsigned seed) {
        auto v = simtest::randomData(n, seed, -1, 1);
        for (auto &x : v) x = std::round(x * 16) / 16;
        return v;
    };
    Tensors in;
    in.t["Q"] = sixteenths((size_t)UQ * H * D, 1);
    in.t["dO"] = sixteenths((size_t)UQ * H * D, 2);
    in.t["K"] = sixteenths((size_t)UKV * HK * D, 3);
    in.t["V"] = sixteenths((size_t)UKV * HK * D, 4);
    in.t["lse"] = simtest::randomData((size_t)B * H * c.nctx, 5, 3, 5);
    in.t["Delta"] = simtest::randomData((size_t)B * H * c.nctx, 6, -1, 1);
    // the gradients start non-zero: the kernel adds to them
    in.t["dQ"] = simtest::randomData((size_t)UQ * H * D, 7);
    in.t["dK"] = simtest::randomData((size_t)UKV * HK * D, 8);
    in.t["dV"] = simtest::randomData((size_t)UKV * HK * D, 9);
    std::vector<double> cq{0}, ck{0};
    for (int b = 0; b < B; ++b) cq.push_back(cq.back() + c.qlens[(size_t)b]), ck.push_back(ck.back() + c.klens[(size_t)b]);
    in.t["cu_q"] = cq;
    in.t["cu_k"] = ck;
    return in;
}

/// dQ, dK, dV after the kernel in float64, each element with the sum of the magnitudes of its terms.
void reference(const Case &c, Tensors &io, std::map<std::string, std::vector<double>> &bound) {
    const int B = (int)c.qlens.size(), H = c.heads, HK = c.heads / c.groups, D = c.dim;
    const double sm = 1.0 / std::sqrt((double)D), scale = sm * 1.44269504;
    auto &Q = io.t["Q"], &dO = io.t["dO"], &K = io.t["K"], &V = io.t["V"], &lse = io.t["lse"], &Delta = io.t["Delta"];
    auto &dQ = io.t["dQ"], &dK = io.t["dK"], &dV = io.t["dV"];
    for (auto *n : {"dQ", "dK", "dV"}) bound[n].assign(io.t[n].size(), 0.0);
    for (int b = 0; b < B; ++b) {
        const int q0 = (int)io.t["cu_q"][(size_t)b], k0 = (int)io.t["cu_k"][(size_t)b];
        const int qlen = c.qlens[(size_t)b], klen = c.klens[(size_t)b], shift = klen - qlen;
        for (int h = 0; h < H; ++h) {
            const int hk = h / c.groups;
            auto q = [&](int j, int x) { return ((size_t)(q0 + j) * H + h) * D + x; };
            auto kv = [&](int i, int x) { return ((size_t)(k0 + i) * HK + hk) * D + x; };
            for (int i = 0; i < klen; ++i)
                for (int j = 0; j < qlen; ++j) {
                    if (c.causal && i > j + shift) continue;
                    double s = 0, dp = 0;
                    for (int x = 0; x < D; ++x) s += K[kv(i, x)] * Q[q(j, x)], dp += V[kv(i, x)] * dO[q(j, x)];
                    const size_t l = ((size_t)b * H + h) * c.nctx + j;
                    const double P = std::exp2(s * scale - lse[l]);
                    const double ds = P * (dp - Delta[l]) * sm;
                    for (int x = 0; x < D; ++x) {
                        dV[kv(i, x)] += P * dO[q(j, x)], bound["dV"][kv(i, x)] += std::fabs(P * dO[q(j, x)]);
                        dK[kv(i, x)] += ds * Q[q(j, x)], bound["dK"][kv(i, x)] += std::fabs(ds * Q[q(j, x)]);
                        dQ[q(j, x)] += ds * K[kv(i, x)], bound["dQ"][q(j, x)] += std::fabs(ds * K[kv(i, x)]);
                    }
                }
        }
    }
}

/// The kernel's result on the simulator equals the float64 reference within float32 sums (the simulator keeps
/// float16 fragments in float32; 2e-3 of the terms' magnitudes would also cover the GPU's float16 rounding).
void varlenCase(const Case &c, const char *target) {
    const int B = (int)c.qlens.size();
    const int UQ = std::accumulate(c.qlens.begin(), c.qlens.end(), 0) + c.padQ;
    const int UKV = std::accumulate(c.klens.begin(), c.klens.end(), 0) + c.padK;
    const int maxLen = c.maxLen ? c.maxLen : std::max(*std::max_element(c.qlens.begin(), c.qlens.end()), *std::max_element(c.klens.begin(), c.klens.end()));
    std::string call = "varlen_bwd(" + std::to_string(B) + ", " + std::to_string(c.heads) + ", " + std::to_string(c.groups) +
                       ", " + std::to_string(UQ) + ", " + std::to_string(UKV) + ", " + std::to_string(c.nctx) + ", " +
                       std::to_string(maxLen) + ", " + std::to_string(c.dim) + ", " + (c.causal ? "True" : "False") + ")";
    LowerRun r;
    r.run(std::string(kVarlenBwd) + "bwd = " + call + "\n", "varlen.tile", *Target::parse(target));
    ASSERT_TRUE(r.lowered) << r.diags();
    const ir::Kernel *k = r.kernel("bwd");
    ASSERT_TRUE(k);
    Tensors got = inputs(c, UQ, UKV), want = got;
    std::map<std::string, std::vector<double>> bound;
    reference(c, want, bound);
    Simulator s(*k, got.ptrs());
    try {
        s.run();
    } catch (const simtest::SimError &e) {
        FAIL() << e.what();
    }
    for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    for (auto *n : {"dQ", "dK", "dV"}) {
        auto &g = got.t[n], &w = want.t[n], &bd = bound[n];
        int bad = 0;
        for (size_t e = 0; e < g.size() && bad < 5; ++e)
            if (!(std::fabs(g[e] - w[e]) <= 2e-3 * bd[e] + 1e-5)) ++bad, ADD_FAILURE() << n << "[" << e << "] = " << g[e] << ", expected " << w[e];
    }
}

// Batch 0: keys without queries; 1: queries without keys; 2: both past one block (the second block of KV rows
// starts its loop at a block the causal shift makes later than the first); 3: empty; 4: a few of each.
// The second row of blocks of batch 0 has its causal start past its end.
const Case kMixed{{0, 6, 20, 0, 3}, {5, 0, 70, 0, 3}};

TEST(LowerSimVarlen, CausalEmptyAndShortSequencesSm80) { varlenCase(kMixed, "sm_80"); }
TEST(LowerSimVarlen, CausalEmptyAndShortSequencesSm90a) { varlenCase(kMixed, "sm_90a"); }
TEST(LowerSimVarlen, NonCausalSm90a) {
    Case c = kMixed;
    c.causal = false;
    varlenCase(c, "sm_90a");
}
// Every sequence empty: what the GPU suite's side-by-side run gives the kernel (cu_seqlens of zeros); every
// gradient keeps its initial value.
TEST(LowerSimVarlen, AllSequencesEmptySm90a) {
    Case c{{0, 0}, {0, 0}};
    c.maxLen = 100;
    varlenCase(c, "sm_90a");
}

} // namespace
