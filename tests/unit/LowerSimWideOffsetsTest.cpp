/// \file
/// 64-bit offsets of tensors with T.dynamic sizes (flattenBuffers): the innermost dimensions whose offset
/// provably fits 32 bits are summed in 32 bits and widened once, the outer ones widened term by term. Lowered
/// and run on the CPU simulator, every element lands where the row-major offset puts it, for the two shapes
/// whose 16-byte stores NVVM split while every term was widened apart (codegen/wide_offset_tail.tile): a tile
/// staged in shared memory whose row and column both depend on the thread, and rows of a 64-bit loop; and the
/// one it split while a block's head was summed with a rolled loop's counter (heads).
#include "LowerSimUtil.h"

#include "tilec/IRPrinter.h"
#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using namespace tilec::simtest;
using tilec::lowertest::LowerRun;

namespace {

const char *wideOffsets = R"(import tilelang.language as T
n = T.dynamic("n")

@T.prim_func
def stage(a: T.Tensor((n, 4, 512), "float32"), x: T.Tensor((n, 4, 2048), "bfloat16")):
    with T.Kernel(n, threads=128) as bx:
        s = T.alloc_shared((4, 512), "bfloat16")
        f = T.alloc_fragment((4, 512), "float32")
        for h in T.serial(4):
            T.copy(a[bx, 0, 0], f)
            for i, j in T.Parallel(4, 512):
                f[i, j] = f[i, j] + h
            T.copy(f, s)
            T.copy(s, x[bx, 0, h * 512])

@T.prim_func
def rows(a: T.Tensor((n, 4, 1024), "bfloat16"), y: T.Tensor((n, 4, 1024), "bfloat16"), per: T.int32):
    with T.Kernel(T.ceildiv(n, 64), 4, threads=128) as (bx, by):
        f = T.alloc_fragment((1024,), "float32")
        for i in T.serial(T.min(per, n - bx * per)):
            T.copy(a[bx * per + i, by, 0], f)
            for j in T.Parallel(1024):
                f[j] = f[j] * 2.0
            T.copy(f, y[bx * per + i, by, 0])

@T.prim_func
def heads(a: T.Tensor((n, 4, 12288), "bfloat16"), y: T.Tensor((n, 4, 12288), "bfloat16")):
    with T.Kernel(4, 6, threads=32) as (h, b):
        tx = T.get_thread_binding()
        f = T.alloc_local((8,), "float32")
        per = T.ceildiv(n, 6)
        for i in T.serial(T.min(per * b, n), T.min(per * (b + 1), n)):
            for c in T.serial(48):
                for k in T.vectorized(8):
                    f[k] = a[i, h, c * 256 + tx * 8 + k]
                for k in T.vectorized(8):
                    y[i, h, c * 256 + tx * 8 + k] = f[k] * 2.0

@T.prim_func
def scalar(a: T.Tensor((n, 4, 32), "float32"), y: T.Tensor((n, 4, 64), "float32")):
    with T.Kernel(n, threads=128) as bx:
        f = T.alloc_fragment((4, 32), "float32")
        T.copy(a[bx, 0, 0], f)
        for i, j in T.Parallel(4, 32):
            y[bx, i, j] = f[i, j] * 2.0

@T.prim_func
def uniform(a: T.Tensor((n, 8, 64), "float32"), y: T.Tensor((n, 8), "float32")):
    with T.Kernel(n, 8, threads=32) as (bx, by):
        s = T.alloc_var("float32")
        s = a[bx, by, 5]
        y[bx, by] = s

@T.prim_func
def split_rows(a: T.Tensor((4, 32, 128), "float32"), y: T.Tensor((4, 32, n, 128), "float32")):
    with T.Kernel(4, 8, n, threads=128) as (bx, by, bz):
        acc = T.alloc_fragment((4, 128), "float32")
        T.copy(a[bx, by * 4:(by + 1) * 4, :], acc)
        for i, j in T.Parallel(4, 128):
            acc[i, j] = acc[i, j] * 2.0
        T.copy(acc, y[bx, by * 4:(by + 1) * 4, bz, :])
)";

/// The most 64-bit conversions in one index of a store to `name` (each widened term has one), or of a load
/// of `name` with `loads`.
int widenings(const ir::Stmt &s, const std::string &name, bool loads = false) {
    struct Count : ir::IRVisitor {
        using IRVisitor::visit;
        std::string name;
        bool loads = false;
        int n = 0, most = 0;
        void index(const std::vector<ir::Expr> &indices) {
            for (auto &i : indices) {
                n = 0;
                IRVisitor::visit(i);
                most = std::max(most, n);
            }
        }
        void visit(const ir::Cast &op) override {
            n += op.dtype == DType::Int64;
            IRVisitor::visit(op);
        }
        void visit(const ir::Store &op) override {
            if (!loads && op.buffer->name == name) index(op.indices);
            IRVisitor::visit(op);
        }
        void visit(const ir::Load &op) override {
            if (loads && op.buffer->name == name) index(op.indices);
            IRVisitor::visit(op);
        }
    } c;
    c.name = name;
    c.loads = loads;
    c.visit(s);
    return c.most;
}

/// The 64-bit conversions of a 32-bit sum in the indices of loads of `name` (a tail summed, then widened once).
int widenedSums(const ir::Stmt &s, const std::string &name) {
    struct Count : ir::IRVisitor {
        using IRVisitor::visit;
        std::string name;
        bool inside = false;
        int n = 0;
        void visit(const ir::Cast &op) override {
            auto b = ir::as<ir::Binary>(op.value);
            n += inside && op.dtype == DType::Int64 && b && b->op == ir::BinaryOp::Add;
            IRVisitor::visit(op);
        }
        void visit(const ir::Load &op) override {
            bool saved = inside;
            inside = op.buffer->name == name;
            IRVisitor::visit(op);
            inside = saved;
        }
    } c;
    c.name = name;
    c.visit(s);
    return c.n;
}

/// `k` run on a (read) and y (written) at `sizes`: no error, no race, y within `tol` of `want`.
void expectRight(const ir::Kernel &k, std::vector<double> &a, std::vector<double> &y, const Scalars &sizes,
                 const std::vector<double> &want, double tol) {
    Outcome o = runCaught(k, {{"a", &a}, {"y", &y}}, sizes);
    ASSERT_EQ(o.error, "") << "n = " << sizes.at("n");
    EXPECT_TRUE(o.races.empty());
    expectNear(y, want, tol, "y");
}

} // namespace

// stage: x's row (r * 2 + tx / 64) and column (h * 512 + tx * 8 % 512) in one 32-bit sum, widened once beside
// the block's row bx * 8192: two widenings where each term had its own (three). Every element of every h slab
// right, for 1 and 3 rows of n.
TEST(LowerSimWideOffsets, StagedTileRowAndColumnWidenedOnce) {
    LowerRun r;
    const ir::Kernel *k = loweredKernel(r, wideOffsets, "sm_90a", "stage");
    ASSERT_TRUE(k);
    EXPECT_EQ(widenings(k->body, "x"), 2) << ir::print(k->body);
    // a load is never split by widening: its terms bx * 2048, r * 512 and tx * 4 stay widened one by one
    EXPECT_EQ(widenings(k->body, "a", true), 3) << ir::print(k->body);
    for (int n : {1, 3}) {
        auto a = randomData((size_t)n * 2048, 61);
        std::vector<double> x((size_t)n * 8192, std::nan("")), want(x.size());
        for (int b = 0; b < n; ++b)
            for (int h = 0; h < 4; ++h)
                for (int i = 0; i < 4; ++i)
                    for (int j = 0; j < 512; ++j)
                        want[(size_t)(b * 8192 + i * 2048 + h * 512 + j)] = a[(size_t)(b * 2048 + i * 512 + j)] + h;
        Outcome o = runCaught(*k, {{"a", &a}, {"x", &x}}, {{"n", n}});
        ASSERT_EQ(o.error, "") << n;
        EXPECT_TRUE(o.races.empty());
        expectNear(x, want, 2e-2, "x"); // bfloat16
    }
}

// rows: the 64-bit row (bx * per + i) * 4096 and the 32-bit rest by * 1024 + tx * 8, widened once. Every row of
// every block right, with a last block of fewer rows.
TEST(LowerSimWideOffsets, LoopRowsRestWidenedOnce) {
    LowerRun r;
    const ir::Kernel *k = loweredKernel(r, wideOffsets, "sm_90a", "rows");
    ASSERT_TRUE(k);
    EXPECT_EQ(widenings(k->body, "y"), 3) << ir::print(k->body);
    for (auto [n, per] : {std::pair{5, 2}, {64, 1}}) {
        auto a = randomData((size_t)n * 4096, 62);
        for (auto &v : a) v = (double)(float)v;
        std::vector<double> y((size_t)n * 4096, 7.0), want(y.size(), 7.0);
        // block bx handles rows bx * per .. bx * per + per - 1 (those below n); blocks ceildiv(n, 64)
        for (int bx = 0; bx < (n + 63) / 64; ++bx)
            for (int i = 0; i < std::min(per, n - bx * per); ++i)
                for (int e = 0; e < 4096; ++e)
                    want[(size_t)((bx * per + i) * 4096 + e)] = a[(size_t)((bx * per + i) * 4096 + e)] * 2.0;
        expectRight(*k, a, y, {{"n", n}, {"per", per}}, want, 2e-2);
    }
}

// heads: rows of a 64-bit loop per block, a head per blockIdx.x and 48 column steps of a rolled loop; the
// store's head h * 12288 widened apart from the 32-bit sum c * 256 + tx * 8 + k of the loop and the thread
// (NVVM split the 16-byte store with the head in the sum): three widenings where the tail had two. Every
// element of every row and head right, for row counts that leave blocks with no rows, one row and several.
TEST(LowerSimWideOffsets, RolledLoopHeadWidenedApart) {
    LowerRun r;
    const ir::Kernel *k = loweredKernel(r, wideOffsets, "sm_90a", "heads");
    ASSERT_TRUE(k);
    EXPECT_EQ(widenings(k->body, "y"), 3) << ir::print(k->body);
    for (int n : {1, 7, 13}) {
        auto a = randomData((size_t)n * 49152, 64);
        std::vector<double> y((size_t)n * 49152, std::nan("")), want(y.size());
        for (size_t e = 0; e < a.size(); ++e)
            want[e] = a[e] * 2.0;
        expectRight(*k, a, y, {{"n", n}}, want, 2e-2); // bfloat16
    }
}

// scalar: one float32 per thread, stored at bx * 256 + tx / 32 * 64 + tx % 32: no vector access to keep whole,
// so each term keeps its own widening (a 32-bit sum of the two thread terms only moved registers). Every element
// right, for 1 and 3 rows of n, and the columns past 32 untouched.
TEST(LowerSimWideOffsets, ScalarStoreWidenedTermByTerm) {
    LowerRun r;
    const ir::Kernel *k = loweredKernel(r, wideOffsets, "sm_90a", "scalar");
    ASSERT_TRUE(k);
    EXPECT_EQ(widenings(k->body, "y"), 3) << ir::print(k->body);
    for (int n : {1, 3}) {
        auto a = randomData((size_t)n * 128, 63);
        std::vector<double> y((size_t)n * 256, 7.0), want(y.size(), 7.0);
        for (int b = 0; b < n; ++b)
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 32; ++j)
                    want[(size_t)(b * 256 + i * 64 + j)] = a[(size_t)(b * 128 + i * 32 + j)] * 2.0;
        expectRight(*k, a, y, {{"n", n}}, want, 1e-6);
    }
}

// uniform: a load at bx * 512 + by * 64 + 5, whose summed terms depend on no thread: by * 64 + 5 summed in 32
// bits and widened once (no sum widened where each term has its own widening). Every block reads its element, for 1 and 3 rows.
TEST(LowerSimWideOffsets, ThreadFreeTermsWidenedOnce) {
    LowerRun r;
    const ir::Kernel *k = loweredKernel(r, wideOffsets, "sm_90a", "uniform");
    ASSERT_TRUE(k);
    EXPECT_EQ(widenedSums(k->body, "a"), 1) << ir::print(k->body);
    for (int n : {1, 3}) {
        auto a = randomData((size_t)n * 512, 64);
        std::vector<double> y((size_t)n * 8, 7.0), want(y.size());
        for (int b = 0; b < n; ++b)
            for (int h = 0; h < 8; ++h) want[(size_t)(b * 8 + h)] = a[(size_t)(b * 512 + h * 64 + 5)];
        expectRight(*k, a, y, {{"n", n}}, want, 1e-6);
    }
}

// split_rows: a split index per blockIdx.z of a grid of n blocks along z (split-KV decoding's partial outputs);
// the 16-byte store's bz * 128 summed into the 32-bit column tail, which CUDA's grid limit (65535 along z)
// bounds whatever n is (widened apart, NVVM split the store into 4 st.global.f32: codegen/grid_limit_tail.tile):
// five 64-bit conversions in y's index (bx, n, the row, n, the tail) where there were six. Every element of
// every split right, for 1, 2 and 5 splits.
TEST(LowerSimWideOffsets, GridLimitBoundsBlockIndexInTail) {
    LowerRun r;
    const ir::Kernel *k = loweredKernel(r, wideOffsets, "sm_90a", "split_rows");
    ASSERT_TRUE(k);
    EXPECT_EQ(widenings(k->body, "y"), 5) << ir::print(k->body);
    for (int n : {1, 2, 5}) {
        auto a = randomData((size_t)4 * 32 * 128, 65);
        std::vector<double> y((size_t)4 * 32 * n * 128, std::nan("")), want(y.size());
        for (int b = 0; b < 4; ++b)
            for (int row = 0; row < 32; ++row)
                for (int z = 0; z < n; ++z)
                    for (int c = 0; c < 128; ++c)
                        want[(((size_t)b * 32 + row) * n + z) * 128 + c] = a[((size_t)b * 32 + row) * 128 + c] * 2.0;
        expectRight(*k, a, y, {{"n", n}}, want, 1e-6);
    }
}
