/// \file
/// T.gemm_sp (2:4 structured sparsity) lowered for sm_80 (tilec.gemm_sp_ss on mma.sp), sm_90 (the same) and sm_90a
/// (tilec.wgmma_sp_ss on wgmma.mma_async.sp; mma.sp again with --no-sparse-wgmma) and run on the CPU simulator
/// against the float64 product of the dense A: A_sparse and the metadata E are made the way TileLang's
/// sparse_utils.compress writes them (the kept values in K order, a nibble p0 | p1 << 2 per group of four, four
/// groups to an int16 from its low bits), so the product is right only where the metadata is decoded as the
/// instruction reads it (the simulator's wgmma.sp takes each thread's metadata register as the library loads it and
/// reads it as the PTX ISA defines). Pipelined over K (the staged E tiles), B in both majors, float16 and bfloat16,
/// one or two warpgroups splitting rows or columns, A tiles of several panels, ragged M, N and K (partial tiles, zero-padded), and groups with
/// nibbles whose int16 is negative. Metadata naming its positions out of order is a simulator error. The k-loop's
/// cp.async ring: two stages keep the next K block in flight while this one is waited for (`cp_async_wait<1>`, the
/// stage refilled after the product behind a barrier), three or more refill at the top (`cp_async_wait<S - 2>`);
/// a wait leaving one group more in flight, and the refill without its barrier, are reported by the simulator.
#include "sim/Simulator.h"
#include "LowerSimUtil.h"

#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;

namespace {

struct Shape {
    int M, N, K, blockM, blockN, blockK, stages, threads;
    bool transB;
    const char *dtype;
};

std::string source(const Shape &s) {
    auto n = [](int v) { return std::to_string(v); };
    const std::string bShape = s.transB ? "(" + n(s.N) + ", " + n(s.K) + ")" : "(" + n(s.K) + ", " + n(s.N) + ")";
    const std::string bTile = s.transB ? "(" + n(s.blockN) + ", " + n(s.blockK) + ")" : "(" + n(s.blockK) + ", " + n(s.blockN) + ")";
    const std::string bCopy = s.transB ? "B[bx * " + n(s.blockN) + ", k * " + n(s.blockK) + "]" : "B[k * " + n(s.blockK) + ", bx * " + n(s.blockN) + "]";
    const std::string dt = std::string("\"") + s.dtype + "\"";
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def k(A_sparse: T.Tensor((" + n(s.M) + ", " + n(s.K / 2) + "), " + dt + "), E: T.Tensor((" + n(s.M) + ", " + n(s.K / 16) +
           "), \"int16\"),\n"
           "      B: T.Tensor(" + bShape + ", " + dt + "), C: T.Tensor((" + n(s.M) + ", " + n(s.N) + "), \"float32\")):\n"
           "    with T.Kernel(T.ceildiv(" + n(s.N) + ", " + n(s.blockN) + "), T.ceildiv(" + n(s.M) + ", " + n(s.blockM) +
           "), threads=" + n(s.threads) + ") as (bx, by):\n"
           "        A_s = T.alloc_shared((" + n(s.blockM) + ", " + n(s.blockK / 2) + "), " + dt + ")\n"
           "        E_s = T.alloc_shared((" + n(s.blockM) + ", " + n(s.blockK / 16) + "), \"int16\")\n"
           "        B_s = T.alloc_shared(" + bTile + ", " + dt + ")\n"
           "        C_f = T.alloc_fragment((" + n(s.blockM) + ", " + n(s.blockN) + "), \"float32\")\n"
           "        T.clear(C_f)\n"
           "        for k in T.Pipelined(T.ceildiv(" + n(s.K) + ", " + n(s.blockK) + "), num_stages=" + n(s.stages) + "):\n"
           "            T.copy(A_sparse[by * " + n(s.blockM) + ", k * " + n(s.blockK / 2) + "], A_s)\n"
           "            T.copy(E[by * " + n(s.blockM) + ", k * " + n(s.blockK / 16) + "], E_s)\n"
           "            T.copy(" + bCopy + ", B_s)\n"
           "            T.gemm_sp(A_s, E_s, B_s, C_f, transpose_B=" + (s.transB ? "True" : "False") + ")\n"
           "        T.copy(C_f, C[by * " + n(s.blockM) + ", bx * " + n(s.blockN) + "])\n";
}

/// A 2:4-sparse M x K matrix as (dense, compressed values, int16 metadata as stored values): each group of four
/// keeps two positions p0 < p1 (one of its values may be zero, as compress keeps zeros of sparser groups).
struct Sparse {
    std::vector<double> dense, values, meta;
};

Sparse makeSparse(int M, int K, unsigned seed) {
    std::mt19937 g(seed);
    Sparse s;
    s.dense.assign((size_t)M * K, 0.0);
    s.values.assign((size_t)M * K / 2, 0.0);
    s.meta.assign((size_t)M * K / 16, 0.0);
    auto q = [&] { return (double)((int)(g() % 17) - 8) / 4; };
    for (int i = 0; i < M; ++i)
        for (int grp = 0; grp < K / 4; ++grp) {
            int p0 = (int)(g() % 4), p1 = (int)(g() % 3);
            if (p1 >= p0) ++p1;
            if (p0 > p1) std::swap(p0, p1);
            const double v0 = q(), v1 = q();
            s.dense[(size_t)i * K + 4 * grp + p0] = v0;
            s.dense[(size_t)i * K + 4 * grp + p1] = v1;
            s.values[(size_t)i * K / 2 + 2 * grp] = v0;
            s.values[(size_t)i * K / 2 + 2 * grp + 1] = v1;
            double &w = s.meta[(size_t)i * K / 16 + grp / 4];
            int64_t word = (int64_t)w & 0xFFFF;
            word |= (int64_t)(p0 | p1 << 2) << (4 * (grp % 4));
            w = (double)(int16_t)(uint16_t)word; // the int16 it is: negative where the last nibble's top bit is set
        }
    return s;
}

int callCount(const ir::Kernel &k, const std::string &name) {
    struct Calls : ir::IRVisitor {
        using IRVisitor::visit;
        std::string name;
        int n = 0;
        void visit(const ir::Call &c) override { n += c.name == name, IRVisitor::visit(c); }
    } calls;
    calls.name = name;
    calls.visit(k.body);
    return calls.n;
}

/// The product of `s` on the simulator under interleaving `seed`: errors, races and the elements of C that differ
/// from the float64 product of the dense A.
simtest::Outcome simulateShape(const ir::Kernel &k, const Shape &s, uint64_t seed = 0) {
    Sparse a = makeSparse(s.M, s.K, 7);
    bool negative = false;
    for (double w : a.meta) negative |= w < 0;
    EXPECT_TRUE(negative) << "the data should hold metadata words with the sign bit set";
    std::vector<double> b = simtest::quarters((size_t)s.K * s.N, 3), c((size_t)s.M * s.N, std::nan(""));
    simtest::Outcome o = simtest::runCaught(k, {{"A_sparse", &a.values}, {"E", &a.meta}, {"B", &b}, {"C", &c}}, {}, seed);
    for (int i = 0; i < s.M; ++i)
        for (int j = 0; j < s.N; ++j) {
            double want = 0;
            for (int kk = 0; kk < s.K; ++kk)
                want += a.dense[(size_t)i * s.K + kk] * (s.transB ? b[(size_t)j * s.K + kk] : b[(size_t)kk * s.N + j]);
            const double got = c[(size_t)i * s.N + j];
            o.check(got == want, [&] { return "C[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(got) + ", expected " + std::to_string(want); });
        }
    return o;
}

/// The waits of the k-loop's cp.async ring (then the one after the loop): with two stages the next K block stays in
/// flight while this one is waited for; from three on the refill at the top keeps S - 1 in flight. One trip is plain
/// code (no ring).
std::vector<int64_t> expectedWaits(const Shape &s) {
    const int trips = (s.K + s.blockK - 1) / s.blockK;
    if (trips == 1) return {};
    return {s.stages == 2 ? 1 : s.stages - 2, 0};
}

/// Lowers `s` for `arch` (sparseWgmma: the --no-sparse-wgmma switch off), expects its product as the one call
/// `instr` and the ring's waits, and checks the simulated C against the float64 product of the dense A.
void runAndCheck(const Shape &s, const char *arch, const char *instr, bool sparseWgmma = true) {
    SCOPED_TRACE(std::string(arch) + " " + s.dtype + (s.transB ? " B^T" : " B") + " " + std::to_string(s.M) + "x" +
                 std::to_string(s.N) + "x" + std::to_string(s.K) + ", " + std::to_string(s.stages) + " stages" +
                 (sparseWgmma ? "" : " --no-sparse-wgmma"));
    LowerRun r;
    Variant v{*Target::parse(arch), {}};
    v.options.sparseWgmma = sparseWgmma;
    v.options.warpSpecialize = false; // the cp.async path (warp roles: MatchesTheDenseProductWarpSpecialized)
    r.run(source(s), "t.tile", v);
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    for (const char *call : {"tilec.gemm_sp_ss", "tilec.wgmma_sp_ss", "tilec.wgmma_ss"})
        EXPECT_EQ(callCount(*k, call), std::string(call) == instr ? 1 : 0) << call;
    EXPECT_EQ(simtest::cpAsyncWaits(*k), expectedWaits(s));
    simtest::Outcome o = simulateShape(*k, s);
    EXPECT_FALSE(simtest::anyFailure(o)) << o.error << (o.races.empty() ? "" : "race: " + o.races[0]) << " " << o.firstWrong;
}

const Shape kShapes[] = {
    {128, 64, 256, 64, 64, 64, 2, 128, false, "float16"},
    {64, 128, 128, 64, 64, 128, 3, 128, true, "bfloat16"},
    {256, 512, 256, 128, 256, 64, 2, 256, false, "float16"},  // 128x256 tiles: two warpgroups of 64 rows, n256
    {64, 128, 96, 64, 128, 64, 2, 256, true, "bfloat16"},     // two warpgroups splitting the columns; K ragged
    {96, 80, 96, 64, 64, 64, 2, 128, false, "float16"},       // M, N and K ragged: zero-padded partial tiles
    {128, 128, 160, 64, 64, 32, 2, 128, false, "bfloat16"},   // one k-step per stage (E tiles of 4-byte rows)
    {128, 64, 512, 64, 64, 256, 2, 128, false, "float16"},    // A rows of two 128-byte panels; E rows swizzled (32 bytes)
    {128, 64, 128, 64, 64, 64, 3, 128, false, "float16"},     // fewer trips (2) than stages (3)
    {128, 128, 320, 128, 128, 64, 4, 128, true, "float16"},   // four stages, five trips
    {64, 128, 224, 64, 128, 64, 2, 256, false, "bfloat16"},   // two stages, four trips (the last ragged), two warpgroups
};

TEST(LowerSimGemmSp, MatchesTheDenseProductOnMmaSp) {
    for (const Shape &s : kShapes) {
        runAndCheck(s, "sm_80", "tilec.gemm_sp_ss");
        runAndCheck(s, "sm_90", "tilec.gemm_sp_ss");
    }
}

TEST(LowerSimGemmSp, MatchesTheDenseProductOnWgmmaSp) {
    for (const Shape &s : kShapes) runAndCheck(s, "sm_90a", "tilec.wgmma_sp_ss");
    runAndCheck(kShapes[0], "sm_90a", "tilec.gemm_sp_ss", false);
}

/// A two-stage k-loop's ring, on mma.sp and wgmma.sp, one and two warpgroups: the loop waits for its block with the
/// next one in flight, and the simulator reports a wait that leaves one group more in flight (the stage read before
/// it lands) and the refill without the barrier before it (a stage overwritten while other threads still read it).
TEST(LowerSimGemmSp, TwoStageRingKeepsTheNextBlockInFlight) {
    for (auto [arch, instr] : {std::pair{"sm_80", "tilec.gemm_sp_ss"}, std::pair{"sm_90a", "tilec.wgmma_sp_ss"}})
        for (const Shape &s : {kShapes[0], kShapes[2], kShapes[5]}) {
            SCOPED_TRACE(std::string(arch) + " " + std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K));
            ASSERT_EQ(s.stages, 2);
            LowerRun r;
            Variant v{*Target::parse(arch), {}};
            v.options.warpSpecialize = false; // sm_90a: sp34's cp.async ring, the warp roles' fallback
            r.run(source(s), "t.tile", v);
            const ir::Kernel *k = r.kernel("k");
            ASSERT_TRUE(k) << r.diags();
            EXPECT_EQ(callCount(*k, instr), 1);
            EXPECT_EQ(simtest::cpAsyncWaits(*k), (std::vector<int64_t>{1, 0}));
            bool late = false, early = false;
            auto later = simtest::withLaterWaits(*k);
            int removed = 0;
            auto unbarred = simtest::withoutRefillBarriers(*k, removed);
            EXPECT_EQ(removed, 1);
            for (uint64_t seed : {0, 1, 2, 3}) {
                late = late || simtest::anyFailure(simulateShape(*later, s, seed));
                early = early || simtest::anyFailure(simulateShape(*unbarred, s, seed));
            }
            EXPECT_TRUE(late) << "a wait leaving one group more in flight went unnoticed";
            EXPECT_TRUE(early) << "the refill without its barrier went unnoticed";
        }
}

/// sm_90a's warp roles for a T.gemm_sp loop: how E reaches the consumers (`tmaE`: a TMA tile of 16- to 128-byte
/// rows; else the producer's threads copy its rows of 4 or 8 bytes), for the shapes whose loop takes them.
struct RolesShape {
    Shape s;
    bool tmaE;
};

const RolesShape kRoleShapes[] = {
    {{128, 128, 256, 128, 128, 64, 2, 128, false, "float16"}, false},   // E rows of 8 bytes: the producer's threads
    {{128, 128, 256, 128, 128, 128, 2, 128, true, "bfloat16"}, true},   // 16-byte rows: an unswizzled 2-D box
    {{128, 64, 512, 64, 64, 256, 2, 128, false, "float16"}, true},      // 32-byte rows: TMA's 32-byte swizzle
    {{256, 512, 256, 128, 256, 64, 2, 256, false, "float16"}, false},   // two warpgroups of 64 rows, n256
    {{200, 136, 224, 128, 128, 64, 2, 128, false, "float16"}, false},   // M, N and K ragged: E's rows zero-filled
    {{200, 136, 384, 128, 64, 256, 2, 128, false, "float16"}, true},    // ragged with E by TMA (32-byte rows)
    {{128, 128, 320, 128, 128, 64, 4, 128, true, "float16"}, false},    // four stages, five trips
};

/// The warp-role kernel of `s` on sm_90a (null, with a failure, where the loop did not take warp roles); `sms`:
/// a GPU of that many SMs (1: one persistent block walks every output tile, its ring running on across them).
const ir::Kernel *rolesKernel(LowerRun &r, const Shape &s, int sms = 0) {
    Variant v{sms ? Target::parse("sm_90a")->withSmCount(sms) : *Target::parse("sm_90a"), {}};
    v.options.sparseWarpRoles = LoweringOptions::SparseWarpRoles::All; // --sparse-warp-roles: E by the producer's threads too
    r.run(source(s), "t.tile", v);
    const ir::Kernel *k = simtest::warpRoles(r);
    EXPECT_TRUE(k) << "no warp roles: " << r.diags();
    return k;
}

std::string shapeName(const Shape &s) {
    return std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K) + " block_K " + std::to_string(s.blockK) +
           ", " + std::to_string(s.stages) + " stages, " + std::to_string(s.threads) + " threads";
}

/// The warp roles' plan and code (TMA loads of A_sparse and B, and of E or every producer thread's copy of its rows
/// with its arrival, full barriers of 1 or 1 + 128 arrivals, every consumer thread's release after a proxy fence,
/// wgmma_wait<0> before it) and their product against the float64 one under three interleavings, race-free.
TEST(LowerSimGemmSp, MatchesTheDenseProductWarpSpecialized) {
    namespace lib = passes::lib;
    for (size_t i = 0; i <= std::size(kRoleShapes); ++i) {
        // the last: E by TMA on a GPU of one SM, whose block walks the 6 output tiles (persistent)
        const RolesShape &rs = kRoleShapes[i < std::size(kRoleShapes) ? i : 5];
        const Shape &s = rs.s;
        SCOPED_TRACE(shapeName(s) + (i < std::size(kRoleShapes) ? "" : ", persistent on one SM"));
        LowerRun r;
        const ir::Kernel *k = rolesKernel(r, s, i < std::size(kRoleShapes) ? 0 : 1);
        if (!k) continue;
        if (i == std::size(kRoleShapes)) EXPECT_TRUE(k->persistent);
        EXPECT_EQ(k->producerThreads, 128);
        auto n = simtest::callCounts(*k);
        const int perStage = rs.tmaE ? 3 : 2; // (a ragged loop's last iterations may be a copy of the loop: unswitchLoops)
        EXPECT_TRUE(n[lib::Fn::TmaLoadTile] > 0 && n[lib::Fn::TmaLoadTile] % perStage == 0) << n[lib::Fn::TmaLoadTile];
        EXPECT_EQ(n[lib::Fn::WgmmaSpSS], 1);
        std::vector<int64_t> inits, waits;
        int producerArrives = 0, consumerArrives = 0, consumerFences = 0;
        simtest::rewriteCalls(*k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role role) {
            if (lib::is(c, lib::Fn::MbarrierInit)) inits.push_back(*ir::constInt(lib::arg(c, lib::Fn::MbarrierInit, "arrivals")));
            if (lib::is(c, lib::Fn::WgmmaWait)) waits.push_back(*ir::constInt(lib::arg(c, lib::Fn::WgmmaWait, "pending")));
            producerArrives += lib::is(c, lib::Fn::MbarrierArrive) && role == simtest::Role::Producer;
            consumerArrives += lib::is(c, lib::Fn::MbarrierArriveEach) && role == simtest::Role::Consumer;
            consumerFences += lib::is(c, lib::Fn::FenceProxyAsync) && role == simtest::Role::Consumer;
            return simtest::same(e);
        });
        const int64_t C = s.threads, full = rs.tmaE ? 1 : 1 + 128;
        std::vector<int64_t> want;
        for (int st = 0; st < s.stages; ++st) want.push_back(full), want.push_back(C);
        EXPECT_EQ(inits, want) << "full barriers of 1 (+ 128 producer threads) arrivals, empty of every consumer thread";
        EXPECT_EQ(waits, std::vector<int64_t>{0}) << "each stage's wgmma.sp retired before its release";
        EXPECT_EQ(producerArrives, rs.tmaE ? 0 : n[lib::Fn::TmaLoadTile] / perStage);
        EXPECT_EQ(consumerArrives, 1);
        EXPECT_EQ(consumerFences, 1);
        for (uint64_t seed : {0, 1, 2}) {
            simtest::Outcome o = simulateShape(*k, s, seed);
            EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : " race: " + o.races[0]) << " " << o.firstWrong;
        }
    }
}

/// Whether some interleaving of `k` fails on `s` (an error, a race or a wrong element).
bool failsSomewhere(const ir::Kernel &k, const Shape &s) {
    for (uint64_t seed : {0, 1, 2, 3, 4, 5, 6, 7})
        if (simtest::anyFailure(simulateShape(k, s, seed))) return true;
    return false;
}

/// What each handoff of the warp roles rests on, removed one at a time: the simulator reports each mutant.
/// The producer threads' arrivals after their copies of E (without them no stage fills; moved before the copies,
/// the consumers may read E before it is stored: the simulator's TMA load knows only what its issuer did before
/// it) and the release after wgmma_wait<0> (before it, the producer's next loads may overwrite the stage while
/// the wgmma.sp still reads it). Every consumer thread's own release (not one lane per warp) is not modelled: the
/// simulator runs a warpgroup as one agent (docs/PERFORMANCE.md, session 37, says why it is needed).
TEST(LowerSimGemmSp, WarpRoleHandoffMutantsFail) {
    namespace lib = passes::lib;
    using simtest::Role;
    // (eight trips: stages are refilled while the consumers run)
    const RolesShape shapes[] = {{{128, 128, 512, 128, 128, 64, 2, 128, false, "float16"}, false},
                                 {{128, 128, 1024, 128, 128, 128, 2, 128, true, "bfloat16"}, true}};
    for (const RolesShape &rs : shapes) {
        const Shape &s = rs.s;
        SCOPED_TRACE(shapeName(s));
        LowerRun r;
        const ir::Kernel *k = rolesKernel(r, s);
        if (!k) continue;
        EXPECT_FALSE(failsSomewhere(*k, s));
        auto rewrite = [&](simtest::CallRewrite f) { return simtest::rewriteCalls(*k, std::move(f)); };
        if (!rs.tmaE) {
            auto noArrival = rewrite([](const ir::Evaluate &e, const ir::Call &c, Role role) -> ir::Stmt {
                return lib::is(c, lib::Fn::MbarrierArrive) && role == Role::Producer ? nullptr : simtest::same(e);
            });
            EXPECT_TRUE(failsSomewhere(*noArrival, s)) << "the producer threads' arrivals removed went unnoticed";
            ir::Expr full; // the producer threads' arrival, moved to just after their wait for the stage's release
            rewrite([&](const ir::Evaluate &e, const ir::Call &c, Role role) {
                if (lib::is(c, lib::Fn::MbarrierArrive) && role == Role::Producer) full = c.args[0];
                return simtest::same(e);
            });
            ASSERT_TRUE(full);
            auto early = rewrite([&](const ir::Evaluate &e, const ir::Call &c, Role role) -> ir::Stmt {
                if (role != Role::Producer) return simtest::same(e);
                if (lib::is(c, lib::Fn::MbarrierArrive)) return nullptr;
                if (!lib::is(c, lib::Fn::MbarrierWait)) return simtest::same(e);
                return ir::Seq::make({simtest::same(e), lib::stmt(lib::Fn::MbarrierArrive, {full}, e.loc)}, e.loc);
            });
            EXPECT_TRUE(failsSomewhere(*early, s)) << "the arrival before the copies of E went unnoticed";
        }
        auto releaseFirst = rewrite([&](const ir::Evaluate &e, const ir::Call &c, Role role) -> ir::Stmt {
            if (role != Role::Consumer) return simtest::same(e);
            if (lib::is(c, lib::Fn::WgmmaWait)) return nullptr;
            if (!lib::is(c, lib::Fn::MbarrierArriveEach)) return simtest::same(e);
            return ir::Seq::make({simtest::same(e), lib::stmt(lib::Fn::WgmmaWait, {ir::intImm(0, DType::Int32)}, e.loc)}, e.loc);
        });
        EXPECT_TRUE(failsSomewhere(*releaseFirst, s)) << "the release before wgmma_wait<0> went unnoticed";
    }
}

TEST(LowerSimGemmSp, MetadataOutOfOrderIsAnError) {
    const Shape s{64, 64, 64, 64, 64, 64, 1, 128, false, "float16"};
    LowerRun r;
    r.run(source(s), "t.tile", *Target::parse("sm_80"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    Sparse a = makeSparse(s.M, s.K, 11);
    a.meta[5] = (double)(int16_t)0x0001; // group 0 of that word: p0 = 1, p1 = 0
    std::vector<double> b = simtest::quarters((size_t)s.K * s.N, 3), c((size_t)s.M * s.N, 0.0);
    Simulator sim(*k, {{"A_sparse", &a.values}, {"E", &a.meta}, {"B", &b}, {"C", &c}});
    try {
        sim.run();
        ADD_FAILURE() << "metadata out of order ran";
    } catch (const simtest::SimError &e) {
        EXPECT_NE(std::string(e.what()).find("not two in increasing order"), std::string::npos) << e.what();
    }
}

} // namespace
