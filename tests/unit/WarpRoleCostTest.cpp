// specializeWarps' cost test (include/tilec/passes/WarpRoleCost.h): warp roles or the cp.async pipeline for a
// loop whose consumers do more than issue wgmma, from the stage loads each keeps in flight per SM. The facts of
// the kernels measured on the H200 (docs/PERFORMANCE.md session 17) as the lowering sees them.
#include "tilec/IR.h"
#include "tilec/IROperator.h"
#include "tilec/Target.h"
#include "tilec/passes/WarpRoleCost.h"

#include <gtest/gtest.h>

using namespace tilec;
using namespace tilec::ir;
using namespace tilec::passes;

namespace {

const Target &h200() {
    static const Target t = *Target::parse("sm_90a");
    return t;
}

PipelineFacts facts(int stages, std::optional<int64_t> trips, int consumers, int warpRoleBlocks, int64_t shared, int64_t words,
                    int groups = 1) {
    PipelineFacts f;
    f.stages = stages, f.trips = trips, f.consumers = consumers, f.warpRoleBlocks = warpRoleBlocks;
    f.sharedBytes = shared, f.registerWords = words, f.groups = groups, f.consumerWork = true;
    return f;
}

} // namespace

TEST(WarpRoleCost, ResidentBlocksTakeTheTightestLimit) {
    const Target &t = h200();
    EXPECT_EQ(residentBlocks(128, 32, 0, t), 16);          // 2048 threads per SM
    EXPECT_EQ(residentBlocks(128, 88, 0, t), 5);           // 65536 / (128 x 88)
    EXPECT_EQ(residentBlocks(256, 56, 46080, t), 4);       // registers: 65536 / (256 x 56)
    EXPECT_EQ(residentBlocks(128, 56, 64512, t), 3);       // shared memory: 233472 / (64512 + 1024)
    EXPECT_EQ(residentBlocks(256, 152, 181248, t), 1);
    EXPECT_EQ(residentBlocks(128, 400, 0, t), 2);          // more than 255 registers spill down to 255
    EXPECT_EQ(residentBlocks(128, 32, 300 * 1024, t), 0);  // does not fit
    EXPECT_EQ(residentBlocks(32, 16, 0, t), 32);           // blocks per SM
}

TEST(WarpRoleCost, EstimatedRegistersAddRoomAndRoundToEight) {
    EXPECT_EQ(estimatedRegisters(64), 88);
    EXPECT_EQ(estimatedRegisters(32), 56);
    EXPECT_EQ(estimatedRegisters(33), 64);
    EXPECT_EQ(estimatedRegisters(0), 24);
}

// chunk_scaled_dot_kkt (gdn): 64x64 bf16 tiles scaled by the consumers before an RS product, two trips. 0.61x
// TileLang with warp roles, 1.05 on cp.async: two blocks per SM against five.
TEST(WarpRoleCost, ShortLoopOfScaledTilesKeepsCpAsync) {
    PipelineWeights w = weighPipelines(facts(2, 2, 128, 2, 27648, 64), h200());
    EXPECT_FALSE(w.warpRoles) << w.why;
    EXPECT_EQ(w.warpRoleInFlight, 4);
    EXPECT_EQ(w.cpAsyncBlocks, 5);
    EXPECT_EQ(w.cpAsyncInFlight, 5);
    EXPECT_NE(w.why.find("4 stage loads in flight per SM with warp roles"), std::string::npos) << w.why;
}

// convolution 64x128x32, 3 stages, 256 threads: the consumers fill im2col's operand. 0.85 against 1.00.
TEST(WarpRoleCost, SmallConvolutionTileKeepsCpAsync) {
    PipelineWeights w = weighPipelines(facts(3, 36, 256, 2, 46080, 32), h200());
    EXPECT_FALSE(w.warpRoles) << w.why;
    EXPECT_EQ(w.warpRoleInFlight, 6);
    EXPECT_EQ(w.cpAsyncInFlight, 8);
}

// convolution 128x256x64: one block per SM either way, and warp roles keep the whole ring in flight (it gained).
TEST(WarpRoleCost, LargeConvolutionTileTakesWarpRoles) {
    PipelineWeights w = weighPipelines(facts(3, 18, 256, 1, 181248, 128), h200());
    EXPECT_TRUE(w.warpRoles) << w.why;
    EXPECT_EQ(w.warpRoleInFlight, 3);
    EXPECT_EQ(w.cpAsyncInFlight, 2);
}

// MHA backward: one block with warp roles against two on cp.async, but four barrier groups: the consumers start
// on a stage's first tiles while three quarters of it still land (2.75 against 2; it gained 0.76 -> 0.89).
TEST(WarpRoleCost, BarrierGroupsCountForWarpRoles) {
    PipelineWeights w = weighPipelines(facts(2, std::nullopt, 128, 1, 76800, 192, 4), h200());
    EXPECT_TRUE(w.warpRoles) << w.why;
    EXPECT_EQ(w.groups, 4);
    EXPECT_EQ(w.warpRoleInFlight, 11);
    EXPECT_EQ(w.cpAsyncInFlight, 8);
    EXPECT_NE(w.why.find("2.75 stage loads"), std::string::npos) << w.why;
    // the same loop with one group: a tie, which keeps cp.async
    PipelineWeights one = weighPipelines(facts(2, std::nullopt, 128, 1, 76800, 192, 1), h200());
    EXPECT_FALSE(one.warpRoles) << one.why;
    EXPECT_EQ(one.warpRoleInFlight, one.cpAsyncInFlight);
}

// The trip count bounds what either path can have in flight; unknown, the ring's depth.
TEST(WarpRoleCost, TripsBoundTheLoadsInFlight) {
    PipelineWeights w = weighPipelines(facts(4, 1, 128, 2, 100000, 32), h200());
    EXPECT_EQ(w.warpRoleInFlight, 2);
    EXPECT_EQ(w.cpAsyncInFlight, 2); // 2 blocks by shared memory, one stage each
    EXPECT_FALSE(w.warpRoles);
    PipelineWeights open = weighPipelines(facts(4, std::nullopt, 128, 2, 100000, 32), h200());
    EXPECT_EQ(open.warpRoleInFlight, 8);
    EXPECT_EQ(open.cpAsyncInFlight, 6);
    EXPECT_TRUE(open.warpRoles);
    // one stage: the cp.async pipeline still has the stage it waits for in flight
    PipelineWeights single = weighPipelines(facts(1, 8, 128, 1, 50000, 32), h200());
    EXPECT_EQ(single.cpAsyncInFlight, single.cpAsyncBlocks);
}

// The shared-memory estimate places every buffer apart; past an SM's (MLA decode's 295936 bytes), the cp.async
// path is still counted at one block, as the warp roles are.
TEST(WarpRoleCost, OverfullEstimateCountsOneBlock) {
    PipelineWeights w = weighPipelines(facts(2, std::nullopt, 256, 1, 295936, 128, 2), h200());
    EXPECT_EQ(w.cpAsyncBlocks, 1);
    EXPECT_EQ(w.cpAsyncInFlight, 2);
    EXPECT_EQ(w.warpRoleInFlight, 5);
    EXPECT_TRUE(w.warpRoles) << w.why;
    EXPECT_NE(w.why.find("2.5 stage loads"), std::string::npos) << w.why;
}

// A cp.async kernel whose registers would spill keeps warp roles (setmaxnreg raises the consumers').
TEST(WarpRoleCost, SpillingCpAsyncKeepsWarpRoles) {
    PipelineWeights w = weighPipelines(facts(2, 8, 128, 1, 50000, 300), h200());
    EXPECT_GT(w.cpAsyncRegisters, 255);
    EXPECT_TRUE(w.warpRoles) << w.why;
    EXPECT_NE(w.why.find("would spill"), std::string::npos) << w.why;
}

// Consumers that only issue wgmma (GEMM, attention forward) are not weighed: warp roles as before.
TEST(WarpRoleCost, WgmmaOnlyConsumersKeepWarpRoles) {
    PipelineFacts f = facts(2, 2, 128, 2, 27648, 64);
    f.consumerWork = false;
    PipelineWeights w = weighPipelines(f, h200());
    EXPECT_TRUE(w.warpRoles);
    EXPECT_EQ(w.why, "the consumers only issue wgmma on the staged tiles");
}

// Register buffers live from the first to the last top-level statement that mentions them; fragments are split
// over the threads, local arrays are each thread's.
TEST(WarpRoleCost, PeakRegisterWordsFollowLiveRanges) {
    auto frag = [](const char *n, DType t) { return makeBuffer(n, Scope::Fragment, t, {intImm(64), intImm(64)}, {}); };
    Buffer a = frag("a", DType::Float32), b = frag("b", DType::Float32), c = frag("c", DType::BFloat16);
    Buffer l = makeBuffer("l", Scope::Local, DType::Float32, {intImm(8)}, {});
    auto touch = [](const Buffer &x) { return Store::make(x, {intImm(0), intImm(0)}, FloatImm::make(x->dtype, 0.0)); };
    Stmt s0 = touch(a), s1 = Seq::make({touch(a), touch(b)}), s2 = touch(c), s3 = touch(a);
    // a lives over s0..s3, b over s1, c over s2: a + b = 64 words at s1, a + c = 48 at s2
    EXPECT_EQ(peakRegisterWords({s0, s1, s2, s3}, {a, b, c}, 128), 64);
    // without a's last use, a and c no longer overlap
    EXPECT_EQ(peakRegisterWords({s0, s1, s2}, {a, b, c}, 128), 64);
    EXPECT_EQ(peakRegisterWords({s2}, {a, b, c}, 128), 16);
    EXPECT_EQ(peakRegisterWords({s0, s1, s2}, {a, b, c}, 256), 32);
    // a local array is every thread's own
    Stmt s4 = Store::make(l, {intImm(0)}, FloatImm::make(DType::Float32, 0.0));
    EXPECT_EQ(peakRegisterWords({Seq::make({s2, s4})}, {c, l}, 128), 24);
    EXPECT_EQ(peakRegisterWords({}, {a}, 128), 0);
}
