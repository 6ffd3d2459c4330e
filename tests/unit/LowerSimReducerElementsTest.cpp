/// \file
/// T.alloc_reducer elements picked by indices that no variable of the T.Parallel nest appears in (TileKernels'
/// mhc_post_bwd: `da[i, o] += b[i, h] * dx[o, h]` in a nest over h inside T.serial loops over i and o, beside an
/// ordinary update of a fragment slice), run on the CPU simulator against a reference: accumulated by each thread
/// in registers across the loops and combined at T.finalize_reducer, or reduced at each nest when the reducer is
/// read before it (src/lower/LowerReducers.cpp, kUniform).
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace {

namespace sim = tilec::simtest;

// mhc_post_bwd's shape at a small hidden size: two column tiles of a pipelined loop, four serial rows each.
const char *kPostBwd = "import tilelang.language as T\n"
                       "@T.prim_func\n"
                       "def post_bwd(dx: T.Tensor((3, 4, 128), \"float32\"), a: T.Tensor((3, 4, 4), \"float32\"),\n"
                       "             b: T.Tensor((3, 4, 128), \"float32\"), d: T.Tensor((3, 128), \"float32\"),\n"
                       "             da: T.Tensor((3, 4, 4), \"float32\"), db: T.Tensor((3, 4, 128), \"float32\"),\n"
                       "             dc: T.Tensor((3, 4), \"float32\")):\n"
                       "    with T.Kernel(3, threads=32) as pid:\n"
                       "        dx_local = T.alloc_fragment((4, 64), \"float32\")\n"
                       "        b_local = T.alloc_fragment((4, 64), \"float32\")\n"
                       "        db_local = T.alloc_fragment((4, 64), \"float32\")\n"
                       "        d_local = T.alloc_fragment(64, \"float32\")\n"
                       "        a_local = T.alloc_fragment((4, 4), \"float32\")\n"
                       "        T.copy(a[pid, 0, 0], a_local)\n"
                       "        da_r = T.alloc_reducer((4, 4), \"float32\", replication='all')\n"
                       "        dc_r = T.alloc_reducer(4, \"float32\", op=\"max\", replication='all')\n"
                       "        T.clear(da_r)\n"
                       "        T.fill(dc_r, -T.infinity(\"float32\"))\n"
                       "        for h0 in T.Pipelined(2, num_stages=2):\n"
                       "            T.copy(dx[pid, 0, h0 * 64], dx_local)\n"
                       "            T.copy(b[pid, 0, h0 * 64], b_local)\n"
                       "            T.copy(d[pid, h0 * 64], d_local)\n"
                       "            T.clear(db_local)\n"
                       "            for i in T.serial(4):\n"
                       "                for o in T.serial(4):\n"
                       "                    for h in T.Parallel(64):\n"
                       "                        db_local[i, h] += a_local[i, o] * dx_local[o, h]\n"
                       "                        da_r[i, o] += b_local[i, h] * dx_local[o, h]\n"
                       "            for i in T.serial(4):\n"
                       "                for h in T.Parallel(64):\n"
                       "                    dc_r[i] = T.max(dc_r[i], d_local[h] * dx_local[i, h])\n"
                       "            T.copy(db_local, db[pid, 0, h0 * 64])\n"
                       "        T.finalize_reducer(da_r)\n"
                       "        T.finalize_reducer(dc_r)\n"
                       "        T.copy(da_r, da[pid, 0, 0])\n"
                       "        T.copy(dc_r, dc[pid, 0])\n";

TEST(LowerSimReducerElements, AccumulatedAcrossSerialLoops) {
    tilec::lowertest::LowerRun r;
    r.dumpAfter = "lowerReducers";
    r.run(kPostBwd, "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    // Each thread accumulates in registers; the threads are combined once, at T.finalize_reducer.
    EXPECT_NE(r.dump.str().find("da_r_acc[i, o, h] = da_r_acc[i, o, h] + "), std::string::npos) << r.dump.str();
    EXPECT_EQ(r.dump.str().find("da_r_part"), std::string::npos) << r.dump.str();
    auto dx = sim::randomData(3 * 4 * 128, 1), a = sim::randomData(3 * 16, 2), b = sim::randomData(3 * 4 * 128, 3),
         d = sim::randomData(3 * 128, 4);
    std::vector<double> da(48, std::nan("")), db(3 * 512, std::nan("")), dc(12, std::nan(""));
    std::vector<double> wda(48, 0), wdb(3 * 512, 0), wdc(12, -1e30);
    for (int n = 0; n < 3; ++n)
        for (int i = 0; i < 4; ++i)
            for (int h = 0; h < 128; ++h) {
                for (int o = 0; o < 4; ++o) {
                    wdb[(n * 4 + i) * 128 + h] += a[n * 16 + i * 4 + o] * dx[(n * 4 + o) * 128 + h];
                    wda[n * 16 + i * 4 + o] += b[(n * 4 + i) * 128 + h] * dx[(n * 4 + o) * 128 + h];
                }
                wdc[n * 4 + i] = std::max(wdc[n * 4 + i], (double)((float)d[n * 128 + h] * (float)dx[(n * 4 + i) * 128 + h]));
            }
    sim::simulate(*r.lowered->kernels[0], {{"dx", &dx}, {"a", &a}, {"b", &b}, {"d", &d}, {"da", &da}, {"db", &db}, {"dc", &dc}});
    sim::expectNear(da, wda, 1e-4, "da");
    sim::expectNear(db, wdb, 1e-4, "db");
    sim::expectNear(dc, wdc, 0, "dc");
}

// Read before T.finalize_reducer: each nest's contributions are reduced at once into the element its indices pick,
// so every read sees the value so far (here after each serial row, under an `if` that skips odd columns).
TEST(LowerSimReducerElements, ReducedAtEachNestWhenReadBefore) {
    tilec::lowertest::LowerRun r;
    r.dumpAfter = "lowerReducers";
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((2, 6, 96), \"float32\"), P: T.Tensor((2, 6, 3), \"float32\"),\n"
          "      Y: T.Tensor((2, 3), \"float32\")):\n"
          "    with T.Kernel(2, threads=64) as bx:\n"
          "        xf = T.alloc_fragment((6, 96), \"float32\")\n"
          "        T.copy(X[bx, 0, 0], xf)\n"
          "        s = T.alloc_reducer(3, \"float32\")\n"
          "        T.clear(s)\n"
          "        for i in T.serial(6):\n"
          "            for h in T.Parallel(96):\n"
          "                if h % 2 == 0:\n"
          "                    s[i // 2] += xf[i, h]\n"
          "            for j in T.Parallel(3):\n"
          "                P[bx, i, j] = s[j]\n"
          "        T.finalize_reducer(s)\n"
          "        T.copy(s, Y[bx, 0])\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    EXPECT_EQ(r.dump.str().find("s_acc"), std::string::npos) << r.dump.str();
    auto x = sim::randomData(2 * 6 * 96, 5);
    std::vector<double> p(36, std::nan("")), y(6, std::nan("")), wp(36), wy(6, 0);
    for (int n = 0; n < 2; ++n) {
        std::vector<double> acc(3, 0);
        for (int i = 0; i < 6; ++i) {
            for (int h = 0; h < 96; h += 2) acc[i / 2] += x[(n * 6 + i) * 96 + h];
            for (int j = 0; j < 3; ++j) wp[(n * 6 + i) * 3 + j] = acc[j];
        }
        for (int j = 0; j < 3; ++j) wy[n * 3 + j] = acc[j];
    }
    sim::simulate(*r.lowered->kernels[0], {{"X", &x}, {"P", &p}, {"Y", &y}});
    sim::expectNear(p, wp, 1e-4, "P");
    sim::expectNear(y, wy, 1e-4, "Y");
}

// The accumulator's store (`acc[s, h]` in a nest over h) is a slice store, which keeps its nest spread over the
// threads; a slice store into a fragment that every thread holds whole (read below by a subset of a nest's
// variables) makes its nest run whole in every thread instead, each filling its own copy.
TEST(LowerSimReducerElements, SliceStoreIntoACopyInEveryThread) {
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(A: T.Tensor((4, 8), \"float32\"), Z: T.Tensor((4,), \"float32\")):\n"
          "    with T.Kernel(1, threads=32) as bx:\n"
          "        f = T.alloc_fragment((4, 8), \"float32\")\n"
          "        for s in T.serial(4):\n"
          "            for j in T.Parallel(8):\n"
          "                f[s, j] = A[s, j] * 2.0\n"
          "        for i in T.Parallel(4):\n"
          "            Z[i] = f[i, 0] + f[i, 7]\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto a = sim::randomData(32, 9);
    std::vector<double> z(4, std::nan("")), wz(4);
    for (int i = 0; i < 4; ++i) wz[i] = (double)((float)a[i * 8] * 2.0f + (float)a[i * 8 + 7] * 2.0f);
    sim::simulate(*r.lowered->kernels[0], {{"A", &a}, {"Z", &z}});
    sim::expectNear(z, wz, 1e-6, "Z");
}

} // namespace
