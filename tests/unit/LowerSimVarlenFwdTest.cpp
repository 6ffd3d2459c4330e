/// \file
/// Variable-length attention forward in small (the shape of TileLang's mha_fwd_varlen example, written here
/// from its mathematics): the loop's trip count and every tile's position come from scalars the kernel sets
/// from cu_seqlens tensors before the loop. Such a loop is pipelined (its copies read only what the loop does
/// not change: loopInvariantBuffers) and, on sm_90a, warp-specialized: the TMA producer computes the bounds and
/// positions from the scalars' definitions (KernelScalars). Run on the CPU simulator against float64 with
/// empty sequences, sequences past one block, queries without keys, causal and not; outputs start poisoned
/// and the rows of no sequence must keep their values.
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

const char *kVarlenFwd = R"(import tilelang.language as T

def varlen_fwd(batch, heads, UQ, UKV, max_q, dim, causal, BM=64, BN=64, stages=2, threads=128):
    scale = (1.0 / dim) ** 0.5 * 1.44269504

    @T.prim_func
    def main(Q: T.Tensor((UQ, heads, dim), "float16"), K: T.Tensor((UKV, heads, dim), "float16"),
             V: T.Tensor((UKV, heads, dim), "float16"), cu_q: T.Tensor((batch + 1,), "int32"),
             cu_k: T.Tensor((batch + 1,), "int32"), O: T.Tensor((UQ, heads, dim), "float16")):
        with T.Kernel(T.ceildiv(max_q, BM), heads, batch, threads=threads) as (bx, by, bz):
            q_s = T.alloc_shared((BM, dim), "float16")
            k_s = T.alloc_shared((BN, dim), "float16")
            v_s = T.alloc_shared((BN, dim), "float16")
            o_s = T.alloc_shared((BM, dim), "float16")
            s = T.alloc_fragment((BM, BN), "float32")
            s16 = T.alloc_fragment((BM, BN), "float16")
            acc = T.alloc_fragment((BM, dim), "float32")
            m = T.alloc_fragment((BM,), "float32")
            m_prev = T.alloc_fragment((BM,), "float32")
            r = T.alloc_fragment((BM,), "float32")
            rsum = T.alloc_fragment((BM,), "float32")
            l = T.alloc_fragment((BM,), "float32")
            q0 = cu_q[bz]
            k0 = cu_k[bz]
            qlen = cu_q[bz + 1] - q0
            klen = cu_k[bz + 1] - k0
            T.copy(Q[q0 + bx * BM : q0 + (bx + 1) * BM, by, :], q_s)
            T.fill(acc, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            shift = klen - qlen
            trips = T.min(T.ceildiv(shift + (bx + 1) * BM, BN), T.ceildiv(klen, BN)) if causal else T.ceildiv(klen, BN)
            for kb in T.Pipelined(trips, num_stages=stages):
                T.copy(K[k0 + kb * BN : k0 + (kb + 1) * BN, by, :], k_s)
                if causal:
                    for i, j in T.Parallel(BM, BN):
                        s[i, j] = T.if_then_else(bx * BM + i + shift < kb * BN + j or bx * BM + i >= qlen or kb * BN + j >= klen, -1e9, 0)
                else:
                    for i, j in T.Parallel(BM, BN):
                        s[i, j] = T.if_then_else(bx * BM + i >= qlen or kb * BN + j >= klen, -1e9, 0)
                T.gemm(q_s, k_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.reduce_max(s, m, dim=1, clear=False)
                for i in T.Parallel(BM):
                    r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(BM, BN):
                    s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
                T.reduce_sum(s, rsum, dim=1)
                for i in T.Parallel(BM):
                    l[i] = l[i] * r[i] + rsum[i]
                T.copy(s, s16)
                for i, j in T.Parallel(BM, dim):
                    acc[i, j] *= r[i]
                T.copy(V[k0 + kb * BN : k0 + (kb + 1) * BN, by, :], v_s)
                T.gemm(s16, v_s, acc, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(BM, dim):
                acc[i, j] = 0 if causal and bx * BM + i + shift < 0 else acc[i, j] / l[i]
            T.copy(acc, o_s)
            for i, j in T.Parallel(BM, dim):
                if bx * BM + i < qlen:
                    O[q0 + bx * BM + i, by, j] = o_s[i, j]

    return main
)";

struct Case {
    std::vector<int> qlens, klens;
    bool causal = true;
    int heads = 2, dim = 32, padQ = 5, padK = 70; ///< padK: rows past the last sequence (TMA reads them)
};

/// O after the kernel in float64: softmax(Q K^T / sqrt(dim)) V over each query's visible keys (causal: aligned
/// on the right); a causal query that sees no key gives 0; rows of no sequence keep their values.
void reference(const Case &c, const std::map<std::string, std::vector<double>> &in, std::vector<double> &O) {
    const int H = c.heads, D = c.dim;
    const auto &Q = in.at("Q"), &K = in.at("K"), &V = in.at("V"), &cq = in.at("cu_q"), &ck = in.at("cu_k");
    for (size_t b = 0; b < c.qlens.size(); ++b) {
        const int q0 = (int)cq[b], k0 = (int)ck[b], qlen = c.qlens[b], klen = c.klens[b], shift = klen - qlen;
        for (int h = 0; h < H; ++h)
            for (int i = 0; i < qlen; ++i) {
                auto row = [&](int base, int r, int x) { return ((size_t)(base + r) * H + h) * D + x; };
                std::vector<double> p;
                double mx = -INFINITY, sum = 0;
                const int visible = c.causal ? std::min(klen, i + shift + 1) : klen;
                for (int j = 0; j < visible; ++j) {
                    double s = 0;
                    for (int x = 0; x < D; ++x) s += Q[row(q0, i, x)] * K[row(k0, j, x)];
                    p.push_back(s / std::sqrt((double)D)), mx = std::max(mx, p.back());
                }
                for (auto &v : p) sum += (v = std::exp(v - mx));
                for (int x = 0; x < D; ++x) {
                    double o = 0;
                    for (int j = 0; j < visible; ++j) o += p[(size_t)j] * V[row(k0, j, x)];
                    O[row(q0, i, x)] = visible > 0 ? o / sum : 0.0;
                }
            }
    }
}

void varlenFwdCase(const Case &c, const char *target, bool expectRoles) {
    const int B = (int)c.qlens.size(), H = c.heads, D = c.dim;
    const int UQ = std::accumulate(c.qlens.begin(), c.qlens.end(), 0) + c.padQ;
    const int UKV = std::accumulate(c.klens.begin(), c.klens.end(), 0) + c.padK;
    const int maxQ = std::max(1, *std::max_element(c.qlens.begin(), c.qlens.end()));
    std::string call = "varlen_fwd(" + std::to_string(B) + ", " + std::to_string(H) + ", " + std::to_string(UQ) + ", " +
                       std::to_string(UKV) + ", " + std::to_string(maxQ) + ", " + std::to_string(D) + ", " +
                       (c.causal ? "True" : "False") + ")";
    LowerRun r;
    r.run(std::string(kVarlenFwd) + "fwd = " + call + "\n", "varlen_fwd.tile", *Target::parse(target));
    ASSERT_TRUE(r.lowered) << r.diags();
    const ir::Kernel *k = r.kernel("fwd");
    ASSERT_TRUE(k);
    // The loop takes warp roles on sm_90a: the producer computes its bounds and tile positions itself.
    EXPECT_EQ(k->producerThreads > 0, expectRoles);
    auto sixteenths = [](size_t n, unsigned seed) {
        auto v = simtest::randomData(n, seed, -1, 1);
        for (auto &x : v) x = std::round(x * 16) / 16;
        return v;
    };
    std::map<std::string, std::vector<double>> io;
    io["Q"] = sixteenths((size_t)UQ * H * D, 1);
    io["K"] = sixteenths((size_t)UKV * H * D, 2);
    io["V"] = sixteenths((size_t)UKV * H * D, 3);
    io["O"] = simtest::randomData((size_t)UQ * H * D, 4, 100, 200); // poison: rows of no sequence keep it
    std::vector<double> cq{0}, ck{0};
    for (int b = 0; b < B; ++b) cq.push_back(cq.back() + c.qlens[(size_t)b]), ck.push_back(ck.back() + c.klens[(size_t)b]);
    io["cu_q"] = cq, io["cu_k"] = ck;
    std::vector<double> want = io["O"];
    reference(c, io, want);
    std::map<std::string, std::vector<double> *> ptrs;
    for (auto &[n, v] : io) ptrs[n] = &v;
    Simulator s(*k, ptrs);
    try {
        s.run();
    } catch (const simtest::SimError &e) {
        FAIL() << e.what();
    }
    for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    int bad = 0;
    const auto &got = io["O"];
    for (size_t e = 0; e < got.size() && bad < 5; ++e)
        if (!(std::fabs(got[e] - want[e]) <= 2e-3 * std::max(1.0, std::fabs(want[e])))) ++bad, ADD_FAILURE() << "O[" << e << "] = " << got[e] << ", expected " << want[e];
}

// Batch 0: queries without keys; 1: a sequence past one block of queries and two of keys; 2: empty; 3: more
// keys than queries (the causal shift lets the first query see several); 4: more queries than keys (the first
// queries see none).
const Case kMixed{{6, 70, 0, 3, 20}, {0, 130, 0, 40, 5}};

TEST(LowerSimVarlenFwd, CausalSm90aWarpRoles) { varlenFwdCase(kMixed, "sm_90a", true); }
TEST(LowerSimVarlenFwd, CausalSm80Pipelined) { varlenFwdCase(kMixed, "sm_80", false); }
TEST(LowerSimVarlenFwd, NonCausalSm90aWarpRoles) {
    Case c{{6, 70, 0, 3, 20}, {9, 130, 0, 40, 5}}; // every query sees a key
    c.causal = false;
    varlenFwdCase(c, "sm_90a", true);
}

} // namespace
