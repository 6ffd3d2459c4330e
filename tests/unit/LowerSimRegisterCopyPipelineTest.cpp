/// \file
/// The cp.async pipeline of one group of tiles whose last use in the body is a copy into registers (the shape
/// of TileLang's gemv_alloc_reducer, written here from its mathematics: a row block of A staged in shared
/// memory, copied into a fragment, multiplied by a slice of x): the stage is waited for with the S - 1 later
/// ones still in flight and refilled with iteration k + S right after the register copy, behind a barrier,
/// before the body computes, so S tiles are in flight while it does. Run on the CPU simulator (cp.async
/// destinations poisoned and claimed at issue, filled at their wait; races reported) against float64 on sm_80
/// and sm_90a, one to four stages, with more trips than stages, fewer, one and none, a constant trip count and a
/// run-time one with a partial last tile. A wait leaving one group too many in flight, and the refill without its
/// barrier (other threads still copying the stage), are reported; so is the lowering itself with that barrier
/// taken out of PipelineLoops (checked by hand: every case with a refill then reports a write-after-read on a_s).
/// Where the fragment is laid out as the transfer (each thread reads only its own copies) there is no barrier.
#include "LowerSimUtil.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Outcome;
namespace lib = tilec::passes::lib;

namespace {

const char *kGemv = R"(import tilelang.language as T

def gemv(M, N, bm, bn, stages, threads):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), x: T.Tensor((N,), "float16"), O: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            acc = T.alloc_fragment((bm, bn), "float32")
            o_f = T.alloc_fragment((bm,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(N, bn), num_stages=stages):
                a_s = T.alloc_shared((bm, bn), "float16")
                T.copy(A[bx * bm, k * bn], a_s)
                a_f = T.alloc_fragment((bm, bn), "float16")
                T.copy(a_s, a_f)
                x_f = T.alloc_fragment((bn,), "float16")
                T.copy(x[k * bn], x_f)
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] += a_f[i, j] * x_f[j]
            T.reduce_sum(acc, o_f, dim=1)
            T.copy(o_f, O[bx * bm])
    return main
)";

/// The same with A stored transposed (N, M) and N a run-time extent: the loop's trip count is one, the tile's row
/// length (M) a constant, as a pipelined loop without a GEMM needs, and the last tile partial in its rows. The
/// register copy is a loop nest transposing the tile (each thread reads what others' cp.async wrote).
const char *kGemvT = R"(import tilelang.language as T

def gemv(M, N, bm, bn, stages, threads):
    @T.prim_func
    def main(A: T.Tensor((N, M), "float16"), x: T.Tensor((N,), "float16"), O: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            acc = T.alloc_fragment((bm, bn), "float32")
            o_f = T.alloc_fragment((bm,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(N, bn), num_stages=stages):
                a_s = T.alloc_shared((bn, bm), "float16")
                T.copy(A[k * bn, bx * bm], a_s)
                a_f = T.alloc_fragment((bm, bn), "float16")
                for i, j in T.Parallel(bm, bn):
                    a_f[i, j] = a_s[j, i]
                x_f = T.alloc_fragment((bn,), "float16")
                T.copy(x[k * bn], x_f)
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] += a_f[i, j] * x_f[j]
            T.reduce_sum(acc, o_f, dim=1)
            T.copy(o_f, O[bx * bm])
    return main
N = T.dynamic("N")
)";

struct Case {
    const char *arch = "sm_80";
    int M = 64, N = 320, bm = 32, bn = 64, stages = 2, threads = 64;
    bool dynamicN = false; ///< kGemvT, N a run-time extent: the prologue guarded, a partial last tile
};

void expectRefilledAfterCopy(const Case &c) {
    auto s = [](int v) { return std::to_string(v); };
    const std::string n = c.dynamicN ? std::string("N") : s(c.N);
    const std::string src = std::string(c.dynamicN ? kGemvT : kGemv) + "k = gemv(" + s(c.M) + ", " + n + ", " + s(c.bm) + ", " + s(c.bn) + ", " +
                            s(c.stages) + ", " + s(c.threads) + ")\n";
    const std::map<std::string, double> scalars = c.dynamicN ? std::map<std::string, double>{{"N", (double)c.N}}
                                                             : std::map<std::string, double>{};
    LowerRun r;
    Variant v{*Target::parse(c.arch), {}};
    r.run(src, "gemv.tile", v);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    // The prologue's S stages (those the trip count reaches, all of them guarded where it is a run-time one) and the
    // refill; the loop's wait leaves S - 1 groups in flight, the last none. One trip known when compiling
    // (pipelineLoops: plain code): no pipeline at all. One stage: the one buffer refilled after the register copy.
    const int trips = (c.N + c.bn - 1) / c.bn;
    const bool pipelined = c.stages >= 1 && (c.dynamicN || trips != 1);
    if (pipelined) {
        EXPECT_EQ(simtest::callCounts(k)[lib::Fn::CopyG2S], (c.dynamicN ? c.stages : std::min(c.stages, trips)) + 1) << r.diags();
        EXPECT_EQ(simtest::cpAsyncWaits(k), (std::vector<int64_t>{c.stages - 1, 0})) << r.diags();
    } else {
        EXPECT_EQ(simtest::callCounts(k)[lib::Fn::CopyG2S], 0) << r.diags();
        EXPECT_TRUE(simtest::cpAsyncWaits(k).empty()) << r.diags();
    }

    std::map<std::string, std::vector<double>> io;
    io["A"] = simtest::randomData((size_t)c.M * c.N, 11, -1, 1);
    io["x"] = simtest::randomData((size_t)c.N, 12, -1, 1);
    for (auto *t : {&io["A"], &io["x"]}) // a grid of 1/16: the float16 products are exact
        for (auto &e : *t) e = std::round(e * 16) / 16;
    std::vector<double> want((size_t)c.M, 0);
    for (int i = 0; i < c.M; ++i)
        for (int j = 0; j < c.N; ++j)
            want[(size_t)i] += io["A"][c.dynamicN ? (size_t)j * c.M + i : (size_t)i * c.N + j] * io["x"][(size_t)j];
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        io["O"].assign((size_t)c.M, std::nan(""));
        std::map<std::string, std::vector<double> *> ptrs;
        for (auto &[n, vec] : io) ptrs[n] = &vec;
        Outcome o = simtest::runCaught(kernel, ptrs, scalars, seed);
        for (size_t e = 0; e < want.size(); ++e)
            o.check(std::fabs(io["O"][e] - want[e]) <= 1e-3 * std::max(1.0, std::fabs(want[e])),
                    [&] { return "O[" + std::to_string(e) + "] = " + std::to_string(io["O"][e]) + ", expected " + std::to_string(want[e]); });
        return o;
    };
    for (uint64_t seed : {0, 1, 2}) {
        Outcome o = run(k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
    if (!pipelined || trips == 0) return;
    // Mutations: one group too many left in flight at the loop's wait; the refill before every thread has copied
    // (a refill happens only with more trips than stages).
    auto late = simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &call, simtest::Role) -> ir::Stmt {
        if (!lib::is(call, lib::Fn::CpAsyncWait) || *ir::constInt(lib::arg(call, lib::Fn::CpAsyncWait, "pending")) != c.stages - 1)
            return simtest::same(e);
        return lib::stmt(lib::Fn::CpAsyncWait, {ir::intImm(c.stages)}, e.loc);
    });
    EXPECT_TRUE(simtest::anyFailure(run(*late, 0))) << "a wait leaving one more group in flight went unnoticed";
    int removed = 0;
    auto early = simtest::withoutRefillBarriers(k, removed);
    // A fragment laid out as the transfer (each thread copies into registers only what its own cp.async wrote:
    // PrivateStages.h) needs no barrier at all, and its tile is stored unswizzled (LowerSimOwnStagesTest).
    int plain = 0;
    simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &call, simtest::Role) {
        if (lib::is(call, lib::Fn::CopyG2S)) plain += *ir::constInt(lib::arg(call, lib::Fn::CopyG2S, "swizzle")) == 0;
        return simtest::same(e);
    });
    if (plain) {
        EXPECT_EQ(removed, 0);
        EXPECT_EQ(simtest::callCounts(k)[lib::Fn::Sync], 0);
        return;
    }
    EXPECT_EQ(removed, 1);
    if (trips <= c.stages) return;
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught = caught || simtest::anyFailure(run(*early, seed));
    EXPECT_TRUE(caught) << "the refill without its barrier went unnoticed";
}

} // namespace

// {arch, M, N, bm, bn, stages, threads, dynamicN}: more trips than stages, fewer, one, none; N a multiple of the tile's
// width or not; one to four stages.
TEST(LowerSimRegisterCopyPipeline, Sm80TwoStagesFiveTrips) { expectRefilledAfterCopy({}); }
TEST(LowerSimRegisterCopyPipeline, Sm80ThreeStagesTwoTrips) { expectRefilledAfterCopy({"sm_80", 64, 128, 32, 64, 3, 64}); }
TEST(LowerSimRegisterCopyPipeline, Sm90aTwoStagesFiveTrips) { expectRefilledAfterCopy({"sm_90a", 128, 640, 64, 128, 2, 128}); }
TEST(LowerSimRegisterCopyPipeline, Sm90aThreeStagesOneTrip) { expectRefilledAfterCopy({"sm_90a", 64, 64, 32, 64, 3, 128}); }
TEST(LowerSimRegisterCopyPipeline, Sm80FourStagesDynamicPartial) { expectRefilledAfterCopy({"sm_80", 64, 600, 32, 64, 4, 64, true}); }
TEST(LowerSimRegisterCopyPipeline, Sm90aFourStagesDynamicPartial) { expectRefilledAfterCopy({"sm_90a", 64, 296, 32, 64, 4, 128, true}); }
TEST(LowerSimRegisterCopyPipeline, Sm90aFourStagesOneTrip) { expectRefilledAfterCopy({"sm_90a", 64, 40, 32, 64, 4, 128}); }
TEST(LowerSimRegisterCopyPipeline, Sm80ThreeStagesDynamicFewerTrips) { expectRefilledAfterCopy({"sm_80", 64, 104, 32, 64, 3, 64, true}); }
TEST(LowerSimRegisterCopyPipeline, Sm90aTwoStagesDynamicNoTrip) { expectRefilledAfterCopy({"sm_90a", 64, 0, 32, 64, 2, 128, true}); }
TEST(LowerSimRegisterCopyPipeline, Sm80TwoStagesDynamicPartial) { expectRefilledAfterCopy({"sm_80", 64, 200, 32, 64, 2, 64, true}); }
TEST(LowerSimRegisterCopyPipeline, Sm80OneStage) { expectRefilledAfterCopy({"sm_80", 64, 320, 32, 64, 1, 64}); }
TEST(LowerSimRegisterCopyPipeline, Sm90aOneStageDynamicPartial) { expectRefilledAfterCopy({"sm_90a", 64, 296, 32, 64, 1, 128, true}); }
