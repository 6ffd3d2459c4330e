/// \file
/// Warp roles for T.Pipelined loops whose TMA tiles the consumers also read themselves (issue 25): a chunked
/// state update in the shape of Mamba's chunk_state (written here from its mathematics) loads per iteration a
/// 2-D tile of x that the consumers copy into a fragment and scale, two 1-D rows (the decay's cumulative sums
/// and the step sizes, float16 and float32) read element-wise, and a 2-D tile of B that a wgmma reads with A
/// from registers. On sm_90a every copy becomes a TMA load of the producer (the rows unswizzled boxes), each
/// group of tiles waited for where first used and released after its last read by every consumer thread
/// behind a proxy fence. Run on the CPU simulator (races, barriers, TMA landing) against float64, with more
/// iterations than stages, and a tile whose rows are two swizzle panels; the mutations that drop a wait or a
/// release are reported.
#include "LowerSimUtil.h"

#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Outcome;
namespace lib = tilec::passes::lib;

namespace {

const char *kChunkState = R"(import tilelang.language as T

def chunk_state(batch, seqlen, chunk, heads, dim, dstate, BM=64, BN=64, BK=64, stages=2, threads=128):
    nchunks = seqlen // chunk
    p = 1.44269504

    @T.prim_func
    def main(x: T.Tensor((batch, seqlen, heads, dim), "float16"), Bm: T.Tensor((batch, seqlen, dstate), "float16"),
             dA: T.Tensor((batch, heads, nchunks, chunk), "float16"), dt: T.Tensor((batch, heads, nchunks, chunk), "float32"),
             out: T.Tensor((batch, nchunks, heads, dim, dstate), "float32")):
        with T.Kernel(heads, T.ceildiv(dim, BM) * T.ceildiv(dstate, BN), batch * nchunks, threads=threads) as (bh, bx, bc):
            x_s = T.alloc_shared((BK, BM), "float16")
            x_f = T.alloc_fragment((BK, BM), "float16")
            xs_f = T.alloc_fragment((BM, BK), "float16")
            b_s = T.alloc_shared((BK, BN), "float16")
            dA_s = T.alloc_shared((BK,), "float16")
            dt_s = T.alloc_shared((BK,), "float32")
            w = T.alloc_fragment((BK,), "float32")
            last = T.alloc_fragment((1,), "float32")
            acc = T.alloc_fragment((BM, BN), "float32")
            b = bc % batch
            c = bc // batch
            m0 = bx // T.ceildiv(dstate, BN) * BM
            n0 = bx % T.ceildiv(dstate, BN) * BN
            last[0] = dA[b, bh, c, chunk - 1]
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(chunk, BK), num_stages=stages):
                T.copy(x[b, c * chunk + k * BK : c * chunk + (k + 1) * BK, bh, m0 : m0 + BM], x_s)
                T.copy(dA[b, bh, c, k * BK : (k + 1) * BK], dA_s)
                T.copy(dt[b, bh, c, k * BK : (k + 1) * BK], dt_s)
                for i in T.Parallel(BK):
                    w[i] = T.exp2(last[0] * p - dA_s[i] * p) * dt_s[i]
                T.copy(x_s, x_f)
                for i, j in T.Parallel(BM, BK):
                    xs_f[i, j] = x_f[j, i] * w[j]
                T.copy(Bm[b, c * chunk + k * BK : c * chunk + (k + 1) * BK, n0 : n0 + BN], b_s)
                T.gemm(xs_f, b_s, acc)
            T.copy(acc, out[b, c, bh, m0 : m0 + BM, n0 : n0 + BN])

    return main
)";

struct Case {
    int batch = 1, seqlen = 256, chunk = 128, heads = 2, dim = 64, dstate = 64, bm = 64, stages = 2;
};

std::string source(const Case &c) {
    return std::string(kChunkState) + "k = chunk_state(" + std::to_string(c.batch) + ", " + std::to_string(c.seqlen) + ", " +
           std::to_string(c.chunk) + ", " + std::to_string(c.heads) + ", " + std::to_string(c.dim) + ", " +
           std::to_string(c.dstate) + ", BM=" + std::to_string(c.bm) + ", stages=" + std::to_string(c.stages) + ")\n";
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
        const int B = c.batch, L = c.seqlen, Q = c.chunk, H = c.heads, D = c.dim, N = c.dstate, C = L / Q;
        io["x"] = sixteenths((size_t)B * L * H * D, 1);
        io["Bm"] = sixteenths((size_t)B * L * N, 2);
        io["dA"] = sixteenths((size_t)B * H * C * Q, 3);
        io["dt"] = sixteenths((size_t)B * H * C * Q, 4);
        io["out"] = std::vector<double>((size_t)B * C * H * D * N, std::nan(""));
        want.assign(io["out"].size(), 0);
        const auto &x = io["x"], &Bm = io["Bm"], &dA = io["dA"], &dt = io["dt"];
        for (int b = 0; b < B; ++b)
            for (int ch = 0; ch < C; ++ch)
                for (int h = 0; h < H; ++h) {
                    auto row = [&](int k) { return (((size_t)b * H + h) * C + ch) * Q + k; };
                    const double last = dA[row(Q - 1)];
                    for (int m = 0; m < D; ++m)
                        for (int n = 0; n < N; ++n) {
                            double s = 0;
                            for (int k = 0; k < Q; ++k) {
                                const double w = std::exp2((last - dA[row(k)]) * 1.44269504) * dt[row(k)];
                                const size_t t = (size_t)b * L + (size_t)ch * Q + k;
                                s += x[(t * H + h) * D + m] * w * Bm[t * N + n];
                            }
                            want[((((size_t)b * C + ch) * H + h) * D + m) * N + n] = s;
                        }
                }
    }
    Outcome run(const ir::Kernel &k, uint64_t seed) {
        std::map<std::string, std::vector<double> *> ptrs;
        for (auto &[n, v] : io) ptrs[n] = &v;
        Outcome o = simtest::runCaught(k, ptrs, {}, seed);
        const auto &got = io["out"];
        for (size_t e = 0; e < got.size(); ++e) // the scaled x is rounded to float16 before the product
            o.check(std::fabs(got[e] - want[e]) <= 2e-2 * std::max(1.0, std::fabs(want[e])),
                    [&] { return "out[" + std::to_string(e) + "] = " + std::to_string(got[e]) + ", expected " + std::to_string(want[e]); });
        return o;
    }
};

/// The TMA loads the producer issues, by swizzle (0: the unswizzled rows).
std::map<int64_t, int> tmaLoadsBySwizzle(const ir::Kernel &k) {
    struct V : ir::IRVisitor {
        using IRVisitor::visit;
        std::map<int64_t, int> n;
        void visit(const ir::Call &c) override {
            if (lib::is(c, lib::Fn::TmaLoadTile)) ++n[*ir::constInt(lib::arg(c, lib::Fn::TmaLoadTile, "swizzle"))];
            IRVisitor::visit(c);
        }
    } v;
    v.visit(k.body);
    return v.n;
}

const ir::Kernel *rolesOf(LowerRun &r, const Case &c) {
    Variant v{*Target::parse("sm_90a"), {}};
    v.options.clusters = false;
    r.run(source(c), "chunk_state.tile", v);
    return simtest::warpRoles(r);
}

void expectClean(const Case &c) {
    LowerRun r;
    const ir::Kernel *k = rolesOf(r, c);
    ASSERT_TRUE(k) << "no warp roles: " << r.diags();
    // x and B swizzled, the two rows not (one group: first read by one statement); every consumer thread
    // releases the groups it reads itself (the rows, x).
    EXPECT_EQ(tmaLoadsBySwizzle(*k), (std::map<int64_t, int>{{0, 2}, {128, 2}}));
    EXPECT_EQ(simtest::callCounts(*k)[lib::Fn::MbarrierArriveEach], 2);
    Inputs in(c);
    for (uint64_t seed : {0, 1, 2}) {
        Outcome o = in.run(*k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
}

TEST(LowerSimHopperRows, ChunkStateTwoStagesFourTrips) { expectClean({}); }

/// A row at a position the loop computes: the kernel with the row's copy reading local `off`, set by `define`
/// in each iteration; the TMA loads by swizzle and the run against float64.
static void rowAtComputedPosition(const std::string &define, const std::map<int64_t, int> &loads) {
    const Case c;
    std::string src = source(c);
    auto replace = [&](const std::string &from, const std::string &to) {
        auto at = src.find(from);
        ASSERT_NE(at, std::string::npos) << from;
        src.replace(at, from.size(), to);
    };
    replace("            for k in T.Pipelined(T.ceildiv(chunk, BK), num_stages=stages):\n",
            "            off = T.alloc_local((1,), \"int32\")\n            for k in T.Pipelined(T.ceildiv(chunk, BK), num_stages=stages):\n" +
                define);
    replace("T.copy(dt[b, bh, c, k * BK : (k + 1) * BK], dt_s)", "T.copy(dt[b, bh, c, off[0] : off[0] + BK], dt_s)");
    LowerRun r;
    Variant v{*Target::parse("sm_90a"), {}};
    v.options.clusters = false;
    r.run(src, "chunk_state.tile", v);
    const ir::Kernel *k = simtest::warpRoles(r);
    ASSERT_TRUE(k) << "no warp roles: " << r.diags();
    EXPECT_EQ(tmaLoadsBySwizzle(*k), loads);
    Inputs in(c);
    for (uint64_t seed : {0, 1}) {
        Outcome o = in.run(*k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
}

/// Set once per iteration from the loop variable: the producer loads the row ahead at that definition
/// (splitPipelinedBody writes it into the copy's position), both rows unswizzled TMA boxes.
TEST(LowerSimHopperRows, RowAtAPositionSetPerIterationLoadedAhead) {
    rowAtComputedPosition("                off[0] = k * BK\n", {{0, 2}, {128, 2}});
}
/// Set twice (the second store reading the first): no single definition to load ahead at; the row stays the
/// consumers' element stores (a barrier among them before the reads), the other row, x and B still TMA tiles.
TEST(LowerSimHopperRows, RowAtAComputedPositionStaysTheConsumers) {
    rowAtComputedPosition("                off[0] = k\n                off[0] = off[0] * BK\n", {{0, 1}, {128, 2}});
}
/// One stage: the producer cannot load ahead of its consumers, so warp roles keep no more loads in flight per SM
/// than the cp.async pipeline, whose blocks are more (WarpRoleCost.h): the loop keeps cp.async.
TEST(LowerSimHopperRows, ChunkStateOneStageKeepsCpAsync) {
    LowerRun r;
    EXPECT_FALSE(rolesOf(r, {1, 256, 128, 2, 64, 64, 64, 1})) << r.diags();
    LowerRun two;
    EXPECT_TRUE(rolesOf(two, {1, 256, 128, 2, 64, 64, 64, 2})) << two.diags();
}
/// Four stages of rows two panels wide (three measured fewer loads in flight than three cp.async blocks).
TEST(LowerSimHopperRows, ChunkStateRowsOfTwoPanels) { expectClean({1, 128, 128, 1, 128, 64, 128, 4}); }

/// Without the consumers' wait for a row, or without their release of it, the simulator reports the run
/// (a read of a stage the TMA has not filled, or a producer that waits forever).
TEST(LowerSimHopperRows, DroppedWaitOrReleaseIsReported) {
    const Case c;
    LowerRun r;
    const ir::Kernel *k = rolesOf(r, c);
    ASSERT_TRUE(k) << r.diags();
    for (lib::Fn dropped : {lib::Fn::MbarrierWait, lib::Fn::MbarrierArriveEach}) {
        int seen = 0;
        auto mutant = simtest::rewriteCalls(*k, [&](const ir::Evaluate &e, const ir::Call &call, simtest::Role role) -> ir::Stmt {
            // the first such call of the consumers: the wait for, or the release of, the first group (a row)
            if (role == simtest::Role::Consumer && lib::is(call, dropped) && seen++ == 0) return nullptr;
            return simtest::same(e);
        });
        Inputs in(c);
        Outcome o = in.run(*mutant, 0);
        EXPECT_TRUE(simtest::anyFailure(o)) << "dropping the consumers' first " << (dropped == lib::Fn::MbarrierWait ? "wait" : "release");
    }
}

const char *kFilledOperand = R"(import tilelang.language as T

def filled(M, N, K, BM=64, BN=64, BK=64, stages=2, threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=threads) as (bx, by):
            a_s = T.alloc_shared((BM, BK), "float16")
            b_s = T.alloc_shared((BK, BN), "float16")
            acc = T.alloc_fragment((BM, BN), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=stages):
                for i, j in T.Parallel(BM, BK):
                    a_s[i, j] = T.if_then_else(by * BM + i < M and k * BK + j < K, A[by * BM + i, k * BK + j] * 2, 0)
                T.copy(B[k * BK, bx * BN], b_s)
                T.gemm(a_s, b_s, acc)
            T.copy(acc, C[by * BM, bx * BN])

    return main
)";

/// A product operand the consumers fill themselves in every iteration (a convolution's im2col, attention
/// backward's dS): the loop still takes warp roles, B a TMA tile, A read by the wgmma from the consumers' own
/// shared buffer (a barrier among them before each refill, a proxy fence before the product); the product of
/// 2 A and B, K not a multiple of the tile. 128-deep tiles in four stages: shared memory holds two blocks either
/// way, and the producer's ring keeps more loads in flight than the cp.async pipeline (WarpRoleCost.h).
TEST(LowerSimHopperRows, OperandFilledByTheConsumers) {
    const int M = 72, N = 64, K = 520;
    LowerRun r;
    Variant v{*Target::parse("sm_90a"), {}};
    v.options.clusters = false;
    r.keepBefore = "splitUniformConditions"; // the loop once (the split copies it: the K check uniform until K's end)
    r.run(std::string(kFilledOperand) + "k = filled(" + std::to_string(M) + ", " + std::to_string(N) + ", " + std::to_string(K) +
              ", BK=128, stages=4)\n",
          "filled.tile", v);
    const ir::Kernel *k = simtest::warpRoles(r);
    ASSERT_TRUE(k) << "no warp roles: " << r.diags();
    EXPECT_EQ(tmaLoadsBySwizzle(*k), (std::map<int64_t, int>{{128, 1}}));
    ASSERT_TRUE(r.kept);
    const ir::Kernel *scheduled = nullptr;
    for (auto &kk : r.kept->kernels)
        if (kk->producerThreads) scheduled = kk.get();
    ASSERT_TRUE(scheduled);
    EXPECT_EQ(simtest::callCounts(*scheduled)[lib::Fn::WgmmaSS], 1);
    EXPECT_EQ(simtest::callCounts(*k)[lib::Fn::WgmmaSS], 2) << "the K loop split where `k * BK + j < K` holds";
    std::map<std::string, std::vector<double>> io{{"A", sixteenths((size_t)M * K, 5)}, {"B", sixteenths((size_t)K * N, 6)},
                                                  {"C", std::vector<double>((size_t)M * N, std::nan(""))}};
    std::vector<double> want((size_t)M * N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int kk = 0; kk < K; ++kk) want[(size_t)i * N + j] += 2 * io["A"][(size_t)i * K + kk] * io["B"][(size_t)kk * N + j];
    for (uint64_t seed : {0, 1}) {
        std::map<std::string, std::vector<double> *> ptrs;
        for (auto &[n, x] : io) ptrs[n] = &x;
        Outcome o = simtest::runCaught(*k, ptrs, {}, seed);
        for (size_t e = 0; e < want.size(); ++e)
            o.check(io["C"][e] == want[e], [&] { return "C[" + std::to_string(e) + "] = " + std::to_string(io["C"][e]) + ", expected " + std::to_string(want[e]); });
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
}

} // namespace
