/// \file
/// The simulator's happens-before model for the named barrier insertSyncs puts inside a branch of whole warps
/// (`if tx < 96: ... else: ...`, bar.sync of the branch's threads): an element that several threads of the
/// branch read and one of them then stores (a 1-element shared tile, every thread at index 0) is ordered by the
/// barrier between (the differential fuzzer's seeds 400077 and 401982 were reported as write-after-read races
/// although the lowered kernel had the barrier: the reads of several threads had lost which threads read), and
/// without the barrier, or where a reader did not pass it, it is still a race.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

namespace {

namespace sim = tilec::simtest;
namespace lib = tilec::passes::lib;

/// Threads 96..127 (warp 3) read the one element of `s` and then store it; threads 0..95 only write W.
const char *kSource = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(B: T.Tensor((1,), \"float32\"), W: T.Tensor((128,), \"float32\")):\n"
                      "    with T.Kernel(1, threads=128) as bx:\n"
                      "        s = T.alloc_shared((1,), \"float32\")\n"
                      "        tx = T.get_thread_binding()\n"
                      "        T.copy(B[0:1], s)\n"
                      "        if tx < 96:\n"
                      "            W[tx] = 0.5\n"
                      "        else:\n"
                      "            W[tx] = s[0] + T.cast(tx, \"float32\")\n"
                      "            s[0] = 1.0\n";

struct Lowered {
    tilec::lowertest::LowerRun r;
    std::vector<double> b{3.0}, w = std::vector<double>(128, -1);
    sim::Tensors tensors() { return {{"B", &b}, {"W", &w}}; }
    const tilec::ir::Kernel &kernel() { return *r.lowered->kernels[0]; }
};

TEST(LowerSimBranchBarrier, ReadsOfSeveralThreadsOrderedByTheBranchBarrier) {
    Lowered run;
    sim::lowerFor(run.r, kSource);
    ASSERT_TRUE(run.r.lowered) << run.r.diags();
    ASSERT_EQ(sim::callCounts(run.kernel())[lib::Fn::NamedSync], 1) << "insertSyncs orders the branch's read and store";
    for (uint64_t seed : {0, 1, 7}) {
        run.w.assign(128, -1);
        sim::Outcome o = sim::runCaught(run.kernel(), run.tensors(), {}, seed);
        ASSERT_TRUE(o.error.empty()) << o.error;
        ASSERT_TRUE(o.races.empty()) << o.races[0];
        for (int t = 0; t < 128; ++t) EXPECT_EQ(run.w[t], t < 96 ? 0.5 : 3.0 + t) << "W[" << t << "]";
    }
}

TEST(LowerSimBranchBarrier, WithoutTheBarrierTheStoreRacesWithTheOtherReaders) {
    Lowered run;
    sim::lowerFor(run.r, kSource);
    ASSERT_TRUE(run.r.lowered) << run.r.diags();
    int dropped = 0;
    auto k = sim::rewriteCalls(run.kernel(), [&](const tilec::ir::Evaluate &e, const tilec::ir::Call &c, sim::Role) {
        if (lib::is(c, lib::Fn::NamedSync)) return ++dropped, tilec::ir::Stmt();
        return sim::same(e);
    });
    ASSERT_EQ(dropped, 1);
    sim::Outcome o = sim::runCaught(*k, run.tensors());
    ASSERT_FALSE(o.races.empty()) << "the store of s[0] after other threads' reads, no barrier between, unseen";
    EXPECT_NE(o.races[0].find("write-after-read on s[0]"), std::string::npos) << o.races[0];
    EXPECT_NE(o.races[0].find("threads 96..127"), std::string::npos) << o.races[0];
}

/// A reader outside the barrier's threads (thread 0, before the branch, with no barrier after it) is not ordered
/// by the branch's barrier: the store races with it.
TEST(LowerSimBranchBarrier, AReaderOutsideTheBarrierStillRaces) {
    Lowered run;
    std::string src = kSource;
    src.insert(src.find("        if tx < 96:"), "        W[tx] = s[0]\n");
    sim::lowerFor(run.r, src);
    ASSERT_TRUE(run.r.lowered) << run.r.diags();
    // insertSyncs orders the block-wide read before the branch by a __syncthreads; without it the store in
    // warp 3 races with thread 0's read
    int dropped = 0;
    auto k = sim::rewriteCalls(run.kernel(), [&](const tilec::ir::Evaluate &e, const tilec::ir::Call &c, sim::Role) {
        if (lib::is(c, lib::Fn::Sync) && dropped++ == 1) return tilec::ir::Stmt();
        return sim::same(e);
    });
    sim::Outcome clean = sim::runCaught(run.kernel(), run.tensors());
    EXPECT_TRUE(clean.races.empty()) << clean.races[0];
    sim::Outcome o = sim::runCaught(*k, run.tensors());
    ASSERT_FALSE(o.races.empty()) << "the store of s[0] in warp 3 after thread 0's read, no barrier of both, unseen";
    EXPECT_NE(o.races[0].find("threads 0.."), std::string::npos) << o.races[0];
}

/// Warp 1 reads its neighbour's element of `s`, passes the branch's barrier, then each thread reads and stores
/// its own (the differential fuzzer's seed 130004738): the reads before the barrier and a thread's own read
/// after it are not one set of reads that needs a barrier after both (they were merged, and the store looked
/// like a write-after-read race although the lowered kernel had the barrier). Without it, still a race.
const char *kNeighbourSource = "import tilelang.language as T\n"
                               "@T.prim_func\n"
                               "def k(W: T.Tensor((64,), \"float32\")):\n"
                               "    with T.Kernel(1, threads=64) as bx:\n"
                               "        s = T.alloc_shared((32,), \"float32\")\n"
                               "        tx = T.get_thread_binding()\n"
                               "        T.fill(s, 1.0)\n"
                               "        if tx < 32:\n"
                               "            pass\n"
                               "        else:\n"
                               "            W[tx] = s[(tx + 1) % 32]\n"
                               "            s[tx % 32] = s[tx % 32] + 1.0\n";

TEST(LowerSimBranchBarrier, OwnReadAfterTheBarrierIsNotMergedWithTheReadsBeforeIt) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, kNeighbourSource);
    ASSERT_TRUE(r.lowered) << r.diags();
    const tilec::ir::Kernel &kernel = *r.lowered->kernels[0];
    ASSERT_EQ(sim::callCounts(kernel)[lib::Fn::NamedSync], 1) << "insertSyncs orders warp 1's read and store";
    std::vector<double> w(64, -1);
    sim::Outcome o = sim::runCaught(kernel, {{"W", &w}});
    ASSERT_TRUE(o.error.empty()) << o.error;
    ASSERT_TRUE(o.races.empty()) << o.races[0];
    for (int t = 32; t < 64; ++t) EXPECT_EQ(w[t], 1.0) << "W[" << t << "]";
    int dropped = 0;
    auto k = sim::rewriteCalls(kernel, [&](const tilec::ir::Evaluate &e, const tilec::ir::Call &c, sim::Role) {
        if (lib::is(c, lib::Fn::NamedSync)) return ++dropped, tilec::ir::Stmt();
        return sim::same(e);
    });
    ASSERT_EQ(dropped, 1);
    sim::Outcome bad = sim::runCaught(*k, {{"W", &w}});
    ASSERT_FALSE(bad.races.empty()) << "a thread's store after its neighbour's read, no barrier between, unseen";
    EXPECT_NE(bad.races[0].find("write-after-read on s["), std::string::npos) << bad.races[0];
}

} // namespace
