/// \file
/// The Hopper schedule checked for numbers on the CPU simulator (src/sim/Simulator.h): examples/gemm.tile (and
/// variants: stages, shapes the tiles do not divide, one and two consumer warpgroups, bfloat16, transposed B)
/// lowered for sm_90a into warp roles (TMA producer, wgmma consumers, full/empty mbarriers) and for sm_90 (one
/// producer warp, mma.sync), with TMA and without, and run under several seeded interleavings against a float64
/// reference; and the epilogue (stmatrix into a shared staging buffer, TMA stores), with the mutations of it the
/// simulator must report. The schedule's other mutations and TileLang's explicit warp roles are in
/// LowerSimHopperMutantTest.cpp (helpers: LowerSimHopperUtil.h).
#include "LowerSimHopperUtil.h"

#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <map>

using namespace tilec;
using namespace tilec::simtest::gemm;
using tilec::simtest::Outcome;
using tilec::simtest::quarters;

namespace {

TEST(SimHopper, SeedGemmConfiguration) { hopperCase({130, 136, 320, 128, 128, 64, 3, 128}); }
TEST(SimHopper, TwoStagesOddShape) { hopperCase({100, 72, 200, 64, 64, 64, 2, 128}); }
TEST(SimHopper, OneStageReleasesItsOwnStage) { hopperCase({100, 72, 200, 64, 64, 64, 1, 128}); }
TEST(SimHopper, FourStagesMoreThanIterations) { hopperCase({64, 64, 192, 64, 64, 64, 4, 128}); }
TEST(SimHopper, TwoConsumerWarpgroups) { hopperCase({200, 72, 136, 128, 64, 64, 3, 256}); }
TEST(SimHopper, BFloat16) { hopperCase({72, 104, 160, 64, 64, 64, 2, 128, "bfloat16"}); }
TEST(SimHopper, TransposedB) { hopperCase({100, 72, 200, 64, 64, 64, 3, 128, "float16", true}); }
TEST(SimHopper, TransposedBTwoConsumerWarpgroupsBFloat16) { hopperCase({136, 64, 104, 128, 64, 32, 2, 256, "bfloat16", true}); }

/// The cp.async variant's products and transfers: how many T.gemms run on wgmma and on mma.sync, and the
/// layout (copy_g2s's `swizzle`) each transfer stores its tile in, by destination buffer.
struct PlainCalls {
    int wgmma = 0, mma = 0;
    std::map<std::string, int64_t> layout;
    explicit PlainCalls(const ir::Kernel &k) {
        struct V : ir::IRVisitor {
            using IRVisitor::visit;
            PlainCalls *out = nullptr;
            void visit(const ir::Call &c) override {
                const lib::Info *f = lib::find(c.name);
                if (f && (f->fn == lib::Fn::WgmmaSS || f->fn == lib::Fn::WgmmaSSInit || f->fn == lib::Fn::WgmmaRS)) ++out->wgmma;
                if (f && (f->fn == lib::Fn::GemmSS || f->fn == lib::Fn::GemmRS)) ++out->mma;
                if (passes::isTileTransfer(c))
                    out->layout[passes::addressedLoad(lib::arg(c, f->fn, "dst"))->buffer->name] = *ir::constInt(lib::arg(c, f->fn, "swizzle"));
                IRVisitor::visit(c);
            }
        } v;
        v.out = this;
        v.visit(k.body);
    }
};

/// sm_90a without TMA: wgmma over cp.async tiles whose rows are wider than 128 bytes, stored by the transfers
/// in the panel layout (layout 2) that wgmma's descriptors walk: N-major and K-major, A M-major, float16,
/// bfloat16, tf32 and float8 (K-major only), one and two warpgroups; the simulator's wgmma reads the tiles by
/// absolute swizzled addresses, as the hardware does.
TEST(SimHopper, CpAsyncWgmmaOverPanels) {
    struct Case {
        GemmCase g;
        std::map<std::string, int64_t> layout;
    };
    const Case cases[] = {
        {{130, 136, 320, 128, 128, 64, 3, 128}, {{"A_shared", 1}, {"B_shared", 2}}},                      // B's rows: 256 bytes
        {{100, 72, 320, 64, 64, 128, 2, 128}, {{"A_shared", 2}, {"B_shared", 1}}},                         // A's: 256 bytes
        {{100, 72, 200, 64, 64, 128, 2, 128, "float16", true}, {{"A_shared", 2}, {"B_shared", 2}}},        // K-major B
        {{72, 264, 160, 64, 256, 32, 2, 256, "bfloat16"}, {{"A_shared", 1}, {"B_shared", 2}}},             // 4 panels, 2 warpgroups
        {{200, 72, 136, 128, 64, 192, 2, 256, "float16", true}, {{"A_shared", 2}, {"B_shared", 2}}},       // 384-byte rows
        {{64, 72, 200, 64, 64, 64, 2, 128, "float32", true}, {{"A_shared", 2}, {"B_shared", 2}}},          // tf32
        {{64, 64, 512, 64, 64, 256, 2, 128, "float8_e4m3", true}, {{"A_shared", 2}, {"B_shared", 2}}},     // float8
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(std::string(c.g.dtype) + " " + std::to_string(c.g.bm) + "x" + std::to_string(c.g.bn) + "x" +
                     std::to_string(c.g.bk) + (c.g.transB ? " transB" : ""));
        Lowered l(c.g, true);
        ASSERT_TRUE(l.plain && !l.plain->producerThreads) << l.noTma.diags();
        PlainCalls calls(*l.plain);
        EXPECT_EQ(calls.wgmma, 1);
        EXPECT_EQ(calls.mma, 0);
        EXPECT_EQ(calls.layout, c.layout);
        expectCorrect(*l.plain, c.g, {0});
    }
}


/// Issue 23: K a T.dynamic size, 0 among its values. No trips of the producer's or the consumers' loops, the
/// barriers' phases still in step across the tiles a block walks, the accumulator cleared and stored as 0; A's
/// and B's maps (of tensors with no elements) read the zero tile, as the launcher encodes them. The variant
/// without TMA, beside it, as well.
TEST(SimHopper, DynamicKOfZero) {
    for (const char *arch : {"sm_90a", "sm_90"}) {
        std::string src = gemmSource({128, 128, 64, 64, 64, 64, 2, 128});
        replace(src, "k = matmul(128, 128, 64,", "k = matmul(128, 128, T.dynamic(\"K\"),");
        Variant t{*Target::parse(arch), {}};
        t.options.clusters = false;
        for (bool tma : {true, false}) {
            t.options.tma = tma;
            LowerRun r;
            r.run(src, "gemm.tile", t);
            const ir::Kernel *k = r.kernel("k");
            ASSERT_TRUE(k) << r.diags();
            EXPECT_EQ(!k->tensorMaps.empty(), tma) << arch;
            for (int K : {0, 72}) {
                SCOPED_TRACE(std::string(arch) + (tma ? ", TMA" : ", no TMA") + ", K = " + std::to_string(K));
                expectCorrect(*k, {128, 128, K, 64, 64, 64, 2, 128}, {0, 1}, {{"K", (double)K}});
            }
        }
    }
}

// sm_90 (no `a`): the same roles and rings, one producer warp, mma.sync reading TMA's panel layout (B's
// 256-byte rows are two 128-byte panels; 64-wide fp16 tiles are one); tf32 takes the plain-load path.
TEST(SimSm90, SeedGemmConfiguration) { hopperCase({130, 136, 320, 128, 128, 64, 3, 128}, "sm_90"); }
TEST(SimSm90, TwoStagesOddShape) { hopperCase({100, 72, 200, 64, 64, 64, 2, 128}, "sm_90"); }
TEST(SimSm90, OneStage) { hopperCase({100, 72, 200, 64, 64, 64, 1, 128}, "sm_90"); }
TEST(SimSm90, TwoConsumerWarpgroups) { hopperCase({200, 72, 136, 128, 64, 64, 3, 256}, "sm_90"); }
TEST(SimSm90, TransposedBBFloat16) { hopperCase({100, 72, 200, 64, 64, 32, 3, 128, "bfloat16", true}, "sm_90"); }
TEST(SimSm90, Tf32PanelsOfPlainLoads) { hopperCase({72, 96, 96, 64, 64, 64, 2, 128, "float32"}, "sm_90"); }

TEST(SimSm90, OneProducerWarpMmaSyncNoSetmaxnreg) {
    GemmCase g{130, 136, 320, 128, 128, 64, 3, 128};
    Lowered l(g, false, "sm_90");
    ASSERT_TRUE(l.roles) << l.r.diags();
    EXPECT_EQ(l.roles->producerThreads, 32);
    std::map<lib::Fn, int> calls;
    struct Count : ir::IRVisitor {
        using IRVisitor::visit;
        std::map<lib::Fn, int> *calls = nullptr;
        const ir::WarpRoles *roles = nullptr;
        void visit(const ir::Call &c) override {
            if (auto *i = lib::find(c.name)) ++(*calls)[i->fn];
            IRVisitor::visit(c);
        }
        void visit(const ir::WarpRoles &r) override { roles = &r, IRVisitor::visit(r); }
    } v;
    v.calls = &calls;
    v.visit(l.roles->body);
    ASSERT_TRUE(v.roles);
    EXPECT_EQ(v.roles->producerRegs, 0);
    EXPECT_EQ(v.roles->consumerRegs, 0);
    EXPECT_EQ(calls[lib::Fn::GemmSSPanels], 1);
    EXPECT_EQ(calls[lib::Fn::TmaLoadTile], 2);
    EXPECT_EQ(calls[lib::Fn::WgmmaSS] + calls[lib::Fn::GemmSS] + calls[lib::Fn::CopyG2S], 0);
    // every consumer thread releases the stage it read (its own ldmatrix reads): without those arrivals the
    // producer warp and the consumers wait on each other
    Mutated m(*l.roles, [](const ir::Evaluate &e, const ir::Call &c, bool) {
        return lib::is(c, lib::Fn::MbarrierArriveEach) ? ir::Stmt() : ir::Evaluate::make(e.value, e.loc);
    });
    Outcome o = simulate(*m.kernel, g, 1);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("producer warps 0 (threads 128..159) waits on tilec_mbar["), std::string::npos) << o.error;
    // B's 256-byte rows read as the row layout instead of TMA's two 128-byte panels: wrong numbers
    Mutated rows(*l.roles, [](const ir::Evaluate &e, const ir::Call &c, bool) -> ir::Stmt {
        if (!lib::is(c, lib::Fn::GemmSSPanels)) return ir::Evaluate::make(e.value, e.loc);
        std::vector<ir::Expr> args = c.args;
        args[lib::argIndex(lib::Fn::GemmSSPanels, "swzB")] = ir::intImm(0, DType::Int32);
        return ir::Evaluate::make(ir::Call::make(c.dtype, c.name, args, c.loc), e.loc);
    });
    Outcome w = simulate(*rows.kernel, g, 0);
    EXPECT_GT(w.wrong, 0) << w.error;
}

// ---- the epilogue: stmatrix into a shared staging buffer, TMA stores (src/lower/StageEpilogue.cpp) ----


TEST(SimHopperEpilogue, AccumulatorsGoThroughStagingAndTmaStores) {
    // 64 x 128 tiles over one warpgroup: two 64 x 64 pieces per tile through two buffers; N = 152 and
    // M = 70 leave partial tiles, which the TMA store clips.
    const GemmCase g{70, 152, 128, 64, 128, 64, 2, 128};
    Lowered l(g);
    ASSERT_TRUE(l.roles) << l.r.diags();
    auto n = epilogueCalls(*l.roles);
    EXPECT_EQ(n[lib::Fn::StmatrixTile], 2);
    EXPECT_EQ(n[lib::Fn::TmaStoreTile], 2);
    EXPECT_EQ(n[lib::Fn::TmaStoreWait], 3); // one per piece, one before the block exits
    EXPECT_EQ(n[lib::Fn::FenceProxyAsync], 2);
    const ir::BufferNode *staging = nullptr;
    for (auto &b : l.roles->allocs)
        if (b->name == "tilec_epi") staging = b.get();
    ASSERT_TRUE(staging);
    EXPECT_EQ(staging->constElements(), 2 * 64 * 64);
    EXPECT_EQ(*l.roles->shared.offsetOf(staging) % 1024, 0);
    ASSERT_EQ(l.roles->tensorMaps.size(), 3u);
    EXPECT_EQ(l.roles->tensorMaps[2].tensor->name, "C");
    EXPECT_EQ(l.roles->tensorMaps[2].box, (std::vector<int64_t>{64, 64}));
    expectCorrect(*l.roles, g, {0, 1, 2});
}

TEST(SimHopperEpilogue, TwoWarpgroupsSplittingColumns) {
    // 64 x 256 over two warpgroups (wgmma m64n128 each): each warpgroup stores its own column half.
    const GemmCase g{64, 296, 64, 64, 256, 64, 2, 256};
    Lowered l(g);
    ASSERT_TRUE(l.roles) << l.r.diags();
    EXPECT_EQ(epilogueCalls(*l.roles)[lib::Fn::TmaStoreTile], 2);
    expectCorrect(*l.roles, g, {0, 1});
}

/// The kernel with every tma_store_wait keeping one more store in flight than it should.
std::shared_ptr<ir::Kernel> storeWaitsOneLate(const ir::Kernel &k) {
    return Mutated(k, [](const ir::Evaluate &e, const ir::Call &c, bool) -> ir::Stmt {
               if (!lib::is(c, lib::Fn::TmaStoreWait)) return ir::Evaluate::make(e.value, e.loc);
               int64_t pending = *ir::constInt(lib::arg(c, lib::Fn::TmaStoreWait, "pending"));
               return lib::stmt(lib::Fn::TmaStoreWait, {ir::intImm(pending + 1, DType::Int32)}, e.loc);
           }).kernel;
}

TEST(SimHopperEpilogue, StagingReusedBeforeItsStoreReadItIsARace) {
    // One piece per tile: each tile's piece reuses the buffer the previous tile's store reads (the blocks
    // walk two tiles each); waiting one store too late lets the next tile's stmatrix overwrite it.
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    auto k = storeWaitsOneLate(*l.roles);
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*k, kMutant, seed);
        ASSERT_FALSE(o.races.empty()) << "seed " << seed << ": " << o.error;
        EXPECT_NE(o.races[0].find("on tilec_epi["), std::string::npos) << o.races[0];
        EXPECT_NE(o.races[0].find("TMA store"), std::string::npos) << o.races[0];
        EXPECT_GT(o.wrong, 0) << "seed " << seed;
        // and the last store is still reading when the block exits
        EXPECT_NE(o.error.find("no tma_store_wait"), std::string::npos) << o.error;
    }
}

TEST(SimHopperEpilogue, NoWarpgroupBarrierAfterTheStoreWaitIsARace) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    int dropped = 0;
    Mutated m(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c, bool consumer) {
        if (consumer && lib::is(c, lib::Fn::NamedSync)) return ++dropped, ir::Stmt();
        return ir::Evaluate::make(e.value, e.loc);
    });
    ASSERT_EQ(dropped, 2);
    Outcome o = simulate(*m.kernel, kMutant, 0);
    ASSERT_FALSE(o.races.empty()) << o.error;
    EXPECT_NE(o.races[0].find("on tilec_epi["), std::string::npos) << o.races[0];
}

TEST(SimHopperEpilogue, NoProxyFenceBeforeTheStoreIsReported) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Mutated m(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c, bool consumer) {
        return consumer && lib::is(c, lib::Fn::FenceProxyAsync) ? ir::Stmt() : ir::Evaluate::make(e.value, e.loc);
    });
    Outcome o = simulate(*m.kernel, kMutant, 0);
    EXPECT_NE(o.error.find("without a fence.proxy.async"), std::string::npos) << o.error;
}

TEST(SimHopperEpilogue, OneBufferAndNone) {
    // --epilogue-buffers=1 (each piece waits for the previous store) and 0 (direct stores from registers).
    const GemmCase g{70, 152, 128, 64, 128, 64, 2, 128};
    for (int buffers : {1, 0}) {
        Variant t{*Target::parse("sm_90a"), {}};
        t.options.epilogueBuffers = buffers;
        LowerRun r;
        r.run(gemmSource(g), "gemm.tile", t);
        const ir::Kernel *roles = simtest::warpRoles(r);
        ASSERT_TRUE(roles) << r.diags();
        EXPECT_EQ(epilogueCalls(*roles)[lib::Fn::TmaStoreTile], buffers ? 2 : 0) << buffers;
        expectCorrect(*roles, g, {0, 1});
    }
}

TEST(SimHopperEpilogue, FourDimensionalDestination) {
    // Out[b, s, h, :] = X[b, s, :] @ W[h] into a (B, S, H, D) tensor (attention's O layout): the TMA stores'
    // map is 4-D, its box 1 in H and B; S = 100 leaves a partial tile of rows (clipped by the store), and
    // the 12 tiles are walked by two persistent blocks (each tile's stores waited for before the next one's
    // stmatrix).
    const int B = 2, S = 100, H = 3, D = 64, K = 128;
    const std::string src = R"(import tilelang.language as T


def heads_proj(B, S, H, D, K):
    @T.prim_func
    def kernel(X: T.Tensor((B, S, K), "float16"), W: T.Tensor((H, K, D), "float16"), Out: T.Tensor((B, S, H, D), "float16")):
        with T.Kernel(H, T.ceildiv(S, 64), B, threads=128) as (bx, by, bz):
            X_s = T.alloc_shared((64, 64), "float16")
            W_s = T.alloc_shared((64, D), "float16")
            acc = T.alloc_fragment((64, D), "float")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, 64), num_stages=2):
                T.copy(X[bz, by * 64:(by + 1) * 64, ko * 64:(ko + 1) * 64], X_s)
                T.copy(W[bx, ko * 64:(ko + 1) * 64, :], W_s)
                T.gemm(X_s, W_s, acc)
            T.copy(acc, Out[bz, by * 64:(by + 1) * 64, bx, :])
    return kernel


k = heads_proj()" + std::to_string(B) + ", " + std::to_string(S) + ", " + std::to_string(H) + ", " + std::to_string(D) + ", " +
                            std::to_string(K) + ")\n";
    Variant t{*Target::parse("sm_90a"), {}};
    t.options.clusters = false; // the simulator runs one block at a time
    LowerRun r;
    r.run(src, "proj.tile", t);
    const ir::Kernel *roles = simtest::warpRoles(r);
    ASSERT_TRUE(roles) << r.diags();
    EXPECT_TRUE(roles->persistent) << "the blocks (the simulator launches 2) walk the 12 tiles";
    EXPECT_EQ(epilogueCalls(*roles)[lib::Fn::TmaStoreTile], 1);
    bool map4 = false;
    for (auto &m : roles->tensorMaps) map4 |= m.tensor->name == "Out" && m.box == std::vector<int64_t>{64, 1, 64, 1};
    EXPECT_TRUE(map4) << "no 4-D tensor map of Out with the box {64, 1, 64, 1}";
    auto x = quarters((size_t)B * S * K, 1), w = quarters((size_t)H * K * D, 2);
    for (uint64_t seed : {0, 1, 3}) {
        std::vector<double> out((size_t)B * S * H * D, std::nan(""));
        Outcome run = simtest::runCaught(*roles, {{"X", &x}, {"W", &w}, {"Out", &out}}, {}, seed);
        EXPECT_EQ(run.error, "") << "seed " << seed;
        for (auto &race : run.races) ADD_FAILURE() << "seed " << seed << ": race: " << race;
        int wrong = 0;
        for (int b = 0; b < B; ++b)
            for (int i = 0; i < S; ++i)
                for (int h = 0; h < H; ++h)
                    for (int j = 0; j < D; ++j) {
                        double acc = 0;
                        for (int kk = 0; kk < K; ++kk) acc += x[((size_t)b * S + i) * K + kk] * w[((size_t)h * K + kk) * D + j];
                        const double got = out[(((size_t)b * S + i) * H + h) * D + j];
                        if (!(got == simtest::roundToDType(DType::Float16, acc)) && wrong++ == 0)
                            ADD_FAILURE() << "seed " << seed << ": Out[" << b << ", " << i << ", " << h << ", " << j << "] = " << got
                                          << ", expected " << acc;
                    }
        EXPECT_EQ(wrong, 0) << "seed " << seed;
    }
}

} // namespace
