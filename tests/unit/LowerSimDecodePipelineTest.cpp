/// \file
/// The cp.async pipeline of a loop whose tiles are first used by different statements (issue 28, decode):
/// split-KV flash decoding in the shape of TileLang's GQA decode example (written here from its mathematics:
/// a block of query heads sharing one KV head, a byte mask per key, K first read by QK^T and V by P.V) keeps
/// `stages` iterations of K and V in flight, not stages - 1. Each group of tiles is waited for just before its
/// first use and its stage refilled just after its last use, one commit group per group of tiles. Run on the
/// CPU simulator (cp.async groups land only at their wait; races reported) against float64, on the portable
/// path (sm_80, mma.sync) and on sm_90a's wgmma over cp.async tiles, with more trips than stages and fewer;
/// a wait that leaves one group too many in flight is reported.
#include "LowerSimUtil.h"

#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Outcome;
namespace lib = tilec::passes::lib;

namespace {

const char *kDecode = R"(import tilelang.language as T

def decode(batch, heads, groups, seqlen, dim, block_N, block_H, stages, threads):
    per_kv = heads // groups
    rows = min(block_H, per_kv)
    sc = 1.44269504 / dim ** 0.5

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, dim), "float16"), K: T.Tensor((batch, seqlen, groups, dim), "float16"),
             V: T.Tensor((batch, seqlen, groups, dim), "float16"), mask: T.Tensor((batch, seqlen, groups), "uint8"),
             O: T.Tensor((batch, heads, dim), "float32")):
        with T.Kernel(batch, heads // rows, threads=threads) as (bx, by):
            q_s = T.alloc_shared((block_H, dim), "float16")
            k_s = T.alloc_shared((block_N, dim), "float16")
            v_s = T.alloc_shared((block_N, dim), "float16")
            m_f = T.alloc_fragment((block_N,), "uint8")
            s = T.alloc_fragment((block_H, block_N), "float32")
            p = T.alloc_fragment((block_H, block_N), "float16")
            o = T.alloc_fragment((block_H, dim), "float32")
            mx = T.alloc_fragment((block_H,), "float32")
            prev = T.alloc_fragment((block_H,), "float32")
            fac = T.alloc_fragment((block_H,), "float32")
            tot = T.alloc_fragment((block_H,), "float32")
            l = T.alloc_fragment((block_H,), "float32")
            g = by // (per_kv // rows)
            T.copy(Q[bx, by * rows : by * rows + block_H, :], q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(mx, -T.infinity("float32"))
            for k in T.Pipelined(T.ceildiv(seqlen, block_N), num_stages=stages):
                T.copy(K[bx, k * block_N : (k + 1) * block_N, g, :], k_s)
                T.copy(mask[bx, k * block_N : (k + 1) * block_N, g], m_f)
                T.clear(s)
                T.gemm(q_s, k_s, s, transpose_B=True)
                for i, j in T.Parallel(block_H, block_N):
                    s[i, j] = T.if_then_else(m_f[j] != 0, s[i, j], -T.infinity("float32"))
                T.copy(mx, prev)
                T.reduce_max(s, mx, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    fac[i] = T.exp2(prev[i] * sc - mx[i] * sc)
                for i, j in T.Parallel(block_H, block_N):
                    s[i, j] = T.exp2(s[i, j] * sc - mx[i] * sc)
                T.reduce_sum(s, tot, dim=1)
                for i in T.Parallel(block_H):
                    l[i] = l[i] * fac[i] + tot[i]
                T.copy(s, p)
                for i, j in T.Parallel(block_H, dim):
                    o[i, j] *= fac[i]
                T.copy(V[bx, k * block_N : (k + 1) * block_N, g, :], v_s)
                T.gemm(p, v_s, o)
            for i, j in T.Parallel(block_H, dim):
                if i < rows:
                    O[bx, by * rows + i, j] = o[i, j] / l[i]

    return main
)";

struct Case {
    const char *arch = "sm_80";
    int heads = 8, groups = 2, seqlen = 160, dim = 64, blockN = 32, blockH = 32, stages = 2, threads = 64;
};

std::string source(const Case &c) {
    auto s = [](int v) { return std::to_string(v); };
    return std::string(kDecode) + "k = decode(1, " + s(c.heads) + ", " + s(c.groups) + ", " + s(c.seqlen) + ", " + s(c.dim) + ", " +
           s(c.blockN) + ", " + s(c.blockH) + ", " + s(c.stages) + ", " + s(c.threads) + ")\n";
}

/// Values on a grid of 1/16 in [-1, 1] (exact in float16).
std::vector<double> sixteenths(size_t n, unsigned seed) {
    auto v = simtest::randomData(n, seed, -1, 1);
    for (auto &x : v) x = std::round(x * 16) / 16;
    return v;
}

struct Inputs {
    std::map<std::string, std::vector<double>> io;
    std::vector<double> want;
    explicit Inputs(const Case &c) {
        const int H = c.heads, G = c.groups, L = c.seqlen, D = c.dim, per = H / G;
        io["Q"] = sixteenths((size_t)H * D, 1);
        io["K"] = sixteenths((size_t)L * G * D, 2);
        io["V"] = sixteenths((size_t)L * G * D, 3);
        io["mask"].resize((size_t)L * G);
        for (int t = 0; t < L; ++t) // every key block keeps its first key
            for (int g = 0; g < G; ++g) io["mask"][(size_t)t * G + g] = (t % c.blockN == 0 || (t * 7 + g * 3) % 5 != 1) ? 1 : 0;
        io["O"] = std::vector<double>((size_t)H * D, std::nan(""));
        want.assign(io["O"].size(), 0);
        const auto &q = io["Q"], &k = io["K"], &v = io["V"], &m = io["mask"];
        for (int h = 0; h < H; ++h) {
            const int g = h / per;
            std::vector<double> w(L, 0);
            double mx = -INFINITY, sum = 0;
            for (int t = 0; t < L; ++t) {
                if (!m[(size_t)t * G + g]) continue;
                double dot = 0;
                for (int d = 0; d < D; ++d) dot += q[(size_t)h * D + d] * k[((size_t)t * G + g) * D + d];
                w[t] = dot / std::sqrt((double)D);
                mx = std::max(mx, w[t]);
            }
            for (int t = 0; t < L; ++t) sum += w[t] = m[(size_t)t * G + g] ? std::exp(w[t] - mx) : 0;
            for (int d = 0; d < D; ++d) {
                double acc = 0;
                for (int t = 0; t < L; ++t) acc += w[t] * v[((size_t)t * G + g) * D + d];
                want[(size_t)h * D + d] = acc / sum;
            }
        }
    }
    Outcome run(const ir::Kernel &k, uint64_t seed) {
        std::map<std::string, std::vector<double> *> ptrs;
        for (auto &[n, v] : io) ptrs[n] = &v;
        io["O"].assign(io["O"].size(), std::nan(""));
        Outcome o = simtest::runCaught(k, ptrs, {}, seed);
        const auto &got = io["O"];
        for (size_t e = 0; e < got.size(); ++e) // P is rounded to float16 before P.V
            o.check(std::fabs(got[e] - want[e]) <= 1e-2 * std::max(1.0, std::fabs(want[e])),
                    [&] { return "O[" + std::to_string(e) + "] = " + std::to_string(got[e]) + ", expected " + std::to_string(want[e]); });
        return o;
    }
};

/// The pending counts of the kernel's cp.async waits, in program order.
std::vector<int64_t> waits(const ir::Kernel &k) {
    struct V : ir::IRVisitor {
        using IRVisitor::visit;
        std::vector<int64_t> n;
        void visit(const ir::Call &c) override {
            if (lib::is(c, lib::Fn::CpAsyncWait)) n.push_back(*ir::constInt(lib::arg(c, lib::Fn::CpAsyncWait, "pending")));
            IRVisitor::visit(c);
        }
    } v;
    v.visit(k.body);
    return v.n;
}

const ir::Kernel *lowered(LowerRun &r, const Case &c) {
    Variant v{*Target::parse(c.arch), {}};
    v.options.warpSpecialize = false; // the example's pass config: sm_90a's wgmma over cp.async tiles
    r.run(source(c), "decode.tile", v);
    return r.lowered && !r.lowered->kernels.empty() ? r.lowered->kernels[0].get() : nullptr;
}

/// K and V each waited for with the other group and the S - 1 later iterations' groups still in flight
/// (2S - 1 pending), the run right for several interleavings; with one group too many left pending at V's
/// wait the simulator reads a stage that has not landed.
void expectPipelined(const Case &c) {
    LowerRun r;
    const ir::Kernel *k = lowered(r, c);
    ASSERT_TRUE(k) << r.diags();
    if (std::string(c.arch) == "sm_90a") EXPECT_EQ(simtest::callCounts(*k)[lib::Fn::WgmmaSS], 1) << r.diags();
    const int64_t pending = 2 * c.stages - 1;
    const std::vector<int64_t> w = waits(*k);
    EXPECT_EQ(std::count(w.begin(), w.end(), pending), 2) << r.diags();
    Inputs in(c);
    for (uint64_t seed : {0, 1, 2}) {
        Outcome o = in.run(*k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
    int seen = 0;
    auto late = simtest::rewriteCalls(*k, [&](const ir::Evaluate &e, const ir::Call &call, simtest::Role) -> ir::Stmt {
        if (!lib::is(call, lib::Fn::CpAsyncWait) || *ir::constInt(lib::arg(call, lib::Fn::CpAsyncWait, "pending")) != pending ||
            ++seen != 2)
            return simtest::same(e);
        return lib::stmt(lib::Fn::CpAsyncWait, {ir::intImm(pending + 1)}, e.loc);
    });
    Outcome bad = in.run(*late, 0);
    EXPECT_TRUE(simtest::anyFailure(bad)) << "V's wait leaving one more group in flight went unnoticed";
}

} // namespace

TEST(LowerSimDecodePipeline, MmaSyncTwoStagesFiveTrips) { expectPipelined({}); }
TEST(LowerSimDecodePipeline, MmaSyncThreeStagesTwoTrips) { expectPipelined({"sm_80", 8, 2, 64, 64, 32, 32, 3, 64}); }
TEST(LowerSimDecodePipeline, WgmmaTwoStagesFiveTrips) { expectPipelined({"sm_90a", 8, 2, 320, 64, 64, 64, 2, 128}); }
TEST(LowerSimDecodePipeline, WgmmaThreeStagesOneTrip) { expectPipelined({"sm_90a", 8, 2, 64, 64, 64, 64, 3, 128}); }
