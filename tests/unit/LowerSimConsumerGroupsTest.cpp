/// \file
/// Explicit warp roles with several consumer warp groups, each running tile statements of its own (DeepSeek's
/// MLA decode kernels: `if tx < 128:` / `elif tx < 256:` consumers and a producer, threads=384), on the CPU
/// simulator: tests/lit/codegen/warp_roles_consumer_groups.tile's kernel, whose groups each multiply on wgmma,
/// reduce and copy through shared memory over their own 128 threads, the second reading what the first hands
/// over behind an mbarrier. Its product is right under several interleavings; without the second group's own
/// barrier between storing a tile and reading it transposed, or without its wait for the first group's tile,
/// the simulator reports the race. tests/lit/codegen/warp_roles_unpublished_exchange.tile's kernel hands row sums
/// from the first group to the second after both groups' last mbarrier arrival: the named barrier
/// orderRoleExchanges adds is what orders it.
#include "LowerSimUtil.h"
#include "SimTestUtil.h"

#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using namespace tilec;
namespace sim = tilec::simtest;
namespace lib = passes::lib;

constexpr int M = 64, N = 64, K = 64;

std::string source(const std::string &call = "two_consumers()") {
    return sim::withExport("warp_roles_consumer_groups.tile", "k = " + call, "tests/lit/codegen");
}

struct Data {
    std::vector<double> A = sim::quarters(M * K, 3), B = sim::quarters(K * 2 * N, 4);
    std::vector<double> C = std::vector<double>(M * 2 * N, std::nan("")), R = std::vector<double>(2 * M, std::nan(""));
    std::vector<double> wantC = std::vector<double>(M * 2 * N, 0), wantR = std::vector<double>(2 * M, 0);
    Data() {
        // C0 = A @ B[:, :N] and C1 = A @ B[:, N:]; R[0] the rows' maxima of C0; the second group's tile is
        // C1 transposed plus C0, C[:, N:] and R[1] (its rows' sums) of that.
        std::vector<double> c0(M * N, 0), c1(M * N, 0);
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j)
                for (int k = 0; k < K; ++k) {
                    c0[i * N + j] += A[i * K + k] * B[k * 2 * N + j];
                    c1[i * N + j] += A[i * K + k] * B[k * 2 * N + N + j];
                }
        for (int i = 0; i < M; ++i) {
            wantR[i] = -1e30;
            for (int j = 0; j < N; ++j) {
                const double second = c1[j * N + i] + c0[i * N + j];
                wantC[i * 2 * N + j] = c0[i * N + j];
                wantC[i * 2 * N + N + j] = second;
                wantR[i] = std::max(wantR[i], c0[i * N + j]);
                wantR[M + i] += second;
            }
        }
    }
    sim::Tensors tensors() { return {{"A", &A}, {"B", &B}, {"C", &C}, {"R", &R}}; }
};

const ir::Kernel *lowered(lowertest::LowerRun &r) {
    r.run(source(), "warp_roles_consumer_groups.tile", *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    EXPECT_TRUE(k && k->producerThreads) << r.diags();
    return k && k->producerThreads ? k : nullptr;
}

TEST(SimConsumerGroups, TwoConsumerGroupsComputeTheirOwnTiles) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r);
    ASSERT_TRUE(k);
    EXPECT_EQ(k->threads, 128); // one group's threads: what its tile statements are laid out over
    EXPECT_EQ(k->launchedThreads(), 384);
    for (uint64_t seed : {0, 1, 2, 3}) {
        SCOPED_TRACE(seed);
        Data d;
        sim::Outcome o = sim::runCaught(*k, d.tensors(), {}, seed);
        EXPECT_EQ(o.error, "");
        EXPECT_TRUE(o.races.empty()) << o.races.front();
        sim::expectNear(d.C, d.wantC, 0, "C");
        sim::expectNear(d.R, d.wantR, 0, "R");
    }
}

/// The kernel with its consumer role's statements passed through `keep` (false: removed).
std::shared_ptr<ir::Kernel> without(const ir::Kernel &k, const std::function<bool(const ir::Call &)> &drop, int &dropped) {
    return sim::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, sim::Role role) {
        if (role == sim::Role::Consumer && drop(c)) return ++dropped, ir::Stmt();
        return sim::same(e);
    });
}

bool caught(const ir::Kernel &k) {
    bool any = false;
    for (uint64_t seed : {0, 1, 2, 3}) {
        Data d;
        sim::Outcome o = sim::runCaught(k, d.tensors(), {}, seed);
        for (size_t i = 0; i < d.C.size(); ++i) o.check(d.C[i] == d.wantC[i], [] { return std::string("C"); });
        any |= sim::anyFailure(o);
    }
    return any;
}

// The second group's barrier between storing C1 into T_s and reading T_s transposed is its own: without it,
// its threads read elements other threads of the group have not stored yet.
TEST(SimConsumerGroups, WithoutTheGroupsOwnBarrierItsTransposeIsARace) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r);
    ASSERT_TRUE(k);
    int dropped = 0;
    auto mutant = without(*k, [](const ir::Call &c) { return lib::is(c, lib::Fn::Sync); }, dropped);
    ASSERT_EQ(dropped, 1);
    EXPECT_TRUE(caught(*mutant));
}

// The second group reads S_s, which the first stores, only after waiting for the first group's arrival.
TEST(SimConsumerGroups, WithoutTheWaitForTheFirstGroupsTileIsARace) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r);
    ASSERT_TRUE(k);
    int dropped = 0;
    auto mutant = without(*k, [](const ir::Call &c) {
        if (!lib::is(c, lib::Fn::MbarrierWait)) return false;
        auto l = ir::as<ir::Call>(c.args[0]);
        return l && ir::as<ir::Load>(l->args[0]) && ir::as<ir::Load>(l->args[0])->buffer->name == "handed";
    }, dropped);
    ASSERT_EQ(dropped, 1);
    EXPECT_TRUE(caught(*mutant));
}

// Products on mma.sync of tiles the producer's threads store (T.ptx_cp_async, announced by
// T.cp_async_barrier_noinc) and a T.copy from global memory in the second group, over its own threads.
TEST(SimConsumerGroups, StoredTilesOnMmaSyncAndTheSecondGroupsOwnCopy) {
    lowertest::LowerRun r;
    r.run(sim::withExport("warp_roles_consumer_groups.tile", "k = stored_tiles()", "tests/lit/codegen"),
          "warp_roles_consumer_groups.tile", *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k && k->producerThreads) << r.diags();
    std::vector<double> A = sim::quarters(M * K, 5), B = sim::quarters(K * N, 6), C(M * 2 * N, std::nan("")), want(M * 2 * N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double p = 0;
            for (int q = 0; q < K; ++q) p += A[i * K + q] * B[q * N + j];
            want[i * 2 * N + j] = p, want[i * 2 * N + N + j] = 2 * p;
        }
    for (uint64_t seed : {0, 1, 2}) {
        SCOPED_TRACE(seed);
        std::fill(C.begin(), C.end(), std::nan(""));
        sim::Outcome o = sim::runCaught(*k, {{"A", &A}, {"B", &B}, {"C", &C}}, {}, seed);
        EXPECT_EQ(o.error, "");
        EXPECT_TRUE(o.races.empty()) << o.races.front();
        sim::expectNear(C, want, 0, "C");
    }
}

// The first group stores its row sums to sums_s after its last arrival and the second divides by them after its own:
// the named barrier of both groups (orderRoleExchanges) orders the two; without it the simulator sees the race.
TEST(SimConsumerGroups, UnpublishedExchangeWaitsOnANamedBarrier) {
    lowertest::LowerRun r;
    r.run(sim::withExport("warp_roles_unpublished_exchange.tile", "k = exchange()", "tests/lit/codegen"),
          "warp_roles_unpublished_exchange.tile", *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k && k->producerThreads) << r.diags();
    std::vector<double> A = sim::quarters(M * K, 7), B = sim::quarters(K * 2 * N, 8), want(M * 2 * N, 0);
    for (int i = 0; i < M; ++i) {
        std::vector<double> c0(N, 0), c1(N, 0);
        double sum = 0;
        for (int j = 0; j < N; ++j) {
            for (int q = 0; q < K; ++q) c0[j] += A[i * K + q] * B[q * 2 * N + j], c1[j] += A[i * K + q] * B[q * 2 * N + N + j];
            sum += c0[j];
        }
        for (int j = 0; j < N; ++j) want[i * 2 * N + j] = c0[j], want[i * 2 * N + N + j] = c1[j] / sum;
    }
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        std::vector<double> C(M * 2 * N, std::nan(""));
        sim::Outcome o = sim::runCaught(kernel, {{"A", &A}, {"B", &B}, {"C", &C}}, {}, seed);
        for (size_t i = 0; i < C.size(); ++i)
            o.check(std::abs(C[i] - want[i]) <= 1e-6 * std::max(1.0, std::abs(want[i])), [i] { return "C[" + std::to_string(i) + "]"; });
        return o;
    };
    sim::expectClean([&](uint64_t seed) { return run(*k, seed); }, {0, 1, 2, 3, 7});
    int dropped = 0;
    auto mutant = sim::rewriteCalls(*k, [&](const ir::Evaluate &e, const ir::Call &c, sim::Role) {
        bool pair = (lib::is(c, lib::Fn::NamedSync) || lib::is(c, lib::Fn::NamedArrive)) &&
                    ir::constInt(c.args[1]) == std::optional<int64_t>(256);
        return pair ? (++dropped, ir::Stmt()) : sim::same(e);
    });
    ASSERT_EQ(dropped, 2);
    bool any = false;
    for (uint64_t seed : {0, 1, 2, 3, 7}) any |= sim::anyFailure(run(*mutant, seed));
    EXPECT_TRUE(any) << "without the named barrier the exchange is still ordered";
}

} // namespace
