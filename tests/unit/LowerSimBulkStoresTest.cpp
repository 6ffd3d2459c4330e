/// \file
/// bulkStores on the CPU simulator: a kernel's closing T.copy of a shared tile to a global tensor as
/// cp.async.bulk copies (one per contiguous run; rows at a stride spread over the threads, in rounds where there
/// are more rows than threads) writes exactly the float64 reference's elements and nothing else, a tile that may
/// cross the tensor's end keeps its per-thread stores, and each piece of the sequence is needed: without the
/// writers' fence.proxy.async, the barrier after it or the wait before the block exits the simulator reports it.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <string>

namespace {

namespace sim = tilec::simtest;
namespace lib = tilec::passes::lib;
using tilec::lowertest::LowerRun;

/// Y = X * G row by row through a shared row (layernorm_fwd's epilogue: one 1024-byte run per block, 16 bytes a
/// thread in the threads' own copy).
const char *kRowScale = R"(import tilelang.language as T

@T.prim_func
def row_scale(X: T.Tensor((4, 512), "bfloat16"), G: T.Tensor((512,), "bfloat16"), Y: T.Tensor((4, 512), "bfloat16")):
    with T.Kernel(4, threads=64) as bx:
        X_smem = T.alloc_shared((1, 512), "bfloat16")
        T.copy(X[bx, 0], X_smem)
        for i, j in T.Parallel(1, 512):
            X_smem[i, j] = X_smem[i, j] * G[j]
        T.copy(X_smem, Y[bx, 0])
)";

/// B = A + 1 in 64 x 16 float32 tiles of a 128 x 64 tensor: 64 rows of 64 bytes at a stride, over 32 threads (two
/// rounds); ROWS rows (a partial last tile where ROWS is not a multiple of 64).
std::string tileRows(int rows) {
    return R"(import tilelang.language as T

@T.prim_func
def tile_rows(A: T.Tensor(()" + std::to_string(rows) + R"(, 64), "float32"), B: T.Tensor(()" + std::to_string(rows) + R"(, 64), "float32")):
    with T.Kernel(4, T.ceildiv()" + std::to_string(rows) + R"(, 64), threads=32) as (bx, by):
        S = T.alloc_shared((64, 16), "float32")
        T.copy(A[by * 64, bx * 16], S)
        for i, j in T.Parallel(64, 16):
            S[i, j] = S[i, j] + 1
        T.copy(S, B[by * 64, bx * 16])
)";
}

const tilec::ir::Kernel *lowered(LowerRun &r, const std::string &src, bool bulk = true, bool rows = false) {
    tilec::Variant v{*tilec::Target::parse("sm_90a"), {}};
    v.options.bulkStores = bulk;
    v.options.bulkStoreRows = rows;
    r.run(src, "t.tile", v);
    if (!r.lowered || r.lowered->kernels.size() != 1) {
        ADD_FAILURE() << r.diags();
        return nullptr;
    }
    return r.lowered->kernels[0].get();
}

struct RowScale {
    std::vector<double> X = sim::quarters(4 * 512, 3), G = sim::quarters(512, 4), Y = std::vector<double>(4 * 512, std::nan(""));
    std::vector<double> want() const {
        std::vector<double> w(X.size());
        for (size_t e = 0; e < X.size(); ++e) w[e] = X[e] * G[e % 512]; // quarters: exact in bfloat16
        return w;
    }
    sim::Tensors tensors() { return {{"X", &X}, {"G", &G}, {"Y", &Y}}; }
};

TEST(LowerSimBulkStores, RowIsOneBulkCopy) {
    LowerRun r;
    const tilec::ir::Kernel *k = lowered(r, kRowScale);
    ASSERT_TRUE(k);
    auto calls = sim::callCounts(*k);
    EXPECT_EQ(calls[lib::Fn::BulkStore], 1);
    EXPECT_EQ(calls[lib::Fn::FenceProxyAsync], 1);
    EXPECT_EQ(calls[lib::Fn::TmaStoreWait], 1);
    RowScale t;
    sim::simulate(*k, t.tensors());
    EXPECT_EQ(t.Y, t.want());
}

TEST(LowerSimBulkStores, OffKeepsThreadStores) {
    LowerRun r;
    const tilec::ir::Kernel *k = lowered(r, kRowScale, false);
    ASSERT_TRUE(k);
    EXPECT_EQ(sim::callCounts(*k)[lib::Fn::BulkStore], 0);
    RowScale t;
    sim::simulate(*k, t.tensors());
    EXPECT_EQ(t.Y, t.want());
}

/// Rows at a stride (LoweringOptions::bulkStoreRows): one bulk copy per row, rows spread over the threads in
/// rounds; every element of B exactly A + 1, where a partial last tile (ROWS = 100) keeps its per-thread stores and
/// writes no row past the tensor. Without the option (the default since session 42) the tile keeps its per-thread
/// stores.
void tileRowsRun(int rows, int bulkCalls, bool rowsOption = true) {
    LowerRun r;
    const tilec::ir::Kernel *k = lowered(r, tileRows(rows), true, rowsOption);
    ASSERT_TRUE(k);
    EXPECT_EQ(sim::callCounts(*k)[lib::Fn::BulkStore], bulkCalls);
    std::vector<double> A = sim::quarters((size_t)rows * 64, 7), B((size_t)rows * 64, std::nan("")), want(A);
    for (auto &x : want) x += 1;
    sim::simulate(*k, {{"A", &A}, {"B", &B}});
    EXPECT_EQ(B, want);
}

TEST(LowerSimBulkStores, StridedRowsInRounds) { tileRowsRun(128, 1); }
TEST(LowerSimBulkStores, PartialTileFallsBack) { tileRowsRun(100, 0); }
TEST(LowerSimBulkStores, StridedRowsKeepThreadStoresByDefault) { tileRowsRun(128, 0, false); }

/// row_scale with the call statements `drop` picks removed: the simulator must report the run.
sim::Outcome mutant(const std::function<bool(lib::Fn, bool afterFence)> &drop) {
    LowerRun r;
    const tilec::ir::Kernel *k = lowered(r, kRowScale);
    if (!k) return {};
    bool fenced = false;
    auto m = sim::rewriteCalls(*k, [&](const tilec::ir::Evaluate &e, const tilec::ir::Call &c, sim::Role) -> tilec::ir::Stmt {
        const lib::Info *info = lib::find(c.name);
        if (!info) return sim::same(e);
        const bool after = fenced;
        if (info->fn == lib::Fn::FenceProxyAsync) fenced = true;
        if (info->fn == lib::Fn::Sync && after) fenced = false;
        return drop(info->fn, after) ? nullptr : sim::same(e);
    });
    RowScale t;
    return sim::runCaught(*m, t.tensors());
}

TEST(LowerSimBulkStores, FenceIsNeeded) {
    sim::Outcome o = mutant([](lib::Fn f, bool) { return f == lib::Fn::FenceProxyAsync; });
    EXPECT_NE(o.error.find("without a fence.proxy.async"), std::string::npos) << o.error;
}

TEST(LowerSimBulkStores, BarrierIsNeeded) {
    sim::Outcome o = mutant([](lib::Fn f, bool afterFence) { return f == lib::Fn::Sync && afterFence; });
    EXPECT_TRUE(!o.races.empty() || !o.error.empty()) << "no race reported without the barrier before the bulk copy";
}

TEST(LowerSimBulkStores, WaitIsNeeded) {
    sim::Outcome o = mutant([](lib::Fn f, bool) { return f == lib::Fn::TmaStoreWait; });
    EXPECT_NE(o.error.find("may still read it"), std::string::npos) << o.error;
}

} // namespace
