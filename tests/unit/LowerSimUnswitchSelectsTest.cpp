/// \file
/// Session 36's two rewrites of block_causal_attention's code, lowered and run on the CPU simulator against the
/// arithmetic in float64: unswitchUniformSelects (a mask choosing per element among three comparisons by tests
/// uniform over the block, made once around copies of the nest) keeps every element the mask keeps, and
/// fullTileTransfers (tile transfers the ranges prove inside their tensor, their valid counts made the tile's
/// extent) moves the same elements as before, where the tensor ends inside a tile too. Each test also checks
/// that its pass fired (the dump), which fails without it.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using namespace tilec::simtest;
using tilec::lowertest::LowerRun;

namespace {

const char *kMasked = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def masked(Q: T.Tensor((256, 32), \"float16\"), K: T.Tensor((256, 32), \"float16\"),\n"
                      "           O: T.Tensor((256, 64), \"float32\")):\n"
                      "    with T.Kernel(4, threads=128) as bx:\n"
                      "        q = T.alloc_shared((64, 32), \"float16\")\n"
                      "        k_s = T.alloc_shared((64, 32), \"float16\")\n"
                      "        acc = T.alloc_fragment((64, 64), \"float32\")\n"
                      "        out = T.alloc_fragment((64, 64), \"float32\")\n"
                      "        T.copy(Q[bx * 64, 0], q)\n"
                      "        T.clear(out)\n"
                      "        last = T.if_then_else(bx < 2, bx, bx - 2)\n"
                      "        for s in T.serial(3):\n"
                      "            T.copy(K[s * 64, 0], k_s)\n"
                      "            T.clear(acc)\n"
                      "            T.gemm(q, k_s, acc, transpose_B=True)\n"
                      "            for i, j in T.Parallel(64, 64):\n"
                      "                allowed = T.if_then_else(s > last, T.if_then_else(i // 16 == j // 16, 1, 0),\n"
                      "                                         T.if_then_else(bx < 2, T.if_then_else(i // 16 > j // 16, 1, 0),\n"
                      "                                                        T.if_then_else(i // 16 >= j // 16, 1, 0)))\n"
                      "                out[i, j] += T.if_then_else(allowed > 0, acc[i, j], T.if_then_else(j < 32, -1.0, 0.0))\n"
                      "        T.copy(out, O[bx * 64, 0])\n";

// Per block bx (last = bx < 2 ? bx : bx - 2) and key tile s: the diagonal blocks of 16 where s > last, else the
// strict (bx < 2) or inclusive lower block triangle; elsewhere -1 in the first 32 columns and 0 after them.
TEST(LowerSimUnswitchSelects, BlockUniformMaskKeepsItsElements) {
    LowerRun r;
    r.dumpAfter = "unswitchUniformSelects";
    lowerFor(r, kMasked, "sm_80");
    ASSERT_TRUE(r.lowered) << r.diags();
    EXPECT_NE(r.dump.str().find("elif bx < 2:"), std::string::npos) << r.dump.str();
    auto q = quarters(256 * 32, 5), k = quarters(256 * 32, 6);
    std::vector<double> o(256 * 64, std::nan("")), want(256 * 64, 0.0);
    for (int bx = 0; bx < 4; ++bx) {
        const int last = bx < 2 ? bx : bx - 2;
        for (int s = 0; s < 3; ++s)
            for (int i = 0; i < 64; ++i)
                for (int j = 0; j < 64; ++j) {
                    const bool allowed = s > last ? i / 16 == j / 16 : bx < 2 ? i / 16 > j / 16 : i / 16 >= j / 16;
                    double dot = 0;
                    for (int d = 0; d < 32; ++d) dot += q[(size_t)((bx * 64 + i) * 32 + d)] * k[(size_t)((s * 64 + j) * 32 + d)];
                    want[(size_t)((bx * 64 + i) * 64 + j)] += allowed ? dot : j < 32 ? -1.0 : 0.0;
                }
    }
    runLaunches(r, "masked", {{"Q", &q}, {"K", &k}, {"O", &o}}, 1);
    expectNear(o, want, 0, "O");
}

// A tile copy whose rows the grid keeps inside the tensor (256 rows, 4 blocks of 64) gets the constant count; one
// whose last tile passes the tensor's end (200 rows) keeps its count and its zero fill: both products exact.
TEST(LowerSimUnswitchSelects, FullTileTransfersMoveTheSameElements) {
    for (int rows : {256, 200}) {
        SCOPED_TRACE("rows " + std::to_string(rows));
        const std::string n = std::to_string(rows);
        LowerRun r;
        r.dumpAfter = "fullTileTransfers";
        lowerFor(r,
                 "import tilelang.language as T\n"
                 "@T.prim_func\n"
                 "def prod(Q: T.Tensor((" + n + ", 32), \"float16\"), K: T.Tensor((256, 32), \"float16\"),\n"
                 "         O: T.Tensor((" + n + ", 64), \"float32\")):\n"
                 "    with T.Kernel(T.ceildiv(" + n + ", 64), threads=128) as bx:\n"
                 "        q = T.alloc_shared((64, 32), \"float16\")\n"
                 "        k_s = T.alloc_shared((64, 32), \"float16\")\n"
                 "        acc = T.alloc_fragment((64, 64), \"float32\")\n"
                 "        T.clear(acc)\n"
                 "        for s in T.Pipelined(4, num_stages=2):\n"
                 "            T.copy(Q[bx * 64, 0], q)\n"
                 "            T.copy(K[s * 64, 0], k_s)\n"
                 "            T.gemm(q, k_s, acc, transpose_B=True)\n"
                 "        T.copy(acc, O[bx * 64, 0])\n",
                 "sm_80");
        ASSERT_TRUE(r.lowered) << r.diags();
        const bool inside = rows == 256;
        EXPECT_EQ(r.dump.str().find("int64(32), -(bx * 64) + " + n + ", 32)") == std::string::npos, inside) << r.dump.str();
        auto q = quarters((size_t)rows * 32, 7), k = quarters(256 * 32, 8);
        std::vector<double> o((size_t)rows * 64, std::nan("")), want((size_t)rows * 64, 0.0);
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < 64; ++j)
                for (int s = 0; s < 4; ++s)
                    for (int d = 0; d < 32; ++d)
                        want[(size_t)(i * 64 + j)] += q[(size_t)(i * 32 + d)] * k[(size_t)((s * 64 + j) * 32 + d)];
        runLaunches(r, "prod", {{"Q", &q}, {"K", &k}, {"O", &o}}, 1);
        expectNear(o, want, 0, "O");
    }
}

} // namespace
