/// \file
/// T.wgmma_gemm's groups in flight until the program's T.wait_wgmma (honourProgramWaits), on the CPU simulator, which
/// keeps each wgmma group in flight from its issue to the wait that retires it (its accumulators NaN, its shared
/// operands read only then): tests/lit/codegen/wgmma_program_waits.tile's kernel (groups across mbarrier waits,
/// T.wait_wgmma(1) leaving one in flight; and without that wait, tilec's own before the read) exact, and TileLang's
/// examples/warp_specialize/example_warp_specialize_flashmla.py at a reduced shape with its own waits, each of them
/// needed: the kernel with one of the program's waits left out is caught (a race, a wrong value or an error).
#include "FlashMlaExample.h"
#include "LowerSimUtil.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

namespace sim = tilec::simtest;
namespace lib = tilec::passes::lib;

/// The pending counts of a kernel's wgmma waits, in program order.
std::vector<int64_t> wgmmaWaits(const tilec::ir::Kernel &k) {
    std::vector<int64_t> out;
    sim::rewriteCalls(k, [&](const tilec::ir::Evaluate &e, const tilec::ir::Call &c, sim::Role) {
        if (lib::is(c, lib::Fn::WgmmaWait)) out.push_back(tilec::ir::constInt(c.args[0]).value_or(-99));
        return sim::same(e);
    });
    return out;
}

/// The kernel without its `nth` wgmma wait of pending count `pending` (0-based, program order).
std::shared_ptr<tilec::ir::Kernel> withoutWait(const tilec::ir::Kernel &k, int64_t pending, int nth = 0) {
    int seen = 0;
    return sim::rewriteCalls(k, [&](const tilec::ir::Evaluate &e, const tilec::ir::Call &c, sim::Role) -> tilec::ir::Stmt {
        if (lib::is(c, lib::Fn::WgmmaWait) && tilec::ir::constInt(c.args[0]) == std::optional<int64_t>(pending) && seen++ == nth)
            return nullptr;
        return sim::same(e);
    });
}

struct Waits {
    static constexpr int M = 64, N = 64, D = 128;
    std::vector<double> Q = sim::quarters(M * D, 3), K = sim::quarters(N * D, 4), want = std::vector<double>(3 * M * N, 0);
    Waits() {
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
                double s0 = 0, s1 = 0;
                for (int d = 0; d < D; ++d) s0 += Q[i * D + d] * K[j * D + d];
                for (int d = 64; d < D; ++d) s1 += Q[i * D + d] * K[j * D + d];
                want[i * N + j] = s0, want[(M + i) * N + j] = s1, want[(2 * M + i) * N + j] = s0;
            }
    }
    sim::Outcome run(const tilec::ir::Kernel &k, uint64_t seed, std::vector<double> &S) {
        S.assign(3 * M * N, NAN);
        return sim::runCaught(k, {{"Q", &Q}, {"K", &K}, {"S", &S}}, {}, seed);
    }
};

TEST(LowerSimProgramWaits, GroupsInFlightAcrossBarriersExact) {
    for (const char *form : {"ok", "unwaited"}) {
        SCOPED_TRACE(form);
        tilec::lowertest::LowerRun r;
        sim::lowerFor(r, sim::withExport("wgmma_program_waits.tile", std::string("k = waits(form=\"") + form + "\")", "tests/lit/codegen"),
                      "sm_90a");
        ASSERT_TRUE(r.lowered) << r.diags();
        const tilec::ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k);
        // the first warpgroup waits twice (1, then 0: its own or tilec's), the second once after its T.gemm
        EXPECT_EQ(wgmmaWaits(*k), (std::vector<int64_t>{1, 0, 0}));
        Waits w;
        for (uint64_t seed : {0u, 1u, 2u, 3u}) {
            SCOPED_TRACE("interleaving " + std::to_string(seed));
            std::vector<double> S;
            sim::Outcome o = w.run(*k, seed, S);
            EXPECT_EQ(o.error, "");
            for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
            sim::expectNear(S, w.want, 0, "S");
        }
    }
}

/// Without the wait that retires acc0's groups before the read, the read sees accumulators still in flight.
TEST(LowerSimProgramWaits, ReadBeforeTheWaitIsCaught) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, sim::withExport("wgmma_program_waits.tile", "k = waits()", "tests/lit/codegen"), "sm_90a");
    ASSERT_TRUE(r.lowered) << r.diags();
    auto mutant = withoutWait(*r.kernel("k"), 1);
    ASSERT_EQ(wgmmaWaits(*mutant), (std::vector<int64_t>{0, 0}));
    Waits w;
    std::vector<double> S;
    sim::Outcome o = w.run(*mutant, 0, S);
    for (size_t i = 0; i < S.size(); ++i) o.check(std::abs(S[i] - w.want[i]) <= 0, [&] { return "S[" + std::to_string(i) + "]"; });
    EXPECT_TRUE(sim::anyFailure(o)) << "acc0 read while its groups were in flight went unnoticed";
}

/// The program's waits kept as written (T.wait_wgmma(num_k_tiles), 2 at this shape, keeps half of QK^T in flight
/// in one warpgroup, T.wait_wgmma(1) the second P V in the other), none added, and each of those two needed:
/// without it the kernel is caught under some interleaving.
TEST(LowerSimProgramWaits, FlashMlaExampleWaitsAsWrittenAndEachNeeded) {
    const std::string src = sim::FlashMlaExample::source();
    if (src.empty()) GTEST_SKIP() << sim::FlashMlaExample::kNoSource;
    tilec::lowertest::LowerRun r;
    const tilec::ir::Kernel *lowered = sim::loweredKernel(r, src, "sm_90a");
    ASSERT_TRUE(lowered);
    const tilec::ir::Kernel &k = *lowered;
    // the first warpgroup: after the prologue's QK^T, after its P V, T.wait_wgmma(2), at the loop's end; the
    // second: after the prologue's QK^T, T.wait_wgmma(1), (0), at the loop's end
    EXPECT_EQ(wgmmaWaits(k), (std::vector<int64_t>{0, 0, 2, 0, 0, 1, 0, 0}));
    sim::FlashMlaExample f;
    f.expectRight(k, {0, 5});
    for (int64_t pending : {2, 1}) {
        SCOPED_TRACE("without T.wait_wgmma(" + std::to_string(pending) + ")");
        auto mutant = withoutWait(k, pending);
        bool caught = false;
        for (uint64_t seed : {0u, 5u, 9u}) caught |= sim::anyFailure(f.run(*mutant, seed));
        EXPECT_TRUE(caught) << "a needed wait left out went unnoticed";
    }
}

} // namespace
