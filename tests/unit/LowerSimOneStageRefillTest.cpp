/// \file
/// T.Pipelined(num_stages=1) with two tiles used one after the other (chunk_delta_bwd's shape: K read by one
/// statement, dv read, overwritten by the body and read again by a later one): each tile's transfer for the next
/// iteration is issued right after its last use in this one (PipelineLoops' refillOneBuffer), so both are in
/// flight under the statements between, one buffer each. Run on the CPU simulator (cp.async destinations poisoned
/// at issue and filled at their wait, races reported) against float64 on sm_80 and sm_90a, five trips, two and one
/// (plain code). A run-time trip count needs constant rows (LowerSimRegisterCopyPipeline's one-stage cases). The lowering is checked to have moved both transfers (two
/// in the prologue, two refills), and two mutations must be caught: a wait that leaves the needed group in flight,
/// and a refill without the barrier before it (other threads still read the tile).
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

const char *kTwoTiles = R"(import tilelang.language as T

def k(M, N, bm, bn, threads):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), O: T.Tensor((M, bn), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            acc = T.alloc_fragment((bm, bn), "float32")
            t_f = T.alloc_fragment((bm, bn), "float32")
            a_s = T.alloc_shared((bm, bn), "float32")
            b_s = T.alloc_shared((bm, bn), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(N, bn), num_stages=1):
                T.copy(A[bx * bm, ko * bn], a_s)
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] += a_s[i, bn - 1 - j]
                T.copy(B[bx * bm, ko * bn], b_s)
                for i, j in T.Parallel(bm, bn):
                    t_f[i, j] = b_s[i, j] * 2 + acc[i, j]
                T.copy(t_f, b_s)
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] += b_s[bm - 1 - i, j]
            T.copy(acc, O[bx * bm, 0])
    return main
)";

struct Case {
    const char *arch = "sm_80";
    int M = 64, N = 160, bm = 32, bn = 32, threads = 64;
};

void expectBothInFlight(const Case &c) {
    auto s = [](int v) { return std::to_string(v); };
    std::string src = std::string(kTwoTiles) + "kern = k(" + s(c.M) + ", " + s(c.N) + ", " + s(c.bm) + ", " + s(c.bn) + ", " +
                      s(c.threads) + ")\n";
    const simtest::Scalars scalars;
    LowerRun r;
    simtest::lowerFor(r, src, c.arch);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    const int trips = (c.N + c.bn - 1) / c.bn;
    if (trips > 1) {
        // Two tiles, two commit groups: the prologue issues both, each is refilled after its last use. The second
        // tile's first use waits with the first tile's refill (made before it) the only newer group.
        EXPECT_EQ(simtest::callCounts(k)[lib::Fn::CopyG2S], 4) << r.diags();
        EXPECT_EQ(simtest::cpAsyncWaits(k), (std::vector<int64_t>{1, 1, 0})) << r.diags();
    }

    std::map<std::string, std::vector<double>> io;
    io["A"] = simtest::randomData((size_t)c.M * c.N, 21, -1, 1);
    io["B"] = simtest::randomData((size_t)c.M * c.N, 22, -1, 1);
    std::vector<double> want((size_t)c.M * c.bn, 0);
    for (int b0 = 0; b0 < c.M; b0 += c.bm) {
        std::vector<double> acc((size_t)c.bm * c.bn, 0), t((size_t)c.bm * c.bn);
        for (int ko = 0; ko < trips; ++ko) {
            auto at = [&](const std::vector<double> &x, int i, int j) { return x[(size_t)(b0 + i) * c.N + ko * c.bn + j]; };
            for (int i = 0; i < c.bm; ++i)
                for (int j = 0; j < c.bn; ++j) acc[(size_t)i * c.bn + j] += at(io["A"], i, c.bn - 1 - j);
            for (int i = 0; i < c.bm; ++i)
                for (int j = 0; j < c.bn; ++j) t[(size_t)i * c.bn + j] = at(io["B"], i, j) * 2 + acc[(size_t)i * c.bn + j];
            for (int i = 0; i < c.bm; ++i)
                for (int j = 0; j < c.bn; ++j) acc[(size_t)i * c.bn + j] += t[(size_t)(c.bm - 1 - i) * c.bn + j];
        }
        for (int i = 0; i < c.bm; ++i)
            for (int j = 0; j < c.bn; ++j) want[(size_t)(b0 + i) * c.bn + j] = acc[(size_t)i * c.bn + j];
    }
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        io["O"].assign(want.size(), std::nan(""));
        simtest::Tensors ptrs;
        for (auto &[n, vec] : io) ptrs[n] = &vec;
        Outcome o = simtest::runCaught(kernel, ptrs, scalars, seed);
        for (size_t e = 0; e < want.size(); ++e)
            o.check(std::fabs(io["O"][e] - want[e]) <= 1e-4 * std::max(1.0, std::fabs(want[e])),
                    [&] { return "O[" + std::to_string(e) + "] = " + std::to_string(io["O"][e]) + ", expected " + std::to_string(want[e]); });
        return o;
    };
    for (uint64_t seed : {0, 1, 2}) {
        Outcome o = run(k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
    if (trips < 2) return;
    auto late = simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &call, simtest::Role) -> ir::Stmt {
        if (!lib::is(call, lib::Fn::CpAsyncWait)) return simtest::same(e);
        return lib::stmt(lib::Fn::CpAsyncWait, {ir::intImm(*ir::constInt(lib::arg(call, lib::Fn::CpAsyncWait, "pending")) + 1)}, e.loc);
    });
    EXPECT_TRUE(simtest::anyFailure(run(*late, 0))) << "waits leaving one more group in flight went unnoticed";
    int removed = 0;
    auto early = simtest::withoutRefillBarriers(k, removed);
    EXPECT_EQ(removed, 2);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught = caught || simtest::anyFailure(run(*early, seed));
    EXPECT_TRUE(caught) << "refills without their barrier went unnoticed";
}

} // namespace

TEST(LowerSimOneStageRefill, Sm80FiveTrips) { expectBothInFlight({}); }
TEST(LowerSimOneStageRefill, Sm90aFiveTrips) { expectBothInFlight({"sm_90a", 64, 160, 32, 32, 128}); }
TEST(LowerSimOneStageRefill, Sm80TwoTrips) { expectBothInFlight({"sm_80", 64, 64, 32, 32, 64}); }
TEST(LowerSimOneStageRefill, Sm90aOneTrip) { expectBothInFlight({"sm_90a", 32, 32, 32, 32, 128}); }
