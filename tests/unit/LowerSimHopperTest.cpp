/// \file
/// The Hopper schedule checked for numbers and for synchronisation on the CPU simulator (src/sim/Simulator.h):
/// examples/gemm.tile (and variants: stages, shapes the tiles do not divide, one and two consumer
/// warpgroups, bfloat16, transposed B) lowered for sm_90a into warp roles (TMA producer, wgmma consumers,
/// full/empty mbarriers) and run under several seeded interleavings against a float64 reference, and
/// mutations of the lowered IR that a GPU would hang on or compute wrongly with, which the simulator must
/// report (a deadlock naming who waits on what, a race, a poisoned result). TileLang's explicit warp roles
/// (tests/gpu/gemm_warp_roles.tile: T.ws, T.alloc_barrier, T.tma_copy) run the same way, with mutations.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;
using tilec::simtest::quarters;
namespace lib = tilec::passes::lib;

namespace {

/// One instantiation of examples/gemm.tile, optionally in another type or with B stored (N, K).
struct GemmCase {
    int M, N, K, bm, bn, bk, stages, threads;
    const char *dtype = "float16";
    bool transB = false;
};

void replace(std::string &s, const std::string &from, const std::string &to) {
    auto at = s.find(from);
    ASSERT_NE(at, std::string::npos) << "examples/gemm.tile no longer has: " << from;
    s.replace(at, from.size(), to);
}

std::string gemmSource(const GemmCase &g) {
    std::string src = simtest::withExport("gemm.tile", "k = matmul(" + std::to_string(g.M) + ", " + std::to_string(g.N) + ", " +
                                                           std::to_string(g.K) + ", " + std::to_string(g.bm) + ", " +
                                                           std::to_string(g.bn) + ", " + std::to_string(g.bk) + ", " +
                                                           std::to_string(g.stages) + ", " + std::to_string(g.threads) + ")");
    if (g.transB) {
        replace(src, "B: T.Tensor((K, N)", "B: T.Tensor((N, K)");
        replace(src, "T.alloc_shared((block_K, block_N)", "T.alloc_shared((block_N, block_K)");
        replace(src, "T.copy(B[ko * block_K, bx * block_N], B_shared)", "T.copy(B[bx * block_N, ko * block_K], B_shared)");
        replace(src, "T.gemm(A_shared, B_shared, C_local)", "T.gemm(A_shared, B_shared, C_local, transpose_B=True)");
    }
    const std::string from = "\"float16\"", to = std::string("\"") + g.dtype + "\"";
    for (auto at = src.find(from); at != std::string::npos; at = src.find(from, at + to.size())) src.replace(at, from.size(), to);
    return src;
}

/// The sm_90a (or `arch`'s) lowerings: with TMA (warp roles) and without (the variant the launcher runs when
/// run-time pointers break TMA's rules).
struct Lowered {
    LowerRun r, noTma;
    const ir::Kernel *roles = nullptr, *plain = nullptr;
    explicit Lowered(const GemmCase &g, bool both = false, const char *arch = "sm_90a") {
        Variant t{*Target::parse(arch), {}};
        t.options.clusters = false; // the simulator runs one block at a time: clusters are not modelled (it refuses them)
        r.run(gemmSource(g), "gemm.tile", t);
        if (r.lowered)
            for (auto &k : r.lowered->kernels)
                if (k->producerThreads) roles = k.get();
        if (!both) return;
        t.options.tma = false;
        noTma.run(gemmSource(g), "gemm.tile", t);
        plain = noTma.kernel("k");
    }
};

struct Outcome {
    std::string error;               ///< a SimError (a deadlock, a misuse), empty when it ran through
    std::vector<std::string> races;
    int wrong = 0;                   ///< elements of C differing from the reference
    std::string firstWrong;
    int64_t switches = 0;            ///< agent resumptions
};

Outcome simulate(const ir::Kernel &k, const GemmCase &g, uint64_t seed, const std::map<std::string, double> &sizes = {}) {
    auto a = quarters((size_t)g.M * g.K, 1), b = quarters((size_t)g.K * g.N, 2);
    std::vector<double> c((size_t)g.M * g.N, std::nan(""));
    Outcome o;
    {
        Simulator s(k, {{"A", &a}, {"B", &b}, {"C", &c}}, sizes, seed);
        try {
            s.run();
        } catch (const simtest::SimError &e) {
            o.error = e.what();
        }
        o.races = s.races;
        o.switches = s.agentSwitches;
    }
    DType out = k.params[2].buffer->dtype;
    for (int i = 0; i < g.M; ++i)
        for (int j = 0; j < g.N; ++j) {
            double acc = 0;
            for (int kk = 0; kk < g.K; ++kk) acc += a[(size_t)i * g.K + kk] * b[g.transB ? (size_t)j * g.K + kk : (size_t)kk * g.N + j];
            double want = simtest::roundToDType(out, acc), got = c[(size_t)i * g.N + j];
            if (!(got == want) && o.wrong++ == 0)
                o.firstWrong = "C[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(got) + ", expected " + std::to_string(want);
        }
    return o;
}

void expectCorrect(const ir::Kernel &k, const GemmCase &g, std::initializer_list<uint64_t> seeds,
                   const std::map<std::string, double> &sizes = {}) {
    for (uint64_t seed : seeds) {
        Outcome o = simulate(k, g, seed, sizes);
        EXPECT_EQ(o.error, "") << "seed " << seed;
        for (auto &r : o.races) ADD_FAILURE() << "seed " << seed << ": race: " << r;
        EXPECT_EQ(o.wrong, 0) << "seed " << seed << ": " << o.firstWrong;
    }
}

/// Both variants of an sm_90a (or `arch`'s) lowering: warp roles under three interleavings, and the cp.async
/// variant.
void hopperCase(const GemmCase &g, const char *arch = "sm_90a") {
    Lowered l(g, true, arch);
    ASSERT_TRUE(l.roles) << "no warp-specialized kernel for " << arch << "\n" << l.r.diags();
    EXPECT_EQ(l.roles->threads, g.threads);
    expectCorrect(*l.roles, g, {0, 1, 2});
    ASSERT_TRUE(l.plain && !l.plain->producerThreads) << "no variant without TMA\n" << l.noTma.diags();
    expectCorrect(*l.plain, g, {0});
}

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
                if (f && (f->fn == lib::Fn::WgmmaSS || f->fn == lib::Fn::WgmmaRS)) ++out->wgmma;
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

// ---- mutations of the lowered IR that the simulator must catch ----

/// The kernel with each library-call statement of role `role` (consumer, producer; both when null) passed
/// through `f`, which returns the replacement (null: removed).
struct Mutated {
    std::shared_ptr<ir::Kernel> kernel;
    Mutated(const ir::Kernel &k, std::function<ir::Stmt(const ir::Evaluate &, const ir::Call &, bool consumer)> f) {
        struct M : ir::IRMutator {
            using IRMutator::visit;
            std::function<ir::Stmt(const ir::Evaluate &, const ir::Call &, bool)> f;
            bool consumer = false;
            ir::Stmt visit(const std::shared_ptr<const ir::Evaluate> &op) override {
                auto c = ir::as<ir::Call>(op->value);
                return c ? f(*op, *c, consumer) : ir::Stmt(op);
            }
            ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
                consumer = false;
                ir::Stmt p = mutate(op->producer);
                consumer = true;
                ir::Stmt c = mutate(op->consumer);
                consumer = false;
                return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, p, c, op->loc);
            }
        } m;
        m.f = std::move(f);
        kernel = std::make_shared<ir::Kernel>(k);
        kernel->body = m.mutate(k.body);
    }
};

const GemmCase kMutant{100, 72, 320, 64, 64, 64, 2, 128}; // five k-blocks through a ring of two

// sm_90 (no `a`): the same roles and rings, one producer warp, mma.sync reading TMA's panel layout (B's
// 256-byte rows are two 128-byte panels; 64-wide fp16 tiles are one); tf32 takes the plain-load path.
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

TEST(SimHopperMutant, UnmutatedRunsClean) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    expectCorrect(*l.roles, kMutant, {0, 3});
}

TEST(SimHopperMutant, SeedsInterleaveTheRolesDifferently) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    // seed 0 runs each agent until it blocks; other seeds also switch at synchronisation points
    std::set<int64_t> switches;
    for (uint64_t seed : {0, 1, 2, 3}) {
        Outcome o = simulate(*l.roles, kMutant, seed);
        EXPECT_TRUE(o.error.empty() && o.races.empty() && !o.wrong) << "seed " << seed << ": " << o.error << o.firstWrong;
        switches.insert(o.switches);
    }
    EXPECT_GE(switches.size(), 3u);
}

TEST(SimHopperMutant, NoEmptyBarrierArrivalDeadlocks) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Mutated m(*l.roles, [](const ir::Evaluate &e, const ir::Call &c, bool) {
        return lib::is(c, lib::Fn::MbarrierArrive) ? ir::Stmt() : ir::Evaluate::make(e.value, e.loc);
    });
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*m.kernel, kMutant, seed);
        EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
        EXPECT_NE(o.error.find("producer warpgroup 0 (threads 128..255) waits on tilec_mbar["), std::string::npos) << o.error;
        EXPECT_NE(o.error.find("consumer warpgroup 0 (threads 0..127) waits on tilec_mbar["), std::string::npos) << o.error;
    }
}

/// The full barrier's expect_tx changed by `delta` bytes.
std::shared_ptr<ir::Kernel> expectTxOff(const ir::Kernel &k, int64_t delta) {
    return Mutated(k, [delta](const ir::Evaluate &e, const ir::Call &c, bool) -> ir::Stmt {
               if (!lib::is(c, lib::Fn::MbarrierArriveExpectTx)) return ir::Evaluate::make(e.value, e.loc);
               int64_t bytes = *ir::constInt(lib::arg(c, lib::Fn::MbarrierArriveExpectTx, "bytes"));
               return lib::stmt(lib::Fn::MbarrierArriveExpectTx,
                                {lib::arg(c, lib::Fn::MbarrierArriveExpectTx, "bar"), ir::intImm(bytes + delta, DType::Int32)}, e.loc);
           }).kernel;
}

TEST(SimHopperMutant, ExpectTxTooLargeDeadlocks) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    auto k = expectTxOff(*l.roles, 128);
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*k, kMutant, seed);
        EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
        EXPECT_NE(o.error.find("0 of 1 arrivals and 128 transaction bytes pending"), std::string::npos) << o.error;
    }
}

TEST(SimHopperMutant, ExpectTxTooSmallIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    auto k = expectTxOff(*l.roles, -8192); // the phase completes when the first tile has landed
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*k, kMutant, seed);
        EXPECT_TRUE(!o.error.empty() || !o.races.empty() || o.wrong) << "seed " << seed;
    }
}

TEST(SimHopperMutant, NoWgmmaWaitInTheLoopIsARace) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    int dropped = 0;
    Mutated m(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c, bool) {
        if (lib::is(c, lib::Fn::WgmmaWait)) return ++dropped, ir::Stmt();
        return ir::Evaluate::make(e.value, e.loc);
    });
    ASSERT_EQ(dropped, 1);
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*m.kernel, kMutant, seed);
        EXPECT_EQ(o.error, "");
        ASSERT_FALSE(o.races.empty()) << "seed " << seed;
        EXPECT_NE(o.races[0].find("read-after-write"), std::string::npos) << o.races[0];
        EXPECT_NE(o.races[0].find("by consumer warpgroup 0"), std::string::npos) << o.races[0];
        EXPECT_NE(o.races[0].find("after the TMA load"), std::string::npos) << o.races[0];
    }
}

TEST(SimHopperMutant, NoFinalWgmmaWaitPoisonsTheResult) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Mutated m(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c, bool) {
        return lib::is(c, lib::Fn::WgmmaWaitAcc) ? ir::Stmt() : ir::Evaluate::make(e.value, e.loc);
    });
    Outcome o = simulate(*m.kernel, kMutant, 0);
    EXPECT_EQ(o.wrong, kMutant.M * kMutant.N) << "the accumulators read before any wait retired them";
    EXPECT_NE(o.firstWrong.find("nan"), std::string::npos) << o.firstWrong;
    // A block that walks on to its next tile clears the accumulators under the group still in flight; the
    // last one leaves with it.
    EXPECT_TRUE(o.error.find("wgmma groups in flight") != std::string::npos ||
                o.error.find("wgmma group in flight writes") != std::string::npos)
        << o.error;
}

TEST(SimHopperMutant, ConsumerNotWaitingOnTheFullBarrierIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Mutated m(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c, bool consumer) {
        return consumer && lib::is(c, lib::Fn::MbarrierWait) ? ir::Stmt() : ir::Evaluate::make(e.value, e.loc);
    });
    // Seed 0 runs the consumers ahead of every load: they read the stages before the TMA writes them, and
    // each write is ordered after those reads by the stage's release, so it is no race, but the result is
    // wrong (NaN). Seed 5 interleaves a load with the reads: a race.
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*m.kernel, kMutant, seed);
        if (seed != 0) EXPECT_FALSE(o.races.empty()) << "seed " << seed;
        EXPECT_GT(o.wrong, 0) << "seed " << seed;
    }
}

TEST(SimHopperMutant, ConsumerWaitingOnTheWrongParityIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Mutated m(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c, bool consumer) -> ir::Stmt {
        if (!consumer || !lib::is(c, lib::Fn::MbarrierWait)) return ir::Evaluate::make(e.value, e.loc);
        auto parity = lib::arg(c, lib::Fn::MbarrierWait, "parity");
        return lib::stmt(lib::Fn::MbarrierWait,
                         {lib::arg(c, lib::Fn::MbarrierWait, "bar"), ir::Binary::make(ir::BinaryOp::BitXor, parity, ir::intImm(1, parity->dtype))}, e.loc);
    });
    Outcome o = simulate(*m.kernel, kMutant, 0);
    EXPECT_TRUE(!o.races.empty() || !o.error.empty());
    EXPECT_GT(o.wrong, 0);
}

/// The consumers' accumulator clearing preceded by a consumer barrier (the role's __syncthreads: a named
/// barrier over the consumer warpgroups) under `cond` of the thread index.
std::shared_ptr<ir::Kernel> barrierBeforeClear(const ir::Kernel &k, std::function<ir::Expr(const ir::Var &)> cond) {
    return Mutated(k, [&](const ir::Evaluate &e, const ir::Call &c, bool consumer) -> ir::Stmt {
               ir::Stmt same = ir::Evaluate::make(e.value, e.loc);
               if (!consumer || !lib::is(c, lib::Fn::WgmmaClear)) return same;
               ir::Stmt sync = lib::stmt(lib::Fn::Sync, {});
               return ir::Seq::make({cond ? ir::IfThenElse::make(cond(k.threadIdx), sync, nullptr) : sync, same});
           }).kernel;
}

TEST(SimHopperMutant, ConsumerBarriersAcrossWarpgroups) {
    const GemmCase g{200, 72, 136, 128, 64, 64, 3, 256};
    Lowered l(g);
    ASSERT_TRUE(l.roles) << l.r.diags();
    // both consumer warpgroups reach it: they wait for each other and go on
    Outcome all = simulate(*barrierBeforeClear(*l.roles, nullptr), g, 1);
    EXPECT_EQ(all.error, "");
    EXPECT_TRUE(all.races.empty() && !all.wrong) << all.firstWrong;
    // only warpgroup 0 reaches it: it waits for ever
    auto first = [](const ir::Var &tx) { return ir::Binary::make(ir::BinaryOp::LT, tx, ir::intImm(128, tx->dtype)); };
    Outcome one = simulate(*barrierBeforeClear(*l.roles, first), g, 0);
    EXPECT_NE(one.error.find("deadlock"), std::string::npos) << one.error;
    EXPECT_NE(one.error.find("consumer warpgroup 0 (threads 0..127) waits on a barrier (128 of 256 threads arrived)"), std::string::npos) << one.error;
    // some threads of a warpgroup reach it
    auto lanes = [](const ir::Var &tx) { return ir::Binary::make(ir::BinaryOp::LT, ir::Binary::make(ir::BinaryOp::FloorMod, tx, ir::intImm(128, tx->dtype)), ir::intImm(64, tx->dtype)); };
    Outcome some = simulate(*barrierBeforeClear(*l.roles, lanes), g, 0);
    EXPECT_NE(some.error.find("a barrier in divergent code"), std::string::npos) << some.error;
}

TEST(SimHopperMutant, SetmaxnregOutOfRangeIsReported) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    struct M : ir::IRMutator {
        using IRMutator::visit;
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
            return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, 20, op->consumerRegs, op->producer, op->consumer, op->loc);
        }
    } m;
    auto k = std::make_shared<ir::Kernel>(*l.roles);
    k->body = m.mutate(l.roles->body);
    Outcome o = simulate(*k, kMutant, 0);
    EXPECT_NE(o.error.find("setmaxnreg 20"), std::string::npos) << o.error;
}


// ---- the epilogue: stmatrix into a shared staging buffer, TMA stores (src/lower/StageEpilogue.cpp) ----

/// The epilogue calls of the consumer role, by kind.
std::map<lib::Fn, int> epilogueCalls(const ir::Kernel &k) {
    std::map<lib::Fn, int> n;
    Mutated(k, [&](const ir::Evaluate &e, const ir::Call &c, bool consumer) {
        for (lib::Fn f : {lib::Fn::StmatrixTile, lib::Fn::TmaStoreTile, lib::Fn::TmaStoreWait, lib::Fn::FenceProxyAsync})
            if (consumer && lib::is(c, f)) ++n[f];
        return ir::Evaluate::make(e.value, e.loc);
    });
    return n;
}

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
        const ir::Kernel *roles = nullptr;
        if (r.lowered)
            for (auto &k : r.lowered->kernels)
                if (k->producerThreads) roles = k.get();
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
    const ir::Kernel *roles = nullptr;
    if (r.lowered)
        for (auto &k : r.lowered->kernels)
            if (k->producerThreads) roles = k.get();
    ASSERT_TRUE(roles) << r.diags();
    EXPECT_TRUE(roles->persistent) << "the blocks (the simulator launches 2) walk the 12 tiles";
    EXPECT_EQ(epilogueCalls(*roles)[lib::Fn::TmaStoreTile], 1);
    bool map4 = false;
    for (auto &m : roles->tensorMaps) map4 |= m.tensor->name == "Out" && m.box == std::vector<int64_t>{64, 1, 64, 1};
    EXPECT_TRUE(map4) << "no 4-D tensor map of Out with the box {64, 1, 64, 1}";
    auto x = quarters((size_t)B * S * K, 1), w = quarters((size_t)H * K * D, 2);
    for (uint64_t seed : {0, 1, 3}) {
        std::vector<double> out((size_t)B * S * H * D, std::nan(""));
        Simulator sim(*roles, {{"X", &x}, {"W", &w}, {"Out", &out}}, {}, seed);
        std::string error;
        try {
            sim.run();
        } catch (const simtest::SimError &e) {
            error = e.what();
        }
        EXPECT_EQ(error, "") << "seed " << seed;
        for (auto &race : sim.races) ADD_FAILURE() << "seed " << seed << ": race: " << race;
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

// ---- TileLang's explicit warp roles (tests/gpu/gemm_warp_roles.tile: T.ws, T.alloc_barrier, T.tma_copy) ----

/// `call` of tests/gpu/gemm_warp_roles.tile lowered for sm_90a, with TMA and as the variant without (explicit
/// TMA is honoured in both; they differ only in the epilogue, which stores through TMA in the first).
std::vector<LowerRun> explicitRoles(const std::string &call, const std::string &file = "gemm_warp_roles.tile") {
    std::vector<LowerRun> runs(2);
    for (int i = 0; i < 2; ++i) {
        Variant t{*Target::parse("sm_90a"), {}};
        t.options.tma = i == 0;
        runs[(size_t)i].run(simtest::withExport("../tests/gpu/" + file, "k = " + call), file, t);
    }
    return runs;
}

void explicitRolesCase(const GemmCase &g, const std::string &call) {
    auto runs = explicitRoles(call);
    for (auto &r : runs) {
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k && k->producerThreads == 128 && k->threads == 128 && k->needsTma) << r.diags();
        expectCorrect(*k, g, {0, 1, 2, 3});
    }
    EXPECT_GT(epilogueCalls(*runs[0].kernel("k"))[lib::Fn::TmaStoreTile], 0);
    EXPECT_EQ(epilogueCalls(*runs[1].kernel("k"))[lib::Fn::TmaStoreTile], 0);
}

// One tile per operand (copy_1_gemm_0 / softpipe_stage2: the producer is T.ws(1)), shapes the tiles do not divide.
TEST(SimExplicitRoles, OneTileProducerOne) { explicitRolesCase({100, 72, 200, 64, 64, 64, 0, 0}, "ws_gemm(100, 72, 200, 64, 64, 64)"); }
// copy_0_gemm_1: the producer is T.ws(0), T.Pipelined(num_stages=0).
TEST(SimExplicitRoles, OneTileProducerZero) {
    explicitRolesCase({100, 72, 200, 64, 64, 64, 0, 0}, "ws_gemm(100, 72, 200, 64, 64, 64, producer=0, num_stages=0)");
}
// TileLang's tile: 128x128 over one consumer warp group.
TEST(SimExplicitRoles, OneTile128) { explicitRolesCase({128, 128, 192, 128, 128, 64, 0, 0}, "ws_gemm(128, 128, 192)"); }
// barrierpipe_stage2: a ring of two stages, full and empty mbarriers per stage, five k-blocks.
TEST(SimExplicitRoles, TwoStageRing) { explicitRolesCase({100, 72, 320, 64, 64, 64, 0, 0}, "ws_ring_gemm(100, 72, 320, 64, 64, 64)"); }

// Issue 23: tests/gpu/zero_dims.tile's ws_gemm with a run-time K, 0 among its values: neither role's loop has a
// trip, C = 0; the producer's maps of A and B (tensors with no elements) read the zero tile, as the launcher
// encodes them (the only variants there are need TMA).
TEST(SimExplicitRoles, DynamicKOfZero) {
    auto runs = explicitRoles("ws_gemm_dk(128, 128, 64, 64, 64)", "zero_dims.tile");
    for (auto &r : runs) {
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k && k->needsTma && !k->tensorMaps.empty()) << r.diags();
        for (int K : {0, 72}) {
            SCOPED_TRACE("K = " + std::to_string(K));
            expectCorrect(*k, {128, 128, K, 64, 64, 64, 0, 0}, {0, 1}, {{"k", (double)K}});
        }
    }
}

/// The kernel with every call of f removed.
std::shared_ptr<ir::Kernel> without(const ir::Kernel &k, lib::Fn f, bool consumerOnly) {
    return Mutated(k, [f, consumerOnly](const ir::Evaluate &e, const ir::Call &c, bool consumer) -> ir::Stmt {
               return lib::is(c, f) && (consumer || !consumerOnly) ? ir::Stmt() : ir::Evaluate::make(e.value, e.loc);
           }).kernel;
}

TEST(SimExplicitRolesMutant, WithoutTheConsumersArrivalDeadlocks) {
    const GemmCase g{100, 72, 320, 64, 64, 64, 0, 0};
    auto runs = explicitRoles("ws_ring_gemm(100, 72, 320, 64, 64, 64)");
    ASSERT_TRUE(runs[0].kernel("k")) << runs[0].diags();
    Outcome o = simulate(*without(*runs[0].kernel("k"), lib::Fn::MbarrierArriveEach, true), g, 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
}

TEST(SimExplicitRolesMutant, WithoutExpectTxIsCaught) {
    const GemmCase g{100, 72, 200, 64, 64, 64, 0, 0};
    auto runs = explicitRoles("ws_gemm(100, 72, 200, 64, 64, 64)");
    ASSERT_TRUE(runs[0].kernel("k")) << runs[0].diags();
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*without(*runs[0].kernel("k"), lib::Fn::MbarrierExpectTx, false), g, seed);
        EXPECT_TRUE(!o.error.empty() || !o.races.empty() || o.wrong) << "seed " << seed;
    }
}

// Without the wgmma wait before the consumer's arrival the producer could overwrite a tile wgmma still reads.
TEST(SimExplicitRolesMutant, WithoutTheWgmmaWaitIsCaught) {
    const GemmCase g{100, 72, 200, 64, 64, 64, 0, 0};
    auto runs = explicitRoles("ws_gemm(100, 72, 200, 64, 64, 64)");
    ASSERT_TRUE(runs[0].kernel("k")) << runs[0].diags();
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3, 5}) {
        Outcome o = simulate(*without(*runs[0].kernel("k"), lib::Fn::WgmmaWait, true), g, seed);
        caught |= !o.error.empty() || !o.races.empty() || o.wrong;
    }
    EXPECT_TRUE(caught);
}

} // namespace
