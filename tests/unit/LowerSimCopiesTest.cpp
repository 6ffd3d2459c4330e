/// \file
/// Layouts whose elements are held by several threads (Layout::copies, src/lower/CopiedLayouts.h): reduction
/// results along the inner, middle and outer dimension read back by nests over the source's shape, fragments
/// smaller than the block, checked for the layout chosen and for numbers on the CPU simulator against
/// references computed here (shared-memory races reported).
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::expectNear;
using tilec::simtest::randomData;

namespace {

/// Lowers `src` for sm_80 with the layouts dumped, and runs kernel `k` on the simulator.
struct Sim {
    LowerRun r;
    const ir::Kernel *k = nullptr;
    explicit Sim(const std::string &src) {
        r.dumpAfter = "inferLayouts";
        r.run(src, "t.tile", *Target::parse("sm_80"));
        k = r.kernel("k");
    }
    std::string layouts() const { return r.dump.str(); } ///< the layouts, then the IR
    void run(std::map<std::string, std::vector<double> *> tensors) {
        ASSERT_TRUE(k) << r.diags();
        simtest::simulate(*k, std::move(tensors));
    }
};

std::string shape3(int a, int b, int c) { return "(" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) + ")"; }

/// X (A, B, C) reduced along `dim` (sum) into r, then Y = X - r broadcast back along `dim` in a nest over
/// (i, j, k), Z = r: the reduction's result read by a nest of its source's layout.
void reduceThenBroadcast(int A, int B, int C, int dim, int threads, const std::string &layout) {
    const int ext[3] = {A, B, C};
    std::vector<int> o;
    for (int d = 0; d < 3; ++d)
        if (d != dim) o.push_back(ext[d]);
    const char *vars[3] = {"i", "j", "k"};
    std::string proj;
    for (int d = 0; d < 3; ++d)
        if (d != dim) proj += std::string(proj.empty() ? "" : ", ") + vars[d];
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(X: T.Tensor(" + shape3(A, B, C) + ", \"float32\"), Y: T.Tensor(" + shape3(A, B, C) +
                      ", \"float32\"), Z: T.Tensor((" + std::to_string(o[0]) + ", " + std::to_string(o[1]) + "), \"float32\")):\n"
                      "    with T.Kernel(1, threads=" + std::to_string(threads) + ") as bx:\n"
                      "        f = T.alloc_fragment(" + shape3(A, B, C) + ", \"float\")\n"
                      "        r = T.alloc_fragment((" + std::to_string(o[0]) + ", " + std::to_string(o[1]) + "), \"float\")\n"
                      "        T.copy(X, f)\n"
                      "        T.reduce_sum(f, r, dim=" + std::to_string(dim) + ")\n"
                      "        for i, j, k in T.Parallel(" + std::to_string(A) + ", " + std::to_string(B) + ", " + std::to_string(C) + "):\n"
                      "            f[i, j, k] = f[i, j, k] - r[" + proj + "]\n"
                      "        T.copy(f, Y)\n"
                      "        T.copy(r, Z)\n";
    Sim s(src);
    EXPECT_NE(s.layouts().find("fragment r: " + layout), std::string::npos) << s.layouts();
    const int n = A * B * C, no = o[0] * o[1];
    auto x = randomData(n, 11);
    std::vector<double> y(n, std::nan("")), z(no, std::nan("")), wy(n), wz(no, 0.0);
    auto outOf = [&](int i, int j, int k) {
        int c[3] = {i, j, k}, p[2], q = 0;
        for (int d = 0; d < 3; ++d)
            if (d != dim) p[q++] = c[d];
        return p[0] * o[1] + p[1];
    };
    for (int i = 0; i < A; ++i)
        for (int j = 0; j < B; ++j)
            for (int k = 0; k < C; ++k) wz[outOf(i, j, k)] += x[(i * B + j) * C + k];
    for (int i = 0; i < A; ++i)
        for (int j = 0; j < B; ++j)
            for (int k = 0; k < C; ++k) wy[(i * B + j) * C + k] = x[(i * B + j) * C + k] - wz[outOf(i, j, k)];
    s.run({{"X", &x}, {"Y", &y}, {"Z", &z}});
    expectNear(z, wz, 1e-5, "Z");
    expectNear(y, wy, 1e-5, "Y");
}

} // namespace

// sinkhorn_bwd's column sums: (32, 4, 4) over 128 threads, 4-wide; dim 1 lies in thread bits 0-1, so the
// result (32, 4) is spread over 32 virtual threads, 4-wide, each held by the 4 threads of a row.
TEST(LowerSimCopies, MiddleDimResultHeldByTheThreadsOfARow) {
    reduceThenBroadcast(32, 4, 4, 1, 128, "distributed over 32 threads, 4-wide, each held by 4 threads (copy bits 3)");
}
// Outer dimension: (4, 8, 16) over 64 threads, 4-wide, 2 rounds; dim 0 lies in thread bit 5 (the warp) and the
// round: the two warps combine through shared memory and both keep the result.
TEST(LowerSimCopies, OuterDimResultAcrossWarps) {
    reduceThenBroadcast(4, 8, 16, 0, 64, "distributed over 32 threads, 4-wide, each held by 2 threads (copy bits 32)");
}
// Inner dimension: (2, 16, 8) over 64 threads, 4-wide: a row is two threads' vectors (thread bit 0).
TEST(LowerSimCopies, InnerDimResultInLaneGroups) {
    reduceThenBroadcast(2, 16, 8, 2, 64, "distributed over 32 threads, 1-wide, each held by 2 threads (copy bits 1)");
}

// sinkhorn_fwd's shape: a (1, 4, 4) fragment over 128 threads is spread over 16 virtual threads (8 copies), so
// its row and column sums stay inside groups of lanes; alternating row and column normalizations.
TEST(LowerSimCopies, SmallFragmentAlternatingNormalizations) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((1, 4, 4), \"float32\"), Y: T.Tensor((1, 4, 4), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        f = T.alloc_fragment((1, 4, 4), \"float\")\n"
          "        rs = T.alloc_fragment((1, 4), \"float\")\n"
          "        cs = T.alloc_fragment((1, 4), \"float\")\n"
          "        T.copy(X, f)\n"
          "        for it in T.serial(3):\n"
          "            T.reduce_sum(f, rs, dim=2)\n"
          "            for i, j, k in T.Parallel(1, 4, 4):\n"
          "                f[i, j, k] = f[i, j, k] / (rs[i, j] + 1.0)\n"
          "            T.reduce_sum(f, cs, dim=1)\n"
          "            for i, j, k in T.Parallel(1, 4, 4):\n"
          "                f[i, j, k] = f[i, j, k] / (cs[i, k] + 1.0)\n"
          "        T.copy(f, Y)\n");
    EXPECT_NE(s.layouts().find("fragment f: distributed over 16 threads, 1-wide, each held by 8 threads"), std::string::npos)
        << s.layouts();
    EXPECT_NE(s.layouts().find("fragment rs: distributed over 4 threads, 1-wide, each held by 32 threads"), std::string::npos)
        << s.layouts();
    auto x = randomData(16, 12);
    std::vector<double> y(16, std::nan("")), w = x;
    for (int it = 0; it < 3; ++it) {
        for (int j = 0; j < 4; ++j) {
            double r = 0;
            for (int k = 0; k < 4; ++k) r += w[j * 4 + k];
            for (int k = 0; k < 4; ++k) w[j * 4 + k] /= r + 1.0;
        }
        for (int k = 0; k < 4; ++k) {
            double c = 0;
            for (int j = 0; j < 4; ++j) c += w[j * 4 + k];
            for (int j = 0; j < 4; ++j) w[j * 4 + k] /= c + 1.0;
        }
    }
    s.run({{"X", &x}, {"Y", &y}});
    expectNear(y, w, 1e-5, "Y");
}

// A result with copies stored to shared memory by its first holders, read back by every copy, and updated by
// a nest over its own shape (sinkhorn_bwd's `sums` round trip and `col_sum2[i, k] /= col_sum[i, k] + eps`).
TEST(LowerSimCopies, ResultThroughSharedMemoryAndItsOwnNest) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((8, 4, 4), \"float32\"), Y: T.Tensor((8, 4, 4), \"float32\")):\n"
          "    with T.Kernel(1, threads=32) as bx:\n"
          "        f = T.alloc_fragment((8, 4, 4), \"float\")\n"
          "        c = T.alloc_fragment((8, 4), \"float\")\n"
          "        d = T.alloc_fragment((8, 4), \"float\")\n"
          "        sums = T.alloc_shared((8, 4), \"float32\")\n"
          "        T.copy(X, f)\n"
          "        T.reduce_sum(f, c, dim=1)\n"
          "        T.copy(c, sums)\n"
          "        T.reduce_max(f, d, dim=1)\n"
          "        T.copy(sums, c)\n"
          "        for i, k in T.Parallel(8, 4):\n"
          "            d[i, k] = d[i, k] / c[i, k]\n"
          "        for i, j, k in T.Parallel(8, 4, 4):\n"
          "            f[i, j, k] = f[i, j, k] * d[i, k]\n"
          "        T.copy(f, Y)\n");
    EXPECT_NE(s.layouts().find("fragment c: distributed over 8 threads, 4-wide, each held by 4 threads"), std::string::npos)
        << s.layouts();
    auto x = randomData(128, 13);
    for (auto &v : x) v = std::fabs(v) + 0.1;
    std::vector<double> y(128, std::nan("")), w(128);
    for (int i = 0; i < 8; ++i)
        for (int k = 0; k < 4; ++k) {
            double sum = 0, mx = -INFINITY;
            for (int j = 0; j < 4; ++j) sum += x[(i * 4 + j) * 4 + k], mx = std::max(mx, x[(i * 4 + j) * 4 + k]);
            for (int j = 0; j < 4; ++j) w[(i * 4 + j) * 4 + k] = x[(i * 4 + j) * 4 + k] * (mx / sum);
        }
    s.run({{"X", &x}, {"Y", &y}});
    expectNear(y, w, 1e-5, "Y");
}

// A column fragment (64, 1) loaded from a tensor's column and read as c[i, 0] in a nest over (64, 32): each row's
// value is held by the 8 threads of its row (copy bits 7), loaded by every copy; the nest over the copy runs over
// its own extents, which are not the fragment's shape.
TEST(LowerSimCopies, ColumnFragmentReadByRows) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((64, 32), \"float32\"), S: T.Tensor((64, 4), \"float32\"), Y: T.Tensor((64, 32), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        f = T.alloc_fragment((64, 32), \"float32\")\n"
          "        c = T.alloc_fragment((64, 1), \"float32\")\n"
          "        T.copy(X, f)\n"
          "        T.copy(S[0, 1], c)\n"
          "        for i, j in T.Parallel(64, 32):\n"
          "            f[i, j] += 2 * c[i, 0]\n"
          "        T.copy(f, Y)\n");
    EXPECT_NE(s.layouts().find("fragment c: distributed over 16 threads, 1-wide, each held by 8 threads (copy bits 7)"),
              std::string::npos)
        << s.layouts();
    auto x = randomData(64 * 32, 14), sv = randomData(64 * 4, 15);
    std::vector<double> y(64 * 32, std::nan("")), w(64 * 32);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 32; ++j) w[i * 32 + j] = x[i * 32 + j] + 2 * sv[i * 4 + 1];
    s.run({{"X", &x}, {"S", &sv}, {"Y", &y}});
    expectNear(y, w, 1e-6, "Y");
}

// Top-k by repeated row maxima (TileLang's topk example's pattern): the row results of a (64, 32) fragment over 128
// threads are held by the 8 lanes of each row; the index of the maximum is a second reduction over a nest that
// reads the first result; both are stored by the first lane of each row.
TEST(LowerSimCopies, TopKByRepeatedRowMaxima) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((64, 32), \"float32\"), G: T.Tensor((64, 3), \"float32\"), I: T.Tensor((64, 3), \"int32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        f = T.alloc_fragment((64, 32), \"float32\")\n"
          "        at = T.alloc_fragment((64, 32), \"int32\")\n"
          "        mx = T.alloc_fragment((64,), \"float32\")\n"
          "        ix = T.alloc_fragment((64,), \"int32\")\n"
          "        T.copy(X, f)\n"
          "        for t in T.serial(3):\n"
          "            T.reduce_max(f, mx, dim=1)\n"
          "            for i, j in T.Parallel(64, 32):\n"
          "                at[i, j] = T.if_then_else(f[i, j] == mx[i], j, -1)\n"
          "            T.reduce_max(at, ix, dim=1)\n"
          "            for i, j in T.Parallel(64, 32):\n"
          "                f[i, j] = T.if_then_else(j == ix[i], -1000.0, f[i, j])\n"
          "            for i in T.Parallel(64):\n"
          "                G[i, t] = mx[i]\n"
          "                I[i, t] = ix[i]\n");
    EXPECT_NE(s.layouts().find("fragment mx: distributed over 16 threads, 1-wide, each held by 8 threads (copy bits 7)"),
              std::string::npos)
        << s.layouts();
    auto x = randomData(64 * 32, 16);
    std::vector<double> g(64 * 3, std::nan("")), ix(64 * 3, std::nan("")), wg(64 * 3), wi(64 * 3);
    for (int i = 0; i < 64; ++i) {
        std::vector<double> row(x.begin() + i * 32, x.begin() + i * 32 + 32);
        for (int t = 0; t < 3; ++t) {
            int best = 0;
            for (int j = 1; j < 32; ++j)
                if (row[j] >= row[best]) best = j;
            wg[i * 3 + t] = row[best], wi[i * 3 + t] = best;
            row[best] = -1000.0;
        }
    }
    s.run({{"X", &x}, {"G", &g}, {"I", &ix}});
    expectNear(g, wg, 0, "G");
    expectNear(ix, wi, 0, "I");
}

// A row vector r (N,) read as r[j] in a nest over (M, N): the layout fitted to the reads. Rows of 24 over 32
// threads 4-wide: a thread meets different elements of r in different rounds (its slots differ between
// threads, so the slot is computed from the index); rows of 2 over 32 threads: no copies, 2 threads hold r.
void rowVectorRead(int M, int N) {
    std::string m = std::to_string(M), n = std::to_string(N);
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((" + m + ", " + n + "), \"float32\"), A: T.Tensor((" + n + ",), \"float32\"), Y: T.Tensor((" + m +
          ", " + n + "), \"float32\")):\n"
          "    with T.Kernel(1, threads=32) as bx:\n"
          "        f = T.alloc_fragment((" + m + ", " + n + "), \"float32\")\n"
          "        r = T.alloc_fragment((" + n + ",), \"float32\")\n"
          "        T.copy(X, f)\n"
          "        T.copy(A, r)\n"
          "        for i, j in T.Parallel(" + m + ", " + n + "):\n"
          "            f[i, j] = f[i, j] * 2 + r[j]\n"
          "        T.copy(f, Y)\n");
    EXPECT_EQ(s.layouts().find("fragment r: replicated"), std::string::npos) << s.layouts();
    auto x = randomData(M * N, 17), a = randomData(N, 18);
    std::vector<double> y(M * N, std::nan("")), w(M * N);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) w[i * N + j] = x[i * N + j] * 2 + a[j];
    s.run({{"X", &x}, {"A", &a}, {"Y", &y}});
    expectNear(y, w, 1e-6, "Y");
}

TEST(LowerSimCopies, RowVectorWhoseSlotsDifferBetweenThreads) { rowVectorRead(16, 24); }
TEST(LowerSimCopies, RowVectorHeldByTwoThreads) { rowVectorRead(1, 2); }

// Stores from a nest of another layout (TileKernels' per_block_cast: `amax[(i % 8 * 64 + j) // 4] =
// T.max(amax[...], T.abs(x[i, j]))`): the (64, 64) nest runs 4-wide over 128 threads, so iteration (i, j) runs in
// thread (i % 8 * 64 + j) // 4, the element it stores. The accumulators take the layout in which each element is
// held by that thread alone (no copies), each thread folding its own iterations in; the block's maximum and sum
// are then reduced across the threads.
TEST(LowerSimCopies, ScatteredStoresOwnedByTheIterationsThread) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((64, 64), \"float32\"), A: T.Tensor((128,), \"float32\"), S: T.Tensor((1, 128), \"float32\"),\n"
          "      M: T.Tensor((1,), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        x = T.alloc_fragment((64, 64), \"float32\")\n"
          "        amax = T.alloc_fragment((128,), \"float32\")\n"
          "        sums = T.alloc_fragment((1, 128), \"float32\")\n"
          "        m = T.alloc_fragment((1,), \"float32\")\n"
          "        T.copy(X, x)\n"
          "        T.clear(amax)\n"
          "        T.clear(sums)\n"
          "        for i, j in T.Parallel(64, 64):\n"
          "            amax[(i % 8 * 64 + j) // 4] = T.max(amax[(i % 8 * 64 + j) // 4], T.abs(x[i, j]))\n"
          "            sums[0, (i * 64 + j) % 512 // 4] += x[i, j]\n"
          "        T.reduce_max(amax, m, dim=0)\n"
          "        T.copy(amax, A)\n"
          "        T.copy(sums, S)\n"
          "        T.copy(m, M)\n");
    EXPECT_NE(s.layouts().find("fragment amax: distributed over 128 threads, 1-wide"), std::string::npos) << s.layouts();
    EXPECT_NE(s.layouts().find("fragment sums: distributed over 128 threads, 1-wide"), std::string::npos) << s.layouts();
    auto x = randomData(64 * 64, 16);
    std::vector<double> a(128, std::nan("")), sm(128, std::nan("")), m(1, std::nan("")), wa(128, 0.0), ws(128, 0.0),
        wm(1, 0.0);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j) {
            int q = (i % 8 * 64 + j) / 4;
            wa[q] = std::max(wa[q], std::fabs(x[i * 64 + j]));
            ws[q] += x[i * 64 + j];
            wm[0] = std::max(wm[0], std::fabs(x[i * 64 + j]));
        }
    s.run({{"X", &x}, {"A", &a}, {"S", &sm}, {"M", &m}});
    expectNear(a, wa, 1e-5, "A");
    expectNear(sm, ws, 1e-4, "S");
    expectNear(m, wm, 1e-5, "M");
}

// Two threads storing one element (`acc[(i * 64 + j) % 128]`: iterations 128 apart run in different threads)
// leave no layout in which one thread holds each stored element: the copy in every thread stays, an error.
TEST(LowerSimCopies, ScatteredStoresOfSeveralThreadsStayAnError) {
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((64, 64), \"float32\"), A: T.Tensor((128,), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        x = T.alloc_fragment((64, 64), \"float32\")\n"
          "        acc = T.alloc_fragment((128,), \"float32\")\n"
          "        T.copy(X, x)\n"
          "        T.clear(acc)\n"
          "        for i, j in T.Parallel(64, 64):\n"
          "            acc[(i * 64 + j) % 128] += x[i, j]\n"
          "        T.copy(acc, A)\n",
          "t.tile", *Target::parse("sm_80"));
    EXPECT_NE(r.diags().find("fragment 'acc' has a copy in every thread"), std::string::npos) << r.diags();
}

// TileKernels' per-token cast: the absolute maxima of groups of 128 columns reduced from a T.reshape view (M, G,
// 128) of the (M, G * 128) input, turned into a scale per group by a nest over (M, G) that also stores it, and read
// back at `s[i, j // 128]` by the nest over the input. The reduction's source is the view: its layout over the
// view's shape says which threads hold each group (the 32 lanes of a warp here), so the scales take that layout
// with copies (4 registers, read at a constant slot), not a copy of all 16 in every thread read at a run-time
// index (which the CUDA compiler puts in local memory). Run with any sizes: rows past M are masked.
TEST(LowerSimCopies, GroupScalesOfAReshapedReductionHeldByTheirGroupsThreads) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((8, 512), \"float32\"), Y: T.Tensor((8, 512), \"float32\"), S: T.Tensor((8, 4), \"float32\")):\n"
          "    with T.Kernel(2, threads=128) as bx:\n"
          "        x = T.alloc_fragment((4, 512), \"float32\")\n"
          "        amax = T.alloc_fragment((4, 4), \"float32\")\n"
          "        s = T.alloc_fragment((4, 4), \"float32\")\n"
          "        T.copy(X[bx * 4, 0], x)\n"
          "        xr = T.reshape(x, [4, 4, 128])\n"
          "        T.reduce_absmax(xr, amax, dim=2)\n"
          "        for i, j in T.Parallel(4, 4):\n"
          "            a = T.max(amax[i, j], 1e-4)\n"
          "            S[bx * 4 + i, j] = a / 448.0\n"
          "            s[i, j] = 448.0 / a\n"
          "        for i, j in T.Parallel(4, 512):\n"
          "            Y[bx * 4 + i, j] = x[i, j] * s[i, j // 128]\n");
    EXPECT_NE(s.layouts().find("fragment s: distributed over 4 threads, 1-wide, each held by 32 threads (copy bits 31), 4 slots per thread"),
              std::string::npos)
        << s.layouts();
    EXPECT_NE(s.layouts().find("fragment amax: distributed over 4 threads, 1-wide, each held by 32 threads"), std::string::npos);
    auto x = randomData(8 * 512, 29);
    std::vector<double> y(8 * 512, std::nan("")), sc(32, std::nan("")), wy(8 * 512), ws(32);
    for (int r = 0; r < 8; ++r)
        for (int g = 0; g < 4; ++g) {
            double a = 0;
            for (int c = 0; c < 128; ++c) a = std::max(a, std::fabs(x[r * 512 + g * 128 + c]));
            a = std::max(a, (double)1e-4f);
            ws[r * 4 + g] = (float)(a / 448.0);
            float inv = (float)(448.0 / a);
            for (int c = 0; c < 128; ++c) wy[r * 512 + g * 128 + c] = (float)x[r * 512 + g * 128 + c] * inv;
        }
    s.run({{"X", &x}, {"Y", &y}, {"S", &sc}});
    expectNear(y, wy, 1e-5, "Y");
    expectNear(sc, ws, 1e-7, "S");
}

namespace {

// Over 96 threads (not a power of two: no layout with copies) the row maxima and the row and column sums of a
// (4, 4) fragment stay whole in every thread, and the nests read them at `tx / 4` and `tx % 4`: selectRegisterSlots
// makes each read a choice among the 4 slots those indices name. The numbers are a softmax then nine rounds of
// row and column normalization (TileKernels' pre_big_fuse), against a reference in float.
TEST(LowerSimCopies, ThreadIndexedReadsOfWholeFragmentsChooseAmongConstantSlots) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((4, 4), \"float32\"), Y: T.Tensor((4, 4), \"float32\")):\n"
          "    with T.Kernel(1, threads=96) as bx:\n"
          "        cm = T.alloc_fragment((4, 4), \"float32\")\n"
          "        row_max = T.alloc_fragment(4, \"float32\")\n"
          "        row_sum = T.alloc_fragment(4, \"float32\")\n"
          "        col_sum = T.alloc_fragment(4, \"float32\")\n"
          "        T.copy(X, cm)\n"
          "        T.reduce_max(cm, row_max, dim=1)\n"
          "        for j, k in T.Parallel(4, 4):\n"
          "            cm[j, k] = T.exp(cm[j, k] - row_max[j])\n"
          "        for _ in T.serial(9):\n"
          "            T.reduce_sum(cm, row_sum, dim=1)\n"
          "            for j, k in T.Parallel(4, 4):\n"
          "                cm[j, k] = cm[j, k] / (row_sum[j] + 1e-6)\n"
          "            T.reduce_sum(cm, col_sum, dim=0)\n"
          "            for j, k in T.Parallel(4, 4):\n"
          "                cm[j, k] = cm[j, k] / (col_sum[k] + 1e-6)\n"
          "        T.copy(cm, Y)\n");
    EXPECT_NE(s.layouts().find("fragment row_max: replicated, 4 slots per thread"), std::string::npos) << s.layouts();
    auto x = randomData(16, 41);
    std::vector<double> y(16, std::nan("")), w(16);
    float c[16];
    for (int j = 0; j < 4; ++j) {
        float m = -INFINITY;
        for (int k = 0; k < 4; ++k) m = std::max(m, (float)x[j * 4 + k]);
        for (int k = 0; k < 4; ++k) c[j * 4 + k] = std::exp((float)x[j * 4 + k] - m);
    }
    for (int it = 0; it < 9; ++it) {
        for (int j = 0; j < 4; ++j) {
            float r = 0;
            for (int k = 0; k < 4; ++k) r += c[j * 4 + k];
            for (int k = 0; k < 4; ++k) c[j * 4 + k] /= r + 1e-6f;
        }
        for (int k = 0; k < 4; ++k) {
            float r = 0;
            for (int j = 0; j < 4; ++j) r += c[j * 4 + k];
            for (int j = 0; j < 4; ++j) c[j * 4 + k] /= r + 1e-6f;
        }
    }
    for (int e = 0; e < 16; ++e) w[e] = c[e];
    s.run({{"X", &x}, {"Y", &y}});
    expectNear(y, w, 1e-5, "Y");
}

} // namespace
