/// \file
/// T.reshape / T.view (src/eval/TileLangViews.cpp) run on the CPU simulator: element accesses through views of a
/// global tensor, a shared buffer (written through a view by each thread, read back in the buffer's own shape by
/// another thread) and a local array land on the same elements as row-major indexing of the buffer would; tile
/// primitives on a whole view of a fragment (a reduction of `x.reshape(m, groups, per_group)`, a fill and a copy
/// of a view, a view of a replicated reduction result) use the fragment's own registers in its own layout.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

TEST(LowerSimViews, ReshapedGlobalSharedAndLocal) {
    const int n = 37, topk = 6, total = n * topk;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "def reversed_blocks(n, topk):\n"
          "    @T.prim_func\n"
          "    def main(X: T.Tensor((n, topk), \"float32\"), Y: T.Tensor((n, topk), \"float32\")):\n"
          "        with T.Kernel(T.ceildiv(n * topk, 128), threads=128) as bx:\n"
          "            x1 = T.reshape(X, (n * topk,))\n"
          "            y1 = T.view(Y, (n * topk,))\n"
          "            s = T.alloc_shared((4, 32), \"float32\")\n"
          "            s1 = T.view(s, (128,))\n"
          "            loc = T.alloc_local((2, 4), \"float32\")\n"
          "            l1 = T.reshape(loc, (8,))\n"
          "            tx = T.get_thread_binding()\n"
          "            i = bx * 128 + tx\n"
          "            for j in T.serial(8):\n"
          "                l1[j] = j\n"
          "            s1[tx] = 0\n"
          "            if i < n * topk:\n"
          "                s1[tx] = x1[i]\n"
          "            T.sync_threads()\n"
          "            if i < n * topk:\n"
          "                y1[i] = s[(127 - tx) // 32, (127 - tx) % 32] * 2 + loc[1, 3]\n"
          "    return main\n"
          "k = reversed_blocks(37, 6)\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto x = sim::randomData(total, 5);
    std::vector<double> y(total, std::nan("")), want(total);
    for (int i = 0; i < total; ++i) {
        int mirror = i / 128 * 128 + 127 - i % 128;
        want[i] = (mirror < total ? x[mirror] : 0.0) * 2 + 7;
    }
    sim::runAll(r, {{"X", &x}, {"Y", &y}});
    sim::expectNear(y, want, 1e-6, "Y");
}

/// TileKernels' per-token cast: the absolute maximum of each group of 4 columns through a reshaped fragment
/// (whose 4-element rows cap the vector width below the 8 halves of the copy), then a second-stage maximum over
/// a reshape of that replicated result, a fill and a copy of a view over another fragment.
TEST(LowerSimViews, TilePrimitivesOnFragmentViews) {
    const int M = 8, K = 64, G = 16, C = K / G, Q = 4;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "def cast(M, K, G, Q):\n"
          "    @T.prim_func\n"
          "    def main(X: T.Tensor((M, K), \"float16\"), A: T.Tensor((M, G), \"float32\"),\n"
          "             B: T.Tensor((M, Q), \"float32\"), Y: T.Tensor((M, G, K // G), \"float32\")):\n"
          "        with T.Kernel(1, threads=128) as bx:\n"
          "            x = T.alloc_fragment((M, K), \"float16\")\n"
          "            amax = T.alloc_fragment((M, G), \"float32\")\n"
          "            bmax = T.alloc_fragment((M, Q), \"float32\")\n"
          "            y = T.alloc_fragment((M, K), \"float32\")\n"
          "            T.copy(X, x)\n"
          "            xv = T.reshape(x, (M, G, K // G))\n"
          "            T.reduce_absmax(xv, amax, dim=2)\n"
          "            av = T.reshape(amax, (M, Q, G // Q))\n"
          "            T.reduce_max(av, bmax, dim=-1)\n"
          "            yv = T.view(y, (M, G, K // G))\n"
          "            T.fill(yv, 1)\n"
          "            for i, j in T.Parallel(M, K):\n"
          "                y[i, j] += x[i, j] / amax[i, j // (K // G)]\n"
          "            T.copy(amax, A)\n"
          "            T.copy(bmax, B)\n"
          "            T.copy(yv, Y)\n"
          "    return main\n"
          "k = cast(8, 64, 16, 4)\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto x = sim::randomData(M * K, 11);
    for (auto &v : x) v = std::round(v * 256) / 256; // exact in float16
    std::vector<double> a(M * G, std::nan("")), b(M * Q, std::nan("")), y(M * K, std::nan(""));
    std::vector<double> wantA(M * G, 0), wantB(M * Q, 0), wantY(M * K);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < K; ++j) wantA[i * G + j / C] = std::max(wantA[i * G + j / C], std::fabs(x[i * K + j]));
    for (int i = 0; i < M; ++i)
        for (int g = 0; g < G; ++g) wantB[i * Q + g / (G / Q)] = std::max(wantB[i * Q + g / (G / Q)], wantA[i * G + g]);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < K; ++j) wantY[i * K + j] = 1 + x[i * K + j] / wantA[i * G + j / C];
    sim::runAll(r, {{"X", &x}, {"A", &a}, {"B", &b}, {"Y", &y}});
    sim::expectNear(a, wantA, 1e-6, "A");
    sim::expectNear(b, wantB, 1e-6, "B");
    sim::expectNear(y, wantY, 1e-6, "Y");
}

} // namespace
