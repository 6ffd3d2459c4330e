/// \file
/// Explicit warp roles without a producer (FlashMLA's kernel: `if tx < 128: ... else: ...`, threads=256), on
/// the CPU simulator: tests/lit/codegen/warp_roles_every_group_loads.tile's kernels, where each warp group issues
/// T.tma_copy loads of half of the tiles (on an mbarrier of its own) and multiplies on wgmma with all of them,
/// the other group's too. The products are right under several interleavings, with the loads in the roles and
/// with some before them (issued by the first group); without a group's wait for the other group's tiles, or
/// without the expect-tx of a group's load on the barrier it names, the simulator reports it.
#include "LowerSimUtil.h"
#include "SimTestUtil.h"

#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

namespace {

using namespace tilec;
namespace sim = tilec::simtest;
namespace lib = passes::lib;

constexpr int M = 64, N = 64, K = 64;

struct Data {
    std::vector<double> A = sim::quarters(2 * M * K, 7), B = sim::quarters(K * 2 * N, 8);
    std::vector<double> C = std::vector<double>(2 * M * N, std::nan("")), want = std::vector<double>(2 * M * N, 0);
    Data() {
        // Rows g*M.. of C: A's rows g*M.. times (B[:, :N] + B[:, N:]), the second group's doubled.
        for (int g = 0; g < 2; ++g)
            for (int i = 0; i < M; ++i)
                for (int j = 0; j < N; ++j) {
                    double p = 0;
                    for (int q = 0; q < K; ++q) p += A[(g * M + i) * K + q] * (B[q * 2 * N + j] + B[q * 2 * N + N + j]);
                    want[(g * M + i) * N + j] = g ? 2 * p : p;
                }
    }
    sim::Tensors tensors() { return {{"A", &A}, {"B", &B}, {"C", &C}}; }
};

const ir::Kernel *lowered(lowertest::LowerRun &r, const std::string &call) {
    r.run(sim::withExport("warp_roles_every_group_loads.tile", "k = " + call, "tests/lit/codegen"),
          "warp_roles_every_group_loads.tile", *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    EXPECT_TRUE(k && k->producerThreads) << r.diags();
    return k && k->producerThreads ? k : nullptr;
}

void expectRight(const ir::Kernel &k) {
    EXPECT_EQ(k.threads, 128); // one group's threads: what its tile statements are laid out over
    EXPECT_EQ(k.launchedThreads(), 256);
    for (uint64_t seed : {0, 1, 2, 3}) {
        SCOPED_TRACE(seed);
        Data d;
        sim::Outcome o = sim::runCaught(k, d.tensors(), {}, seed);
        EXPECT_EQ(o.error, "");
        EXPECT_TRUE(o.races.empty()) << o.races.front();
        sim::expectNear(d.C, d.want, 0, "C");
    }
}

TEST(SimEveryGroupLoads, EachGroupLoadsHalfTheTilesAndMultipliesWithAll) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r, "both_load()");
    ASSERT_TRUE(k);
    expectRight(*k);
}

TEST(SimEveryGroupLoads, LoadsBeforeTheRolesIssuedByTheFirstGroup) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r, "both_load(first_loads_a=True)");
    ASSERT_TRUE(k);
    expectRight(*k);
}

/// The kernel without the `nth` (from 0) call statement for which `pick` holds.
std::shared_ptr<ir::Kernel> without(const ir::Kernel &k, const std::function<bool(const ir::Call &)> &pick, int nth, int &seen) {
    return sim::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, sim::Role) {
        if (pick(c) && seen++ == nth) return ir::Stmt();
        return sim::same(e);
    });
}

bool onBarrier(const ir::Call &c, lib::Fn f, const std::string &name) {
    if (!lib::is(c, f)) return false;
    auto l = ir::as<ir::Call>(c.args[0]);
    return l && ir::as<ir::Load>(l->args[0]) && ir::as<ir::Load>(l->args[0])->buffer->name == name;
}

bool caught(const ir::Kernel &k) {
    bool any = false;
    for (uint64_t seed : {0, 1, 2, 3}) {
        Data d;
        sim::Outcome o = sim::runCaught(k, d.tensors(), {}, seed);
        for (size_t i = 0; i < d.C.size(); ++i) o.check(d.C[i] == d.want[i], [] { return std::string("C"); });
        any |= sim::anyFailure(o);
    }
    return any;
}

// The second group multiplies with B0_s, which the first group loads: only after its wait on ready0.
TEST(SimEveryGroupLoads, WithoutTheWaitForTheOtherGroupsTileIsARace) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r, "both_load()");
    ASSERT_TRUE(k);
    int seen = 0;
    auto mutant = without(*k, [](const ir::Call &c) { return onBarrier(c, lib::Fn::MbarrierWait, "ready0"); }, 1, seen);
    ASSERT_EQ(seen, 2); // the first group's wait and the second's
    EXPECT_TRUE(caught(*mutant));
}

// The second group's loads announce their bytes on ready1 (the barrier the user names) from its own first thread:
// without that expect-tx the barrier completes on the arrivals alone, before the tiles land.
TEST(SimEveryGroupLoads, WithoutTheExpectTxOfTheSecondGroupsLoadsIsARace) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r, "both_load()");
    ASSERT_TRUE(k);
    int seen = 0;
    auto mutant = without(*k, [](const ir::Call &c) { return onBarrier(c, lib::Fn::MbarrierExpectTx, "ready1"); }, 1, seen);
    ASSERT_EQ(seen, 2); // A1_s's and B1_s's
    EXPECT_TRUE(caught(*mutant));
}

} // namespace
