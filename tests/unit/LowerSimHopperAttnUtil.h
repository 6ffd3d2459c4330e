/// \file
/// Shared by LowerSimHopperAttnTest.cpp and LowerSimHopperAttnMutantTest.cpp: benchmarks/flash_fwd.tile (or
/// examples/flash_attn.tile) instantiated, lowered for sm_90a into warp roles and run on the simulator against
/// the float64 reference of softmax(Q K^T / sqrt(D)) V.
#pragma once

#include "LowerSimUtil.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace tilec::simtest::attn {

using lowertest::LowerRun;
namespace lib = passes::lib;

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
    /// The schedule switches not asked for by pingPong or overlap left at their default (Auto: the head
    /// dimension decides) instead of off (--no-pingpong / --no-intra-overlap).
    bool defaults = false;
    /// Whether the loop is rotated (overlapScores): asked for, or by default at head dimension >= 128 over a
    /// ring of two stages or more where the rotated loop's output, scores and P (16-bit) leave a consumer thread
    /// 64 of its 240 registers (each warpgroup holds blockM / warpgroups rows: rows x dim / 128 words of output,
    /// rows x blockN / 128 of scores, half as many of P).
    bool rotated() const {
        const int rows = blockM / (threads / 128), live = rows * dim / 128 + rows * blockN / 128 * 3 / 2;
        return overlap || (defaults && dim >= LoweringOptions::kAttentionOverlapHeadDim && stages >= 2 && live + 64 <= 240);
    }
    bool dynamicSeq = false; ///< seq=None: the length a T.dynamic size "seq", given `seq` at run time
    bool noPersistent = false; ///< lowered with --no-persistent (one output tile per block)
    int walkGroup = 7;         ///< lowered with --walk-group (LoweringOptions::walkGroup, whose default this is)
    bool splitConditions = true; ///< false: --no-split-conditions (the key loop one copy, as mutants count calls)
    bool skipRescales = true;    ///< false: --no-skip-unit-rescales (the output's rescale never skipped)
    int kvHeads() const { return headsKV ? headsKV : heads; }
    std::string source() const {
        auto n = [](int v) { return std::to_string(v); };
        if (example)
            return withExport("flash_attn.tile", "k = flash_attn(" + n(batch) + ", " + n(heads) + ", " + n(seq) + ", " +
                                                              n(dim) + ", " + n(blockM) + ", " + n(blockN) + ", " + n(stages) +
                                                              ", " + n(threads) + ")");
        return withExport("flash_fwd.tile",
                                   "k = flash_fwd(" + n(batch) + ", " + n(heads) + ", " + (dynamicSeq ? "None" : n(seq)) + ", " + n(dim) + ", " +
                                       (causal ? "True" : "False") + ", " + n(blockM) + ", " + n(blockN) + ", " + n(stages) +
                                       ", " + n(threads) + (headsKV ? ", heads_kv=" + n(headsKV) : "") + extra + ")",
                                   "benchmarks");
    }
};


struct Lowered {
    LowerRun r;
    const ir::Kernel *roles = nullptr;
    /// The same kernel before splitUniformConditions copied its key loop (the mask uniform below the diagonal):
    /// the schedule's statements once each, for counting them.
    const ir::Kernel *scheduled = nullptr;
    explicit Lowered(const AttnCase &a, bool uneven = true) {
        // these grids of a few tiles are not one wave (OneWaveCausalNotPersistent): a GPU of one SM
        Variant t{Target::parse("sm_90a")->withSmCount(1), {}};
        const Choice unset = a.defaults ? Choice::Auto : Choice::Off;
        t.options.pingPong = a.pingPong ? Choice::On : unset;
        t.options.intraOverlap = a.overlap ? Choice::On : unset;
        t.options.persistent = !a.noPersistent;
        t.options.walkGroup = uneven ? a.walkGroup : 0; // causal tiles persistent too (the default), or one block each
        t.options.splitConditions = a.splitConditions;
        t.options.skipUnitRescales = a.skipRescales;
        r.keepBefore = "splitUniformConditions";
        r.run(a.source(), "flash.tile", t);
        roles = warpRoles(r);
        if (r.kept)
            for (auto &k : r.kept->kernels)
                if (k->producerThreads) scheduled = k.get();
    }
};


struct Data {
    std::vector<double> q, k, v, want;
};

/// Inputs in [-1, 1] and the float64 reference: softmax(Q K^T / sqrt(D)) V per (batch, head), keys j <= i
/// when causal; query head h reads key/value head h / (heads / heads_kv).
inline Data reference(const AttnCase &a) {
    const size_t n = (size_t)a.batch * a.seq * a.heads * a.dim, nkv = (size_t)a.batch * a.seq * a.kvHeads() * a.dim;
    Data d{randomData(n, 41, -1, 1), randomData(nkv, 42, -1, 1), randomData(nkv, 43, -1, 1),
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


/// The probabilities are rounded to float16 before P.V (as on the GPU), so the output is within about 2^-11
/// relative of the float64 reference; 2e-3 of max(1, |want|) leaves room for the sums.
inline Outcome simulate(const ir::Kernel &k, const AttnCase &a, const Data &d, uint64_t seed) {
    Data in = d;
    std::vector<double> out(d.want.size(), std::nan(""));
    Scalars sizes;
    if (a.dynamicSeq) sizes["seq"] = a.seq;
    Outcome o = runCaught(k, {{"Q", &in.q}, {"K", &in.k}, {"V", &in.v}, {"Out", &out}}, sizes, seed);
    for (size_t i = 0; i < out.size(); ++i)
        o.check(std::fabs(out[i] - d.want[i]) <= 2e-3 * std::max(1.0, std::fabs(d.want[i])), [&] {
            return "Out[" + std::to_string(i) + "] = " + std::to_string(out[i]) + ", expected " + std::to_string(d.want[i]);
        });
    return o;
}

/// The Hopper schedule of `a`: warp roles with QK^T on wgmma SS and P.V on wgmma RS, correct and race-free
/// under the interleavings of `seeds`. Persistent unless --no-persistent: the simulator launches two blocks,
/// so that each walks several output tiles where the grid has more than two.
inline void attnCase(const AttnCase &a, std::initializer_list<uint64_t> seeds = {0, 1, 2}) {
    Lowered l(a);
    ASSERT_TRUE(l.roles && l.scheduled) << "no warp-specialized kernel for sm_90a\n" << l.r.diags();
    auto calls = callCounts(*l.scheduled);
    EXPECT_EQ(calls[lib::Fn::WgmmaSS], a.rotated() ? 2 : 1) << "--intra-overlap: the prologue's QK^T and the loop's";
    EXPECT_EQ(calls[lib::Fn::WgmmaRS], a.rotated() ? 2 : 1) << "--intra-overlap: the loop's P.V of ko - 1 and the last";
    EXPECT_EQ(calls[lib::Fn::TmaLoadTile], 3) << "Q once, K and V per stage";
    if ((a.causal || a.example) && a.splitConditions)
        EXPECT_GT(callCounts(*l.roles)[lib::Fn::WgmmaSS], calls[lib::Fn::WgmmaSS])
            << "the key loop split where the causal mask holds for the whole tile (splitUniformConditions)";
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


/// `a` lowered with --pingpong: the two consumer warpgroups take turns at their wgmmas (named barriers 4 and 5).
inline AttnCase pingPong(AttnCase a) {
    a.pingPong = true;
    return a;
}

/// `a` lowered with both: each iteration's QK^T and P.V of the block before issued in one turn.
inline AttnCase bothSchedules(AttnCase a) {
    a.pingPong = a.overlap = true;
    return a;
}

/// `a` lowered with the default switches: the head dimension decides the schedule.
inline AttnCase byDefault(AttnCase a) {
    a.defaults = true;
    return a;
}

/// `a` lowered with --no-split-conditions: the key loop one loop, whatever its mask.
inline AttnCase unsplit(AttnCase a) {
    a.splitConditions = false;
    return a;
}

/// `a` lowered with --intra-overlap: QK^T of block ko issued with P.V of ko - 1, the softmax under that P.V.
inline AttnCase overlapped(AttnCase a) {
    a.overlap = true;
    return a;
}

} // namespace tilec::simtest::attn
