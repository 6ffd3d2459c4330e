/// \file
/// A T.Kernel grid whose y or z extent is past the 65535 blocks CUDA allows there (TileLang's im2col
/// convolutions launch one block row per 64 output pixels: 262144 along y) runs on the CPU simulator once
/// tl::foldGrid has folded those dimensions into x: every block coordinate of the program runs exactly once,
/// with the coordinates (and T.get_block_binding) the program was written for.
#include "LowerSimUtil.h"
#include "tilec/IROperator.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

/// The one lowered kernel is launched with grid (x, y, z).
void expectGrid(const tilec::lowertest::LowerRun &r, int64_t x, int64_t y, int64_t z) {
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    const int64_t want[3] = {x, y, z};
    for (int d = 0; d < 3; ++d) EXPECT_EQ(tilec::ir::constValue(r.lowered->kernels[0]->grid[(size_t)d]), want[d]) << "dimension " << d;
}

/// Every (bx, by) of a 3 x 70000 grid writes its own cell once: the cell's linear number, and the difference
/// between T.get_block_binding and the bound name (0). A cell run twice or never shows in the sums.
TEST(LowerSimGridFold, YPastTheLimitFoldsIntoX) {
    const int X = 3, Y = 70000;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def tall(O: T.Tensor((70000, 3), T.int32), D: T.Tensor((70000, 3), T.int32)):\n"
          "    with T.Kernel(3, 70000, threads=32) as (bx, by):\n"
          "        tx = T.get_thread_binding()\n"
          "        if tx == 0:\n"
          "            O[by, bx] = O[by, bx] + by * 3 + bx + 1\n"
          "            D[by, bx] = T.get_block_binding(1) - by + (T.get_block_binding(0) - bx) * 7\n",
          "t.tile", *tilec::Target::parse("sm_90a"));
    expectGrid(r, X * Y, 1, 1);
    std::vector<double> o(X * Y, 0.0), d(X * Y, std::nan("")), want(X * Y), zero(X * Y, 0.0);
    for (int i = 0; i < X * Y; ++i) want[i] = i + 1;
    sim::runAll(r, {{"O", &o}, {"D", &d}});
    sim::expectNear(o, want, 0, "O");
    sim::expectNear(d, zero, 0, "D");
}

/// z past the limit with y inside it: z folds into x, y stays the launch's y.
TEST(LowerSimGridFold, ZPastTheLimitKeepsY) {
    const int X = 2, Y = 3, Z = 65537;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def deep(O: T.Tensor((65537, 3, 2), T.int32)):\n"
          "    with T.Kernel(2, 3, 65537, threads=32) as (bx, by, bz):\n"
          "        tx = T.get_thread_binding()\n"
          "        if tx == 0:\n"
          "            O[bz, by, bx] = O[bz, by, bx] + (bz * 3 + by) * 2 + bx + 1\n",
          "t.tile", *tilec::Target::parse("sm_90a"));
    expectGrid(r, X * Z, Y, 1);
    std::vector<double> o(X * Y * Z, 0.0), want(X * Y * Z);
    for (int i = 0; i < X * Y * Z; ++i) want[i] = i + 1;
    sim::runAll(r, {{"O", &o}});
    sim::expectNear(o, want, 0, "O");
}

} // namespace
