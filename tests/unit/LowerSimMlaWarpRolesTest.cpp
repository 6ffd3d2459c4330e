/// \file
/// TileLang v0.1.13's two hand-written warp-specialized MLA kernels whose per-row values link two products that
/// mma.sync would split differently (64 x 64 scores, 64 x 256 outputs per 128-thread consumer group: they take one
/// split of the rows, src/lower/MmaLayouts.cpp commonRowSplits): DeepSeek's MLA decoding
/// (deepseek_mla/example_mla_decode_ws.py, `flashattn`) and the seesaw sparse MLA forward
/// (deepseek_v32/sparse_mla_fwd_seesaw.py, `sparse_mla_fwd`), and the pipelined sparse MLA forward whose flag race the
/// seesaw version fixes (deepseek_v32/sparse_mla_fwd_pipelined.py), each file read unchanged from the TileLang checkout
/// that TILELANG_SRC names (skipped without it: the examples are not copied into this project), lowered for sm_90a
/// with the manifest's call at batch 1 and run on the CPU simulator under two interleavings (a deadlock, a race or a
/// simulator error is reported) against a float64 reference of the attention.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace sim = tilec::simtest;

std::string example(const std::string &path) { return sim::tilelangExample(path); }

/// Values in [-1, 1] on a grid of 1/64 (exact in float16 and bfloat16).
std::vector<double> grid(size_t n, unsigned seed) {
    auto v = sim::randomData(n, seed, -1, 1);
    for (auto &x : v) x = std::round(x * 64) / 64;
    return v;
}

/// softmax(scale * q . k_s over the keys `keys`) . v_s, in float64: row h of `out` (`dv` values) and its base-2
/// log-sum-exp of the scores times scale * log2(e).
void attend(const double *q, const std::vector<const double *> &k, const std::vector<const double *> &v, int dqk, int dv,
            double scale, double *out, double *lse2) {
    std::vector<double> s(k.size());
    double mx = -INFINITY, sum = 0;
    for (size_t j = 0; j < k.size(); ++j) {
        for (int d = 0; d < dqk; ++d) s[j] += q[d] * k[j][d];
        mx = std::max(mx, s[j] *= scale);
    }
    for (auto &x : s) sum += x = std::exp(x - mx);
    for (int c = 0; c < dv; ++c) {
        double acc = 0;
        for (size_t j = 0; j < k.size(); ++j) acc += s[j] * v[j][c];
        out[c] = acc / sum;
    }
    if (lse2) *lse2 = (mx + std::log(sum)) / std::log(2.0);
}

// flashattn(132, 128, 1, 8192, 512, 64, 64, 64, 1, (512 + 64) ** -0.5) at batch 1: 2 blocks of 64 heads, 128 key
// blocks each; the kernel reads Q | Q_pe against KV | K_pe, and writes Output = softmax . KV. The example has a race
// of its own: consumer warpgroup 0 stores the row sums to sum_exp_shared after its loop, and consumer warpgroup 1
// reads them after its own loop, with nothing in the program between (TileLang's CUDA has the same two accesses,
// ordered only by timing; session 28's H100 run of tilec's kernel, before orderRoleExchanges, showed inf or wrong
// values from column 256 on). tilec orders them with a named barrier of both warpgroups (orderRoleExchanges), so
// every element is right under every interleaving, nothing races and nothing deadlocks.
TEST(LowerSimMlaWarpRoles, MlaDecodeWsExampleShape) {
    std::string src = example("deepseek_mla/example_mla_decode_ws.py");
    if (src.empty()) GTEST_SKIP() << "set TILELANG_SRC to a TileLang git checkout (tag v0.1.13)";
    constexpr int H = 128, N = 8192, D = 512, P = 64;
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, src + "\nk = flashattn(1, 128, 1, 8192, 512, 64, 64, 64, 1, (512 + 64) ** -0.5)\n", "sm_90a");
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    auto q = grid((size_t)H * D, 1), qpe = grid((size_t)H * P, 2), kv = grid((size_t)N * D, 3), kpe = grid((size_t)N * P, 4);
    std::vector<double> qk((size_t)H * (D + P)), kk((size_t)N * (D + P)), want((size_t)H * D);
    for (int h = 0; h < H; ++h)
        for (int d = 0; d < D + P; ++d) qk[(size_t)h * (D + P) + d] = d < D ? q[(size_t)h * D + d] : qpe[(size_t)h * P + d - D];
    std::vector<const double *> keys, vals;
    for (int s = 0; s < N; ++s) {
        for (int d = 0; d < D + P; ++d) kk[(size_t)s * (D + P) + d] = d < D ? kv[(size_t)s * D + d] : kpe[(size_t)s * P + d - D];
        keys.push_back(&kk[(size_t)s * (D + P)]), vals.push_back(&kv[(size_t)s * D]);
    }
    for (int h = 0; h < H; ++h) attend(&qk[(size_t)h * (D + P)], keys, vals, D + P, D, 1 / std::sqrt(576.0), &want[(size_t)h * D], nullptr);
    auto half = [&](const std::vector<double> &o, int from) {
        std::vector<double> out;
        for (int h = 0; h < H; ++h) out.insert(out.end(), o.begin() + (size_t)h * D + from, o.begin() + (size_t)h * D + from + D / 2);
        return out;
    };
    for (uint64_t seed : {0u, 7u}) {
        SCOPED_TRACE("interleaving " + std::to_string(seed));
        std::vector<double> out(want.size(), NAN), glse(H, 0), partial((size_t)H * D, 0);
        sim::Outcome o = sim::runCaught(*r.lowered->kernels[0], {{"Q", &q}, {"Q_pe", &qpe}, {"KV", &kv}, {"K_pe", &kpe},
            {"glse", &glse}, {"Output_partial", &partial}, {"Output", &out}}, {}, seed);
        EXPECT_EQ(o.error, "");
        for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
        sim::expectNear(half(out, 0), half(want, 0), 1e-5, "Output[:, :256]");
        sim::expectNear(half(out, D / 2), half(want, D / 2), 1e-5, "Output[:, 256:]");
    }
}

// sparse_mla_fwd.compile(heads=128, dim=512, tail_dim=64, topk=2048, kv_stride=1, kv_group=1, sm_scale=None,
// is_causal=True, CP0=False) at batch 1 and 2 query tokens (4 blocks: 2 per token, 64 heads each) over 4096 KV rows:
// each token's 2048 indices are distinct rows, all at or before its position (q_start_index_s + s). (A masked index
// is not loaded: the example then multiplies a probability of 0 by whatever its KV slot held before, never-written
// shared memory in the first iterations, which the simulator holds as NaN: 0 * NaN, the output NaN. On a GPU that
// memory holds earlier tiles' finite values, in TileLang's kernel as in tilec's.)
TEST(LowerSimMlaWarpRoles, SeesawSparseMlaFwdExampleShape) {
    std::string src = example("deepseek_v32/sparse_mla_fwd_seesaw.py");
    if (src.empty()) GTEST_SKIP() << "set TILELANG_SRC to a TileLang git checkout (tag v0.1.13)";
    constexpr int H = 128, D = 512, W = 512 + 64, TOPK = 2048, S = 2, SKV = 4096, START = SKV;
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, src + "\nk = sparse_mla_fwd.compile(heads=128, dim=512, tail_dim=64, topk=2048, kv_stride=1, kv_group=1, "
                           "sm_scale=None, is_causal=True, CP0=False)\n", "sm_90a");
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    // asyncPtxCopies: the producer's 6 KV copies stay in flight until each stage's T.cp_async_barrier_noinc, past
    // the barriers of its warp group around the row flags (the role-barrier rule), landing there in the simulator
    auto calls = sim::callCounts(*r.lowered->kernels[0]);
    EXPECT_EQ(calls[tilec::passes::lib::Fn::CpAsyncChunk], 6);
    EXPECT_EQ(calls[tilec::passes::lib::Fn::CpAsyncArrive], 2);
    auto q = grid((size_t)S * H * W, 11), kv = grid((size_t)SKV * W, 12);
    std::vector<double> ind((size_t)S * TOPK), start{(double)START}, want((size_t)S * H * D), wantLse((size_t)S * H);
    for (int s = 0; s < S; ++s) {
        std::vector<const double *> keys, vals;
        for (int j = 0; j < TOPK; ++j) { // distinct rows: 2047 is odd, so j -> j * 2047 + 5 s mod 4096 is one to one
            int row = (int)(((int64_t)j * 2047 + 5 * s) % SKV);
            ind[(size_t)s * TOPK + j] = row;
            if (row <= START + s) keys.push_back(&kv[(size_t)row * W]), vals.push_back(&kv[(size_t)row * W]);
        }
        for (int h = 0; h < H; ++h)
            attend(&q[((size_t)s * H + h) * W], keys, vals, W, D, 1 / std::sqrt((double)W), &want[((size_t)s * H + h) * D],
                   &wantLse[(size_t)s * H + h]);
    }
    for (uint64_t seed : {0u, 7u}) {
        SCOPED_TRACE("interleaving " + std::to_string(seed));
        std::vector<double> out(want.size(), NAN), lse(wantLse.size(), NAN);
        sim::Outcome o = sim::runCaught(*r.lowered->kernels[0], {{"Q", &q}, {"KV", &kv}, {"Indices", &ind},
            {"q_start_index_s", &start}, {"Output", &out}, {"Lse", &lse}}, {{"batch", 1}, {"seq_len", S}, {"seq_len_kv", SKV}}, seed);
        EXPECT_EQ(o.error, "");
        for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
        sim::expectNear(out, want, 1e-5, "Output");
        sim::expectNear(lse, wantLse, 1e-5, "Lse");
    }
}

} // namespace

namespace {

/// `src` with the k-th occurrence of `from` replaced by to[k], exactly to.size() of them (else empty: the file changed).
std::string replaceEach(std::string src, const std::string &from, const std::vector<std::string> &to) {
    size_t at = 0, k = 0;
    for (; (at = src.find(from, at)) != std::string::npos; ++k) {
        if (k == to.size()) return "";
        src.replace(at, from.size(), to[k]);
        at += to[k].size();
    }
    return k == to.size() ? src : "";
}

// sparse_mla_fwd_pipelined.py's kernel, compiled as the manifest does (heads=128, dim=512, tail_dim=64, topk=2048,
// kv_stride=1, CP0=False), at batch 1 and 2 query tokens at positions START + s over 4096 KV rows, each token's
// indices as the GPU suite's reference line draws them: its START + s earlier rows in a shuffled order, then rows
// START + s.. on, of which only the first is at or before the token (max_kv_i): the rest are masked by is_kv_valid.
// The example has a race of its own, which this test pins down: is_kv_valid is one buffer [BI] for both KV
// stages. The producer writes stage 1's flags once bar_k_1_free lets it (at i_i = 0 at once: parity 1 of a fresh
// barrier) while the consumers may still read stage 0's after bar_k_0_ready, and in every later round its stage-0
// flags meet the consumers' stage-1 reads the same way; where the two stages' flags differ (the masked blocks
// from START on) wrong scores are masked: under interleaving 0 nearly every output is wrong. The seesaw variant of
// the kernel double-buffers the flags (is_kv_valid[2, BI]); the same change made to this file's text here gives
// the reference under both interleavings. The file also has mla_decode_ws's race (MlaDecodeWsExampleShape):
// warpgroup 1 reads sum_exp_shared after its loop with nothing after warpgroup 0's store, which tilec orders with a
// named barrier (orderRoleExchanges; before it, interleaving 7 left one consumer's columns 256..511 of one block
// NaN). The races the simulator reports are tilec's own, in both variants: the producer's 8 threads that store one
// flag and then each read it get no barrier between (TileLang's CUDA has __sync_thread_partial there; insertSyncs
// does not order a warp-role producer's threads). Each thread stores the same value and reads after its own store,
// so nothing reads a wrong flag; the test allows those races and fails on any other.
TEST(LowerSimMlaWarpRoles, PipelinedSparseMlaFwdRace) {
    std::string src = example("deepseek_v32/sparse_mla_fwd_pipelined.py");
    if (src.empty()) GTEST_SKIP() << "set TILELANG_SRC to a TileLang git checkout (tag v0.1.13)";
    constexpr int H = 128, D = 512, W = 512 + 64, TOPK = 2048, S = 2, SKV = 4096, START = 1024;
    auto q = grid((size_t)S * H * W, 21), kv = grid((size_t)SKV * W, 22);
    std::vector<double> ind((size_t)S * TOPK), start{(double)START}, want((size_t)S * H * D);
    for (int s = 0; s < S; ++s) {
        int n = START + s;
        std::vector<const double *> keys, vals;
        for (int j = 0; j < TOPK; ++j) {
            int row = j < n ? (int)(((int64_t)j * 1021 + 7 * s) % n) : j; // 1021 is prime and below n: one to one
            ind[(size_t)s * TOPK + j] = row;
            if (row <= n) keys.push_back(&kv[(size_t)row * W]), vals.push_back(&kv[(size_t)row * W]);
        }
        for (int h = 0; h < H; ++h)
            attend(&q[((size_t)s * H + h) * W], keys, vals, W, D, 1 / std::sqrt((double)W), &want[((size_t)s * H + h) * D], nullptr);
    }
    std::string doubled = replaceEach(src, "T.alloc_shared([BI], \"bool\"", {"T.alloc_shared([2, BI], \"bool\""});
    doubled = replaceEach(doubled, "is_kv_valid[bi_i]", {"is_kv_valid[0, bi_i]", "is_kv_valid[1, bi_i]"});
    doubled = replaceEach(doubled, "is_kv_valid[r * 16", {"is_kv_valid[0, r * 16", "is_kv_valid[0, r * 16", "is_kv_valid[1, r * 16",
                                                          "is_kv_valid[1, r * 16"});
    ASSERT_FALSE(doubled.empty()) << "sparse_mla_fwd_pipelined.py no longer has the accesses of is_kv_valid this test rewrites";
    for (bool fixed : {false, true}) {
        SCOPED_TRACE(fixed ? "is_kv_valid[2, BI]" : "the example as written");
        tilec::lowertest::LowerRun r;
        sim::lowerFor(r, (fixed ? doubled : src) + "\nk = sparse_mla_fwd.compile(heads=128, dim=512, tail_dim=64, topk=2048, "
                                                    "kv_stride=1, kv_group=1, sm_scale=None, is_causal=True, CP0=False)\n",
                      "sm_90a");
        ASSERT_TRUE(r.lowered) << r.diags();
        ASSERT_EQ(r.lowered->kernels.size(), 1u);
        for (uint64_t seed : {0u, 7u}) {
            SCOPED_TRACE("interleaving " + std::to_string(seed));
            std::vector<double> out(want.size(), NAN), lse((size_t)S * H, 0);
            sim::Outcome o = sim::runCaught(*r.lowered->kernels[0], {{"Q", &q}, {"KV", &kv}, {"Indices", &ind},
                {"q_start_index_s", &start}, {"Output", &out}, {"Lse", &lse}}, {{"batch", 1}, {"seq_len", S}, {"seq_len_kv", SKV}}, seed);
            EXPECT_EQ(o.error, "");
            for (auto &race : o.races) { // tilec's among the producer's threads on the flags (above)
                bool flags = race.find(" on is_kv_valid[") != std::string::npos && race.find(" by producer ") != std::string::npos &&
                             race.find(" after producer ") != std::string::npos;
                EXPECT_TRUE(flags) << "race: " << race;
            }
            size_t wrongLeft = 0; // consumer warpgroup 0's columns 0..255
            for (size_t i = 0; i < out.size(); ++i) wrongLeft += i % D < D / 2 && !(std::fabs(out[i] - want[i]) <= 1e-5);
            if (!fixed) {
                if (seed == 0) EXPECT_GT(wrongLeft, 0u) << "the single flag buffer no longer masks wrong scores";
                continue;
            }
            sim::expectNear(out, want, 1e-5, "Output");
        }
    }
}

} // namespace
