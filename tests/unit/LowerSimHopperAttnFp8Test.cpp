/// \file
/// The float8 FlashAttention forward (benchmarks/flash_fwd_fp8.tile) on the Hopper schedule, checked on the CPU
/// simulator: e4m3 Q, K and V^T (V stored (batch, heads_kv, dim, seq), so that P.V's B is K-major as wgmma's
/// 8-bit operands must be), per-tensor scales as scalar arguments and per-block scales as tensors, lowered for
/// sm_90a into warp roles (QK^T on wgmma SS, P.V on wgmma RS with P's float8 registers) and run against the
/// float64 reference computed from the e4m3-rounded inputs. The simulator keeps float8 values exact (it rounds
/// them to float32), so the probabilities are not rounded to e4m3 as on the GPU: the comparison is as tight as
/// float16's (what it checks is the schedule, the transposed operand and the scales, not e4m3's rounding).
#include "LowerSimHopperAttnUtil.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using namespace tilec::simtest;
using namespace tilec::simtest::attn;

namespace {

/// v rounded to the nearest float8 e4m3 (3 fraction bits, normal exponents from -6, at most 448), ties to even.
double roundE4m3(double v) {
    if (v == 0 || !std::isfinite(v)) return v;
    int e = std::max(std::ilogb(v), -6);
    double q = std::ldexp(1.0, e - 3); // the spacing of e4m3 values around v
    double r = std::nearbyint(v / q) * q;
    return std::fmax(-448.0, std::fmin(448.0, r));
}

struct Fp8Case {
    int batch, heads, seq, dim;
    bool causal;
    int blockM, blockN, stages, threads;
    bool blockScales = false;
    int headsKV = 0;
    bool pingPong = false, overlap = false; ///< --pingpong, --intra-overlap
    int kvHeads() const { return headsKV ? headsKV : heads; }
    std::string source() const {
        auto n = [](int v) { return std::to_string(v); };
        return withExport("flash_fwd_fp8.tile",
                          "k = flash_fwd_fp8(" + n(batch) + ", " + n(heads) + ", " + n(seq) + ", " + n(dim) + ", " +
                              (causal ? "True" : "False") + ", " + n(blockM) + ", " + n(blockN) + ", " + n(stages) + ", " +
                              n(threads) + (headsKV ? ", heads_kv=" + n(headsKV) : "") +
                              (blockScales ? ", block_scales=True" : "") + ")",
                          "benchmarks");
    }
};

struct Fp8Data {
    std::vector<double> q, k, vt, qs, ks, want;
    double qScale = 0.75, kScale = 1.5, vScale = 0.5;
};

/// e4m3 inputs in [-2, 2] (their stored values), scales, and the float64 reference of
/// softmax(Qd Kd^T / sqrt(D)) Vd with Xd the dequantized tensors.
Fp8Data reference(const Fp8Case &a) {
    const int qBlocks = (a.seq + a.blockM - 1) / a.blockM, kBlocks = (a.seq + a.blockN - 1) / a.blockN;
    const size_t n = (size_t)a.batch * a.seq * a.heads * a.dim, nkv = (size_t)a.batch * a.seq * a.kvHeads() * a.dim;
    Fp8Data d{randomData(n, 51, -2, 2), randomData(nkv, 52, -2, 2), randomData(nkv, 53, -2, 2),
              randomData((size_t)a.batch * a.heads * qBlocks, 54, 0.5, 2),
              randomData((size_t)a.batch * a.kvHeads() * kBlocks, 55, 0.5, 2), std::vector<double>(n, 0)};
    for (auto *x : {&d.q, &d.k, &d.vt}) for (auto &e : *x) e = roundE4m3(e);
    if (!a.blockScales) std::fill(d.qs.begin(), d.qs.end(), 1.0), std::fill(d.ks.begin(), d.ks.end(), 1.0);
    const int group = a.heads / a.kvHeads();
    auto at = [&](int b, int t, int h, int x) { return (((size_t)b * a.seq + t) * a.heads + h) * a.dim + x; };
    auto kat = [&](int b, int t, int h, int x) { return (((size_t)b * a.seq + t) * a.kvHeads() + h / group) * a.dim + x; };
    auto vat = [&](int b, int t, int h, int x) { return (((size_t)b * a.kvHeads() + h / group) * a.dim + x) * a.seq + t; };
    const double scale = 1.0 / std::sqrt((double)a.dim);
    for (int b = 0; b < a.batch; ++b)
        for (int h = 0; h < a.heads; ++h)
            for (int i = 0; i < a.seq; ++i) {
                const int keys = a.causal ? i + 1 : a.seq;
                const double qd = d.qScale * d.qs[((size_t)b * a.heads + h) * qBlocks + i / a.blockM];
                std::vector<double> p((size_t)keys);
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < keys; ++j) {
                    const double kd = d.kScale * d.ks[((size_t)b * a.kvHeads() + h / group) * kBlocks + j / a.blockN];
                    double dot = 0;
                    for (int x = 0; x < a.dim; ++x) dot += qd * d.q[at(b, i, h, x)] * kd * d.k[kat(b, j, h, x)];
                    mx = std::max(mx, p[(size_t)j] = dot * scale);
                }
                for (auto &e : p) sum += e = std::exp(e - mx);
                for (int x = 0; x < a.dim; ++x) {
                    double o = 0;
                    for (int j = 0; j < keys; ++j) o += p[(size_t)j] * d.vScale * d.vt[vat(b, j, h, x)];
                    d.want[at(b, i, h, x)] = o / sum;
                }
            }
    return d;
}

/// Runs `k` under the interleavings of `seeds` against the reference: no error, race or wrong element.
void expectCorrect(const ir::Kernel &k, const Fp8Data &d, std::initializer_list<uint64_t> seeds) {
    for (uint64_t seed : seeds) {
        Fp8Data in = d;
        std::vector<double> out(d.want.size(), std::nan(""));
        Outcome o = runCaught(k, {{"Q", &in.q}, {"K", &in.k}, {"VT", &in.vt}, {"Q_scale", &in.qs}, {"K_scale", &in.ks}, {"Out", &out}},
                              {{"q_scale", d.qScale}, {"k_scale", d.kScale}, {"v_scale", d.vScale}}, seed);
        for (size_t i = 0; i < out.size(); ++i)
            o.check(std::fabs(out[i] - d.want[i]) <= 2e-3 * std::max(1.0, std::fabs(d.want[i])), [&] {
                return "Out[" + std::to_string(i) + "] = " + std::to_string(out[i]) + ", expected " + std::to_string(d.want[i]);
            });
        EXPECT_EQ(o.error, "") << k.name << " seed " << seed;
        for (auto &race : o.races) ADD_FAILURE() << k.name << " seed " << seed << ": race: " << race;
        EXPECT_EQ(o.wrong, 0) << k.name << " seed " << seed << ": " << o.firstWrong;
    }
}

/// The P.V product of `k`: a wgmma RS reading P's float8 registers, whose array is twice the thread's share of
/// the (block_M, block_N) probabilities (the m64k32 image after them).
void expectFloat8RS(const ir::Kernel &k, const Fp8Case &a) {
    struct RS : ir::IRVisitor {
        using ir::IRVisitor::visit;
        const ir::Load *a = nullptr;
        int n = 0;
        void visit(const ir::Call &c) override {
            if (lib::is(c, lib::Fn::WgmmaRS)) a = passes::addressedLoad(lib::arg(c, lib::Fn::WgmmaRS, "a")), ++n;
            ir::IRVisitor::visit(c);
        }
    } rs;
    rs.visit(k.body);
    ASSERT_EQ(rs.n, a.overlap && k.producerThreads ? 2 : 1) << k.name << ": --intra-overlap: the loop's and the last P.V";
    ASSERT_TRUE(rs.a);
    EXPECT_EQ(rs.a->buffer->dtype.kind, DType::Float8E4M3);
    const int64_t share = (int64_t)a.blockM * a.blockN / (a.threads / 128 * 128);
    EXPECT_EQ(constInt(rs.a->buffer->shape[0]), std::optional<int64_t>(2 * share));
}

/// The float8 schedules of `a` for sm_90a, correct and race-free under `seeds`: warp roles (QK^T on wgmma SS,
/// P.V on wgmma RS, Q, K and V^T by TMA) unless `tma` is false (V^T's rows, seq bytes, not a multiple of 16:
/// TMA cannot load it), and the cp.async variant beside them (the same products on wgmma over cp.async tiles).
void fp8Case(const Fp8Case &a, std::initializer_list<uint64_t> seeds = {0, 1}, bool tma = true) {
    lowertest::LowerRun r, c;
    Variant v{Target::parse("sm_90a")->withSmCount(1), {}};
    v.options.pingPong = a.pingPong ? Choice::On : Choice::Off;
    v.options.intraOverlap = a.overlap ? Choice::On : Choice::Off;
    // The schedule's statements counted before splitUniformConditions copies the key loop (causal cases).
    r.keepBefore = c.keepBefore = "splitUniformConditions";
    r.run(a.source(), "flash_fp8.tile", v);
    v.options.tma = false;
    c.run(a.source(), "flash_fp8.tile", v);
    ASSERT_TRUE(r.lowered && c.lowered) << r.diags() << c.diags();
    const ir::Kernel *roles = warpRoles(r), *cpAsync = c.lowered->kernels.empty() ? nullptr : c.lowered->kernels[0].get();
    ASSERT_EQ(roles != nullptr, tma) << r.diags();
    ASSERT_TRUE(cpAsync && !cpAsync->producerThreads);
    const Fp8Data d = reference(a);
    ASSERT_TRUE(r.kept && c.kept && !c.kept->kernels.empty());
    const ir::Kernel *scheduled = nullptr, *cpScheduled = c.kept->kernels[0].get();
    for (auto &k : r.kept->kernels)
        if (k->producerThreads) scheduled = k.get();
    if (roles) {
        ASSERT_TRUE(scheduled);
        auto calls = callCounts(*scheduled);
        EXPECT_EQ(calls[lib::Fn::WgmmaSS], a.overlap ? 2 : 1) << "--intra-overlap: the prologue's QK^T and the loop's";
        EXPECT_EQ(calls[lib::Fn::WgmmaRS], a.overlap ? 2 : 1) << "--intra-overlap: the loop's P.V of ko - 1 and the last";
        EXPECT_EQ(calls[lib::Fn::TmaLoadTile], 3) << "Q once, K and V^T per stage";
        EXPECT_EQ(calls[lib::Fn::GemmSS] + calls[lib::Fn::GemmRS], 0) << "mma.sync left in the Hopper kernel";
        expectFloat8RS(*scheduled, a);
        expectCorrect(*roles, d, seeds);
    }
    auto calls = callCounts(*cpScheduled);
    EXPECT_EQ(calls[lib::Fn::WgmmaSS], 1);
    EXPECT_EQ(calls[lib::Fn::GemmSS] + calls[lib::Fn::GemmRS], 0) << "mma.sync in the cp.async variant";
    expectFloat8RS(*cpScheduled, a);
    expectCorrect(*cpAsync, d, {*seeds.begin()});
}

// one consumer warpgroup of 64 rows, 64-key blocks (two 32-column k-steps of P.V), causal
TEST(SimHopperAttnFp8, CausalOneWarpgroup) { fp8Case({1, 2, 192, 64, true, 64, 64, 2, 128}); }
// the benchmark's 128 x 128 tiles over two consumer warpgroups, D = 128, keys the tiles do not divide (V^T's
// rows of 208 bytes, TMA's multiple of 16)
TEST(SimHopperAttnFp8, NonCausalRaggedTwoWarpgroupsD128) { fp8Case({1, 1, 208, 128, false, 128, 128, 2, 256}, {0}); }
// the benchmark's 128 x 256 variant: n256 QK^T, eight k32 steps of P.V
TEST(SimHopperAttnFp8, KeyBlocksOf256) { fp8Case({1, 1, 512, 64, false, 128, 256, 2, 256}, {0}); }
// 200 keys: V^T's rows of 200 bytes are no TMA box's, so the loop keeps cp.async (wgmma on its tiles)
TEST(SimHopperAttnFp8, RowsTmaCannotLoad) { fp8Case({1, 1, 200, 64, false, 64, 64, 2, 128}, {0}, false); }
// per-block scales of Q and K (the scores scaled before the row maxima), grouped-query heads
TEST(SimHopperAttnFp8, BlockScalesGroupedQuery) {
    Fp8Case a{1, 4, 192, 64, true, 64, 64, 2, 128, true, 2};
    fp8Case(a);
}
TEST(SimHopperAttnFp8, BlockScalesTwoWarpgroups) { fp8Case({1, 1, 256, 64, false, 128, 128, 3, 256, true}, {0}); }

// the schedule options: the consumer warpgroups taking turns (--pingpong), P.V of the previous block under this
// block's softmax (--intra-overlap: P.V's group and its float8 registers in flight across the softmax), both
TEST(SimHopperAttnFp8, PingPong) {
    Fp8Case a{1, 1, 256, 64, true, 128, 64, 2, 256};
    a.pingPong = true;
    fp8Case(a, {0, 3});
}
TEST(SimHopperAttnFp8, IntraOverlap) {
    Fp8Case a{1, 2, 192, 64, true, 64, 64, 2, 128};
    a.overlap = true;
    fp8Case(a, {0, 1});
}
TEST(SimHopperAttnFp8, IntraOverlapPingPongRagged) {
    Fp8Case a{1, 1, 208, 64, false, 128, 64, 2, 256};
    a.overlap = a.pingPong = true;
    fp8Case(a, {0, 3});
}
TEST(SimHopperAttnFp8, IntraOverlapPingPongCausalBlockScales) {
    Fp8Case a{1, 1, 256, 64, true, 128, 64, 2, 256, true};
    a.overlap = a.pingPong = true;
    fp8Case(a, {0, 2});
}

} // namespace
