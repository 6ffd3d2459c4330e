/// \file
/// Parts of shared tiles in the panel layout (whole swizzle panels of a tile's columns) loaded by T.tma_copy and read
/// by wgmma, on the CPU simulator: tests/lit/codegen/warp_roles_panel_parts.tile's kernel (each 64-column run of K
/// into its own panel on a barrier of its own, QK^T over K-major parts, a product over N-major parts of B), and
/// TileLang's examples/warp_specialize/example_warp_specialize_flashmla.py (FlashMLA's hand-written warp
/// specialization: two warp groups each loading halves of the KV tiles in 64-column parts and multiplying on them)
/// at a reduced shape (dim 256, seqlen_kv 256: two parts per half, two loop iterations), its structure and statements
/// unchanged, against a float64 reference of its attention, under several interleavings without races.
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

/// tests/lit/codegen/warp_roles_panel_parts.tile's kernel lowered for sm_90a (null: a test failure).
const tilec::ir::Kernel *partsKernel(tilec::lowertest::LowerRun &r) {
    return sim::loweredKernel(r, sim::withExport("warp_roles_panel_parts.tile", "k = parts()", "tests/lit/codegen"), "sm_90a", "k");
}

TEST(LowerSimPanelParts, TmaPartsAndWgmmaOnPartsExact) {
    constexpr int M = 64, N = 64, D = 256;
    tilec::lowertest::LowerRun r;
    const tilec::ir::Kernel *k = partsKernel(r);
    ASSERT_TRUE(k);
    std::vector<double> Q = sim::quarters(2 * M * D, 3), K = sim::quarters(N * D, 4), want(2 * M * N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double s0 = 0, s1 = 0;
            for (int d = 0; d < D; ++d) s0 += Q[i * D + d] * K[j * D + d];
            // S1 = Q1[:, 0:64] K[:, 64:128] + Q1[:, 128:192] K[:, 192:256] (K's rows are the K dimension)
            for (int q = 0; q < 64; ++q)
                s1 += Q[(M + i) * D + q] * K[q * D + 64 + j] + Q[(M + i) * D + 128 + q] * K[q * D + 192 + j];
            want[i * N + j] = s0, want[(M + i) * N + j] = s1;
        }
    for (uint64_t seed : {0u, 1u, 2u, 3u}) {
        SCOPED_TRACE("interleaving " + std::to_string(seed));
        std::vector<double> S(2 * M * N, NAN);
        sim::Outcome o = sim::runCaught(*k, {{"Q", &Q}, {"K", &K}, {"S", &S}}, {}, seed);
        EXPECT_EQ(o.error, "");
        for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
        sim::expectNear(S, want, 0, "S");
    }
}

/// Each part must land at its own panel: with every part's TMA box aimed at the tile's first panel (the whole
/// tile's address, as the loads had before parts had their own), the products read panels never loaded.
TEST(LowerSimPanelParts, PartsLoadedAtTheFirstPanelAreWrong) {
    constexpr int M = 64, N = 64, D = 256;
    tilec::lowertest::LowerRun r;
    const tilec::ir::Kernel *k = partsKernel(r);
    ASSERT_TRUE(k);
    int parts = 0;
    auto mutant = sim::rewriteCalls(*k, [&](const tilec::ir::Evaluate &e, const tilec::ir::Call &c, sim::Role) {
        if (!tilec::passes::lib::is(c, tilec::passes::lib::Fn::TmaLoadTile)) return sim::same(e);
        std::vector<tilec::ir::Expr> args = c.args;
        for (auto &a : args)
            if (const tilec::ir::Load *l = tilec::passes::addressedLoad(a); l && l->buffer->name == "K_s" && !tilec::ir::constInt(l->indices[0]))
                a = tilec::passes::addressOf(l->buffer, {tilec::ir::intImm(0, l->indices[0]->dtype)}), ++parts;
        return tilec::ir::Evaluate::make(tilec::ir::Call::make(c.dtype, c.name, args, c.loc), e.loc);
    });
    EXPECT_GT(parts, 0);
    std::vector<double> Q = sim::quarters(2 * M * D, 3), K = sim::quarters(N * D, 4), S(2 * M * N, NAN);
    sim::Outcome o = sim::runCaught(*mutant, {{"Q", &Q}, {"K", &K}, {"S", &S}});
    bool nan = false;
    for (double v : S) nan |= std::isnan(v);
    EXPECT_TRUE(!o.error.empty() || nan) << "a kernel whose parts all land on the first panel ran through with finite values";
}

TEST(LowerSimPanelParts, FlashMlaExampleRaceFreeAndRight) {
    const std::string src = sim::FlashMlaExample::source();
    if (src.empty()) GTEST_SKIP() << sim::FlashMlaExample::kNoSource;
    tilec::lowertest::LowerRun r;
    const tilec::ir::Kernel *k = sim::loweredKernel(r, src, "sm_90a");
    ASSERT_TRUE(k);
    sim::FlashMlaExample().expectRight(*k, {0, 5, 9});
}

} // namespace
