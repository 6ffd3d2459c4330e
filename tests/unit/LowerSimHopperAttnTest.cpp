/// \file
/// FlashAttention on the Hopper schedule, checked on the CPU simulator (src/sim/Simulator.h):
/// benchmarks/flash_fwd.tile and examples/flash_attn.tile lowered for sm_90a into warp roles (Q loaded once by
/// TMA, K and V through a TMA ring behind separate full/empty barriers, QK^T as wgmma SS, the softmax in
/// registers, P.V as wgmma RS with P in registers) and run under several interleavings against float64,
/// causal and not, with key lengths the tiles do not divide; and mutations of that schedule which the
/// simulator must report (a race, a deadlock, registers of an in-flight wgmma overwritten).
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;
namespace lib = tilec::passes::lib;

namespace {

/// One instantiation of benchmarks/flash_fwd.tile (or of examples/flash_attn.tile when `example`).
struct AttnCase {
    int batch, heads, seq, dim;
    bool causal;
    int blockM, blockN, stages, threads;
    bool example = false; ///< examples/flash_attn.tile (always causal) instead of the benchmark
    std::string extra;    ///< further keyword arguments of flash_fwd (", dtype='bfloat16'", ", heads_kv=2")
    int headsKV = 0;      ///< key/value heads (grouped-query attention); 0: heads
    bool pingPong = false; ///< lowered with --pingpong (LoweringOptions::pingPong)
    bool overlap = false;  ///< lowered with --intra-overlap (LoweringOptions::intraOverlap)
    bool dynamicSeq = false; ///< seq=None: the length a T.dynamic size "seq", given `seq` at run time
    bool noPersistent = false; ///< lowered with --no-persistent (one output tile per block)
    int walkGroup = 7;         ///< lowered with --walk-group (LoweringOptions::walkGroup, whose default this is)
    int kvHeads() const { return headsKV ? headsKV : heads; }
    std::string source() const {
        auto n = [](int v) { return std::to_string(v); };
        if (example)
            return simtest::withExport("flash_attn.tile", "k = flash_attn(" + n(batch) + ", " + n(heads) + ", " + n(seq) + ", " +
                                                              n(dim) + ", " + n(blockM) + ", " + n(blockN) + ", " + n(stages) +
                                                              ", " + n(threads) + ")");
        return simtest::withExport("flash_fwd.tile",
                                   "k = flash_fwd(" + n(batch) + ", " + n(heads) + ", " + (dynamicSeq ? "None" : n(seq)) + ", " + n(dim) + ", " +
                                       (causal ? "True" : "False") + ", " + n(blockM) + ", " + n(blockN) + ", " + n(stages) +
                                       ", " + n(threads) + (headsKV ? ", heads_kv=" + n(headsKV) : "") + extra + ")",
                                   "benchmarks");
    }
};

/// The library calls of a kernel, by function.
std::map<lib::Fn, int> callCounts(const ir::Kernel &k) {
    struct V : ir::IRVisitor {
        using ir::IRVisitor::visit;
        std::map<lib::Fn, int> n;
        void visit(const ir::Call &c) override {
            if (auto *i = lib::find(c.name)) ++n[i->fn];
            ir::IRVisitor::visit(c);
        }
    } v;
    v.visit(k.body);
    return v.n;
}

struct Lowered {
    LowerRun r;
    const ir::Kernel *roles = nullptr;
    explicit Lowered(const AttnCase &a, bool uneven = true) {
        // these grids of a few tiles are not one wave (OneWaveCausalNotPersistent): a GPU of one SM
        Variant t{Target::parse("sm_90a")->withSmCount(1), {}};
        t.options.pingPong = a.pingPong;
        t.options.intraOverlap = a.overlap;
        t.options.persistent = !a.noPersistent;
        t.options.walkGroup = uneven ? a.walkGroup : 0; // causal tiles persistent too (the default), or one block each
        r.run(a.source(), "flash.tile", t);
        if (r.lowered)
            for (auto &k : r.lowered->kernels)
                if (k->producerThreads) roles = k.get();
    }
};

struct Data {
    std::vector<double> q, k, v, want;
};

/// Inputs in [-1, 1] and the float64 reference: softmax(Q K^T / sqrt(D)) V per (batch, head), keys j <= i
/// when causal; query head h reads key/value head h / (heads / heads_kv).
Data reference(const AttnCase &a) {
    const size_t n = (size_t)a.batch * a.seq * a.heads * a.dim, nkv = (size_t)a.batch * a.seq * a.kvHeads() * a.dim;
    Data d{simtest::randomData(n, 41, -1, 1), simtest::randomData(nkv, 42, -1, 1), simtest::randomData(nkv, 43, -1, 1),
           std::vector<double>(n, 0)};
    auto at = [&](int b, int t, int h, int x) { return (((size_t)b * a.seq + t) * a.heads + h) * a.dim + x; };
    const int group = a.heads / a.kvHeads();
    auto kv = [&](int b, int t, int h, int x) { return (((size_t)b * a.seq + t) * a.kvHeads() + h / group) * a.dim + x; };
    const double scale = 1.0 / std::sqrt((double)a.dim);
    for (int b = 0; b < a.batch; ++b)
        for (int h = 0; h < a.heads; ++h)
            for (int i = 0; i < a.seq; ++i) {
                const int keys = a.causal ? i + 1 : a.seq;
                std::vector<double> p((size_t)keys);
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < keys; ++j) {
                    double dot = 0;
                    for (int x = 0; x < a.dim; ++x) dot += d.q[at(b, i, h, x)] * d.k[kv(b, j, h, x)];
                    mx = std::max(mx, p[(size_t)j] = dot * scale);
                }
                for (auto &e : p) sum += e = std::exp(e - mx);
                for (int x = 0; x < a.dim; ++x) {
                    double o = 0;
                    for (int j = 0; j < keys; ++j) o += p[(size_t)j] * d.v[kv(b, j, h, x)];
                    d.want[at(b, i, h, x)] = o / sum;
                }
            }
    return d;
}

struct Outcome {
    std::string error;
    std::vector<std::string> races;
    int wrong = 0;
    std::string firstWrong;
};

/// The probabilities are rounded to float16 before P.V (as on the GPU), so the output is within about 2^-11
/// relative of the float64 reference; 2e-3 of max(1, |want|) leaves room for the sums.
Outcome simulate(const ir::Kernel &k, const AttnCase &a, const Data &d, uint64_t seed) {
    Data in = d;
    std::vector<double> out(d.want.size(), std::nan(""));
    Outcome o;
    {
        std::map<std::string, double> sizes;
        if (a.dynamicSeq) sizes["seq"] = a.seq;
        Simulator s(k, {{"Q", &in.q}, {"K", &in.k}, {"V", &in.v}, {"Out", &out}}, sizes, seed);
        try {
            s.run();
        } catch (const simtest::SimError &e) {
            o.error = e.what();
        }
        o.races = s.races;
    }
    for (size_t i = 0; i < out.size(); ++i)
        if (!(std::fabs(out[i] - d.want[i]) <= 2e-3 * std::max(1.0, std::fabs(d.want[i]))) && o.wrong++ == 0)
            o.firstWrong = "Out[" + std::to_string(i) + "] = " + std::to_string(out[i]) + ", expected " + std::to_string(d.want[i]);
    return o;
}

/// The Hopper schedule of `a`: warp roles with QK^T on wgmma SS and P.V on wgmma RS, correct and race-free
/// under the interleavings of `seeds`. Persistent unless --no-persistent: the simulator launches two blocks,
/// so that each walks several output tiles where the grid has more than two.
void attnCase(const AttnCase &a, std::initializer_list<uint64_t> seeds = {0, 1, 2}) {
    Lowered l(a);
    ASSERT_TRUE(l.roles) << "no warp-specialized kernel for sm_90a\n" << l.r.diags();
    auto calls = callCounts(*l.roles);
    EXPECT_EQ(calls[lib::Fn::WgmmaSS], a.overlap ? 2 : 1) << "--intra-overlap: the prologue's QK^T and the loop's";
    EXPECT_EQ(calls[lib::Fn::WgmmaRS], 1);
    EXPECT_EQ(calls[lib::Fn::TmaLoadTile], 3) << "Q once, K and V per stage";
    EXPECT_EQ(l.roles->dynamicSymbols.size(), a.dynamicSeq ? 1u : 0u);
    EXPECT_EQ(calls[lib::Fn::GemmSS] + calls[lib::Fn::GemmRS], 0) << "mma.sync left in the Hopper kernel";
    // the epilogue (StageEpilogue): O through shared memory by stmatrix, one TMA store per 64 x 64 piece (4-D
    // map), where one staging piece per warpgroup fits beside Q and the rings (227 KiB; not at 3 stages of
    // 128 x 128 tiles at D = 128: direct stores then)
    const int64_t ring = 2 * ((int64_t)a.blockM * a.dim + (int64_t)a.stages * 2 * a.blockN * a.dim);
    const bool fits = 1024 + ring + a.threads / 128 * 64 * 64 * 2 <= 227 * 1024;
    const int pieces = fits ? (a.blockM / 64) / (a.threads / 128) * (a.dim / 64) : 0;
    EXPECT_EQ(calls[lib::Fn::StmatrixTile], pieces);
    EXPECT_EQ(calls[lib::Fn::TmaStoreTile], pieces);
    EXPECT_EQ(l.roles->persistent, !a.noPersistent);
    const Data d = reference(a);
    for (uint64_t seed : seeds) {
        Outcome o = simulate(*l.roles, a, d, seed);
        EXPECT_EQ(o.error, "") << "seed " << seed;
        for (auto &r : o.races) ADD_FAILURE() << "seed " << seed << ": race: " << r;
        EXPECT_EQ(o.wrong, 0) << "seed " << seed << ": " << o.firstWrong;
    }
}

// benchmarks/flash_fwd.tile: its defaults (128 x 32 tiles, 2 stages, one consumer warpgroup of 128 rows)...
TEST(SimHopperAttn, CausalBenchmarkDefaults) { attnCase({1, 2, 256, 64, true, 128, 32, 2, 128}); }
TEST(SimHopperAttn, NonCausalBenchmarkDefaults) { attnCase({1, 1, 256, 64, false, 128, 32, 2, 128}); }
// ... keys past the end masked (and Q's rows past it zero-filled by TMA, their output rows cut off)
TEST(SimHopperAttn, NonCausalRaggedLength) { attnCase({1, 1, 200, 64, false, 128, 32, 2, 128}); }
TEST(SimHopperAttn, CausalRaggedLength) { attnCase({1, 1, 200, 64, true, 128, 32, 2, 128}, {0, 2}); }
// two consumer warpgroups of 64 rows each, 128 x 64 and 128 x 128 tiles, D = 128, three stages
TEST(SimHopperAttn, CausalTwoConsumerWarpgroups) { attnCase({1, 1, 256, 64, true, 128, 64, 2, 256}, {0, 3}); }
TEST(SimHopperAttn, NonCausalTwoWarpgroupsD128) { attnCase({1, 1, 160, 128, false, 128, 128, 3, 256}, {0, 5}); }
// a ring of one stage: K's stage is released after QK^T, so the producer loads the next K during the softmax
TEST(SimHopperAttn, OneStage) { attnCase({1, 1, 128, 64, true, 64, 64, 1, 128}); }
// examples/flash_attn.tile as written (64 x 64 tiles, one consumer warpgroup)
TEST(SimHopperAttn, ExampleCausal) { attnCase({1, 2, 192, 64, true, 64, 64, 2, 128, true}); }
// issue 10's coverage: bfloat16 (the probabilities packed to bf16 pairs as wgmma RS's A), D = 64 with the
// benchmark's 128 x 128 tiles over two consumer warpgroups, D = 256 (64-key blocks), grouped-query attention
TEST(SimHopperAttn, Bfloat16CausalTwoWarpgroups) {
    attnCase({1, 1, 256, 64, true, 128, 64, 2, 256, false, ", dtype='bfloat16'"}, {0, 3});
}
TEST(SimHopperAttn, Bfloat16NonCausalRagged) { attnCase({1, 1, 200, 128, false, 128, 64, 2, 256, false, ", dtype='bfloat16'"}, {0}); }
TEST(SimHopperAttn, D64BenchmarkTiles) { attnCase({1, 1, 256, 64, true, 128, 128, 2, 256}, {0, 4}); }
TEST(SimHopperAttn, D256) { attnCase({1, 1, 128, 256, true, 64, 64, 2, 128}, {0}); }
TEST(SimHopperAttn, GroupedQueryAttention) { attnCase({1, 4, 128, 64, true, 64, 32, 2, 128, false, "", 2}, {0, 1}); }
// the schedule options' other settings: the mask on every key block, the scale as its own pass
TEST(SimHopperAttn, CausalMaskOnEveryBlock) {
    attnCase({1, 1, 256, 64, true, 128, 32, 2, 128, false, ", split_mask=False"}, {0, 2});
}
TEST(SimHopperAttn, ScaleNotFolded) { attnCase({1, 1, 200, 64, false, 128, 32, 2, 128, false, ", fold_scale=False"}, {0, 2}); }

// --pingpong: the two consumer warpgroups take turns at their wgmmas (named barriers 4 and 5)
AttnCase pingPong(AttnCase a) {
    a.pingPong = true;
    return a;
}
TEST(SimHopperAttn, PingPongCausal) { attnCase(pingPong({1, 1, 256, 64, true, 128, 64, 2, 256}), {0, 1, 3}); }
TEST(SimHopperAttn, PingPongNonCausalRaggedD128) { attnCase(pingPong({1, 1, 200, 128, false, 128, 128, 2, 256}), {0, 2}); }
TEST(SimHopperAttn, PingPongBfloat16OneStage) {
    attnCase(pingPong({1, 1, 256, 64, true, 128, 64, 1, 256, false, ", dtype='bfloat16'"}), {0, 5});
}

// --intra-overlap: QK^T of the next key block (into scores_next) under this block's softmax
AttnCase overlapped(AttnCase a) {
    a.overlap = true;
    return a;
}
TEST(SimHopperAttn, OverlapCausal) { attnCase(overlapped({1, 2, 256, 64, true, 128, 32, 2, 128}), {0, 1, 2}); }
TEST(SimHopperAttn, OverlapNonCausalRagged) { attnCase(overlapped({1, 1, 200, 64, false, 128, 32, 2, 128}), {0, 3}); }
TEST(SimHopperAttn, OverlapCausalRagged) { attnCase(overlapped({1, 1, 200, 64, true, 128, 32, 2, 128}), {0, 2}); }
TEST(SimHopperAttn, OverlapTwoWarpgroupsD128) { attnCase(overlapped({1, 1, 160, 128, false, 128, 128, 3, 256}), {0, 5}); }
TEST(SimHopperAttn, OverlapBfloat16CausalTwoWarpgroups) {
    attnCase(overlapped({1, 1, 256, 64, true, 128, 64, 2, 256, false, ", dtype='bfloat16'"}), {0, 3});
}
// a ring of one stage: K's stage of ko is released before the wait for K of ko + 1, V's of ko - 1 after it
TEST(SimHopperAttn, OverlapOneStage) { attnCase(overlapped({1, 1, 128, 64, true, 64, 64, 1, 128}), {0, 1}); }
// one key block (the prologue's QK^T, no next one) and grouped-query heads
TEST(SimHopperAttn, OverlapOneKeyBlock) { attnCase(overlapped({1, 1, 64, 64, false, 64, 64, 2, 128}), {0, 1}); }
TEST(SimHopperAttn, OverlapGroupedQuery) { attnCase(overlapped({1, 4, 128, 64, true, 64, 32, 2, 128, false, "", 2}), {0, 1}); }

// seq=None: the sequence length a T.dynamic size (one lowering for every length; keys past the end masked)
AttnCase dynamicSeq(AttnCase a) {
    a.dynamicSeq = true;
    return a;
}
TEST(SimHopperAttn, DynamicSeqNonCausalRagged) { attnCase(dynamicSeq({1, 1, 200, 64, false, 128, 64, 2, 256}), {0, 2}); }
TEST(SimHopperAttn, DynamicSeqCausalRagged) { attnCase(dynamicSeq({1, 1, 200, 64, true, 128, 64, 2, 256}), {0, 1}); }
TEST(SimHopperAttn, DynamicSeqDivisible) { attnCase(dynamicSeq({1, 2, 128, 64, true, 64, 32, 2, 128}), {0}); }
TEST(SimHopperAttn, DynamicSeqShort) { attnCase(dynamicSeq({1, 1, 37, 64, false, 64, 32, 2, 128}), {0, 1}); }
TEST(SimHopperAttn, DynamicSeqOverlapped) { attnCase(overlapped(dynamicSeq({1, 1, 200, 64, true, 128, 64, 2, 256})), {0, 3}); }

// Persistent roles walking several output tiles each (two simulated blocks; 4 to 8 tiles): Q reloaded per tile
// behind its full/empty pair, the ring running on across tiles; causal tiles walked with the query block
// slowest (longest first, the benchmark's HEAVY_FIRST order across the whole grid)
TEST(SimHopperAttn, PersistentCausalWalksTiles) { attnCase({1, 2, 256, 64, true, 64, 32, 2, 128}, {0, 1, 2}); }
TEST(SimHopperAttn, PersistentNonCausalRagged) { attnCase({1, 2, 200, 64, false, 64, 64, 2, 128}, {0, 3}); }
TEST(SimHopperAttn, PersistentCausalRaggedTwoWarpgroups) { attnCase({1, 2, 300, 64, true, 128, 64, 2, 256}, {0, 1}); }
TEST(SimHopperAttn, PersistentD128) { attnCase({1, 2, 256, 128, false, 128, 128, 2, 256}, {0, 2}); }
TEST(SimHopperAttn, PersistentD256) { attnCase({1, 2, 128, 256, true, 64, 64, 2, 128}, {0}); }
TEST(SimHopperAttn, PersistentGroupedQuery) { attnCase({1, 4, 128, 64, true, 64, 32, 2, 128, false, "", 2}, {0, 1}); }
TEST(SimHopperAttn, PersistentDynamicSeq) { attnCase(dynamicSeq({1, 2, 200, 64, true, 64, 32, 2, 128}), {0, 2}); }
TEST(SimHopperAttn, PersistentOneStage) { attnCase({1, 2, 128, 64, true, 64, 64, 1, 128}, {0, 1}); }
TEST(SimHopperAttn, PersistentOverlapped) { attnCase(overlapped({1, 2, 200, 64, true, 64, 32, 2, 128}), {0, 1}); }
TEST(SimHopperAttn, PersistentPingPong) { attnCase(pingPong({1, 2, 256, 64, false, 128, 64, 2, 256}), {0, 1}); }
// --no-persistent: one output tile per block, Q behind one barrier
AttnCase notPersistent(AttnCase a) {
    a.noPersistent = true;
    return a;
}
TEST(SimHopperAttn, NotPersistentCausal) { attnCase(notPersistent({1, 2, 256, 64, true, 64, 32, 2, 128}), {0, 1}); }
TEST(SimHopperAttn, NotPersistentRaggedTwoWarpgroups) { attnCase(notPersistent({1, 1, 200, 64, false, 128, 64, 2, 256}), {0}); }

/// --walk-group: causal tiles walked with the query blocks in groups (5 query blocks in groups of 2: the last
/// group a single block; 4 in groups of 3), each simulated block walking 5 or 4 tiles of mixed work.
AttnCase walkGroup(AttnCase a, int g) {
    a.walkGroup = g;
    return a;
}
/// Kernel::walkTile visits every tile once for any group size; 1, or a group no smaller than the grid
/// dimension, is the plain walk with that dimension slowest.
TEST(SimHopperAttn, WalkTileIsABijection) {
    for (const std::array<int64_t, 3> grid : {std::array<int64_t, 3>{5, 3, 2}, {8, 16, 1}, {1, 4, 3}, {7, 1, 1}})
        for (int slowest : {0, 2})
            for (int g = 1; g <= grid[0] + 2; ++g) {
                ir::Kernel k;
                k.walkSlowest = slowest;
                k.walkGroup = g;
                const int64_t n = grid[0] * grid[1] * grid[2];
                std::set<std::array<int64_t, 3>> seen;
                for (int64_t t = 0; t < n; ++t) {
                    const auto c = k.walkTile(t, grid);
                    for (int d = 0; d < 3; ++d) ASSERT_TRUE(c[d] >= 0 && c[d] < grid[d]) << "tile " << t << " group " << g;
                    seen.insert(c);
                    const std::array<int, 3> o = k.walkOrder();
                    if (g == 1 || g >= grid[o[2]]) { // the plain walk: fastest, middle, slowest
                        EXPECT_EQ(c[o[0]], t % grid[o[0]]);
                        EXPECT_EQ(c[o[2]], t / (grid[o[0]] * grid[o[1]]));
                    }
                    else if (t < grid[o[0]] * grid[o[1]] * g) EXPECT_EQ(c[o[2]], t % g) << "the first group's positions fastest";
                }
                EXPECT_EQ((int64_t)seen.size(), n) << "group " << g;
            }
}

TEST(SimHopperAttn, PersistentCausalWalkGroups) {
    const AttnCase a = walkGroup({1, 2, 320, 64, true, 64, 32, 2, 128}, 2);
    Lowered l(a);
    ASSERT_TRUE(l.roles) << l.r.diags();
    EXPECT_EQ(l.roles->walkSlowest, 0);
    EXPECT_EQ(l.roles->walkGroup, 2);
    attnCase(a, {0, 1});
    attnCase(walkGroup({2, 1, 256, 64, true, 64, 64, 2, 128}, 3), {0});
    Lowered full(walkGroup({1, 2, 256, 64, false, 64, 32, 2, 128}, 2));
    ASSERT_TRUE(full.roles);
    EXPECT_EQ(full.roles->walkGroup, 1) << "tiles alike: the grid's order";
}

/// By default causal attention, whose tiles run different numbers of key blocks, is persistent with its query
/// blocks walked in groups of 7 (where there are more than 7: 512 / 64 = 8 here); with --walk-group=0 it
/// launches one block per tile; both run against float64.
TEST(SimHopperAttn, DefaultCausalWalkAndWalkGroupZero) {
    const AttnCase causal{1, 2, 512, 64, true, 64, 64, 2, 128};
    Lowered d(causal), z(causal, false);
    ASSERT_TRUE(d.roles && z.roles) << d.r.diags();
    EXPECT_TRUE(d.roles->persistent);
    EXPECT_EQ(d.roles->walkSlowest, 0);
    EXPECT_EQ(d.roles->walkGroup, 7);
    EXPECT_FALSE(z.roles->persistent);
    const Data data = reference(causal);
    for (const Lowered *l : {&d, &z}) {
        Outcome o = simulate(*l->roles, causal, data, 0);
        EXPECT_EQ(o.error, "");
        EXPECT_TRUE(o.races.empty());
        EXPECT_EQ(o.wrong, 0) << o.firstWrong;
    }
}

/// Causal tiles no more than the target's SMs are one wave: one block per tile, whose walk would be one tile.
TEST(SimHopperAttn, OneWaveCausalNotPersistent) {
    const AttnCase causal{1, 2, 512, 64, true, 64, 64, 2, 128}; // 8 x 2 tiles
    for (int sms : {16, 15}) {
        Target t = Target::parse("sm_90a")->withSmCount(sms);
        LowerRun r;
        r.run(causal.source(), "flash.tile", t);
        ASSERT_TRUE(r.lowered) << r.diags();
        const ir::Kernel *roles = nullptr;
        for (auto &k : r.lowered->kernels)
            if (k->producerThreads) roles = k.get();
        ASSERT_TRUE(roles) << r.diags();
        EXPECT_EQ(roles->persistent, sms < 16) << sms << " SMs";
    }
}

/// The persistent walk's order: the query block (grid dimension 0) slowest where the causal loop's trip count
/// depends on it, the usual x-fastest order otherwise; Q's barriers a full/empty pair, one otherwise.
TEST(SimHopperAttn, PersistentWalkOrderAndQBarriers) {
    Lowered causal(AttnCase{1, 2, 256, 64, true, 64, 32, 2, 128}), full(AttnCase{1, 2, 256, 64, false, 64, 32, 2, 128}),
        off(notPersistent({1, 2, 256, 64, true, 64, 32, 2, 128}));
    ASSERT_TRUE(causal.roles && full.roles && off.roles) << causal.r.diags();
    EXPECT_EQ(causal.roles->walkSlowest, 0);
    EXPECT_EQ(causal.roles->walkOrder(), (std::array<int, 3>{1, 2, 0}));
    EXPECT_EQ(full.roles->walkSlowest, 2);
    EXPECT_EQ(off.roles->walkSlowest, 2);
    auto c = callCounts(*causal.roles), o = callCounts(*off.roles);
    EXPECT_EQ(c[lib::Fn::MbarrierInit] - o[lib::Fn::MbarrierInit], 1) << "Q's empty barrier";
    EXPECT_EQ(c[lib::Fn::MbarrierWait] - o[lib::Fn::MbarrierWait], 1) << "the producer's wait for Q's release";
    EXPECT_EQ(c[lib::Fn::MbarrierArrive] - o[lib::Fn::MbarrierArrive], 2) << "Q's release in the last iteration, or after no iteration";
}

/// The rotated loop as lowered: one QK^T in the prologue and one in the loop (under `ko + 1 < end`), both into
/// scores_next; four waits (two in the loop, each a choice of two, and the epilogue's); none without the flag.
TEST(SimHopperAttn, OverlapAsLowered) {
    const AttnCase a{1, 1, 128, 64, true, 64, 32, 2, 128};
    Lowered on(overlapped(a)), off(a);
    ASSERT_TRUE(on.roles && off.roles) << on.r.diags();
    auto c = callCounts(*on.roles), o = callCounts(*off.roles);
    EXPECT_EQ(c[lib::Fn::WgmmaSS], 2);
    EXPECT_EQ(o[lib::Fn::WgmmaSS], 1);
    EXPECT_EQ(c[lib::Fn::WgmmaWait], 5);
    EXPECT_EQ(o[lib::Fn::WgmmaWait], 2);
    bool next = false;
    for (auto &b : on.roles->allocs) next |= b->name == "scores_next";
    EXPECT_TRUE(next);
}

/// The turns as lowered: every wgmma between a bar.sync on the warpgroup's own barrier and a bar.arrive on the
/// other's, warpgroup 1's first hand-over before the loop and warpgroup 0's last turn after it; none without
/// --pingpong, and none with one consumer warpgroup.
TEST(SimHopperAttn, PingPongTurnsAsLowered) {
    Lowered on(pingPong({1, 1, 256, 64, true, 128, 64, 2, 256})), off(AttnCase{1, 1, 256, 64, true, 128, 64, 2, 256}),
        one(pingPong({1, 1, 256, 64, true, 128, 64, 2, 128}));
    ASSERT_TRUE(on.roles && off.roles && one.roles) << on.r.diags();
    auto c = callCounts(*on.roles);
    EXPECT_EQ(c[lib::Fn::NamedArrive], 3);
    EXPECT_EQ(c[lib::Fn::NamedSync] - callCounts(*off.roles)[lib::Fn::NamedSync], 3);
    EXPECT_EQ(callCounts(*off.roles)[lib::Fn::NamedArrive], 0);
    EXPECT_EQ(callCounts(*one.roles)[lib::Fn::NamedArrive], 0);
}

// ---- mutations of the attention schedule that the simulator must catch ----

/// The kernel with each consumer library-call statement passed through `f` (null: removed).
std::shared_ptr<ir::Kernel> mutateConsumers(const ir::Kernel &k, std::function<ir::Stmt(const ir::Evaluate &, const ir::Call &)> f) {
    struct M : ir::IRMutator {
        using IRMutator::visit;
        std::function<ir::Stmt(const ir::Evaluate &, const ir::Call &)> f;
        ir::Stmt visit(const std::shared_ptr<const ir::Evaluate> &op) override {
            auto c = ir::as<ir::Call>(op->value);
            return c ? f(*op, *c) : ir::Stmt(op);
        }
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
            return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, op->producer,
                                       mutate(op->consumer), op->loc);
        }
    } m;
    m.f = std::move(f);
    auto nk = std::make_shared<ir::Kernel>(k);
    nk->body = m.mutate(k.body);
    return nk;
}

const AttnCase kMutant{1, 1, 128, 64, true, 64, 32, 2, 128}; // four key blocks through a ring of two

bool anyFailure(const Outcome &o) { return !o.error.empty() || !o.races.empty() || o.wrong; }

TEST(SimHopperAttnMutant, UnmutatedRunsClean) { attnCase(kMutant, {0, 4}); }

/// The kernel without the `nth` (from 1) consumer call of `f`; `seen` counts the calls of f there are.
std::shared_ptr<ir::Kernel> withoutNth(const ir::Kernel &k, lib::Fn f, int nth, int *seen = nullptr) {
    int n = 0;
    auto out = mutateConsumers(k, [&](const ir::Evaluate &e, const ir::Call &c) -> ir::Stmt {
        if (lib::is(c, f) && ++n == nth) return ir::Stmt();
        return ir::Evaluate::make(e.value, e.loc);
    });
    if (seen) *seen = n;
    return out;
}

/// Some interleaving of `seeds` fails (an error, a race or a wrong result).
void expectCaught(const ir::Kernel &k, std::initializer_list<uint64_t> seeds, bool everySeed) {
    const Data d = reference(kMutant);
    bool any = false;
    for (uint64_t seed : seeds) {
        bool caught = anyFailure(simulate(k, kMutant, d, seed));
        any |= caught;
        if (everySeed) EXPECT_TRUE(caught) << "seed " << seed;
    }
    EXPECT_TRUE(any);
}

/// The wait after P.V removed (the waits: after QK^T, then after P.V): V's stage is released while the
/// wgmma reading it is in flight, and the next block's QK^T wait retires it only after the producer may have
/// refilled the stage.
TEST(SimHopperAttnMutant, NoWaitAfterPVIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    int waits = 0;
    auto k = withoutNth(*l.roles, lib::Fn::WgmmaWait, 2, &waits);
    ASSERT_EQ(waits, 2);
    expectCaught(*k, {0, 1, 2, 5}, false);
}

/// A store into P's registers between the P.V that reads them and the wait that retires it (what a compiler
/// reusing those registers would do): the hardware may read either value, an error.
TEST(SimHopperAttnMutant, OverwritingInFlightRegistersIsAnError) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    auto k = mutateConsumers(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c) -> ir::Stmt {
        ir::Stmt same = ir::Evaluate::make(e.value, e.loc);
        if (!lib::is(c, lib::Fn::WgmmaRS)) return same;
        const ir::Load *a = passes::addressedLoad(lib::arg(c, lib::Fn::WgmmaRS, "a"));
        return ir::Seq::make({same, ir::Store::make(a->buffer, {ir::intImm(5, DType::Int32)}, ir::floatImm(0.5, a->buffer->dtype))});
    });
    Outcome o = simulate(*k, kMutant, reference(kMutant), 0);
    EXPECT_NE(o.error.find("the A registers probs of a wgmma_rs in flight changed in thread "), std::string::npos) << o.error;
}

/// The consumers not waiting for V's full barrier (their waits: Q's once, then K's and V's in the loop): P.V
/// reads a stage before (or while) V lands.
TEST(SimHopperAttnMutant, NotWaitingForVIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    int waits = 0;
    auto k = withoutNth(*l.roles, lib::Fn::MbarrierWait, 3, &waits);
    ASSERT_EQ(waits, 3);
    expectCaught(*k, {0, 5}, true);
}

/// The consumers not waiting for Q: QK^T reads Q's tile before TMA writes it.
TEST(SimHopperAttnMutant, NotWaitingForQIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    expectCaught(*withoutNth(*l.roles, lib::Fn::MbarrierWait, 1), {0, 5}, true);
}

/// --intra-overlap's waits (in the loop: QK^T of ko, wait(1) or wait(0) on the first block; P.V of ko - 1,
/// wait(1) or wait(0) on the last; the epilogue's wait(0)), each needed: without the first pair the softmax
/// copies scores a QK^T still writes; without the second it writes P.V's A registers in flight and rescales its
/// accumulators; a pending count one too high has the same effect.
struct OverlapMutant {
    AttnCase a = overlapped(kMutant);
    Lowered l{a};
    Data d = reference(a);
    Outcome run(const ir::Kernel &k, uint64_t seed) { return simulate(k, a, d, seed); }
    std::shared_ptr<ir::Kernel> without(std::initializer_list<int> nths) {
        int n = 0;
        return mutateConsumers(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c) -> ir::Stmt {
            if (lib::is(c, lib::Fn::WgmmaWait) && std::count(nths.begin(), nths.end(), ++n)) return ir::Stmt();
            return ir::Evaluate::make(e.value, e.loc);
        });
    }
};

TEST(SimHopperAttnMutant, OverlapUnmutatedRunsClean) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    for (uint64_t seed : {0, 4}) EXPECT_FALSE(anyFailure(m.run(*m.l.roles, seed))) << "seed " << seed;
}

TEST(SimHopperAttnMutant, OverlapWithoutWaitForScoresIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    Outcome o = m.run(*m.without({1, 2}), 0);
    EXPECT_TRUE(anyFailure(o));
    EXPECT_GT(o.wrong, 0) << "the copied scores are those of a QK^T in flight";
}

TEST(SimHopperAttnMutant, OverlapWithoutWaitForPVIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    Outcome o = m.run(*m.without({3}), 0);
    EXPECT_NE(o.error.find("the A registers probs of a wgmma_rs in flight changed"), std::string::npos) << o.error;
}

TEST(SimHopperAttnMutant, OverlapWithoutEpilogueWaitIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    EXPECT_TRUE(anyFailure(m.run(*m.without({5}), 0)));
}

TEST(SimHopperAttnMutant, OverlapWaitOneTooLaxIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    int n = 0;
    auto k = mutateConsumers(*m.l.roles, [&](const ir::Evaluate &e, const ir::Call &c) -> ir::Stmt {
        if (lib::is(c, lib::Fn::WgmmaWait) && ++n == 1) // the loop's wait(1) for QK^T of ko: wait(2)
            return lib::stmt(lib::Fn::WgmmaWait, {ir::intImm(2, DType::Int32)}, e.loc);
        return ir::Evaluate::make(e.value, e.loc);
    });
    EXPECT_TRUE(anyFailure(m.run(*k, 0)));
}

/// K's stage of ko released at the top of the iteration, before the wait that retires its QK^T: the producer
/// may refill it (with K of ko + 2) while that QK^T reads it.
TEST(SimHopperAttnMutant, OverlapReleasingKBeforeItsQKRetiresIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    struct Early : ir::IRMutator {
        using IRMutator::visit;
        int moved = 0;
        ir::Stmt visit(const std::shared_ptr<const ir::Seq> &op) override {
            auto s = op->stmts;
            auto first = s.empty() ? nullptr : ir::as<ir::IfThenElse>(s[0]);
            if (s.size() > 4 && first && passes::isCall(first->then, lib::Fn::WgmmaWait) && ir::as<ir::IfThenElse>(s[3]) &&
                passes::isCall(ir::as<ir::IfThenElse>(s[3])->then, lib::Fn::MbarrierArrive)) {
                std::rotate(s.begin(), s.begin() + 3, s.begin() + 4);
                ++moved;
                return ir::Seq::make(std::move(s), op->loc);
            }
            return IRMutator::visit(op);
        }
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
            return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, op->producer,
                                       mutate(op->consumer), op->loc);
        }
    } early;
    auto k = std::make_shared<ir::Kernel>(*m.l.roles);
    k->body = early.mutate(k->body);
    ASSERT_EQ(early.moved, 1);
    for (uint64_t seed : {0, 1, 2, 5}) {
        Outcome o = m.run(*k, seed);
        ASSERT_FALSE(o.races.empty()) << "seed " << seed;
        EXPECT_NE(o.races[0].find("on K_shared["), std::string::npos) << o.races[0];
    }
}

/// The ping-pong turns without warpgroup 1's first hand-over: both warpgroups wait for their turn for ever.
TEST(SimHopperAttnMutant, PingPongWithoutFirstTurnDeadlocks) {
    const AttnCase a = pingPong({1, 1, 128, 64, true, 128, 64, 2, 256});
    Lowered l(a);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Outcome o = simulate(*withoutNth(*l.roles, lib::Fn::NamedArrive, 1), a, reference(a), 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
}

/// ... and without warpgroup 0's last turn: warpgroup 1's last hand-over is left pending on the barrier.
TEST(SimHopperAttnMutant, PingPongWithoutLastTurnIsCaught) {
    const AttnCase a = pingPong({1, 1, 128, 64, true, 128, 64, 2, 256});
    Lowered l(a);
    ASSERT_TRUE(l.roles) << l.r.diags();
    int syncs = 0;
    withoutNth(*l.roles, lib::Fn::NamedSync, 1000, &syncs);
    // the last turn's: before the epilogue's two barriers per staged piece (StageEpilogue)
    const int turn = syncs - 2 * callCounts(*l.roles)[lib::Fn::StmatrixTile];
    Outcome o = simulate(*withoutNth(*l.roles, lib::Fn::NamedSync, turn), a, reference(a), 0);
    EXPECT_NE(o.error.find("threads arrived at named barrier 4 and no one to complete it"), std::string::npos) << o.error;
}

/// Persistent Q: two blocks walking two output tiles each (heavy-first causal, four and two key blocks).
const AttnCase kPersistentMutant{1, 2, 128, 64, true, 64, 32, 2, 128};

TEST(SimHopperAttnMutant, PersistentUnmutatedRunsClean) { attnCase(kPersistentMutant, {0, 1, 2, 5}); }

/// The producer not waiting for the consumers' release of Q (its first wait): the next tile's Q lands while
/// this tile's QK^Ts still read Q_shared.
TEST(SimHopperAttnMutant, PersistentQReloadedBeforeItsReleaseIsCaught) {
    Lowered l(kPersistentMutant);
    ASSERT_TRUE(l.roles && l.roles->persistent) << l.r.diags();
    struct M : ir::IRMutator {
        using IRMutator::visit;
        int removed = 0;
        ir::Stmt visit(const std::shared_ptr<const ir::Evaluate> &op) override {
            auto c = ir::as<ir::Call>(op->value);
            if (c && lib::is(*c, lib::Fn::MbarrierWait) && removed++ == 0) return ir::Stmt();
            return op;
        }
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
            return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, mutate(op->producer),
                                       op->consumer, op->loc);
        }
    } m;
    auto k = std::make_shared<ir::Kernel>(*l.roles);
    k->body = m.mutate(k->body);
    ASSERT_GT(m.removed, 1);
    const Data d = reference(kPersistentMutant);
    bool any = false;
    for (uint64_t seed : {0, 1, 2, 5}) any |= anyFailure(simulate(*k, kPersistentMutant, d, seed));
    EXPECT_TRUE(any);
}

/// The consumers not releasing Q in the tile's last iteration (their second arrival): the producer waits for
/// ever on Q's empty barrier (after the ring's four: tilec_mbar[9]).
TEST(SimHopperAttnMutant, PersistentQNotReleasedDeadlocks) {
    Lowered l(kPersistentMutant);
    ASSERT_TRUE(l.roles && l.roles->persistent) << l.r.diags();
    Outcome o = simulate(*withoutNth(*l.roles, lib::Fn::MbarrierArrive, 2), kPersistentMutant, reference(kPersistentMutant), 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("waits on tilec_mbar[9]"), std::string::npos) << o.error;
}

/// No release of K's stages (the consumers' first arrival): the producer waits for ever on K's empty barrier,
/// the consumers on K's full one.
TEST(SimHopperAttnMutant, NoReleaseOfKDeadlocks) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Outcome o = simulate(*withoutNth(*l.roles, lib::Fn::MbarrierArrive, 1), kMutant, reference(kMutant), 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("producer warpgroup 0 (threads 128..255) waits on tilec_mbar[2]"), std::string::npos) << o.error;
}

} // namespace
