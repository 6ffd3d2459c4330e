/// \file
/// The lowering passes checked for numbers: small instances of the example kernels (and of reductions
/// along every dimension, with odd extents) lowered and run on the CPU simulator (src/sim/Simulator.h)
/// against references computed here, with shared-memory races reported.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;
using tilec::simtest::expectNear;
using tilec::simtest::randomData;
using tilec::simtest::withExport;

namespace {

struct Sim {
    LowerRun r;
    const ir::Kernel *k = nullptr;
    // The portable path (cp.async, mma.sync); the Hopper schedule is simulated by LowerSimHopperTest.cpp.
    Sim(const std::string &src, const std::string &kernel) {
        r.run(src, "t.tile", *Target::parse("sm_80"));
        k = r.kernel(kernel);
    }
    void run(std::map<std::string, std::vector<double> *> tensors, std::map<std::string, double> scalars = {}) {
        ASSERT_TRUE(k) << r.diags();
        Simulator s(*k, std::move(tensors), std::move(scalars));
        try {
            s.run();
        } catch (const simtest::SimError &e) {
            FAIL() << e.what();
        }
        for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    }
};

TEST(LowerSim, ElementwiseAddOddShape) {
    const int M = 70, N = 300;
    Sim s(withExport("elementwise_add.tile", "k = add(70, 300, dtype=\"float32\")"), "k");
    auto a = randomData(M * N, 1), b = randomData(M * N, 2);
    std::vector<double> c(M * N, std::nan("")), want(M * N);
    for (int i = 0; i < M * N; ++i) want[i] = (double)(float)(a[i] + b[i]);
    s.run({{"A", &a}, {"B", &b}, {"C", &c}});
    expectNear(c, want, 0, "C");
}

/// Issue 23: a row reduction over a run-time number of columns, 0 among them (tests/gpu/zero_dims.tile): no
/// trips of its pipelined loop, each row's sum 0 and max -inf (the identities T.fill gave them).
TEST(LowerSim, RowReductionOverZeroColumns) {
    const int M = 8;
    Sim s(withExport("zero_dims.tile", "k = row_reduce(8)", "tests/gpu"), "k");
    for (int n : {0, 256}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        auto a = randomData((size_t)M * n, 8);
        std::vector<double> sum(M, std::nan("")), mx(M, std::nan("")), wantSum(M, 0), wantMax(M, -INFINITY);
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < n; ++j) wantSum[i] += a[(size_t)i * n + j], wantMax[i] = std::max(wantMax[i], a[(size_t)i * n + j]);
        s.run({{"A", &a}, {"S", &sum}, {"X", &mx}}, {{"n", (double)n}});
        expectNear(sum, wantSum, 1e-5, "S");
        EXPECT_EQ(mx, wantMax);
    }
}

TEST(LowerSim, RmsNorm) {
    const int M = 6, N = 512;
    Sim s(withExport("rms_norm.tile", "k = rms_norm(6, 512, dtype=\"float32\")"), "k");
    auto x = randomData(M * N, 3), w = randomData(N, 4);
    std::vector<double> y(M * N, std::nan("")), want(M * N);
    for (int i = 0; i < M; ++i) {
        double ss = 0;
        for (int j = 0; j < N; ++j) ss += x[i * N + j] * x[i * N + j];
        double r = 1 / std::sqrt(ss / N + 1e-6);
        for (int j = 0; j < N; ++j) want[i * N + j] = x[i * N + j] * r * w[j];
    }
    s.run({{"X", &x}, {"W", &w}, {"Y", &y}});
    expectNear(y, want, 1e-5, "Y");
}

void softmaxCase(int M, int N, int threads) {
    Sim s(withExport("softmax.tile", "k = softmax(" + std::to_string(M) + ", " + std::to_string(N) + ", threads=" +
                                         std::to_string(threads) + ", dtype=\"float32\")"),
          "k");
    auto x = randomData((size_t)M * N, 5, -8, 8);
    std::vector<double> y((size_t)M * N, std::nan("")), want((size_t)M * N);
    for (int i = 0; i < M; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < N; ++j) mx = std::max(mx, x[i * N + j]);
        for (int j = 0; j < N; ++j) sum += std::exp(x[i * N + j] - mx);
        for (int j = 0; j < N; ++j) want[i * N + j] = std::exp(x[i * N + j] - mx) / sum;
    }
    s.run({{"X", &x}, {"Y", &y}});
    expectNear(y, want, 1e-5, "Y");
}

TEST(LowerSim, SoftmaxRowsOf1000) { softmaxCase(2, 1000, 128); }
TEST(LowerSim, SoftmaxRowsOf2048) { softmaxCase(2, 2048, 256); }
TEST(LowerSim, SoftmaxRowsOf96) { softmaxCase(2, 96, 64); }

TEST(LowerSim, ColumnSumWithAtomics) {
    const int M = 100, N = 130;
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((100, 130), \"float32\"), S: T.Tensor((130,), \"float32\")):\n"
          "    with T.Kernel(2, 2, threads=128) as (bx, by):\n"
          "        tile = T.alloc_fragment((64, 128), \"float\")\n"
          "        part = T.alloc_fragment((128,), \"float\")\n"
          "        T.copy(X[by * 64, bx * 128], tile)\n"
          "        T.reduce_sum(tile, part, dim=0)\n"
          "        T.atomic_add(S[bx * 128], part)\n",
          "k");
    auto x = randomData(M * N, 6);
    std::vector<double> sum(N, 0.0), want(N, 0.0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) want[j] += x[i * N + j];
    s.run({{"X", &x}, {"S", &sum}});
    expectNear(sum, want, 1e-4, "S");
}

/// A fragment of shape (A, B, C) reduced along `dim` with kind `op` (clear=False onto an initial value).
void reduceCase(int A, int B, int C, int dim, const std::string &op, bool clear, int threads) {
    std::vector<int> shape{A, B, C}, out;
    for (int d = 0; d < 3; ++d)
        if (d != dim) out.push_back(shape[d]);
    int n = A * B * C, no = out[0] * out[1];
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(X: T.Tensor((" + std::to_string(A) + ", " + std::to_string(B) + ", " + std::to_string(C) +
                      "), \"float32\"), Y: T.Tensor((" + std::to_string(out[0]) + ", " + std::to_string(out[1]) +
                      "), \"float32\")):\n"
                      "    with T.Kernel(1, threads=" + std::to_string(threads) + ") as bx:\n"
                      "        f = T.alloc_fragment((" + std::to_string(A) + ", " + std::to_string(B) + ", " +
                      std::to_string(C) + "), \"float\")\n"
                      "        r = T.alloc_fragment((" + std::to_string(out[0]) + ", " + std::to_string(out[1]) + "), \"float\")\n"
                      "        T.copy(X, f)\n"
                      "        T.fill(r, 0.5)\n"
                      "        T.reduce_" + op + "(f, r, dim=" + std::to_string(dim) + ", clear=" + (clear ? "True" : "False") + ")\n"
                      "        T.copy(r, Y)\n";
    Sim s(src, "k");
    auto x = randomData(n, 7);
    std::vector<double> y(no, std::nan("")), want(no);
    for (int o = 0; o < no; ++o) {
        double acc = op == "max" ? -INFINITY : op == "min" ? INFINITY : 0;
        for (int j = 0; j < shape[dim]; ++j) {
            int c[3], oo[2] = {o / out[1], o % out[1]};
            for (int d = 0, k = 0; d < 3; ++d) c[d] = d == dim ? j : oo[k++];
            double v = x[(c[0] * B + c[1]) * C + c[2]];
            if (op == "max") acc = std::max(acc, v);
            else if (op == "min") acc = std::min(acc, v);
            else if (op == "abssum") acc += std::fabs(v);
            else if (op == "absmax") acc = std::max(acc, std::fabs(v));
            else acc += v;
        }
        if (!clear) acc = op == "max" || op == "absmax" ? std::max(acc, 0.5) : op == "min" ? std::min(acc, 0.5) : acc + 0.5;
        want[o] = acc;
    }
    s.run({{"X", &x}, {"Y", &y}});
    expectNear(y, want, 1e-5, "Y");
}

TEST(LowerSim, ReduceInnermostDim) { reduceCase(2, 4, 64, 2, "sum", true, 128); }
TEST(LowerSim, ReduceMiddleDim) { reduceCase(2, 8, 16, 1, "max", true, 64); }
TEST(LowerSim, ReduceOutermostDim) { reduceCase(8, 4, 16, 0, "min", false, 128); }
TEST(LowerSim, ReduceOddExtents) { reduceCase(3, 5, 7, 1, "abssum", false, 32); }
TEST(LowerSim, ReduceAbsMaxRowsInLaneGroups) { reduceCase(1, 16, 32, 2, "absmax", true, 128); }
TEST(LowerSim, ReduceNonPowerOfTwoThreads) { reduceCase(1, 2, 960, 2, "sum", false, 96); }

TEST(LowerSim, ReplicatedSourceReducesInEveryThread) {
    // f is read by a subset of a loop's variables, so every thread holds all of it and reduces alone.
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((4, 8), \"float32\"), Y: T.Tensor((4,), \"float32\"), Z: T.Tensor((4,), \"float32\")):\n"
          "    with T.Kernel(1, threads=32) as bx:\n"
          "        f = T.alloc_fragment((4, 8), \"float\")\n"
          "        r = T.alloc_fragment((4,), \"float\")\n"
          "        T.copy(X, f)\n"
          "        for i in T.Parallel(4):\n"
          "            Z[i] = f[i, 0]\n"
          "        T.reduce_sum(f, r, dim=1)\n"
          "        T.copy(r, Y)\n",
          "k");
    auto x = randomData(32, 8);
    std::vector<double> y(4, std::nan("")), z(4, std::nan("")), wy(4, 0), wz(4);
    for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 8; ++j) wy[i] += x[i * 8 + j];
        wz[i] = x[i * 8];
    }
    s.run({{"X", &x}, {"Y", &y}, {"Z", &z}});
    expectNear(y, wy, 1e-6, "Y");
    expectNear(z, wz, 0, "Z");
}

// T.alloc_reducer (TileLang's gemv_alloc_reducer pattern): T.Parallel iterations accumulate y[i] over a
// pipelined loop of column tiles (sum) and the row maxima (max); an odd number of column tiles.
TEST(LowerSim, ReducerAccumulatesOverTiles) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(A: T.Tensor((64, 96), \"float32\"), X: T.Tensor((96,), \"float32\"), Y: T.Tensor((64,), \"float32\"),\n"
          "      Z: T.Tensor((64,), \"float32\")):\n"
          "    with T.Kernel(2, threads=128) as bm:\n"
          "        y = T.alloc_reducer(32, \"float\", replication=\"all\")\n"
          "        z = T.alloc_reducer((32,), \"float\", op=\"max\")\n"
          "        T.clear(y)\n"
          "        T.fill(z, -1e30)\n"
          "        for bn in T.Pipelined(3, num_stages=2):\n"
          "            a = T.alloc_shared((32, 32), \"float32\")\n"
          "            T.copy(A[bm * 32, bn * 32], a)\n"
          "            af = T.alloc_fragment((32, 32), \"float32\")\n"
          "            T.copy(a, af)\n"
          "            xf = T.alloc_fragment(32, \"float32\")\n"
          "            T.copy(X[bn * 32], xf)\n"
          "            for i, j in T.Parallel(32, 32):\n"
          "                y[i] += af[i, j] * xf[j]\n"
          "            for i, j in T.Parallel(32, 32):\n"
          "                z[i] = T.max(z[i], af[i, j])\n"
          "        T.finalize_reducer(y)\n"
          "        T.finalize_reducer(z)\n"
          "        T.copy(y, Y[bm * 32])\n"
          "        T.copy(z, Z[bm * 32])\n",
          "k");
    auto a = randomData(64 * 96, 11), x = randomData(96, 12);
    std::vector<double> y(64, std::nan("")), z(64, std::nan("")), wy(64, 0), wz(64, -1e30);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 96; ++j) wy[i] += a[i * 96 + j] * x[j], wz[i] = std::max(wz[i], a[i * 96 + j]);
    s.run({{"A", &a}, {"X", &x}, {"Y", &y}, {"Z", &z}});
    expectNear(y, wy, 1e-5, "Y");
    expectNear(z, wz, 0, "Z");
}

// A reducer finalized inside an outer loop: each thread's accumulator starts again from the identity after
// every T.finalize_reducer (two row blocks per block; the second's sum must not include the first's), and a
// max reducer whose values are all negative (the identity is -inf, not 0).
TEST(LowerSim, ReducerFinalizedInALoopStartsAgain) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(A: T.Tensor((128, 96), \"float32\"), Y: T.Tensor((128,), \"float32\"), Z: T.Tensor((128,), \"float32\")):\n"
          "    with T.Kernel(2, threads=128) as bm:\n"
          "        y = T.alloc_reducer(32, \"float\", replication=\"all\")\n"
          "        z = T.alloc_reducer(32, \"float\", op=\"max\")\n"
          "        for rb in T.serial(2):\n"
          "            T.clear(y)\n"
          "            T.fill(z, -1e30)\n"
          "            for bn in T.Pipelined(3, num_stages=2):\n"
          "                a = T.alloc_shared((32, 32), \"float32\")\n"
          "                T.copy(A[bm * 64 + rb * 32, bn * 32], a)\n"
          "                af = T.alloc_fragment((32, 32), \"float32\")\n"
          "                T.copy(a, af)\n"
          "                for i, j in T.Parallel(32, 32):\n"
          "                    y[i] += af[i, j]\n"
          "                for i, j in T.Parallel(32, 32):\n"
          "                    z[i] = T.max(z[i], af[i, j] - 10.0)\n"
          "            T.finalize_reducer(y)\n"
          "            T.finalize_reducer(z)\n"
          "            T.copy(y, Y[bm * 64 + rb * 32])\n"
          "            T.copy(z, Z[bm * 64 + rb * 32])\n",
          "k");
    auto a = randomData(128 * 96, 13);
    std::vector<double> y(128, std::nan("")), z(128, std::nan("")), wy(128, 0), wz(128, -1e30);
    for (int i = 0; i < 128; ++i)
        for (int j = 0; j < 96; ++j) wy[i] += a[i * 96 + j], wz[i] = std::max(wz[i], a[i * 96 + j] - 10.0);
    s.run({{"A", &a}, {"Y", &y}, {"Z", &z}});
    expectNear(y, wy, 1e-5, "Y");
    expectNear(z, wz, 1e-6, "Z");
}

// TileLang's split-K GEMM (num_stages=0): two synchronous tile transfers per iteration sharing one wait, and
// the accumulator's column pairs added into C by vector atomics (code generation: float2 on sm_90); the
// splits of K all land in C.
TEST(LowerSim, SplitKAtomicPairs) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(A: T.Tensor((64, 128), \"float32\"), B: T.Tensor((128, 64), \"float32\"), C: T.Tensor((64, 64), \"float32\")):\n"
          "    with T.Kernel(2, 2, 2, threads=128) as (bx, by, bz):\n"
          "        As = T.alloc_shared((32, 32), \"float32\")\n"
          "        Bs = T.alloc_shared((32, 32), \"float32\")\n"
          "        acc = T.alloc_fragment((32, 32), \"float32\")\n"
          "        T.clear(acc)\n"
          "        for ko in T.Pipelined(2, num_stages=0):\n"
          "            T.copy(A[by * 32, bz * 64 + ko * 32], As)\n"
          "            T.copy(B[bz * 64 + ko * 32, bx * 32], Bs)\n"
          "            T.gemm(As, Bs, acc)\n"
          "        for i, j in T.Parallel(32, 32):\n"
          "            T.atomic_add(C[by * 32 + i, bx * 32 + j], acc[i, j])\n",
          "k");
    auto a = randomData(64 * 128, 17), b = randomData(128 * 64, 18);
    std::vector<double> c(64 * 64, 0.0), want(64 * 64, 0.0);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j)
            for (int k = 0; k < 128; ++k) want[i * 64 + j] += a[i * 128 + k] * b[k * 64 + j];
    s.run({{"A", &a}, {"B", &b}, {"C", &c}});
    expectNear(c, want, 1e-3, "C");
}

TEST(LowerSim, ColumnSumExampleAccumulatesOverRowTiles) {
    const int M = 70, N = 300;
    Sim s(withExport("col_sum.tile", "k = col_sum(70, 300, dtype=\"float32\")"), "k");
    auto a = randomData(M * N, 11);
    std::vector<double> sum(N, std::nan("")), want(N, 0.0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) want[j] += a[i * N + j];
    s.run({{"A", &a}, {"S", &sum}});
    expectNear(sum, want, 1e-4, "S");
}

TEST(LowerSim, HistogramExample) {
    const int N = 3001;
    Sim s(withExport("histogram.tile", "k = histogram(3001, bins=100)"), "k");
    std::vector<double> x(N), h(100, 0.0), want(100, 0.0);
    for (int i = 0; i < N; ++i) x[i] = (i * 37) % 100, want[(int)x[i]] += 1;
    s.run({{"X", &x}, {"H", &h}});
    expectNear(h, want, 0, "H");
}

TEST(LowerSim, ReductionBetweenSharedBuffers) {
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((8, 64), \"float32\"), Y: T.Tensor((8,), \"float32\")):\n"
          "    with T.Kernel(1, threads=64) as bx:\n"
          "        a = T.alloc_shared((8, 64), \"float32\")\n"
          "        m = T.alloc_shared((8,), \"float32\")\n"
          "        T.copy(X, a)\n"
          "        T.fill(m, 1.0)\n"
          "        T.reduce_max(a, m, dim=1, clear=False)\n"
          "        T.copy(m, Y)\n",
          "k");
    auto x = randomData(8 * 64, 10);
    std::vector<double> y(8, std::nan("")), want(8, 1.0);
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 64; ++j) want[i] = std::max(want[i], x[i * 64 + j]);
    s.run({{"X", &x}, {"Y", &y}});
    expectNear(y, want, 0, "Y");
}

TEST(LowerSim, SerialLoopReusingSharedMemory) {
    // A tile is staged in shared memory on every iteration and read transposed by other threads: the
    // barriers before the reads and before the next iteration's writes are checked by the race detector.
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((4, 32, 32), \"float32\"), Y: T.Tensor((32, 32), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        tile = T.alloc_shared((32, 32), \"float32\")\n"
          "        acc = T.alloc_fragment((32, 32), \"float\")\n"
          "        T.clear(acc)\n"
          "        for k in T.serial(4):\n"
          "            T.copy(X[k, 0, 0], tile)\n"
          "            for i, j in T.Parallel(32, 32):\n"
          "                acc[i, j] += tile[j, i] * (k + 1)\n"
          "        T.copy(acc, Y)\n",
          "k");
    auto x = randomData(4 * 32 * 32, 9);
    std::vector<double> y(32 * 32, std::nan("")), want(32 * 32, 0);
    for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 32; ++i)
            for (int j = 0; j < 32; ++j) want[i * 32 + j] += x[(k * 32 + j) * 32 + i] * (k + 1);
    s.run({{"X", &x}, {"Y", &y}});
    expectNear(y, want, 1e-5, "Y");
}

TEST(LowerSim, ScalarAtomicsLocalsAndThreadIndex) {
    // A histogram: T.atomic_add of one element, a run-time if, T.alloc_var, T.get_thread_binding.
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((1000,), \"int32\"), H: T.Tensor((16,), \"int32\"), L: T.Tensor((64,), \"int32\")):\n"
          "    with T.Kernel(4, threads=64) as bx:\n"
          "        n = T.alloc_var(\"int32\")\n"
          "        tx = T.get_thread_binding()\n"
          "        n = 0\n"
          "        for i in T.Parallel(256):\n"
          "            if bx * 256 + i < 1000:\n"
          "                T.atomic_add(H[X[bx * 256 + i] % 16], 1)\n"
          "        for t in T.serial(4):\n"
          "            n = n + t\n"
          "        if bx == 0:\n"
          "            L[tx] = n + tx\n",
          "k");
    std::vector<double> x(1000), h(16, 0), l(64, std::nan("")), wh(16, 0), wl(64);
    for (int i = 0; i < 1000; ++i) x[i] = (i * 7919) % 1013, wh[(int)x[i] % 16] += 1;
    for (int t = 0; t < 64; ++t) wl[t] = 6 + t;
    s.run({{"X", &x}, {"H", &h}, {"L", &l}});
    expectNear(h, wh, 0, "H");
    expectNear(l, wl, 0, "L");
}

TEST(LowerSim, ThreadDependentIfThroughAVariableGetsItsBarrierOutside) {
    // issue 12: `v = tx; if v < 64:` was taken for a uniform condition and the barrier the read of `s` needs
    // went inside the branch, reached by half the block. The barrier now comes before the if.
    Sim s("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(A: T.Tensor((128,), \"float32\"), B: T.Tensor((128,), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        s = T.alloc_shared((128,), \"float32\")\n"
          "        tx = T.get_thread_binding()\n"
          "        v = T.alloc_var(\"int32\")\n"
          "        v = tx\n"
          "        T.copy(A, s)\n"
          "        if v < 64:\n"
          "            B[tx] = s[127 - tx]\n",
          "k");
    auto a = randomData(128, 9);
    std::vector<double> b(128, std::nan("")), want(128, std::nan(""));
    for (int t = 0; t < 64; ++t) want[t] = a[127 - t];
    s.run({{"A", &a}, {"B", &b}});
    for (int t = 0; t < 128; ++t)
        if (t < 64) EXPECT_EQ(b[t], want[t]) << t;
        else EXPECT_TRUE(std::isnan(b[t])) << t;
}

} // namespace

/// C = A @ B (or with transposed operands) through the pipelined tensor-core path, on shapes the tiles do
/// not divide: the library calls are modelled by the simulator (asynchronous copies land at their wait).
void gemmCase(int M, int N, int K, bool ta, bool tb, int bm, int bn, int bk, int stages, int threads, bool serial = false) {
    auto shape = [](bool t, int r, int c) { return t ? "(" + std::to_string(c) + ", " + std::to_string(r) + ")" : "(" + std::to_string(r) + ", " + std::to_string(c) + ")"; };
    std::string src = std::string("import tilelang.language as T\n@T.prim_func\n") +
                      "def k(A: T.Tensor(" + shape(ta, M, K) + ", \"float16\"), B: T.Tensor(" + shape(tb, K, N) +
                      ", \"float16\"), C: T.Tensor((" + std::to_string(M) + ", " + std::to_string(N) + "), \"float\")):\n"
                      "    with T.Kernel(T.ceildiv(" + std::to_string(N) + ", " + std::to_string(bn) + "), T.ceildiv(" +
                      std::to_string(M) + ", " + std::to_string(bm) + "), threads=" + std::to_string(threads) + ") as (bx, by):\n"
                      "        a = T.alloc_shared(" + shape(ta, bm, bk) + ", \"float16\")\n"
                      "        b = T.alloc_shared(" + shape(tb, bk, bn) + ", \"float16\")\n"
                      "        c = T.alloc_fragment((" + std::to_string(bm) + ", " + std::to_string(bn) + "), \"float\")\n"
                      "        T.clear(c)\n"
                      "        for ko in T.Pipelined(T.ceildiv(" + std::to_string(K) + ", " + std::to_string(bk) +
                      "), num_stages=" + std::to_string(stages) + "):\n" +
                      (ta ? "            T.copy(A[ko * " + std::to_string(bk) + ", by * " + std::to_string(bm) + "], a)\n"
                          : "            T.copy(A[by * " + std::to_string(bm) + ", ko * " + std::to_string(bk) + "], a)\n") +
                      (tb ? "            T.copy(B[bx * " + std::to_string(bn) + ", ko * " + std::to_string(bk) + "], b)\n"
                          : "            T.copy(B[ko * " + std::to_string(bk) + ", bx * " + std::to_string(bn) + "], b)\n") +
                      "            T.gemm(a, b, c, transpose_A=" + (ta ? "True" : "False") + ", transpose_B=" + (tb ? "True" : "False") + ")\n"
                      "        T.copy(c, C[by * " + std::to_string(bm) + ", bx * " + std::to_string(bn) + "])\n";
    if (serial) { // a plain loop: each transfer waits for itself, barriers come from insertSyncs
        auto at = src.find("T.Pipelined(");
        src.replace(at, 12, "T.serial(");
        at = src.find(", num_stages=");
        src.erase(at, src.find(')', at) - at);
    }
    Sim s(src, "k");
    auto a = randomData((size_t)M * K, 11), b = randomData((size_t)K * N, 12);
    std::vector<double> c((size_t)M * N, std::nan("")), want((size_t)M * N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double acc = 0;
            for (int k = 0; k < K; ++k) acc += a[ta ? k * M + i : i * K + k] * b[tb ? j * K + k : k * N + j];
            want[i * N + j] = acc;
        }
    s.run({{"A", &a}, {"B", &b}, {"C", &c}});
    expectNear(c, want, 1e-4, "C");
}

TEST(LowerSim, GemmPipelinedOddShape) { gemmCase(100, 72, 80, false, false, 64, 64, 32, 3, 128); }
TEST(LowerSim, GemmTransposedB) { gemmCase(48, 40, 64, false, true, 32, 32, 32, 2, 64); }
TEST(LowerSim, GemmTransposedA) { gemmCase(40, 48, 48, true, false, 32, 32, 16, 2, 64); }
TEST(LowerSim, GemmBothTransposedMoreStagesThanIterations) { gemmCase(32, 32, 32, true, true, 32, 32, 16, 4, 128); }
TEST(LowerSim, GemmInASerialLoop) { gemmCase(40, 40, 48, false, false, 32, 32, 16, 0, 64, true); }

/// The example FlashAttention (causal), small: scores and probs in the mma layout split by rows, per-row
/// statistics in two registers per thread, probs read as operand A from registers.
TEST(LowerSim, FlashAttentionCausal) {
    const int B = 1, H = 2, S = 128, D = 64;
    Sim s(withExport("flash_attn.tile", "k = flash_attn(1, 2, 128, 64)"), "k");
    size_t n = (size_t)B * S * H * D;
    auto q = randomData(n, 21, -1, 1), kk = randomData(n, 22, -1, 1), v = randomData(n, 23, -1, 1);
    std::vector<double> out(n, std::nan("")), want(n, 0);
    auto at = [&](int b, int t, int h, int d) { return (((size_t)b * S + t) * H + h) * D + d; };
    const double scale = 1.0 / std::sqrt((double)D);
    for (int h = 0; h < H; ++h)
        for (int i = 0; i < S; ++i) {
            std::vector<double> p(i + 1);
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j <= i; ++j) {
                double dot = 0;
                for (int d = 0; d < D; ++d) dot += q[at(0, i, h, d)] * kk[at(0, j, h, d)];
                p[j] = dot * scale;
                mx = std::max(mx, p[j]);
            }
            for (int j = 0; j <= i; ++j) sum += p[j] = std::exp(p[j] - mx);
            for (int d = 0; d < D; ++d) {
                double o = 0;
                for (int j = 0; j <= i; ++j) o += p[j] * v[at(0, j, h, d)];
                want[at(0, i, h, d)] = o / sum;
            }
        }
    s.run({{"Q", &q}, {"K", &kk}, {"V", &v}, {"Out", &out}});
    expectNear(out, want, 1e-4, "Out");
}

namespace {

/// A GEMM whose reduction length K is a T.dynamic size: A's rows hold K elements, known only at run time.
const char *dynamicKGemm = R"(import tilelang.language as T
K = T.dynamic("K")
@T.prim_func
def k(A: T.Tensor((64, K), "float16"), B: T.Tensor((K, 64), "float16"), C: T.Tensor((64, 64), "float")):
    with T.Kernel(2, 2, threads=64) as (bx, by):
        a = T.alloc_shared((32, 32), "float16")
        b = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float")
        T.clear(c)
        for ko in T.Pipelined(T.ceildiv(K, 32), num_stages=2):
            T.copy(A[by * 32, ko * 32], a)
            T.copy(B[ko * 32, bx * 32], b)
            T.gemm(a, b, c)
        T.copy(c, C[by * 32, bx * 32])
)";

/// The vector width of each tile transfer, by source tensor.
std::map<std::string, int64_t> transferWidths(const ir::Kernel &k) {
    struct V : ir::IRVisitor {
        using ir::IRVisitor::visit;
        std::map<std::string, int64_t> widths;
        void visit(const ir::Call &c) override {
            if (passes::isTileTransfer(c)) {
                auto f = passes::lib::find(c.name)->fn;
                auto l = passes::addressedLoad(passes::lib::arg(c, f, "src"));
                widths[l->buffer->name] = *ir::constInt(passes::lib::arg(c, f, "vec"));
            }
            ir::IRVisitor::visit(c);
        }
    } v;
    v.visit(k.body);
    return v.widths;
}

/// Runs the dynamic-K GEMM lowered with or without the wide-rows assumption; a SimError's text, or "" when
/// the result matched.
std::string runDynamicK(const ir::Kernel &k, int K) {
    auto a = randomData((size_t)64 * K, 31), b = randomData((size_t)K * 64, 32);
    std::vector<double> c(64 * 64, std::nan("")), want(64 * 64, 0);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j)
            for (int x = 0; x < K; ++x) want[i * 64 + j] += a[i * K + x] * b[x * 64 + j];
    Simulator s(k, {{"A", &a}, {"B", &b}, {"C", &c}}, {{"K", (double)K}});
    try {
        s.run();
    } catch (const simtest::SimError &e) {
        return e.what();
    }
    for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    expectNear(c, want, 1e-4, "C");
    return "";
}

} // namespace

/// Issue 12: the wide variant of a dynamic-K transfer assumes K * 2 bytes is a multiple of 16 (and A 16-byte
/// aligned), records exactly that, and computes the product when it holds; the library's alignment
/// requirement fails it when K breaks the assumption. The narrow variant assumes nothing and runs any K.
TEST(LowerSim, DynamicRowLengthWideAndNarrowVariants) {
    Variant t{*Target::parse("sm_80"), {}};
    t.options.assumeAlignedRows = true;
    LowerRun wide;
    wide.run(dynamicKGemm, "t.tile", t);
    const ir::Kernel *kw = wide.kernel("k");
    ASSERT_TRUE(kw) << wide.diags();
    EXPECT_EQ(wide.diags(), "");
    ASSERT_EQ(kw->assumptions.size(), 1u);
    EXPECT_EQ(kw->assumptions[0].tensor->name, "A");
    EXPECT_EQ(ir::print(kw->assumptions[0].extent), "K");
    EXPECT_EQ(kw->assumptions[0].bytes, 16);
    EXPECT_EQ(transferWidths(*kw), (std::map<std::string, int64_t>{{"A", 8}, {"B", 8}}));
    EXPECT_EQ(runDynamicK(*kw, 96), "");
    EXPECT_EQ(runDynamicK(*kw, 40), "");
    EXPECT_EQ(runDynamicK(*kw, 0), ""); // issue 23: no trips, C = 0 (its rows of 0 bytes meet any alignment)
    EXPECT_NE(runDynamicK(*kw, 100).find("misaligned row of A"), std::string::npos);

    t.options.assumeAlignedRows = false;
    LowerRun narrow;
    narrow.run(dynamicKGemm, "t.tile", t);
    const ir::Kernel *kn = narrow.kernel("k");
    ASSERT_TRUE(kn) << narrow.diags();
    EXPECT_EQ(narrow.diags(), ""); // the wide variant covers aligned arguments: no warning
    EXPECT_TRUE(kn->assumptions.empty());
    EXPECT_EQ(transferWidths(*kn), (std::map<std::string, int64_t>{{"A", 1}, {"B", 8}}));
    for (int K : {96, 100, 33, 7, 0}) EXPECT_EQ(runDynamicK(*kn, K), "") << K;
}
