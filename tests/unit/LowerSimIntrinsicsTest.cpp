/// \file
/// TileLang's explicit asynchronous copies (T.async_copy with T.ptx_wait_group) and T.dp4a
/// (src/eval/TileLangCopy.cpp, src/eval/TileLangIntrinsics.cpp) lowered for sm_80 and run on the CPU simulator
/// against references computed here; and the named barrier insertSyncs gives a branch of whole warps.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

using sim::runAll;

// TileKernels' engram gate in small: rows of X stream through a double buffer of shared memory by T.async_copy,
// the next row's copy issued before the current one is read, T.ptx_wait_group(1) / (0) before each read; every
// thread reads back the elements of its own part of the row. Out[r] is the row's sum of squares (the threads'
// parts added through shared memory).
TEST(LowerSimIntrinsics, AsyncCopyDoubleBuffer) {
    const int rows = 6, width = 128;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "def row_squares(rows, width):\n"
          "    @T.prim_func\n"
          "    def main(X: T.Tensor((rows, width), \"float32\"), Out: T.Tensor((rows,), \"float32\")):\n"
          "        with T.Kernel(1, threads=32) as bx:\n"
          "            tx = T.get_thread_binding()\n"
          "            buf = T.alloc_shared((2, width), \"float32\")\n"
          "            acc = T.alloc_local((1,), \"float32\")\n"
          "            part = T.alloc_shared((32,), \"float32\")\n"
          "            T.async_copy(X[0, 0:width], buf[0, :])\n"
          "            for i in T.serial(rows):\n"
          "                if i + 1 < rows:\n"
          "                    T.async_copy(X[i + 1, 0:width], buf[(i + 1) % 2, :])\n"
          "                    T.ptx_wait_group(1)\n"
          "                else:\n"
          "                    T.ptx_wait_group(0)\n"
          "                T.sync_threads()\n"
          "                acc[0] = 0\n"
          "                for j in T.serial(width // 32):\n"
          "                    acc[0] += buf[i % 2, tx * 4 + j] * buf[i % 2, tx * 4 + j]\n"
          "                part[tx] = acc[0]\n"
          "                T.sync_threads()\n"
          "                if tx == 0:\n"
          "                    for t in T.serial(32):\n"
          "                        Out[i] += part[t]\n"
          "                T.sync_threads()\n"
          "    return main\n"
          "k = row_squares(6, 128)\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    auto x = sim::randomData((size_t)rows * width, 3);
    std::vector<double> out(rows, 0.0), want(rows, 0.0);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < width; ++j) want[i] += x[(size_t)i * width + j] * x[(size_t)i * width + j];
    runAll(r, {{"X", &x}, {"Out", &out}});
    sim::expectNear(out, want, 1e-4, "Out");
}

// T.dp4a accumulates four int8 products into an int32 element, from the given elements of A and B on.
TEST(LowerSimIntrinsics, Dp4aDotProducts) {
    const int n = 64, k = 16;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def dp4a_rows(A: T.Tensor((64, 16), \"int8\"), B: T.Tensor((16,), \"int8\"), C: T.Tensor((64,), \"int32\")):\n"
          "    with T.Kernel(1, threads=64) as bx:\n"
          "        tx = T.get_thread_binding()\n"
          "        a = T.alloc_local((16,), \"int8\")\n"
          "        acc = T.alloc_local((1,), \"int32\")\n"
          "        for j in T.serial(16):\n"
          "            a[j] = A[tx, j]\n"
          "        acc[0] = 7\n"
          "        for q in T.serial(4):\n"
          "            T.dp4a(a[q * 4], B[q * 4], acc[0])\n"
          "        C[tx] = acc[0]\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    std::vector<double> a((size_t)n * k), b(k), c(n, std::nan("")), want(n, 7.0);
    for (size_t i = 0; i < a.size(); ++i) a[i] = (double)((int)(i * 37 % 256) - 128);
    for (int j = 0; j < k; ++j) b[j] = (double)((j * 53 % 256) - 128);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < k; ++j) want[i] += a[(size_t)i * k + j] * b[j];
    runAll(r, {{"A", &a}, {"B", &b}, {"C", &c}});
    sim::expectNear(c, want, 0, "C");
}

/// A kernel whose threads 0-63 exchange data through shared memory among themselves; the others run `otherwise`.
std::string halves(const std::string &otherwise) {
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def halves(A: T.Tensor((128,), \"float32\"), B: T.Tensor((128,), \"float32\")):\n"
           "    with T.Kernel(1, threads=128) as bx:\n"
           "        s = T.alloc_shared((128,), \"float32\")\n"
           "        tx = T.get_thread_binding(0)\n"
           "        if tx < 64:\n"
           "            s[tx] = A[tx]\n"
           "            B[tx] = s[63 - tx]\n"
           "        else:\n" +
           otherwise;
}

// TileKernels' per-channel cast in small: a branch on the thread index that holds for whole warps exchanges data
// through shared memory among its own threads; insertSyncs orders it with a named barrier of those threads (the
// simulator reports a race otherwise), and the other branch with another.
TEST(LowerSimIntrinsics, PartialBarrierOfWholeWarps) {
    tilec::lowertest::LowerRun r;
    r.run(halves("            s[tx] = A[tx] * 2\n"
                 "            B[tx] = s[191 - tx]\n"),
          "t.tile", *tilec::Target::parse("sm_80"));
    auto a = sim::randomData(128, 9);
    std::vector<double> b(128, std::nan("")), want(128);
    for (int t = 0; t < 128; ++t) want[t] = t < 64 ? a[63 - t] : 2 * a[191 - t];
    runAll(r, {{"A", &a}, {"B", &b}});
    sim::expectNear(b, want, 1e-6, "B");
}

// The same exchange across the branches (the else branch reads what the then branch wrote) has no barrier
// that could order it: tilec refuses it (ThreadRaces), where it once compiled it and only the simulator's race
// check saw it.
TEST(LowerSimIntrinsics, ExchangeAcrossTheBranchesIsRefused) {
    tilec::lowertest::LowerRun r;
    r.run(halves("            B[tx] = s[tx - 64]\n"), "t.tile", *tilec::Target::parse("sm_80"));
    EXPECT_FALSE(r.lowered);
    EXPECT_NE(r.diags().find("in one branch of a condition on the thread index"), std::string::npos) << r.diags();
}

} // namespace
