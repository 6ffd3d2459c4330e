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

/// A loop of one trip overlaps nothing (pipelineLoops: plain code): every transfer waited for where it is issued,
/// the run right.
void expectPlain(const Case &c) {
    LowerRun r;
    const ir::Kernel *k = lowered(r, c);
    ASSERT_TRUE(k) << r.diags();
    // Q's, K's and V's transfers each issued and committed where they are, and waited for in place (copy_g2s_wait)
    // or before the first statement that needs them (sinkTransferWaits: a wait for all of them, none in flight
    // after it): no ring, no prologue.
    auto calls = simtest::callCounts(*k);
    EXPECT_EQ(calls[lib::Fn::CopyG2SWait] + calls[lib::Fn::CopyG2S], 3) << r.diags();
    for (int64_t w : waits(*k)) EXPECT_EQ(w, 0) << r.diags();
    EXPECT_EQ(waits(*k).empty(), calls[lib::Fn::CopyG2S] == 0) << r.diags();
    Inputs in(c);
    for (uint64_t seed : {0, 1, 2}) {
        Outcome o = in.run(*k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
}

} // namespace

TEST(LowerSimDecodePipeline, MmaSyncTwoStagesFiveTrips) { expectPipelined({}); }
TEST(LowerSimDecodePipeline, MmaSyncThreeStagesTwoTrips) { expectPipelined({"sm_80", 8, 2, 64, 64, 32, 32, 3, 64}); }
TEST(LowerSimDecodePipeline, WgmmaTwoStagesFiveTrips) { expectPipelined({"sm_90a", 8, 2, 320, 64, 64, 64, 2, 128}); }
TEST(LowerSimDecodePipeline, WgmmaThreeStagesOneTripIsPlain) { expectPlain({"sm_90a", 8, 2, 64, 64, 64, 64, 3, 128}); }

namespace {

/// MLA-style paged decoding (the shape of TileLang's example_mla_decode_paged, written here from its
/// mathematics): one latent KV tile read as K and as V, a rotary-part tile, key blocks walked last to first, each
/// block's rows found through a block table by scalars the body sets per iteration. The transfers are issued
/// ahead with those definitions written into their positions (splitPipelinedBody), not left synchronous.
const char *kPaged = R"(import tilelang.language as T

def paged(batch, heads, pad, dim, pe, block_N, block_H, page, stages, threads):
    sc = 1.44269504 / (dim + pe) ** 0.5

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, dim), "float16"), Qp: T.Tensor((batch, heads, pe), "float16"),
             KV: T.Tensor((batch * pad, dim), "float16"), Kp: T.Tensor((batch * pad, pe), "float16"),
             table: T.Tensor((batch, pad // page), "int32"), lens: T.Tensor((batch,), "int32"),
             O: T.Tensor((batch, heads, dim), "float32")):
        with T.Kernel(batch, heads // block_H, threads=threads) as (bx, by):
            q_s = T.alloc_shared((block_H, dim), "float16")
            qp_s = T.alloc_shared((block_H, pe), "float16")
            kv_s = T.alloc_shared((block_N, dim), "float16")
            kp_s = T.alloc_shared((block_N, pe), "float16")
            p_s = T.alloc_shared((block_H, block_N), "float16")
            s = T.alloc_fragment((block_H, block_N), "float32")
            o = T.alloc_fragment((block_H, dim), "float32")
            mx = T.alloc_fragment((block_H,), "float32")
            prev = T.alloc_fragment((block_H,), "float32")
            fac = T.alloc_fragment((block_H,), "float32")
            tot = T.alloc_fragment((block_H,), "float32")
            l = T.alloc_fragment((block_H,), "float32")
            T.copy(Q[bx, by * block_H : (by + 1) * block_H, :], q_s)
            T.copy(Qp[bx, by * block_H : (by + 1) * block_H, :], qp_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(mx, -T.infinity("float32"))
            n = T.ceildiv(lens[bx], block_N)
            for kr in T.Pipelined(n, num_stages=stages):
                k = n - 1 - kr
                row = table[bx, (k * block_N) // page] * page + (k * block_N) % page
                T.copy(KV[row : row + block_N, :], kv_s)
                T.copy(Kp[row : row + block_N, :], kp_s)
                T.clear(s)
                T.gemm(q_s, kv_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.gemm(qp_s, kp_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block_H, block_N):
                    s[i, j] = T.if_then_else(k * block_N + j >= lens[bx], -T.infinity("float32"), s[i, j])
                T.copy(mx, prev)
                T.reduce_max(s, mx, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    fac[i] = T.exp2(prev[i] * sc - mx[i] * sc)
                for i, j in T.Parallel(block_H, block_N):
                    s[i, j] = T.exp2(s[i, j] * sc - mx[i] * sc)
                T.reduce_sum(s, tot, dim=1)
                for i in T.Parallel(block_H):
                    l[i] = l[i] * fac[i] + tot[i]
                T.copy(s, p_s)
                for i, j in T.Parallel(block_H, dim):
                    o[i, j] *= fac[i]
                T.gemm(p_s, kv_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_H, dim):
                O[bx, by * block_H + i, j] = o[i, j] / l[i]

    return main
)";

struct Paged {
    const char *arch = "sm_80";
    int batch = 2, heads = 32, pad = 256, dim = 64, pe = 32, blockN = 32, blockH = 32, page = 64, stages = 2, threads = 64;
    std::vector<int> lens{200, 97};
};

struct PagedInputs {
    std::map<std::string, std::vector<double>> io;
    std::vector<double> want;
    explicit PagedInputs(const Paged &c) {
        const int B = c.batch, H = c.heads, P = c.pad, D = c.dim, E = c.pe, pages = P / c.page;
        io["Q"] = sixteenths((size_t)B * H * D, 5);
        io["Qp"] = sixteenths((size_t)B * H * E, 6);
        io["KV"] = sixteenths((size_t)B * P * D, 7);
        io["Kp"] = sixteenths((size_t)B * P * E, 8);
        io["table"].resize((size_t)B * pages);
        for (int i = 0; i < B * pages; ++i) io["table"][(size_t)i] = (i * 5 + 3) % (B * pages); // a permutation of the pages
        io["lens"].assign(c.lens.begin(), c.lens.end());
        io["O"] = std::vector<double>((size_t)B * H * D, std::nan(""));
        want.assign(io["O"].size(), 0);
        const auto &q = io["Q"], &qp = io["Qp"], &kv = io["KV"], &kp = io["Kp"], &tb = io["table"];
        for (int b = 0; b < B; ++b)
            for (int h = 0; h < H; ++h) {
                const int L = c.lens[(size_t)b];
                std::vector<double> w(L);
                double mx = -INFINITY, sum = 0;
                auto row = [&](int t) { return (size_t)tb[(size_t)b * pages + t / c.page] * c.page + t % c.page; };
                for (int t = 0; t < L; ++t) {
                    double dot = 0;
                    for (int d = 0; d < D; ++d) dot += q[((size_t)b * H + h) * D + d] * kv[row(t) * D + d];
                    for (int d = 0; d < E; ++d) dot += qp[((size_t)b * H + h) * E + d] * kp[row(t) * E + d];
                    w[t] = dot / std::sqrt((double)(D + E));
                    mx = std::max(mx, w[t]);
                }
                for (int t = 0; t < L; ++t) sum += w[t] = std::exp(w[t] - mx);
                for (int d = 0; d < D; ++d) {
                    double acc = 0;
                    for (int t = 0; t < L; ++t) acc += w[t] * kv[row(t) * D + d];
                    want[((size_t)b * H + h) * D + d] = acc / sum;
                }
            }
    }
};

/// The tile transfers issued ahead (cp.async without a wait of its own), by source tensor.
std::map<std::string, int> issuedAhead(const ir::Kernel &k) {
    struct V : ir::IRVisitor {
        using IRVisitor::visit;
        std::map<std::string, int> n;
        void visit(const ir::Call &c) override {
            if (lib::is(c, lib::Fn::CopyG2S)) ++n[passes::addressedLoad(lib::arg(c, lib::Fn::CopyG2S, "src"))->buffer->name];
            IRVisitor::visit(c);
        }
    } v;
    v.visit(k.body);
    return v.n;
}

void expectPaged(const Paged &c) {
    auto s = [](int v) { return std::to_string(v); };
    const std::string src = std::string(kPaged) + "k = paged(" + s(c.batch) + ", " + s(c.heads) + ", " + s(c.pad) + ", " + s(c.dim) + ", " +
                            s(c.pe) + ", " + s(c.blockN) + ", " + s(c.blockH) + ", " + s(c.page) + ", " + s(c.stages) + ", " +
                            s(c.threads) + ")\n";
    LowerRun r;
    Variant v{*Target::parse(c.arch), {}};
    v.options.warpSpecialize = false;
    r.run(src, "paged.tile", v);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    // The prologue's stages and the refill in the loop, for both tiles.
    const auto ahead = issuedAhead(k);
    EXPECT_EQ(ahead.count("KV") ? ahead.at("KV") : 0, c.stages + 1) << r.diags();
    EXPECT_EQ(ahead.count("Kp") ? ahead.at("Kp") : 0, c.stages + 1) << r.diags();
    PagedInputs in(c);
    std::map<std::string, std::vector<double> *> ptrs;
    for (auto &[n, vec] : in.io) ptrs[n] = &vec;
    for (uint64_t seed : {0, 1}) {
        in.io["O"].assign(in.io["O"].size(), std::nan(""));
        Outcome o = simtest::runCaught(k, ptrs, {}, seed);
        const auto &got = in.io["O"];
        for (size_t e = 0; e < got.size(); ++e)
            o.check(std::fabs(got[e] - in.want[e]) <= 1e-2 * std::max(1.0, std::fabs(in.want[e])),
                    [&] { return "O[" + std::to_string(e) + "] = " + std::to_string(got[e]) + ", expected " + std::to_string(in.want[e]); });
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
}

} // namespace

TEST(LowerSimDecodePipeline, PagedMmaSyncTwoStages) { expectPaged({}); }
TEST(LowerSimDecodePipeline, PagedWgmmaThreeStages) {
    Paged c;
    c.arch = "sm_90a", c.heads = 64, c.blockN = 64, c.blockH = 64, c.stages = 3, c.threads = 128;
    expectPaged(c);
}
