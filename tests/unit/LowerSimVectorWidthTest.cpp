/// \file
/// Vector widths of issue 25's side by side, checked for numbers on the CPU simulator: a thread's run of a
/// flattened tile (`B[x // K, x % K]` in a program's T.vectorized loop, TileLang's mxfp4 dequantization) moves in
/// vectors whether or not the run stays inside one row, and a gather whose row comes from an index tensor
/// (`tile[i, d] = KV[Idx[i], d]`, sparse attention) reads 16-byte vectors: the 4-byte index, the same for all
/// lanes, does not narrow them. Lowered for sm_80 and run against references computed here.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "LowerSimUtil.h"

#include "tilec/IRVisitor.h"

#include "../../src/lower/BankConflicts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace tilec;
using lowertest::LowerRun;
using simtest::expectNear, simtest::quarters;

namespace {

using simtest::vectorLanes;

const ir::Kernel *lowered(LowerRun &r, const std::string &src) {
    r.run(src, "t.tile", *Target::parse("sm_80"));
    const ir::Kernel *k = r.kernel("k");
    EXPECT_TRUE(k) << r.diags();
    return k;
}

/// `B = 2 * A` over an (n, w) float16 tile, each thread taking runs of `local` elements of the flattened tile.
void flattenedRuns(int n, int w, int threads, int local) {
    const std::string N = std::to_string(n), W = std::to_string(w), T = std::to_string(threads),
                      L = std::to_string(local), x = "i * " + T + " * " + L + " + tx * " + L + " + v";
    std::string s = "import tilelang.language as T\n"
                    "@T.prim_func\n"
                    "def k(A: T.Tensor((" + N + ", " + W + "), 'float16'), B: T.Tensor((" + N + ", " + W + "), 'float16')):\n"
                    "    with T.Kernel(1, threads=" + T + ") as bx:\n"
                    "        tx = T.get_thread_binding()\n"
                    "        loc = T.alloc_local((" + L + ",), 'float16')\n"
                    "        for i in T.serial(" + std::to_string(n * w / threads / local) + "):\n"
                    "            for v in T.vectorized(" + L + "):\n"
                    "                loc[v] = A[(" + x + ") // " + W + ", (" + x + ") % " + W + "]\n"
                    "            for v in T.vectorized(" + L + "):\n"
                    "                loc[v] = loc[v] * T.float16(2)\n"
                    "            for v in T.vectorized(" + L + "):\n"
                    "                B[(" + x + ") // " + W + ", (" + x + ") % " + W + "] = loc[v]\n";
    LowerRun r;
    const ir::Kernel *k = lowered(r, s);
    if (!k) return;
    EXPECT_EQ(vectorLanes(k->body, "A"), std::min(local, 8));
    EXPECT_EQ(vectorLanes(k->body, "B"), std::min(local, 8));
    auto a = quarters((size_t)n * w, 7);
    std::vector<double> b(a.size(), std::nan("")), want(a.size());
    for (size_t i = 0; i < a.size(); ++i) want[i] = 2 * a[i];
    simtest::simulate(*k, {{"A", &a}, {"B", &b}});
    expectNear(b, want, 0, "B");
}

} // namespace

// Runs of 8 inside rows of 128: one 16-byte load and one 16-byte store per run.
TEST(LowerSimVectorWidth, FlattenedRunsInsideRows) { flattenedRuns(64, 128, 128, 8); }
// Runs of 4 across rows of 6 (x // 6 * 6 + x % 6 is x): still one 8-byte vector each, consecutive in memory.
TEST(LowerSimVectorWidth, FlattenedRunsAcrossRows) { flattenedRuns(64, 6, 32, 4); }
// Runs of 16 taken 8 lanes at a time.
TEST(LowerSimVectorWidth, FlattenedRunsLongerThanAVector) { flattenedRuns(64, 128, 128, 16); }

// A gather of rows by an int32 index tensor into shared memory, then copied out: the float16 row pieces move in
// 16-byte vectors (8 lanes), not the 4-byte index's 8-byte ones; rows past the index's bound read as zeros.
TEST(LowerSimVectorWidth, GatherRowsInWideVectors) {
    const int n = 40, rows = 16, width = 128;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(Idx: T.Tensor((16,), 'int32'), KV: T.Tensor((40, 128), 'float16'),\n"
                      "      Out: T.Tensor((16, 128), 'float16')):\n"
                      "    with T.Kernel(1, threads=128) as bx:\n"
                      "        tile = T.alloc_shared((16, 128), 'float16')\n"
                      "        for i, d in T.Parallel(16, 128):\n"
                      "            tile[i, d] = KV[Idx[i], d]\n"
                      "        T.copy(tile, Out)\n";
    LowerRun r;
    const ir::Kernel *k = lowered(r, src);
    if (!k) return;
    EXPECT_EQ(vectorLanes(k->body, "KV"), 8);
    std::vector<double> idx(rows);
    for (int i = 0; i < rows; ++i) idx[i] = (i * 7 + 3) % n;
    idx[5] = n + 2; // past the tensor: the gather's bounds test reads zeros
    auto kv = quarters((size_t)n * width, 11);
    std::vector<double> out((size_t)rows * width, std::nan("")), want(out.size());
    for (int i = 0; i < rows; ++i)
        for (int d = 0; d < width; ++d) want[(size_t)i * width + d] = idx[i] < n ? kv[(size_t)idx[i] * width + d] : 0;
    simtest::simulate(*k, {{"Idx", &idx}, {"KV", &kv}, {"Out", &out}});
    expectNear(out, want, 0, "Out");
}

// A byte tile scaled per block of 32 columns (`s[i, j // 32]`, TileKernels' per_block_cast_lossless) and stored as
// bytes. The 4-byte scale, one element for every 32 lanes, does not narrow the 1-byte vectors to 4 lanes
// (LoweringOptions::broadcastLoadWidths; off: 4-byte stores). With selectTestLoads, the tile's bytes, read in a
// select's test and again in its arms, come in as one 16-byte vector (off: single-byte shared loads); with
// bankVectorLoads, so do they where single-byte loads conflict (16 bytes a lane, lanes 16 bytes apart: 4 wavefronts
// each, as the static count of every shared access says) and the vector does not, and not at 4 bytes a lane (lanes
// 4 bytes apart: conflict-free). Each combination against a reference on the simulator.
namespace {

void blockScaleBytes(bool broadcastLoadWidths, bool selectTestLoads, bool bankVectorLoads = false) {
    const int rows = 64, cols = 128;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(A: T.Tensor((64, 128), 'int8'), S: T.Tensor((64, 4), 'int32'), Out: T.Tensor((64, 128), 'int8')):\n"
                      "    with T.Kernel(1, threads=128) as bx:\n"
                      "        a_s = T.alloc_shared((64, 128), 'int8')\n"
                      "        s_s = T.alloc_shared((64, 4), 'int32')\n"
                      "        o = T.alloc_fragment((64, 128), 'int8')\n"
                      "        T.copy(A, a_s)\n"
                      "        T.copy(S, s_s)\n"
                      "        for i, j in T.Parallel(64, 128):\n"
                      "            o[i, j] = T.cast(T.cast(T.if_then_else(a_s[i, j] < T.int8(0), T.int8(0) - a_s[i, j], a_s[i, j]),\n"
                      "                                    'int32') + s_s[i, j // 32], 'int8')\n"
                      "        T.copy(o, Out)\n";
    Variant v{*Target::parse("sm_80"), {}};
    v.options.broadcastLoadWidths = broadcastLoadWidths;
    v.options.selectTestLoads = selectTestLoads;
    v.options.bankVectorLoads = bankVectorLoads;
    LowerRun r;
    r.run(src, "t.tile", v);
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    EXPECT_EQ(vectorLanes(k->body, "Out"), broadcastLoadWidths ? 16 : 4);
    struct SharedLoads : ir::IRVisitor { // the narrowest vector a load of a_s sits in (1: a scalar load)
        using IRVisitor::visit;
        int64_t lanes = 1, narrowest = 16;
        void visit(const ir::For &op) override {
            int64_t saved = lanes;
            lanes = op.forKind == ir::ForKind::Vectorized ? ir::constInt(op.extent).value_or(1) : 1;
            IRVisitor::visit(op);
            lanes = saved;
        }
        void visit(const ir::Load &op) override {
            if (op.buffer->name == "a_s") narrowest = std::min(narrowest, lanes);
            IRVisitor::visit(op);
        }
    } loads;
    loads.visit(k->body);
    const bool vectors = selectTestLoads || (bankVectorLoads && broadcastLoadWidths);
    EXPECT_EQ(loads.narrowest, vectors ? (broadcastLoadWidths ? 16 : 4) : 1);
    int reads = 0;
    for (auto &c : passes::banks::sharedAccessCosts(*k)) {
        if (c.buffer->name != "a_s" || c.store) continue;
        ++reads;
        EXPECT_EQ(c.wavefronts, !vectors && broadcastLoadWidths ? 4 : c.ideal) << c.bytes << " bytes a lane";
    }
    EXPECT_GT(reads, 0);
    std::vector<double> a((size_t)rows * cols), s((size_t)rows * 4), out(a.size(), std::nan("")), want(a.size());
    for (size_t i = 0; i < a.size(); ++i) a[i] = (double)((int)(i * 37 % 201) - 100);
    for (size_t i = 0; i < s.size(); ++i) s[i] = (double)(i * 5 % 21);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) want[(size_t)i * cols + j] = std::abs(a[(size_t)i * cols + j]) + s[(size_t)i * 4 + j / 32];
    simtest::simulate(*k, {{"A", &a}, {"S", &s}, {"Out", &out}});
    expectNear(out, want, 0, "Out");
}

} // namespace

TEST(LowerSimVectorWidth, BlockScaleKeepsByteVectors) { blockScaleBytes(true, false); }
TEST(LowerSimVectorWidth, BlockScaleByElementBytes) { blockScaleBytes(false, false); }
TEST(LowerSimVectorWidth, BlockScaleSelectTestLoads) { blockScaleBytes(true, true); }
TEST(LowerSimVectorWidth, BlockScaleSelectTestLoadsNarrow) { blockScaleBytes(false, true); }
TEST(LowerSimVectorWidth, BlockScaleBankVectorLoads) { blockScaleBytes(true, false, true); }
TEST(LowerSimVectorWidth, BlockScaleBankVectorLoadsNarrowConflictFree) { blockScaleBytes(false, false, true); }
