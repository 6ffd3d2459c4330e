/// \file
/// Shared tiles swizzled where that takes fewer bank wavefronts (swizzleShared with src/lower/BankConflicts.cpp).
/// The count itself: a warp storing a tensor-core accumulator's pairs into 256-byte rows is 8-way conflicted
/// row-major and conflict-free swizzled; a 16-byte read along the rows takes 4 wavefronts either way. A GEMM
/// whose accumulator is staged through a shared tile (`T.copy(acc, c_s)`, `T.copy(c_s, C[...])`, the dequantizing
/// GEMMs' epilogue) stores and reads that tile swizzled and computes exactly on the CPU simulator, on sm_80
/// (mma.sync) and sm_90a (wgmma); with the stores left row-major and the reads swizzled the simulator sees wrong
/// results (the layout is the stores' and the reads' alike).
#include "ExactGemm.h"

#include "../../src/lower/BankConflicts.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Outcome;
namespace lib = tilec::passes::lib;
namespace banks = tilec::passes::banks;

namespace {

int64_t rowSwizzle256(int64_t o) { return o ^ ((o / 64 % 8) * 4); } // float32 rows of 64: chunks of 4 elements

TEST(ConflictSwizzles, AccumulatorPairsConflictRowMajorNotSwizzled) {
    banks::WarpAccess store, read;
    store.bytes = 8, read.bytes = 16;
    for (int lane = 0; lane < 32; ++lane) {
        store.offsets.push_back(lane / 4 * 64 + lane % 4 * 2); // rows lane / 4, a pair at column 2 (lane % 4)
        read.offsets.push_back(lane / 16 * 64 + lane % 16 * 4); // 16 lanes along a row, 4 floats each
    }
    auto plain = [](int64_t o) { return o; };
    EXPECT_EQ(banks::wavefronts(store, 4, plain), 8); // 8 rows, each in the same 8 banks
    EXPECT_EQ(banks::wavefronts(store, 4, rowSwizzle256), 2); // 64 words: 2 a bank at best
    EXPECT_EQ(banks::wavefronts(read, 4, plain), 4);
    EXPECT_EQ(banks::wavefronts(read, 4, rowSwizzle256), 4);
}

constexpr const char *kKernels = R"(
import tilelang.language as T

def staged(M, N, K, bm, bn, bk, threads):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            a_s = T.alloc_shared((bm, bk), "float16")
            b_s = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            c_s = T.alloc_shared((bm, bn), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[by * bm, k * bk], a_s)
                T.copy(B[k * bk, bx * bn], b_s)
                T.gemm(a_s, b_s, acc)
            T.copy(acc, c_s)
            T.copy(c_s, C[by * bm, bx * bn])
    return main
)";

/// Stores whose offsets go through a swizzle call (whole or split) store at the plain offset instead.
struct UnswizzleStores : ir::IRMutator {
    using ir::IRMutator::visit;
    bool inStore = false;
    ir::Stmt visit(const std::shared_ptr<const ir::Store> &op) override {
        inStore = true;
        std::vector<ir::Expr> idx;
        for (auto &i : op->indices) idx.push_back(mutate(i));
        inStore = false;
        return ir::Store::make(op->buffer, std::move(idx), mutate(op->value), op->loc);
    }
    ir::Expr visit(const std::shared_ptr<const ir::Call> &op) override {
        ir::Expr e = ir::IRMutator::visit(op);
        auto c = ir::as<ir::Call>(e);
        if (!inStore) return e;
        if (lib::is(*c, lib::Fn::Swz)) return lib::arg(*c, lib::Fn::Swz, "offset");
        if (lib::is(*c, lib::Fn::SwzSplit))
            return ir::binary(ir::BinaryOp::Add, lib::arg(*c, lib::Fn::SwzSplit, "runtime"), lib::arg(*c, lib::Fn::SwzSplit, "fixed"));
        return e;
    }
};

void expectStagedGemm(const char *arch, const std::string &call, int M, int N, int K) {
    LowerRun r;
    simtest::lowerFor(r, std::string(kKernels) + "k = " + call + "\n", arch);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    auto calls = simtest::callCounts(k);
    EXPECT_GT(calls[lib::Fn::Swz] + calls[lib::Fn::SwzSplit], 1) << arch << " " << call << ": the staged tile is not swizzled";
    simtest::ExactGemm g("A", "B", "C", M, N, K, false, 1, 61);
    auto run = [&](const ir::Kernel &kernel) { return g.run(kernel); };
    Outcome o = run(k);
    EXPECT_FALSE(simtest::anyFailure(o)) << arch << " " << call << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    UnswizzleStores m;
    auto mutated = std::make_shared<ir::Kernel>(k);
    mutated->body = m.mutate(k.body);
    EXPECT_TRUE(simtest::anyFailure(run(*mutated))) << arch << " " << call << ": row-major stores under swizzled reads went unnoticed";
}

TEST(ConflictSwizzles, StagedAccumulatorSwizzledAndExactOnTheSimulator) {
    for (const char *arch : {"sm_80", "sm_90a"}) {
        expectStagedGemm(arch, "staged(128, 128, 128, 128, 64, 64, 256)", 128, 128, 128);
        expectStagedGemm(arch, "staged(64, 128, 64, 64, 128, 32, 128)", 64, 128, 64);
    }
}

// The two staged transposes of chunk_delta_bwd (gdn dhu), counted: a float32 tile of 64-float rows that a
// warp stores 8 rows 4 apart at a time (dO's transpose) is 4-way conflicted at the padded pitch of 68 and
// conflict-free at the pitch of 64 swizzled over virtual rows of 4 rows (the XOR of the chunk by row / 4);
// one of 128-float rows read 4 rows by 8 columns (Q's) is 2-way conflicted at 132 and conflict-free at 128
// swizzled over half rows. The 16-byte accesses on the other side take 4 wavefronts in every layout.
TEST(ConflictSwizzles, StagedTransposesConflictFreeAtTheShorterPitchSwizzled) {
    auto swz = [](int64_t w) { return [w](int64_t o) { return o ^ ((o / w % 8) * 4); }; }; // float32, rows of 128 bytes+
    auto pitch = [](int64_t from, int64_t to, std::function<int64_t(int64_t)> then) {
        return [=](int64_t o) { return then(o / from * to + o % from); };
    };
    auto plain = [](int64_t o) { return o; };
    banks::WarpAccess store, read, qRead, qStore;
    store.bytes = 4, read.bytes = 16, qRead.bytes = 4, qStore.bytes = 16;
    for (int lane = 0; lane < 32; ++lane) {
        store.offsets.push_back((lane % 8 * 4) * 68 + lane / 8);       // row 4 (lane % 8), column lane / 8
        read.offsets.push_back(lane / 16 * 68 + lane % 16 * 4);         // 2 rows, 16 lanes along each
        qRead.offsets.push_back(lane % 4 * 132 + lane / 4);             // rows lane % 4, columns lane / 4
        qStore.offsets.push_back(lane * 4);                              // one row, 4 floats a lane
    }
    EXPECT_EQ(banks::wavefronts(store, 4, plain), 4);
    EXPECT_EQ(banks::wavefronts(store, 4, pitch(68, 64, swz(256))), 1);
    EXPECT_EQ(banks::wavefronts(store, 4, pitch(68, 64, swz(64))), 4); // the XOR by the row alone: rows 4 apart collide
    EXPECT_EQ(banks::wavefronts(read, 4, plain), 4);
    EXPECT_EQ(banks::wavefronts(read, 4, pitch(68, 64, swz(256))), 4);
    EXPECT_EQ(banks::wavefronts(qRead, 4, plain), 2);
    EXPECT_EQ(banks::wavefronts(qRead, 4, pitch(132, 128, swz(64))), 1);
    EXPECT_EQ(banks::wavefronts(qRead, 4, pitch(132, 128, swz(128))), 2);
    EXPECT_EQ(banks::wavefronts(qStore, 4, pitch(132, 128, swz(64))), 4);
}

/// The shared buffer named `name` among `k`'s allocations, or null.
const ir::BufferNode *alloc(const ir::Kernel &k, const std::string &name) {
    for (auto &b : k.allocs)
        if (b->name == name) return b.get();
    return nullptr;
}

// dO's transpose in chunk_delta_bwd: a fragment copied from a (64, 32) tile, transposed by a T.Parallel nest and
// copied to a shared (32, 64) tile. transposeFragments stages it through a shared tile of padded rows; the bank
// model stores that tile unpadded (no access reaches the padding) and swizzled over 4-row virtual rows, and the
// simulator sees the exact transpose; with the stores left unswizzled under swizzled reads it sees wrong values.
TEST(ConflictSwizzles, StagedTransposeShorterPitchSwizzledAndExact) {
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(A: T.Tensor((64, 32), 'bfloat16'), B: T.Tensor((32, 64), 'float32')):\n"
                      "    with T.Kernel(1, threads=128) as bx:\n"
                      "        a_s = T.alloc_shared((64, 32), 'bfloat16')\n"
                      "        a_f = T.alloc_fragment((64, 32), 'float32')\n"
                      "        t_f = T.alloc_fragment((32, 64), 'float32')\n"
                      "        t_s = T.alloc_shared((32, 64), 'float32')\n"
                      "        T.copy(A[0:64, 0:32], a_s)\n"
                      "        T.copy(a_s, a_f)\n"
                      "        for i, j in T.Parallel(64, 32):\n"
                      "            t_f[j, i] = a_f[i, j]\n"
                      "        T.copy(t_f, t_s)\n"
                      "        T.copy(t_s, B[0:32, 0:64])\n";
    for (const char *arch : {"sm_80", "sm_90a"}) {
        LowerRun r;
        simtest::lowerFor(r, src, arch);
        ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
        const ir::Kernel &k = *r.lowered->kernels[0];
        const ir::BufferNode *staged = alloc(k, "t_f_staged");
        ASSERT_TRUE(staged) << arch << ": the transpose is no longer staged";
        EXPECT_EQ(ir::constValue(staged->shape.back()), std::optional<int64_t>(64)) << arch << ": the staging tile keeps its padding";
        auto calls = simtest::callCounts(k);
        EXPECT_GT(calls[lib::Fn::Swz] + calls[lib::Fn::SwzSplit], 1) << arch << ": the staging tile is not swizzled";
        auto a = simtest::quarters(64 * 32, 5);
        std::vector<double> want(32 * 64);
        for (int i = 0; i < 64; ++i)
            for (int j = 0; j < 32; ++j) want[j * 64 + i] = a[i * 32 + j];
        auto run = [&](const ir::Kernel &kernel) {
            std::vector<double> b(32 * 64, std::nan(""));
            Outcome o = simtest::runCaught(kernel, {{"A", &a}, {"B", &b}});
            o.wrong = o.wrong || b != want;
            return o;
        };
        Outcome o = run(k);
        EXPECT_FALSE(simtest::anyFailure(o)) << arch << ": " << o.error << (o.races.empty() ? "" : o.races[0]);
        UnswizzleStores m;
        auto mutated = std::make_shared<ir::Kernel>(k);
        mutated->body = m.mutate(k.body);
        EXPECT_TRUE(simtest::anyFailure(run(*mutated))) << arch << ": row-major stores under swizzled reads went unnoticed";
    }
}

} // namespace
