/// \file
/// Divisions and remainders of global offsets split over their terms (splitIndexDivisions): lowered and run on
/// the CPU simulator, the elements each access reaches are those of the unsplit offsets, where the terms' parts
/// split apart (the thread's and the unrolled loops' remainders together below the divisor) and where they do
/// not (only the multiples leave); and the split does take the unrolled row out of the divisions; divisions in a
/// mask's comparisons split the same way and keep the mask's blocks.
#include "LowerSimUtil.h"

#include "tilec/IRPrinter.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using namespace tilec::simtest;
using tilec::lowertest::LowerRun;

namespace {

// FlashAttention's backward postprocess in small: two 64-row tiles of a float32 dQ kept through a T.Layout
// ([l // 8, d // 8, d % 2, l % 8 * 4 + d % 8 // 2]) copied out to float16, each thread four columns of the rows
// r * 4 + tx / 32 (r unrolled): every element where the layout puts it.
TEST(LowerSimSplitDivisions, LayoutCopyReadsEveryElementWhereItLies) {
    const int L = 128, D = 128, H = 2, N = H * L * D;
    LowerRun r;
    r.dumpAfter = "splitIndexDivisions";
    lowerFor(r,
             "import tilelang.language as T\n"
             "def dq_layout(dQ):\n"
             "    return T.Layout(dQ.shape, lambda b, h, l, d: [b, h, l // 8, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2])\n"
             "@T.prim_func\n"
             "def post(dQ: T.Tensor((1, 2, 128, 128), \"float32\"), Out: T.Tensor((1, 2, 128, 128), \"float16\")):\n"
             "    with T.Kernel(2, 2, threads=128) as (bx, by):\n"
             "        T.annotate_layout({dQ: dq_layout(dQ)})\n"
             "        T.copy(dQ[0, by, bx * 64:(bx + 1) * 64, :], Out[0, by, bx * 64:(bx + 1) * 64, :])\n",
             "sm_90a");
    ASSERT_TRUE(r.lowered) << r.diags();
    // The unrolled row step no longer sits inside a division with the thread's rows.
    EXPECT_EQ(r.dump.str().find("tx // 32) // 8"), std::string::npos) << r.dump.str();
    EXPECT_NE(r.dump.str().find("r * 4 // 8"), std::string::npos) << r.dump.str();
    std::vector<double> dq(N), out(N, std::nan("")), want(N);
    auto x = randomData(N, 7);
    for (int h = 0; h < H; ++h)
        for (int l = 0; l < L; ++l)
            for (int d = 0; d < D; ++d) {
                // (1, 2, 16, 16, 2, 32): strides 16384, 1024, 64, 32, 1
                int at = h * 16384 + l / 8 * 1024 + d / 8 * 64 + d % 2 * 32 + 4 * (l % 8) + d % 8 / 2;
                dq[(size_t)at] = x[(size_t)((h * L + l) * D + d)];
                want[(size_t)((h * L + l) * D + d)] = (double)(float)x[(size_t)((h * L + l) * D + d)];
            }
    runLaunches(r, "post", {{"dQ", &dq}, {"Out", &out}}, 1);
    expectNear(out, want, 2e-3, "Out"); // float16
}

// Offsets whose parts cannot split apart, by a divisor that is not a power of two: (bx * 63 + i * 5 + j * 3) // 7
// and % 7 (bx * 63 is a multiple of 7 and leaves; the rest's remainders overlap), and (bx * 64 + j * 2 + 1) // 4
// (the thread's column pair and the constant split apart). Every element read is the one the unsplit offset names.
TEST(LowerSimSplitDivisions, OverlappingRemaindersKeepTheirDivision) {
    LowerRun r;
    lowerFor(r,
             "import tilelang.language as T\n"
             "@T.prim_func\n"
             "def gather(X: T.Tensor((1024,), \"float32\"), O: T.Tensor((2, 16, 32), \"float32\"),\n"
             "           P: T.Tensor((2, 16, 32), \"float32\")):\n"
             "    with T.Kernel(2, threads=128) as bx:\n"
             "        for i, j in T.Parallel(16, 32):\n"
             "            O[bx, i, j] = X[(bx * 63 + i * 5 + j * 3) // 7 * 8 + (bx * 63 + i * 5 + j * 3) % 7]\n"
             "            P[bx, i, j] = X[(bx * 64 + j * 2 + 1) // 4 * 5 + (bx * 64 + j * 2 + 1) % 4]\n",
             "sm_90a");
    ASSERT_TRUE(r.lowered) << r.diags();
    auto x = randomData(1024, 9);
    std::vector<double> o(1024, std::nan("")), p(1024, std::nan("")), wantO(1024), wantP(1024);
    for (int b = 0; b < 2; ++b)
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 32; ++j) {
                int s = b * 63 + i * 5 + j * 3, t = b * 64 + j * 2 + 1;
                wantO[(size_t)((b * 16 + i) * 32 + j)] = x[(size_t)(s / 7 * 8 + s % 7)];
                wantP[(size_t)((b * 16 + i) * 32 + j)] = x[(size_t)(t / 4 * 5 + t % 4)];
            }
    runLaunches(r, "gather", {{"X", &x}, {"O", &o}, {"P", &p}}, 1);
    expectNear(o, wantO, 0, "O");
    expectNear(p, wantP, 0, "P");
}

// Divisions in a comparison split too: a block mask over an mma.sync accumulator (`i // 16 == j // 16`, and
// `i // 8 >= j // 32` for blocks of unequal sizes) keeps exactly the elements of the diagonal blocks, where after
// layout mapping i and j are sums of the warp's, the lane's and unrolled loops' parts; and the row side of the first
// mask no longer divides the lane's rows by 16.
TEST(LowerSimSplitDivisions, MaskComparisonsKeepTheirBlocks) {
    LowerRun r;
    r.dumpAfter = "splitIndexDivisions";
    lowerFor(r,
             "import tilelang.language as T\n"
             "@T.prim_func\n"
             "def blockmask(A: T.Tensor((64, 32), \"float16\"), B: T.Tensor((64, 32), \"float16\"),\n"
             "              C: T.Tensor((64, 64), \"float32\"), D: T.Tensor((64, 64), \"float32\")):\n"
             "    with T.Kernel(1, threads=128) as bx:\n"
             "        a = T.alloc_shared((64, 32), \"float16\")\n"
             "        b = T.alloc_shared((64, 32), \"float16\")\n"
             "        acc = T.alloc_fragment((64, 64), \"float32\")\n"
             "        acc2 = T.alloc_fragment((64, 64), \"float32\")\n"
             "        T.copy(A, a)\n"
             "        T.copy(B, b)\n"
             "        T.clear(acc)\n"
             "        T.gemm(a, b, acc, transpose_B=True)\n"
             "        for i, j in T.Parallel(64, 64):\n"
             "            acc2[i, j] = T.if_then_else(i // 8 >= j // 32, acc[i, j], 0)\n"
             "            acc[i, j] = T.if_then_else(i // 16 == j // 16, acc[i, j], 0)\n"
             "        T.copy(acc, C)\n"
             "        T.copy(acc2, D)\n",
             "sm_80");
    ASSERT_TRUE(r.lowered) << r.diags();
    EXPECT_EQ(r.dump.str().find("// 4) // 16"), std::string::npos) << r.dump.str();
    auto a = quarters(64 * 32, 3), b = quarters(64 * 32, 4);
    std::vector<double> c(64 * 64, std::nan("")), d(64 * 64, std::nan("")), wantC(64 * 64), wantD(64 * 64);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j) {
            double sum = 0;
            for (int k = 0; k < 32; ++k) sum += a[(size_t)(i * 32 + k)] * b[(size_t)(j * 32 + k)];
            wantC[(size_t)(i * 64 + j)] = i / 16 == j / 16 ? sum : 0;
            wantD[(size_t)(i * 64 + j)] = i / 8 >= j / 32 ? sum : 0;
        }
    runLaunches(r, "blockmask", {{"A", &a}, {"B", &b}, {"C", &c}, {"D", &d}}, 1);
    expectNear(c, wantC, 0, "C");
    expectNear(d, wantD, 0, "D");
}

} // namespace
