/// \file
/// Hand-written warp roles whose producer addresses per thread (tests/lit/codegen/warp_roles_cp_async.tile, as
/// DeepSeek V3.2's sparse MLA kernels write theirs) on the CPU simulator: the producer reads the thread index
/// as TileLang launched it (`tx - 128 * producer`, whichever threads tilec gives the role) and copies its rows
/// with T.ptx_cp_async, announced by T.cp_async_barrier_noinc. The product is right for either group as the
/// producer; a producer that reads the thread index as if it were another group's, one that never announces its
/// rows, and a consumer that does not wait for them are each a failure the simulator reports. Simulated as the
/// .cu's launcher starts it, the block runs every role's warp groups.
#include "LowerSimHopperUtil.h"

#include "tilec/IRPrinter.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

using namespace tilec;
using namespace tilec::simtest::gemm;
using tilec::simtest::Outcome;

namespace {

const char *kFile = "../tests/lit/codegen/warp_roles_cp_async.tile";
const GemmCase kCase{128, 128, 192, 64, 64, 64, 0, 0};

/// `call` of the file with `from` replaced by `to` (nothing when empty), lowered for sm_90a into `r`: its kernel
/// of warp roles, or null (a test failure).
const ir::Kernel *roles(lowertest::LowerRun &r, const std::string &call, const std::string &from = "", const std::string &to = "") {
    std::string src = simtest::withExport(kFile, "k = " + call);
    if (!from.empty()) {
        auto at = src.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        if (at == std::string::npos) return nullptr;
        src.replace(at, from.size(), to);
    }
    r.run(src, "warp_roles_cp_async.tile", *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    EXPECT_TRUE(k && k->producerThreads == 128) << r.diags();
    return k && k->producerThreads == 128 ? k : nullptr;
}

/// The source line (1-based) of the first occurrence of `text` in the file.
int lineOf(const std::string &text) {
    std::string src = simtest::withExport(kFile, "k = 0");
    return 1 + (int)std::count(src.begin(), src.begin() + (std::ptrdiff_t)src.find(text), '\n');
}

/// The threads per block of the one cudaLaunchKernel in `cu` (0 where there is not exactly one).
int launcherBlock(const std::string &cu) {
    static const std::regex launch(R"(cudaLaunchKernel\([^;]*\), dim3\((\d+)\), args, )");
    auto first = std::sregex_iterator(cu.begin(), cu.end(), launch);
    if (std::distance(first, std::sregex_iterator()) != 1) return 0;
    return std::stoi((*first)[1]);
}

/// `k` as the .cu's launcher of `r` starts it: the simulator runs a block of launchedThreads(), the consumers' and
/// the producer's together, so the launcher's block less the consumers' is the producer's here.
std::shared_ptr<ir::Kernel> asLaunched(lowertest::LowerRun &r, const ir::Kernel &k) {
    auto launched = std::make_shared<ir::Kernel>(k);
    launched->producerThreads = launcherBlock(r.generate().cuda) - k.threads;
    EXPECT_GE(launched->producerThreads, 0);
    return launched;
}

// The launcher of a kernel of one variant without tensor maps started the consumer's 128 threads alone (the
// IR's `threads`): the consumer then waited for rows no producer stores, and on the H100 mla_decode_ws and the
// seesaw sparse MLA kernel (explicit roles, cp.async and generic loads) hung. It starts every role's threads.
TEST(SimWarpRoleThreads, TheBlockAsLaunchedRunsEveryRole) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "cp_async_roles(128, 128, 192)");
    ASSERT_TRUE(k);
    auto launched = asLaunched(r, *k);
    EXPECT_EQ(launched->launchedThreads(), 256);
    expectCorrect(*launched, kCase, {0, 1});
}

// A block of the consumer's threads alone, as that launcher started it, is one the simulator refuses to run: its
// roles' threads are not the block's (on the GPU: the consumer's wait for the producer's rows never ends).
TEST(SimWarpRoleThreads, TheConsumersThreadsAloneAreAnError) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "cp_async_roles(128, 128, 192)");
    ASSERT_TRUE(k);
    auto consumerOnly = std::make_shared<ir::Kernel>(*k);
    consumerOnly->producerThreads = 0;
    Outcome o = simulate(*consumerOnly, kCase, 0);
    EXPECT_NE(o.error.find("the roles' threads differ from the launched threads"), std::string::npos) << o.error;
}

TEST(SimWarpRoleThreads, CpAsyncProducerComputesTheProductAsEitherGroup) {
    for (int producer : {1, 0}) {
        SCOPED_TRACE(producer);
        lowertest::LowerRun r;
        const ir::Kernel *k = roles(r, "cp_async_roles(128, 128, 192, producer=" + std::to_string(producer) + ")");
        ASSERT_TRUE(k);
        EXPECT_EQ(k->threads, 128);
        EXPECT_FALSE(k->needsTma) << "no T.tma_copy: no tensor map to encode";
        expectCorrect(*k, kCase, {0, 1, 2});
    }
}

// asyncPtxCopies: the producer's copies stay in flight past their issue (tilec.cp_async), each round's
// T.cp_async_barrier_noinc holding `full`'s phase open until they land (tilec.cp_async_arrive before the thread's
// arrival); the next round's refill of the one buffer waits for that group. The product stays right under four
// interleavings, the simulator landing each thread's copies only at its cp.async.mbarrier.arrive.
TEST(SimWarpRoleThreads, PtxCpAsyncStaysInFlightUntilTheNoincArrival) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "cp_async_roles(128, 128, 192)");
    ASSERT_TRUE(k);
    auto calls = simtest::callCounts(*k);
    EXPECT_EQ(calls[passes::lib::Fn::CpAsyncChunk], 2) << ir::print(*k);
    EXPECT_EQ(calls[passes::lib::Fn::CpAsyncArrive], 1) << ir::print(*k);
    EXPECT_EQ(simtest::cpAsyncWaits(*k), (std::vector<int64_t>{0, 0})) << "the refill's wait, then the role's last";
    expectCorrect(*k, kCase, {0, 1, 2, 3});
}

// The same kernel without its cp.async.mbarrier.arrive: the consumer's wait on `full` no longer waits for the
// copies, which land only at the next refill's wait; the products read the tiles before they land.
TEST(SimWarpRoleThreads, PtxCpAsyncWithoutItsArrivalIsCaught) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "cp_async_roles(128, 128, 192)");
    ASSERT_TRUE(k);
    int removed = 0;
    auto early = simtest::rewriteCalls(*k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) -> ir::Stmt {
        if (!passes::lib::is(c, passes::lib::Fn::CpAsyncArrive)) return simtest::same(e);
        ++removed;
        return nullptr;
    });
    ASSERT_EQ(removed, 1);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught |= simtest::anyFailure(simulate(*early, kCase, seed));
    EXPECT_TRUE(caught) << "tiles read before their cp.async landed, unseen";
}

// What the proof refuses keeps the synchronous copy (and the product right): a plain arrival after the copies
// (T.barrier_arrive publishes without waiting for them), and a store of the thread into its own destination
// while its copy may be in flight. The kernel with T.cp_async_barrier_noinc alone is asynchronous.
TEST(SimWarpRoleThreads, PtxCpAsyncTheProofRefusesStaysSynchronous) {
    const std::string arrive = "T.cp_async_barrier_noinc(full)";
    const std::string rewrite = "A_s[(bm // 16 - 1) * 16 + (tx - base) // 8, (tx - base) % 8 * 8] = "
                                "A[by * bm + (bm // 16 - 1) * 16 + (tx - base) // 8, ko * bk + (tx - base) % 8 * 8]\n"
                                "                    " + arrive;
    for (auto [from, to] : {std::pair<std::string, std::string>{"", ""}, {arrive, "T.barrier_arrive(full)"}, {arrive, rewrite}}) {
        SCOPED_TRACE(to);
        lowertest::LowerRun r;
        const ir::Kernel *k = roles(r, "cp_async_roles(128, 128, 192)", from, to);
        ASSERT_TRUE(k);
        auto calls = simtest::callCounts(*k);
        EXPECT_EQ(calls[passes::lib::Fn::CpAsyncChunk], from.empty() ? 2 : 0) << ir::print(*k);
        EXPECT_EQ(calls[passes::lib::Fn::CpAsyncArrive], from.empty() ? 1 : 0) << ir::print(*k);
        expectCorrect(*k, kCase, {0, 1});
    }
}

// The producer (warp group 1) subtracting 0 instead of 128: its rows are another group's, past its tiles.
TEST(SimWarpRoleThreads, ProducerReadingAnotherGroupsThreadIndexIsCaught) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "cp_async_roles(128, 128, 192, base=0)");
    ASSERT_TRUE(k);
    bool caught = false;
    for (uint64_t seed : {0, 1}) caught |= simtest::anyFailure(simulate(*k, kCase, seed));
    EXPECT_TRUE(caught) << "rows copied by the thread index of the wrong warp group, unseen";
}

// The producer never announces its rows: the consumer waits for a phase that never completes, a deadlock the
// simulator reports at the consumer's wait.
TEST(SimWarpRoleThreads, ProducerThatNeverArrivesDeadlocksAtTheConsumersWait) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "cp_async_roles(128, 128, 192)", "T.cp_async_barrier_noinc(full)", "T.barrier_arrive(empty)");
    ASSERT_TRUE(k);
    Outcome o = simulate(*k, kCase, 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("(the wait at line " + std::to_string(lineOf("T.barrier_wait(full, ko % 2)")) + ":"), std::string::npos)
        << o.error;
}

// The consumer waits for the phase before the rows': its products read rows the producer is still storing.
TEST(SimWarpRoleThreads, ConsumerNotWaitingForTheRowsIsCaught) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "cp_async_roles(128, 128, 192)", "T.barrier_wait(full, ko % 2)", "T.barrier_wait(full, (ko + 1) % 2)");
    ASSERT_TRUE(k);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught |= simtest::anyFailure(simulate(*k, kCase, seed));
    EXPECT_TRUE(caught) << "the consumer read rows before the producer stored them, unseen";
}

// Code before the roles that every warp group runs (tma_prologue_roles): T.tma_copy of A's row panel that one
// producer thread issues for all, an arrival by every thread of both roles (256) and a wait by both (or by the
// consumer alone); the producer streams B. The product is right under three interleavings.
TEST(SimWarpRoleThreads, TmaCopyAndArrivalsBeforeTheRolesComputeTheProduct) {
    for (const char *wait : {"all", "consumer"}) {
        SCOPED_TRACE(wait);
        lowertest::LowerRun r;
        const ir::Kernel *k = roles(r, std::string("tma_prologue_roles(128, 128, 192, wait=\"") + wait + "\")");
        ASSERT_TRUE(k);
        EXPECT_TRUE(k->needsTma);
        expectCorrect(*k, kCase, {0, 1, 2});
    }
}

// The panel's mbarrier expecting 384 arrivals (three warp groups') where two groups arrive: its phase never
// completes, a deadlock the simulator reports at the prologue's wait.
TEST(SimWarpRoleThreads, PrologueBarrierExpectingAThirdGroupDeadlocks) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "tma_prologue_roles(128, 128, 192)", "T.alloc_barrier(arrive_count=256)",
                                "T.alloc_barrier(arrive_count=384)");
    ASSERT_TRUE(k);
    Outcome o = simulate(*k, kCase, 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("(the wait at line " + std::to_string(lineOf("T.barrier_wait(a_ready, 0)")) + ":"), std::string::npos)
        << o.error;
}

// No group waits for the panel: the consumer's products read A's stages while TMA may still be writing them.
TEST(SimWarpRoleThreads, ConsumerNotWaitingForTheProloguesTmaIsCaught) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "tma_prologue_roles(128, 128, 192, wait=\"none\")");
    ASSERT_TRUE(k);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught |= simtest::anyFailure(simulate(*k, kCase, seed));
    EXPECT_TRUE(caught) << "the consumer read A's panel before TMA wrote it, unseen";
}

} // namespace
