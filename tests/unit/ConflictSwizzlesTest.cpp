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

} // namespace
