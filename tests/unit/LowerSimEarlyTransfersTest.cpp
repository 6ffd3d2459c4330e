/// \file
/// A serial loop whose body names several tiles in turn (block_causal_attention_varlen's dK/dV loop: Q, then dO
/// after QK^T and the softmax): the transfers that can move are issued together where the first of them stands, as
/// cp.async in one group, and waited for once, before the first use of any (pipelineLoops' issueTogether,
/// EarlyTransfers.h). The body also holds each case that must stay in place: a tile the body writes and reads
/// before its transfer (c_s), a transfer whose source row is computed in the iteration after the group's place
/// (d_s), and a transfer under a condition (e_s). Run on the CPU simulator (cp.async destinations poisoned at issue
/// and filled at their wait, races reported) against float64 on sm_80 and sm_90a, five trips and one. The lowering
/// is checked to have moved exactly a_s and b_s (two asynchronous transfers, one wait), and two mutations must be
/// caught: the group's wait removed, and the barrier after it removed.
#include "LowerSimUtil.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Outcome;
namespace lib = tilec::passes::lib;

namespace {

const char *kTiles = R"(import tilelang.language as T

def k(M, N, bm, bn, bk, threads):
    nt = N // bn
    @T.prim_func
    def main(X: T.Tensor((M, bk), "float16"), A: T.Tensor((N, bk), "float16"), B: T.Tensor((N, bk), "float16"),
             C: T.Tensor((N, bk), "float16"), D: T.Tensor((N, bk), "float16"), E: T.Tensor((N, bk), "float16"),
             Idx: T.Tensor((nt,), "int32"), O: T.Tensor((M, bn), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            acc = T.alloc_fragment((bm, bn), "float32")
            x_s = T.alloc_shared((bm, bk), "float16")
            a_s = T.alloc_shared((bn, bk), "float16")
            b_s = T.alloc_shared((bn, bk), "float16")
            c_s = T.alloc_shared((bn, bk), "float16")
            d_s = T.alloc_shared((bn, bk), "float16")
            e_s = T.alloc_shared((bn, bk), "float16")
            T.copy(X[bx * bm, 0], x_s)
            T.clear(acc)
            for ko in T.serial(nt):
                off = Idx[ko]
                T.copy(A[off * bn, 0], a_s)
                T.gemm(x_s, a_s, acc, transpose_B=True)
                T.copy(B[ko * bn, 0], b_s)
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] = acc[i, j] * 0.5
                T.gemm(x_s, b_s, acc, transpose_B=True)
                for i, j in T.Parallel(bn, bk):
                    c_s[i, j] = b_s[bn - 1 - i, j] * 2
                T.gemm(x_s, c_s, acc, transpose_B=True)
                T.copy(C[ko * bn, 0], c_s)
                T.gemm(x_s, c_s, acc, transpose_B=True)
                nxt = Idx[(ko + 1) % nt]
                T.copy(D[nxt * bn, 0], d_s)
                if ko % 2 == 1:
                    T.copy(E[ko * bn, 0], e_s)
                    T.gemm(x_s, e_s, acc, transpose_B=True)
                T.gemm(x_s, d_s, acc, transpose_B=True)
            T.copy(acc, O[bx * bm, 0])
    return main
)";

struct Case {
    const char *arch = "sm_80";
    int M = 128, N = 160, bm = 64, bn = 32, bk = 32, threads = 128;
};

/// float64: the kernel's loop, block by block (inputs are multiples of 1/4 in [-2, 2], exact in float16, and every
/// partial sum is exact in float32).
std::vector<double> reference(const Case &c, std::map<std::string, std::vector<double>> &io) {
    const int nt = c.N / c.bn;
    std::vector<double> want((size_t)c.M * c.bn, 0);
    for (int b0 = 0; b0 < c.M; b0 += c.bm) {
        std::vector<double> acc((size_t)c.bm * c.bn, 0);
        // acc += X[b0:b0+bm] . T^T, T(j, k) = tile(j, k)
        auto product = [&](const std::function<double(int, int)> &tile) {
            for (int i = 0; i < c.bm; ++i)
                for (int j = 0; j < c.bn; ++j) {
                    double s = 0;
                    for (int k = 0; k < c.bk; ++k) s += io["X"][(size_t)(b0 + i) * c.bk + k] * tile(j, k);
                    acc[(size_t)i * c.bn + j] += s;
                }
        };
        auto rows = [&](const char *t, int first) {
            return [&, t, first](int j, int k) { return io[t][(size_t)(first + j) * c.bk + k]; };
        };
        for (int ko = 0; ko < nt; ++ko) {
            const int off = (int)io["Idx"][ko], nxt = (int)io["Idx"][(ko + 1) % nt];
            product(rows("A", off * c.bn));
            for (auto &a : acc) a *= 0.5;
            product(rows("B", ko * c.bn));
            product([&](int j, int k) { return 2 * io["B"][(size_t)(ko * c.bn + c.bn - 1 - j) * c.bk + k]; });
            product(rows("C", ko * c.bn));
            if (ko % 2 == 1) product(rows("E", ko * c.bn));
            product(rows("D", nxt * c.bn));
        }
        for (int i = 0; i < c.bm; ++i)
            for (int j = 0; j < c.bn; ++j) want[(size_t)(b0 + i) * c.bn + j] = acc[(size_t)i * c.bn + j];
    }
    return want;
}

/// n values, multiples of 1/4 in [-2, 2].
std::vector<double> quarters(size_t n, unsigned seed) {
    std::vector<double> v = simtest::randomData(n, seed, -2, 2);
    for (auto &x : v) x = std::round(x * 4) / 4;
    return v;
}

void expectIssuedTogether(const Case &c) {
    auto s = [](int v) { return std::to_string(v); };
    std::string src = std::string(kTiles) + "kern = k(" + s(c.M) + ", " + s(c.N) + ", " + s(c.bm) + ", " + s(c.bn) + ", " +
                      s(c.bk) + ", " + s(c.threads) + ")\n";
    LowerRun r;
    simtest::lowerFor(r, src, c.arch);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    const int nt = c.N / c.bn;
    // a_s and b_s issued together (asynchronous, one group, one wait); x_s before the loop and c_s, d_s and e_s in
    // the loop in place, each waited for.
    auto calls = simtest::callCounts(k);
    // (x_s's own transfer before the loop waits where x_s is first read: sinkTransferWaits makes it asynchronous
    // too, with a wait of its own.)
    EXPECT_EQ(calls[lib::Fn::CopyG2S], 3) << r.diags();
    EXPECT_EQ(calls[lib::Fn::CopyG2SWait], 3) << r.diags();
    EXPECT_EQ(simtest::cpAsyncWaits(k), (std::vector<int64_t>{0, 0})) << r.diags();

    std::map<std::string, std::vector<double>> io;
    io["X"] = quarters((size_t)c.M * c.bk, 30);
    const char *names[] = {"A", "B", "C", "D", "E"};
    for (int t = 0; t < 5; ++t) io[names[t]] = quarters((size_t)c.N * c.bk, 31 + t);
    io["Idx"].resize(nt);
    for (int t = 0; t < nt; ++t) io["Idx"][t] = (t * 3 + 2) % nt; // a permutation: off differs from ko
    const std::vector<double> want = reference(c, io);
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        io["O"].assign(want.size(), std::nan(""));
        simtest::Tensors ptrs;
        for (auto &[n, vec] : io) ptrs[n] = &vec;
        Outcome o = simtest::runCaught(kernel, ptrs, {}, seed);
        for (size_t e = 0; e < want.size(); ++e)
            o.check(std::fabs(io["O"][e] - want[e]) <= 1e-3 * std::max(1.0, std::fabs(want[e])),
                    [&] { return "O[" + std::to_string(e) + "] = " + std::to_string(io["O"][e]) + ", expected " + std::to_string(want[e]); });
        return o;
    };
    for (uint64_t seed : {0, 1, 2}) {
        Outcome o = run(k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
    // The group's wait removed: the tiles are read before they land.
    auto noWait = simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &call, simtest::Role) -> ir::Stmt {
        return lib::is(call, lib::Fn::CpAsyncWait) ? nullptr : simtest::same(e);
    });
    EXPECT_TRUE(simtest::anyFailure(run(*noWait, 0))) << "a group read before its wait went unnoticed";
    // The barrier just after the group's wait removed: other threads' copies are read unordered.
    bool afterWait = false;
    int removed = 0;
    auto noBarrier = simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &call, simtest::Role) -> ir::Stmt {
        const bool drop = afterWait && lib::is(call, lib::Fn::Sync);
        afterWait = lib::is(call, lib::Fn::CpAsyncWait);
        removed += drop;
        return drop ? nullptr : simtest::same(e);
    });
    EXPECT_EQ(removed, 1);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught = caught || simtest::anyFailure(run(*noBarrier, seed));
    EXPECT_TRUE(caught) << "the group read without the barrier after its wait went unnoticed";
}

/// block_causal_attention_varlen's dK/dV loop in small: Q's tile for S = K Q^T, dO's after the exponentials for
/// dK += P dO. Both tiles are read to the iteration's end (dO by the last GEMM) with no barrier after, so the group's
/// issue needs the barrier insertSyncs places before it (the transfers count as writes of their tiles there).
const char *kAttention = R"(import tilelang.language as T

def dkv(S, D, bs):
    @T.prim_func
    def main(Q: T.Tensor((S, D), "float16"), K: T.Tensor((bs, D), "float16"), dO: T.Tensor((S, D), "float16"),
             dK: T.Tensor((bs, D), "float32")):
        with T.Kernel(1, threads=128) as bx:
            k_s = T.alloc_shared((bs, D), "float16")
            q_s = T.alloc_shared((bs, D), "float16")
            do_s = T.alloc_shared((bs, D), "float16")
            s_f = T.alloc_fragment((bs, bs), "float32")
            p_f = T.alloc_fragment((bs, bs), "float16")
            dk_f = T.alloc_fragment((bs, D), "float32")
            T.copy(K[0, 0], k_s)
            T.clear(dk_f)
            for ko in T.serial(S // bs):
                T.copy(Q[ko * bs, 0], q_s)
                T.gemm(k_s, q_s, s_f, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(bs, bs):
                    s_f[i, j] = s_f[i, j] * 0.25
                T.copy(dO[ko * bs, 0], do_s)
                T.copy(s_f, p_f)
                T.gemm(p_f, do_s, dk_f)
            T.copy(dk_f, dK)
    return main
)";

void expectAttentionGroup(const char *arch) {
    const int S = 256, D = 32, bs = 64;
    std::string src = std::string(kAttention) + "kern = dkv(" + std::to_string(S) + ", " + std::to_string(D) + ", " + std::to_string(bs) + ")\n";
    LowerRun r;
    simtest::lowerFor(r, src, arch);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    auto calls = simtest::callCounts(k);
    // (The transfer outside the group waits at its first use: sinkTransferWaits.)
    EXPECT_EQ(calls[lib::Fn::CopyG2S], 3) << r.diags();
    EXPECT_EQ(calls[lib::Fn::CopyG2SWait], 0) << r.diags();
    std::map<std::string, std::vector<double>> io;
    io["Q"] = quarters((size_t)S * D, 41), io["K"] = quarters((size_t)bs * D, 42), io["dO"] = quarters((size_t)S * D, 43);
    // float64: S = K Q^T / 4 per block of rows, rounded to float16 as P (exact: multiples of 1/64 below 2^11), dK += P dO
    std::vector<double> want((size_t)bs * D, 0);
    for (int ko = 0; ko < S / bs; ++ko)
        for (int i = 0; i < bs; ++i)
            for (int j = 0; j < bs; ++j) {
                double p = 0;
                for (int d = 0; d < D; ++d) p += io["K"][(size_t)i * D + d] * io["Q"][(size_t)(ko * bs + j) * D + d];
                p *= 0.25;
                for (int d = 0; d < D; ++d) want[(size_t)i * D + d] += p * io["dO"][(size_t)(ko * bs + j) * D + d];
            }
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        io["dK"].assign(want.size(), std::nan(""));
        simtest::Tensors ptrs;
        for (auto &[n, vec] : io) ptrs[n] = &vec;
        Outcome o = simtest::runCaught(kernel, ptrs, {}, seed);
        for (size_t e = 0; e < want.size(); ++e)
            o.check(std::fabs(io["dK"][e] - want[e]) <= 1e-3 * std::max(1.0, std::fabs(want[e])),
                    [&] { return "dK[" + std::to_string(e) + "] = " + std::to_string(io["dK"][e]) + ", expected " + std::to_string(want[e]); });
        return o;
    };
    for (uint64_t seed : {0, 1}) {
        Outcome o = run(k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
    // The barrier just before the group's issue removed: the previous iteration's last GEMM may still read dO's tile.
    int removed = 0;
    auto noBarrier = simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &call, simtest::Role) -> ir::Stmt {
        return simtest::same(e);
    });
    struct Drop : ir::IRMutator {
        using IRMutator::visit;
        int removed = 0;
        static bool is(const ir::Stmt &s, lib::Fn f) {
            auto e = ir::as<ir::Evaluate>(s);
            auto c = e ? ir::as<ir::Call>(e->value) : nullptr;
            return c && lib::is(*c, f);
        }
        ir::Stmt visit(const std::shared_ptr<const ir::Seq> &op) override {
            std::vector<ir::Stmt> out;
            for (size_t i = 0; i < op->stmts.size(); ++i) {
                if (i + 1 < op->stmts.size() && is(op->stmts[i], lib::Fn::Sync) && is(op->stmts[i + 1], lib::Fn::CopyG2S)) {
                    ++removed;
                    continue;
                }
                out.push_back(mutate(op->stmts[i]));
            }
            return ir::Seq::make(std::move(out), op->loc);
        }
    } drop;
    noBarrier->body = drop.mutate(noBarrier->body);
    removed = drop.removed;
    EXPECT_EQ(removed, 1);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3}) caught = caught || simtest::anyFailure(run(*noBarrier, seed));
    EXPECT_TRUE(caught) << "the group issued without the barrier before it went unnoticed";
}

} // namespace

TEST(LowerSimEarlyTransfers, Sm80FiveTrips) { expectIssuedTogether({}); }
TEST(LowerSimEarlyTransfers, Sm90aFiveTrips) { expectIssuedTogether({"sm_90a", 128, 160, 64, 32, 32, 128}); }
TEST(LowerSimEarlyTransfers, Sm80OneTrip) { expectIssuedTogether({"sm_80", 64, 32, 64, 32, 32, 128}); }
TEST(LowerSimEarlyTransfers, AttentionSm80) { expectAttentionGroup("sm_80"); }
TEST(LowerSimEarlyTransfers, AttentionSm90a) { expectAttentionGroup("sm_90a"); }
