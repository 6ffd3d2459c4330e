/// \file
/// DeepSeek's sparse MLA backward (TileLang's examples/dsa_sparse_finetune/sparse_mla_bwd.py `bwd` and
/// deepseek_v32/sparse_mla_bwd.py's, issue 23) at reduced shapes, lowered for sm_90a as the H200 runs it and run on the CPU simulator under several interleavings:
/// gathers of top-k KV rows by index (a -1 slot of the first sequence reads past the tensor's start and is masked),
/// wgmma and mma GEMMs, a float32 T.view of the bfloat16 KV tiles that the next iteration's gathers overwrite (the
/// view's reads and the gathers' writes are the same thread's elements: tilec places no barrier between them, the
/// simulator's race detector says whether that holds), and float32 atomics into dKV from every token that selects a
/// row. dQ and dKV against a float64 reference of the kernel's mathematics (tests/tilelang_compat/reference.tsv
/// judges the full-size kernel on the GPU with gpu/tlcompat_refs_mla.py).
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

namespace sim = tilec::simtest;

constexpr int H = 64, D = 64, DT = 32, W = D + DT, TOPK = 64, BS = 32;
const int LEN[2] = {10, 14};
constexpr int S = 24;

/// The statements both kernels share: dQ's and dKV's GEMMs of the iteration, and the dKV rows into
/// acc_dkv_shared, half by half (the view of KV_shared in the finetune kernel, a tile of its own in v32's).
const char *const kGradients = R"(            T.copy(acc_dp, dP_shared_cast)
            T.gemm(dP_shared_cast, KV_shared, acc_dq, policy=T.GemmWarpPolicy.FullCol)
            T.gemm(dP_shared_cast, KV_tail_shared, acc_dq_tail, policy=T.GemmWarpPolicy.FullCol)
            T.gemm(dP_shared_cast, Q_shared, acc_dkv, transpose_A=True, policy=T.GemmWarpPolicy.FullCol, clear_accum=True)
            T.gemm(P_shared_cast, dO_shared, acc_dkv, transpose_A=True, policy=T.GemmWarpPolicy.FullCol)
            T.clear(acc_dkv_tail)
            T.gemm(dP_shared_cast, Q_tail_shared, acc_dkv_tail, transpose_A=True, policy=T.GemmWarpPolicy.FullCol)
            for s in range(split_store):
                for bi_i, d_i in T.Parallel(BS, D):
                    if bi_i < BS // split_store:
                        acc_dkv_shared[bi_i, d_i] = acc_dkv[bi_i + s * (BS // split_store), d_i]
                for bi_i, d_i in T.Parallel(BS, D_tail):
                    if bi_i < BS // split_store:
                        acc_dkv_tail_shared[bi_i, d_i] = acc_dkv_tail[bi_i + s * (BS // split_store), d_i]
)";

/// The example's `bwd` with D = 64, D_tail = 32, topk = 64 (its structure and statements unchanged).
std::string source() {
    return R"(import tilelang
import tilelang.language as T


@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True, tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})
def bwd(Q, KV, dO, Indices, Lse, Delta, Offsets, TokenIndices, H, D, D_tail, topk, kv_group=1, block_size=32, num_stages=0, threads=128):
    sm_scale = (D + D_tail) ** (-0.5)
    S, B_plus_one = T.dynamic("S, B_plus_one")
    padded_H = max(tilelang.math.next_power_of_2(H), 16)
    BS = block_size
    NS = tilelang.cdiv(topk, block_size)
    split_store = 2
    dtype = T.bfloat16
    accum_dtype = T.float32
    Q: T.Tensor([S, H, D + D_tail], dtype)
    KV: T.Tensor([S, kv_group, D + D_tail], dtype)
    dO: T.Tensor([S, H, D], dtype)
    Indices: T.Tensor([S, kv_group, topk], T.int32)
    Lse: T.Tensor([S, H], accum_dtype)
    Delta: T.Tensor([S, H], accum_dtype)
    Offsets: T.Tensor([B_plus_one], T.int32)
    TokenIndices: T.Tensor([S, 2], T.int32)
    dQ = T.empty([S, H, D + D_tail], dtype)
    dKV = T.empty([S, kv_group, D + D_tail], accum_dtype)
    with T.Kernel(S, kv_group, threads=threads) as (b_s_i, bz):
        Q_shared = T.alloc_shared([padded_H, D], dtype)
        Q_tail_shared = T.alloc_shared([padded_H, D_tail], dtype)
        KV_shared = T.alloc_shared([BS, D], dtype)
        KV_tail_shared = T.alloc_shared([BS, D_tail], dtype)
        dO_shared = T.alloc_shared([padded_H, D], dtype)
        mask = T.alloc_fragment([BS], "bool")
        P_shared_cast = T.alloc_shared([padded_H, BS], dtype)
        dP_shared_cast = T.alloc_shared([padded_H, BS], dtype)
        dQ_shared = T.alloc_shared([padded_H, D], dtype)
        dQ_tail_shared = T.alloc_shared([padded_H, D_tail], dtype)
        acc_p = T.alloc_fragment([padded_H, BS], accum_dtype)
        acc_dp = T.alloc_fragment([padded_H, BS], accum_dtype)
        acc_dq = T.alloc_fragment([padded_H, D], accum_dtype)
        acc_dq_tail = T.alloc_fragment([padded_H, D_tail], accum_dtype)
        acc_dkv = T.alloc_fragment([BS, D], accum_dtype)
        acc_dkv_tail = T.alloc_fragment([BS, D_tail], accum_dtype)
        acc_dkv_shared = T.view(KV_shared, shape=[BS // split_store, D], dtype=accum_dtype)
        acc_dkv_tail_shared = T.view(KV_tail_shared, shape=[BS // split_store, D_tail], dtype=accum_dtype)
        b_i, s_i = TokenIndices[b_s_i, 0], TokenIndices[b_s_i, 1]
        bos, eos = Offsets[b_i], Offsets[b_i + 1]
        max_kv_i = s_i
        T.copy(Q[bos + s_i, bz * padded_H : (bz + 1) * padded_H, :D], Q_shared)
        T.copy(Q[bos + s_i, bz * padded_H : (bz + 1) * padded_H, D:], Q_tail_shared)
        T.copy(dO[bos + s_i, bz * padded_H : (bz + 1) * padded_H, :D], dO_shared)
        T.clear(acc_dq)
        T.clear(acc_dq_tail)
        for i_i in T.Pipelined(NS, num_stages=num_stages):
            for bi_i in T.Parallel(BS):
                mask[bi_i] = (Indices[bos + s_i, bz, i_i * BS + bi_i] <= max_kv_i) & (Indices[bos + s_i, bz, i_i * BS + bi_i] != -1)
            for h_i, bi_i in T.Parallel(padded_H, BS):
                acc_p[h_i, bi_i] = T.if_then_else(mask[bi_i], 0, -T.infinity(acc_p.dtype))
            for bi_i, d_i in T.Parallel(BS, D):
                KV_shared[bi_i, d_i] = KV[bos + Indices[bos + s_i, bz, i_i * BS + bi_i], bz, d_i]
            T.gemm(Q_shared, KV_shared, acc_p, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
            for bi_i, d_i in T.Parallel(BS, D_tail):
                KV_tail_shared[bi_i, d_i] = KV[bos + Indices[bos + s_i, bz, i_i * BS + bi_i], bz, D + d_i]
            T.gemm(Q_tail_shared, KV_tail_shared, acc_p, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
            for h_i, bi_i in T.Parallel(padded_H, BS):
                acc_p[h_i, bi_i] = T.exp(acc_p[h_i, bi_i] * sm_scale - Lse[bos + s_i, bz * padded_H + h_i])
            T.copy(acc_p, P_shared_cast)
            T.gemm(dO_shared, KV_shared, acc_dp, transpose_B=True, policy=T.GemmWarpPolicy.FullCol, clear_accum=True)
            for h_i, bi_i in T.Parallel(padded_H, BS):
                acc_dp[h_i, bi_i] = acc_p[h_i, bi_i] * (acc_dp[h_i, bi_i] - Delta[bos + s_i, bz * padded_H + h_i]) * sm_scale
)" + std::string(kGradients) + R"(                for bi_i, d_i in T.Parallel(BS // split_store, D):
                    T.atomic_add(dKV[bos + Indices[bos + s_i, bz, i_i * BS + bi_i + s * (BS // split_store)], bz, d_i], acc_dkv_shared[bi_i, d_i])
                for bi_i, d_i in T.Parallel(BS // split_store, D_tail):
                    T.atomic_add(dKV[bos + Indices[bos + s_i, bz, i_i * BS + bi_i + s * (BS // split_store)], bz, D + d_i], acc_dkv_tail_shared[bi_i, d_i])
        T.copy(acc_dq, dQ_shared)
        T.copy(acc_dq_tail, dQ_tail_shared)
        T.copy(dQ_shared, dQ[bos + s_i, bz * padded_H : (bz + 1) * padded_H, :D])
        T.copy(dQ_tail_shared, dQ[bos + s_i, bz * padded_H : (bz + 1) * padded_H, D:])
    return dQ, dKV


kernel = bwd.compile(H=64, D=64, D_tail=32, topk=64)
)";
}

/// deepseek_v32/sparse_mla_bwd.py's `bwd` with D = 64, D_tail = 32, topk = 64, S = 8, S_kv = 16: 256 threads, its
/// own float32 tiles for the dKV rows (no view), T.atomic_addx4 into dKV (an input the caller zeroes), log2 Lse.
std::string v32Source() {
    return R"(import tilelang
import tilelang.language as T


@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True, tilelang.PassConfigKey.TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE: True})
def bwd(Q, KV, dO, Indices, Lse, Delta, dKV, H, D, D_tail, topk, kv_group=1, block_size=32, num_stages=0):
    B, S, S_kv = T.const("B, S, S_kv")
    sm_scale = (D + D_tail) ** (-0.5)
    sm_scale_mul_reciprocal_log2 = sm_scale * 1.44269504
    dtype = T.bfloat16
    accum_dtype = T.float32
    padded_H = max(tilelang.math.next_power_of_2(H), 16)
    block_H = min(64, padded_H)
    threads = 256 if block_H >= 64 else 128
    NH = padded_H // block_H
    BS = block_size
    NS = tilelang.cdiv(topk, block_size)
    split_store = 2
    Q: T.Tensor([B, S, H, D + D_tail], dtype)
    KV: T.Tensor([B, S_kv, kv_group, D + D_tail], dtype)
    dO: T.Tensor([B, S, H, D], dtype)
    Indices: T.Tensor([B, S, kv_group, topk], T.int32)
    Lse: T.Tensor([B, S, H], accum_dtype)
    Delta: T.Tensor([B, S, H], accum_dtype)
    dQ = T.empty([B, S, H, D + D_tail], dtype)
    dKV: T.Tensor([B, S_kv, kv_group, D + D_tail], accum_dtype)
    with T.Kernel(S, B, kv_group * NH, threads=threads) as (s_i, by, bz):
        Q_shared = T.alloc_shared([block_H, D], dtype)
        Q_tail_shared = T.alloc_shared([block_H, D_tail], dtype)
        KV_shared = T.alloc_shared([BS, D], dtype)
        KV_tail_shared = T.alloc_shared([BS, D_tail], dtype)
        dO_shared = T.alloc_shared([block_H, D], dtype)
        mask = T.alloc_fragment([BS], "bool")
        P_shared_cast = T.alloc_shared([block_H, BS], dtype)
        dP_shared_cast = T.alloc_shared([block_H, BS], dtype)
        dQ_shared = T.alloc_shared([block_H, D], dtype)
        dQ_tail_shared = T.alloc_shared([block_H, D_tail], dtype)
        acc_p = T.alloc_fragment([block_H, BS], accum_dtype)
        acc_dp = T.alloc_fragment([block_H, BS], accum_dtype)
        acc_dq = T.alloc_fragment([block_H, D], accum_dtype)
        acc_dq_tail = T.alloc_fragment([block_H, D_tail], accum_dtype)
        acc_dkv = T.alloc_fragment([BS, D], accum_dtype)
        acc_dkv_tail = T.alloc_fragment([BS, D_tail], accum_dtype)
        acc_dkv_shared = T.alloc_shared([BS // split_store, D], accum_dtype)
        acc_dkv_tail_shared = T.alloc_shared([BS // split_store, D_tail], accum_dtype)
        max_kv_i = s_i
        T.copy(Q[by, s_i, bz * block_H : (bz + 1) * block_H, :D], Q_shared)
        T.copy(Q[by, s_i, bz * block_H : (bz + 1) * block_H, D:], Q_tail_shared)
        T.copy(dO[by, s_i, bz * block_H : (bz + 1) * block_H, :D], dO_shared)
        T.clear(acc_dq)
        T.clear(acc_dq_tail)
        for i_i in T.Pipelined(NS, num_stages=num_stages):
            for bi_i in T.Parallel(BS):
                mask[bi_i] = Indices[by, s_i, bz // NH, i_i * BS + bi_i] <= max_kv_i
            for h_i, bi_i in T.Parallel(block_H, BS):
                acc_p[h_i, bi_i] = T.if_then_else(mask[bi_i], 0, -T.infinity(acc_p.dtype))
            for bi_i, d_i in T.Parallel(BS, D):
                KV_shared[bi_i, d_i] = KV[by, Indices[by, s_i, bz // NH, i_i * BS + bi_i], bz // NH, d_i]
            T.gemm(Q_shared, KV_shared, acc_p, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
            for bi_i, d_i in T.Parallel(BS, D_tail):
                KV_tail_shared[bi_i, d_i] = KV[by, Indices[by, s_i, bz // NH, i_i * BS + bi_i], bz // NH, D + d_i]
            T.gemm(Q_tail_shared, KV_tail_shared, acc_p, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
            for h_i, bi_i in T.Parallel(block_H, BS):
                acc_p[h_i, bi_i] = T.exp2(acc_p[h_i, bi_i] * sm_scale_mul_reciprocal_log2 - Lse[by, s_i, bz * block_H + h_i])
            T.copy(acc_p, P_shared_cast)
            T.gemm(dO_shared, KV_shared, acc_dp, transpose_B=True, policy=T.GemmWarpPolicy.FullCol, clear_accum=True)
            for h_i, bi_i in T.Parallel(block_H, BS):
                acc_dp[h_i, bi_i] = acc_p[h_i, bi_i] * (acc_dp[h_i, bi_i] - Delta[by, s_i, bz * block_H + h_i]) * sm_scale
)" + std::string(kGradients) + R"(                for bi_i, d_i in T.Parallel(BS // split_store, D // 4):
                    T.atomic_addx4(dKV[by, Indices[by, s_i, bz // NH, i_i * BS + bi_i + s * (BS // split_store)], bz // NH, d_i * 4], acc_dkv_shared[bi_i, d_i * 4])
                for bi_i, d_i in T.Parallel(BS // split_store, D_tail // 4):
                    T.atomic_addx4(dKV[by, Indices[by, s_i, bz // NH, i_i * BS + bi_i + s * (BS // split_store)], bz // NH, D + d_i * 4], acc_dkv_tail_shared[bi_i, d_i * 4])
        T.copy(acc_dq, dQ_shared)
        T.copy(acc_dq_tail, dQ_tail_shared)
        T.copy(dQ_shared, dQ[by, s_i, bz * block_H : (bz + 1) * block_H, :D])
        T.copy(dQ_tail_shared, dQ[by, s_i, bz * block_H : (bz + 1) * block_H, D:])
    return dQ


kernel = bwd.compile(B=1, S=8, S_kv=16, H=64, D=64, D_tail=32, topk=64)
)";
}

struct Inputs {
    std::vector<double> q, kv, dO, ind, lse, delta, off{0, (double)LEN[0], (double)S}, ti;
};

/// Random inputs; token t of a sequence lists its positions 0..t, then later positions (masked), then -1.
Inputs inputs() {
    Inputs in;
    in.q = sim::randomData((size_t)S * H * W, 71, -1, 1);
    in.kv = sim::randomData((size_t)S * W, 72, -1, 1);
    in.dO = sim::randomData((size_t)S * H * D, 73, -1, 1);
    in.lse = sim::randomData((size_t)S * H, 74, 1, 2);
    in.delta = sim::randomData((size_t)S * H, 75, -1, 1);
    for (int b = 0; b < 2; ++b)
        for (int t = 0; t < LEN[b]; ++t) {
            in.ti.push_back(b), in.ti.push_back(t);
            for (int j = 0; j < TOPK; ++j) in.ind.push_back(j < LEN[b] ? (double)((j * 7 + t) % LEN[b]) : -1.0);
        }
    return in;
}

/// (dQ, dKV, |terms| of dKV) in float64, the kernel's mathematics (no 16-bit roundings: the simulator keeps float32),
/// for `tokens` query tokens over `rows` KV rows; v32: P = 2^(s scale 1.44269504 - Lse) and no -1 slots.
void reference(const Inputs &in, std::vector<double> &dQ, std::vector<double> &dKV, std::vector<double> &mag, int tokens = S,
               int rows = S, bool v32 = false) {
    const double scale = 1.0 / std::sqrt((double)W);
    dQ.assign((size_t)tokens * H * W, 0), dKV.assign((size_t)rows * W, 0), mag.assign((size_t)rows * W, 0);
    for (int r = 0; r < tokens; ++r) {
        int b = (int)in.ti[2 * r], t = (int)in.ti[2 * r + 1], bos = (int)in.off[b];
        for (int j = 0; j < TOPK; ++j) {
            int p = (int)in.ind[(size_t)(bos + t) * TOPK + j];
            if (p > t || p == -1) continue;
            const double *k = &in.kv[(size_t)(bos + p) * W];
            for (int h = 0; h < H; ++h) {
                const double *q = &in.q[((size_t)(bos + t) * H + h) * W], *o = &in.dO[((size_t)(bos + t) * H + h) * D];
                double s = 0, dp = 0;
                for (int d = 0; d < W; ++d) s += q[d] * k[d];
                for (int d = 0; d < D; ++d) dp += o[d] * k[d];
                double x = v32 ? s * scale * 1.44269504 - in.lse[(size_t)(bos + t) * H + h] : s * scale - in.lse[(size_t)(bos + t) * H + h];
                double P = v32 ? std::exp2(x) : std::exp(x);
                double dP = P * (dp - in.delta[(size_t)(bos + t) * H + h]) * scale;
                for (int d = 0; d < W; ++d) {
                    dQ[((size_t)(bos + t) * H + h) * W + d] += dP * k[d];
                    double term = dP * q[d] + (d < D ? P * o[d] : 0);
                    dKV[(size_t)(bos + p) * W + d] += term;
                    mag[(size_t)(bos + p) * W + d] += std::fabs(dP * q[d]) + (d < D ? std::fabs(P * o[d]) : 0);
                }
            }
        }
    }
}

/// dKV within 1e-5 of the sum of its terms' magnitudes (float32 sums in any order).
void expectSums(const std::vector<double> &dKV, const std::vector<double> &want, const std::vector<double> &mag) {
    int bad = 0;
    for (size_t i = 0; i < dKV.size() && bad < 5; ++i)
        if (!(std::fabs(dKV[i] - want[i]) <= 1e-5 * mag[i] + 1e-6))
            ADD_FAILURE() << "dKV[" << i << "] = " << dKV[i] << ", expected " << want[i] << " (sum of |terms| " << mag[i] << ")",
                ++bad;
}

TEST(LowerSimSparseMlaBwd, FinetuneKernelRaceFreeAndRight) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, source(), "sm_90a");
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    Inputs in = inputs();
    std::vector<double> wantQ, wantKV, mag;
    reference(in, wantQ, wantKV, mag);
    for (uint64_t seed : {0u, 7u}) {
        SCOPED_TRACE("interleaving " + std::to_string(seed));
        std::vector<double> dQ(wantQ.size(), NAN), dKV(wantKV.size(), 0);
        sim::Outcome o = sim::runCaught(*r.lowered->kernels[0], {{"Q", &in.q}, {"KV", &in.kv}, {"dO", &in.dO},
            {"Indices", &in.ind}, {"Lse", &in.lse}, {"Delta", &in.delta}, {"Offsets", &in.off}, {"TokenIndices", &in.ti},
            {"dQ", &dQ}, {"dKV", &dKV}}, {{"S", S}, {"B_plus_one", 3}}, seed);
        EXPECT_EQ(o.error, "");
        for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
        sim::expectNear(dQ, wantQ, 1e-4, "dQ");
        expectSums(dKV, wantKV, mag);
    }
}

/// The race detector sees the T.view's hazards in this kernel: with one of the loop's barriers around the float32
/// view's writes dropped (the 4th to the 7th of the kernel's barriers: after the GEMMs that read KV_shared, between
/// the view's writes and the atomics that read it, for each of the two halves), a race on KV_shared (the bfloat16
/// tile the view aliases) or on the view itself is reported. The back edge (the atomics' reads of the view, then the next iteration's
/// gathers into KV_shared) needs none: each thread reads back the elements it gathers.
TEST(LowerSimSparseMlaBwd, FinetuneKernelViewBarrierDroppedRaces) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, source(), "sm_90a");
    ASSERT_TRUE(r.lowered) << r.diags();
    Inputs in = inputs();
    int onView = 0, drops = 0;
    for (int drop = 3; drop <= 6; ++drop) {
        int seen = 0;
        auto k = sim::rewriteCalls(*r.lowered->kernels[0], [&](const tilec::ir::Evaluate &e, const tilec::ir::Call &c, sim::Role) {
            if (tilec::passes::lib::is(c, tilec::passes::lib::Fn::Sync) && seen++ == drop) return tilec::ir::Stmt();
            return sim::same(e);
        });
        if (seen <= drop) break;
        ++drops;
        std::vector<double> dQ((size_t)S * H * W, NAN), dKV((size_t)S * W, 0);
        sim::Outcome o = sim::runCaught(*k, {{"Q", &in.q}, {"KV", &in.kv}, {"dO", &in.dO}, {"Indices", &in.ind},
            {"Lse", &in.lse}, {"Delta", &in.delta}, {"Offsets", &in.off}, {"TokenIndices", &in.ti}, {"dQ", &dQ},
            {"dKV", &dKV}}, {{"S", S}, {"B_plus_one", 3}}, 1);
        // (on the tile, or on its float32 view: a buffer of its own over the tile's bytes)
        onView += !o.races.empty() && (o.races[0].find("on KV_shared[") != std::string::npos ||
                                       o.races[0].find("on acc_dkv_shared[") != std::string::npos);
        EXPECT_FALSE(o.races.empty()) << "barrier " << drop << " dropped: no race reported";
    }
    EXPECT_EQ(drops, 4);
    EXPECT_EQ(onView, 4);
}

TEST(LowerSimSparseMlaBwd, V32KernelRaceFreeAndRight) {
    constexpr int SQ = 8, SKV = 16;
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, v32Source(), "sm_90a");
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    Inputs in;
    in.q = sim::randomData((size_t)SQ * H * W, 81, -1, 1);
    in.kv = sim::randomData((size_t)SKV * W, 82, -1, 1);
    in.dO = sim::randomData((size_t)SQ * H * D, 83, -1, 1);
    in.lse = sim::randomData((size_t)SQ * H, 84, 1, 3);
    in.delta = sim::randomData((size_t)SQ * H, 85, -1, 1);
    in.off = {0, (double)SQ};
    for (int t = 0; t < SQ; ++t) {      // rows 0..15, several slots naming one row (its atomics add twice)
        in.ti.push_back(0), in.ti.push_back(t);
        for (int j = 0; j < TOPK; ++j) in.ind.push_back((double)((j * 5 + t * 3) % SKV));
    }
    std::vector<double> wantQ, wantKV, mag;
    reference(in, wantQ, wantKV, mag, SQ, SKV, true);
    for (uint64_t seed : {0u, 3u}) {
        SCOPED_TRACE("interleaving " + std::to_string(seed));
        std::vector<double> dQ(wantQ.size(), NAN), dKV(wantKV.size(), 0);
        sim::Outcome o = sim::runCaught(*r.lowered->kernels[0], {{"Q", &in.q}, {"KV", &in.kv}, {"dO", &in.dO},
            {"Indices", &in.ind}, {"Lse", &in.lse}, {"Delta", &in.delta}, {"dKV", &dKV}, {"dQ", &dQ}}, {}, seed);
        EXPECT_EQ(o.error, "");
        for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
        sim::expectNear(dQ, wantQ, 1e-4, "dQ");
        expectSums(dKV, wantKV, mag);
    }
}

} // namespace
