/// \file Vector accesses of tensors whose rows hold a run-time number of elements (T.dynamic sizes, a
/// T.StridedTensor's run-time stride): the variant that assumes aligned rows
/// (LoweringOptions::assumeAlignedRows) takes them as vectors and records the sizes it relied on
/// (Kernel::assumptions, checked by the launcher); the variant that assumes nothing stays element by element.
/// Indices of whole tiles that the grid launches (`N // 64` blocks) need no bounds test. Run on the CPU
/// simulator, which fails a vector access that starts at a misaligned element.
#include "LowerSimUtil.h"

#include "tilec/IRPrinter.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using namespace tilec::simtest;
using tilec::lowertest::LowerRun;

namespace {

/// TileKernels' batched transpose in small: a row-strided input read and a dense output written by a nest of
/// whole tiles (the grid is `N // 64` by `M // 8`), then a nest of tiles over ceildiv, which keep their
/// tests.
const char *rowVectors = R"(import tilelang.language as T
M = T.dynamic("M")
N = T.dynamic("N")
S = T.dynamic("S")

@T.prim_func
def whole_tiles(x: T.StridedTensor[(M, N), (S, 1), "bfloat16"], y: T.Tensor[(M, N), "bfloat16"]):
    with T.Kernel(N // 64, M // 8, threads=128) as (bx, by):
        for i, j in T.Parallel(8, 64):
            y[by * 8 + i, bx * 64 + j] = x[by * 8 + i, bx * 64 + j]

@T.prim_func
def edge_tiles(x: T.Tensor[(M, N), "float32"], y: T.Tensor[(M, N), "float32"]):
    with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 8), threads=128) as (bx, by):
        for i, j in T.Parallel(8, 64):
            y[by * 8 + i, bx * 64 + j] = x[by * 8 + i, bx * 64 + j] * 2.0
)";

/// Tests (ifs and selects) in a kernel's code.
int tests(const ir::Stmt &s) {
    struct Count : ir::IRVisitor {
        using IRVisitor::visit;
        int n = 0;
        void visit(const ir::IfThenElse &op) override {
            ++n;
            IRVisitor::visit(op);
        }
        void visit(const ir::Select &op) override {
            ++n;
            IRVisitor::visit(op);
        }
    } c;
    c.visit(s);
    return c.n;
}

/// The kernel's assumptions as "tensor:size:bytes", in order.
std::vector<std::string> assumed(const ir::Kernel &k) {
    std::vector<std::string> out;
    for (auto &a : k.assumptions) out.push_back(a.tensor->name + ":" + ir::print(a.extent) + ":" + std::to_string(a.bytes));
    return out;
}

/// whole_tiles (x read at row stride S, M x N elements, grid N // 64 by M // 8: only whole tiles run) against
/// its reference; the SimError's text, or "" when it ran and matched.
std::string runWhole(const ir::Kernel &k, int M, int N, int S) {
    auto x = randomData((size_t)(M - 1) * S + N, 51);
    for (auto &v : x) v = (double)(float)v; // bfloat16 values: exact copies
    std::vector<double> y((size_t)M * N, 7.0), want((size_t)M * N, 7.0);
    for (int i = 0; i < M / 8 * 8; ++i)
        for (int j = 0; j < N / 64 * 64; ++j) want[(size_t)(i * N + j)] = x[(size_t)(i * S + j)];
    Outcome o = runCaught(k, {{"x", &x}, {"y", &y}}, {{"M", M}, {"N", N}, {"S", S}});
    if (!o.error.empty()) return o.error;
    EXPECT_TRUE(o.races.empty());
    expectNear(y, want, 1e-2, "y");
    return "";
}

std::string runEdge(const ir::Kernel &k, int M, int N) {
    auto x = randomData((size_t)M * N, 52);
    std::vector<double> y((size_t)M * N, std::nan("")), want((size_t)M * N);
    for (size_t i = 0; i < want.size(); ++i) want[i] = (double)(float)(x[i] * 2.0);
    Outcome o = runCaught(k, {{"x", &x}, {"y", &y}}, {{"M", M}, {"N", N}});
    if (!o.error.empty()) return o.error;
    EXPECT_TRUE(o.races.empty());
    expectNear(y, want, 1e-6, "y");
    return "";
}

} // namespace

// The wide variant: 4 bfloat16 (8 bytes) per access of x and y, and 4 floats (16 bytes) in edge_tiles,
// relying on exactly the sizes in the rows' offsets and the row tests (S and N of whole_tiles; N of
// edge_tiles); the whole tiles carry no test at all. Right where the sizes suit (any M, N // 64 tiles), and
// the simulator catches the misaligned vector where S or N breaks what was assumed.
TEST(LowerSimRowVectors, WideVariantAssumesRowSizes) {
    Variant v{*Target::parse("sm_80"), {}};
    v.options.assumeAlignedRows = true;
    LowerRun r;
    r.run(rowVectors, "t.tile", v);
    ASSERT_TRUE(r.lowered) << r.diags();
    const ir::Kernel *whole = r.kernel("whole_tiles"), *edge = r.kernel("edge_tiles");
    ASSERT_TRUE(whole && edge);
    EXPECT_EQ(vectorLanes(whole->body, "x"), 4);
    EXPECT_EQ(vectorLanes(whole->body, "y"), 4);
    EXPECT_EQ(vectorLanes(edge->body, "x"), 4);
    EXPECT_EQ(vectorLanes(edge->body, "y"), 4);
    EXPECT_EQ(assumed(*whole), (std::vector<std::string>{"x:S:8", "y:N:8"}));
    EXPECT_EQ(assumed(*edge), (std::vector<std::string>{"x:N:16", "y:N:16"}));
    EXPECT_EQ(tests(whole->body), 0) << ir::print(whole->body);
    EXPECT_GT(tests(edge->body), 0);

    for (auto [M, N, S] : {std::tuple{16, 128, 128}, {13, 192, 200}, {8, 64, 68}, {21, 136, 132}})
        EXPECT_EQ(runWhole(*whole, M, N, S), "") << M << " " << N << " " << S;
    for (auto [M, N] : {std::pair{16, 128}, {13, 68}, {3, 4}})
        EXPECT_EQ(runEdge(*edge, M, N), "") << M << " " << N;
    EXPECT_NE(runWhole(*whole, 16, 128, 130).find("misaligned element"), std::string::npos);
    EXPECT_NE(runWhole(*whole, 16, 130, 128).find("misaligned element"), std::string::npos);
    EXPECT_NE(runEdge(*edge, 16, 70).find("misaligned element"), std::string::npos);
}

// The variant that assumes nothing: element by element where a size decides the alignment, right for every
// size.
TEST(LowerSimRowVectors, NarrowVariantAssumesNothing) {
    LowerRun r;
    r.run(rowVectors, "t.tile", *Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    const ir::Kernel *whole = r.kernel("whole_tiles"), *edge = r.kernel("edge_tiles");
    ASSERT_TRUE(whole && edge);
    EXPECT_TRUE(whole->assumptions.empty());
    EXPECT_TRUE(edge->assumptions.empty());
    EXPECT_EQ(vectorLanes(whole->body, "x"), 0);
    EXPECT_EQ(vectorLanes(edge->body, "y"), 0);
    for (auto [M, N, S] : {std::tuple{16, 128, 130}, {13, 130, 131}, {9, 67, 67}})
        EXPECT_EQ(runWhole(*whole, M, N, S), "") << M << " " << N << " " << S;
    for (auto [M, N] : {std::pair{16, 70}, {13, 67}, {1, 1}})
        EXPECT_EQ(runEdge(*edge, M, N), "") << M << " " << N;
}
