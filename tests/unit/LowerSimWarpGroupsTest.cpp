/// \file
/// Hand-written warp specialization on the CPU simulator, as TileLang's users write it. T.ws blocks of warp
/// groups that share no mbarrier (example_warp_specialize_gemm_copy_gemm_0_1.py, with a copy all groups run
/// together) are thread-range regions: the lowered kernel computes the product with no race, and without the
/// barrier between the shared copy and the products the simulator reports the race. A hand-written mbarrier
/// pipeline whose producer waits on the wrong phase is a deadlock the simulator reports with the line of the
/// wait (on a GPU: a hang). TileLang's asynchronous primitives (tests/lit/codegen/async_wgmma_primitives.tile:
/// T.wgmma_gemm with a run-time clear_accum, T.wait_wgmma, T.ptx_cp_async with a predicate) compute what
/// TileLang's do.
#include "LowerSimHopperUtil.h"

#include "tilec/IRPrinter.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace tilec;
using namespace tilec::simtest::gemm;
using tilec::simtest::Outcome;

namespace {

namespace lib = passes::lib;

const GemmCase kCase{64, 128, 96, 64, 128, 32, 0, 256};

std::string copyGemmSource() {
    return simtest::withExport("../tests/lit/codegen/warp_groups_no_barriers.tile", "k = copy_gemm_0_1(64, 128, 96, 64, 128, 32)");
}

TEST(SimWarpGroups, CopyGemm01ComputesTheProduct) {
    for (const char *arch : {"sm_80", "sm_90a"}) {
        SCOPED_TRACE(arch);
        lowertest::LowerRun r;
        r.run(copyGemmSource(), "warp_groups_no_barriers.tile", *Target::parse(arch));
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k) << r.diags();
        EXPECT_EQ(k->threads, 256);
        expectCorrect(*k, kCase, {0, 1, 2});
    }
}

TEST(SimWarpGroups, WithoutTheBarrierAfterTheSharedCopyIsARace) {
    lowertest::LowerRun r;
    r.run(copyGemmSource(), "warp_groups_no_barriers.tile", *Target::parse("sm_80"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    int dropped = 0;
    auto mutant = simtest::rewriteCalls(*k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) {
        if (lib::is(c, lib::Fn::Sync)) return ++dropped, ir::Stmt();
        return simtest::same(e);
    });
    ASSERT_GT(dropped, 0);
    Outcome o = simulate(*mutant, kCase, 0);
    EXPECT_TRUE(!o.races.empty() || o.wrong) << "a shared tile read before all threads stored it, unseen";
}

const GemmCase kRoles{128, 128, 192, 128, 128, 64, 0, 0};

/// tests/gpu/gemm_warp_roles.tile's ws_gemm (or `call` of `file`) with `from` replaced by `to` in its source (none
/// when empty), lowered for sm_90a into `r`: its warp-specialized kernel (null, a test failure, when it has none).
const ir::Kernel *brokenRoles(lowertest::LowerRun &r, const std::string &from, const std::string &to,
                              const std::string &file = "../tests/gpu/gemm_warp_roles.tile",
                              const std::string &call = "ws_gemm(128, 128, 192)") {
    std::string src = simtest::withExport(file, "k = " + call);
    auto at = from.empty() ? std::string::npos : src.find(from);
    EXPECT_TRUE(from.empty() || at != std::string::npos) << from;
    if (at != std::string::npos) src.replace(at, from.size(), to);
    r.run(src, file.substr(file.rfind('/') + 1), *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    EXPECT_TRUE(k && k->producerThreads) << r.diags();
    return k && k->producerThreads ? k : nullptr;
}

// The producer waits for the phase of parity 0 of compute_is_done before the consumer has ever arrived on it
// (a fresh barrier has completed only "parity 1"): both roles wait for each other.
TEST(SimWarpGroups, ProducerWaitingOnTheWrongParityDeadlocksAtItsWait) {
    lowertest::LowerRun r;
    const ir::Kernel *k = brokenRoles(r, "T.barrier_wait(compute_is_done, (ko + 1) % 2)", "T.barrier_wait(compute_is_done, ko % 2)");
    ASSERT_TRUE(k);
    Outcome o = simulate(*k, kRoles, 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("(the wait at line 24:"), std::string::npos) << o.error;
}

// The consumer does not wait for the tiles: its products read shared memory TMA is still writing.
TEST(SimWarpGroups, ConsumerNotWaitingForTheTilesIsCaught) {
    lowertest::LowerRun r;
    const ir::Kernel *k = brokenRoles(r, "T.barrier_wait(data_is_ready, ko % 2)", "T.barrier_wait(data_is_ready, (ko + 1) % 2)");
    ASSERT_TRUE(k);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught |= simtest::anyFailure(simulate(*k, kRoles, seed));
    EXPECT_TRUE(caught);
}

// A T.Pipelined(num_stages=S) loop of T.ws blocks with one buffer per operand and one mbarrier each way
// (TileLang's example_warp_specialize_gemm_softpipe_stage2.py) runs on rings of S stages, as TileLang pipelines
// it: the tiles and the mbarriers S each, the parities read at ko // S. Five K tiles wrap every ring; the
// product is right under three interleavings. num_stages 0 and 1 keep the one buffer.
const ir::Buffer *allocNamed(const ir::Kernel &k, const std::string &name) {
    for (auto &b : k.allocs)
        if (b && b->name == name) return &b;
    return nullptr;
}

TEST(SimWarpGroups, PipelinedRolesRunOnRingsOfTheirStages) {
    const GemmCase g{128, 128, 320, 128, 128, 64, 0, 0};
    for (int stages : {0, 1, 2, 3}) {
        SCOPED_TRACE(stages);
        lowertest::LowerRun r;
        const ir::Kernel *k = brokenRoles(r, "", "", "../tests/gpu/gemm_warp_roles.tile",
                                          "ws_gemm(128, 128, 320, num_stages=" + std::to_string(stages) + ")");
        ASSERT_TRUE(k);
        const int64_t ring = std::max(stages, 1);
        const ir::Buffer *a = allocNamed(*k, "A_shared"), *ready = allocNamed(*k, "data_is_ready"),
                         *done = allocNamed(*k, "compute_is_done");
        ASSERT_TRUE(a && ready && done);
        ASSERT_EQ((*a)->shape.size(), 3u);
        EXPECT_EQ(ir::constInt((*a)->shape[0]).value_or(-1), ring);
        EXPECT_EQ(ir::constInt((*ready)->shape[0]).value_or(-1), ring);
        EXPECT_EQ(ir::constInt((*done)->shape[0]).value_or(-1), ring);
        expectCorrect(*k, g, {0, 1, 2});
    }
}

// Two such loops in one kernel (the K range in halves, each loop with its own tiles and barriers): both ringed,
// the product right.
TEST(SimWarpGroups, TwoPipelinedRoleLoopsBothRunOnRings) {
    lowertest::LowerRun r;
    const ir::Kernel *k = brokenRoles(r, "", "", "../tests/lit/codegen/warp_roles_pipelined_rings.tile", "two_loops(128, 128, 512, 2)");
    ASSERT_TRUE(k);
    for (const char *name : {"A_s", "A2_s", "ready", "done2"}) {
        const ir::Buffer *b = allocNamed(*k, name);
        ASSERT_TRUE(b) << name;
        EXPECT_EQ(ir::constInt((*b)->shape[0]).value_or(-1), 2) << name;
    }
    expectCorrect(*k, GemmCase{128, 128, 512, 128, 128, 64, 0, 0}, {0, 1, 2});
}

// The rings are still guarded by the user's protocol: without the producer's wait for the consumer (the
// versioned compute_is_done), TMA overwrites a stage the consumer's wgmma is reading, which the simulator
// reports.
TEST(SimWarpGroups, PipelinedRolesWithoutTheProducersWaitAreCaught) {
    lowertest::LowerRun r;
    const ir::Kernel *k = brokenRoles(r, "", "", "../tests/gpu/gemm_warp_roles.tile", "ws_gemm(128, 128, 320, num_stages=2)");
    ASSERT_TRUE(k);
    int dropped = 0;
    auto mutant = simtest::rewriteCalls(*k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role role) {
        if (role == simtest::Role::Producer && lib::is(c, lib::Fn::MbarrierWait)) return ++dropped, ir::Stmt();
        return simtest::same(e);
    });
    ASSERT_EQ(dropped, 1);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught |= simtest::anyFailure(simulate(*mutant, GemmCase{128, 128, 320, 128, 128, 64, 0, 0}, seed));
    EXPECT_TRUE(caught) << "TMA overwrote a stage the consumer was reading, unseen";
}

// The same pipeline with its roles written as branches on the thread index (`if tx >= 128:` producer, `else:`
// consumer; the branches inside the K loop; an `elif` chain): threadRangeRoles makes them T.ws blocks, and the
// kernel computes the product under three interleavings without a race.
const char *kTxRoles = "../tests/lit/codegen/warp_roles_thread_ranges.tile";

TEST(SimWarpGroups, ThreadIndexRolesComputeTheProduct) {
    for (const char *form : {"else", "loop", "elif"}) {
        SCOPED_TRACE(form);
        lowertest::LowerRun r;
        const ir::Kernel *k = brokenRoles(r, "", "", kTxRoles, std::string("tx_roles(128, 128, 192, form=\"") + form + "\")");
        ASSERT_TRUE(k);
        EXPECT_EQ(k->producerThreads, 128);
        expectCorrect(*k, kRoles, {0, 1, 2});
    }
}

// Its producer (the `if tx >= 128:` branch in the K loop) waiting on the wrong parity: a deadlock located at the
// wait's line, as with T.ws blocks.
TEST(SimWarpGroups, ThreadIndexRolesWrongParityDeadlocksAtItsWait) {
    lowertest::LowerRun r;
    const ir::Kernel *k = brokenRoles(r, "T.barrier_wait(done, (ko + 1) % 2)", "T.barrier_wait(done, ko % 2)", kTxRoles,
                                      "tx_roles(128, 128, 192, form=\"loop\")");
    ASSERT_TRUE(k);
    Outcome o = simulate(*k, kRoles, 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
    std::string src = simtest::withExport(kTxRoles, "k = 0");
    auto line = 1 + std::count(src.begin(), src.begin() + (std::ptrdiff_t)src.find("T.barrier_wait(done, (ko + 1) % 2)"), '\n');
    EXPECT_NE(o.error.find("(the wait at line " + std::to_string(line) + ":"), std::string::npos) << o.error;
}

// Its consumer (the `else:` branch) waiting on the phase before the tiles': its products read shared memory TMA
// is still writing, a race (or wrong values) the simulator reports.
TEST(SimWarpGroups, ThreadIndexRolesConsumerNotWaitingIsCaught) {
    lowertest::LowerRun r;
    const ir::Kernel *k = brokenRoles(r, "T.barrier_wait(ready, ko % 2)", "T.barrier_wait(ready, (ko + 1) % 2)", kTxRoles,
                                      "tx_roles(128, 128, 192, form=\"loop\")");
    ASSERT_TRUE(k);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught |= simtest::anyFailure(simulate(*k, kRoles, seed));
    EXPECT_TRUE(caught);
}

// Code before the roles (a register and a shared table of K offsets the producer's TMA positions read): the
// consumer runs it and hands it over through tilec's prologue_done mbarrier; the product is right under three
// interleavings. Without the producer's wait for it, the producer reads the table while the consumer writes it:
// the simulator reports the race (or the wrong tiles it loads).
TEST(SimWarpGroups, CodeBeforeTheRolesIsHandedOverByAnMbarrier) {
    lowertest::LowerRun r;
    const ir::Kernel *k = brokenRoles(r, "", "", kTxRoles, "prologue_roles(128, 128, 192)");
    ASSERT_TRUE(k);
    expectCorrect(*k, kRoles, {0, 1, 2});
    int dropped = 0;
    auto mutant = simtest::rewriteCalls(*k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role role) {
        if (role == simtest::Role::Producer && lib::is(c, lib::Fn::MbarrierWait) &&
            ir::print(c.args[0]).find("prologue_done") != std::string::npos)
            return ++dropped, ir::Stmt();
        return simtest::same(e);
    });
    ASSERT_EQ(dropped, 1);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught |= simtest::anyFailure(simulate(*mutant, kRoles, seed));
    EXPECT_TRUE(caught) << "the producer read the prologue's table before the consumer wrote it, unseen";
}

// tests/gpu/gemm_warp_roles.tile's tx_prologue_gemm (what the GPU suite runs): the `if tx < 128:` / `elif` roles
// after the shared offset table, on partial tiles in every dimension (TMA's zero fill past the edges).
TEST(SimWarpGroups, ThreadIndexRolesAfterAPrologueOnPartialTiles) {
    lowertest::LowerRun r;
    const ir::Kernel *k = brokenRoles(r, "", "", "../tests/gpu/gemm_warp_roles.tile", "tx_prologue_gemm(160, 136, 200)");
    ASSERT_TRUE(k);
    expectCorrect(*k, GemmCase{160, 136, 200, 128, 128, 64, 0, 0}, {0, 1});
}

// Q K^T over two K tiles (cleared where j == 0, accumulated at j == 1), and one thread's 8-half copies of X's
// rows, the last row zero-filled by its false predicate.
TEST(SimWarpGroups, AsyncPrimitivesComputeTileLangsValues) {
    const int N = 256;
    for (const char *arch : {"sm_80", "sm_90a"}) {
        SCOPED_TRACE(arch);
        lowertest::LowerRun r;
        r.run(simtest::withExport("../tests/lit/codegen/async_wgmma_primitives.tile", "k = decode(256)"),
              "async_wgmma_primitives.tile", *Target::parse(arch));
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k) << r.diags();
        std::vector<double> q(64 * 128), kk((size_t)N * 128), x((size_t)N * 8), s(64 * (size_t)N, -1), y((size_t)N * 8, -1);
        for (size_t i = 0; i < q.size(); ++i) q[i] = (double)((i * 7) % 5) * 0.25 - 0.5;
        for (size_t i = 0; i < kk.size(); ++i) kk[i] = (double)((i * 3) % 7) * 0.125 - 0.375;
        for (size_t i = 0; i < x.size(); ++i) x[i] = (double)(i % 97) + 1;
        Outcome o = simtest::runCaught(*k, {{"Q", &q}, {"K", &kk}, {"S", &s}, {"X", &x}, {"Y", &y}}, {}, 1);
        ASSERT_EQ(o.error, "");
        ASSERT_TRUE(o.races.empty()) << o.races[0];
        for (int i = 0; i < 64; ++i)
            for (int c = 0; c < N; ++c) {
                double want = 0;
                for (int d = 0; d < 128; ++d) want += q[(size_t)i * 128 + d] * kk[(size_t)c * 128 + d];
                ASSERT_EQ(s[(size_t)i * N + c], want) << "S[" << i << ", " << c << "]";
            }
        for (int row = 0; row < N; ++row)
            for (int e = 0; e < 8; ++e)
                ASSERT_EQ(y[(size_t)row * 8 + e], row < N - 1 ? x[(size_t)row * 8 + e] : 0.0) << "Y[" << row << ", " << e << "]";
    }
}

} // namespace
