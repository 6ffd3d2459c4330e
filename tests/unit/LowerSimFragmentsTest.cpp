/// \file
/// Fragment constructs of TileLang's examples run on the CPU simulator against references computed here:
/// column reductions (dim=0) of a T.gemm accumulator in its tensor-core layout (src/lower/ReduceMmaColumns.cpp),
/// and T.Parallel nests reaching fragments through a permutation of their variables
/// (src/lower/TransposeFragments.cpp): a nest over (j, i) updating an accumulator as acc[i, j], a transpose
/// `t[j, i] = acc[i, j]` of an accumulator into another fragment, reads across threads through shared copies;
/// accumulator rows read at an offset from a guarded nest variable (src/lower/ShiftFragmentOffsets.cpp).
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace {

namespace sim = tilec::simtest;

/// Runs kernel `k` of `src` lowered for sm_80 on the simulator; no races.
void runSim(const std::string &src, std::map<std::string, std::vector<double> *> tensors) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, src);
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(r.lowered->kernels.size(), 1u) << r.diags();
    sim::runAll(r, tensors);
}

/// C = A B^T (64 x 64, K = 32), then its column sums and, over a fill of 0.5, its column maxima.
void columnReductions(const std::string &policy, int threads) {
    const int M = 64, N = 64, K = 32;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(A: T.Tensor((64, 32), \"float16\"), B: T.Tensor((64, 32), \"float16\"),\n"
                      "      S: T.Tensor((64,), \"float32\"), X: T.Tensor((64,), \"float32\")):\n"
                      "    with T.Kernel(1, threads=" + std::to_string(threads) + ") as bx:\n"
                      "        a = T.alloc_shared((64, 32), \"float16\")\n"
                      "        b = T.alloc_shared((64, 32), \"float16\")\n"
                      "        acc = T.alloc_fragment((64, 64), \"float32\")\n"
                      "        cs = T.alloc_fragment((64,), \"float32\")\n"
                      "        cm = T.alloc_fragment((64,), \"float32\")\n"
                      "        T.copy(A, a)\n"
                      "        T.copy(B, b)\n"
                      "        T.clear(acc)\n"
                      "        T.gemm(a, b, acc, transpose_B=True, policy=T.GemmWarpPolicy." + policy + ")\n"
                      "        T.reduce_sum(acc, cs, dim=0)\n"
                      "        T.fill(cm, 0.5)\n"
                      "        T.reduce_max(acc, cm, dim=0, clear=False)\n"
                      "        T.copy(cs, S)\n"
                      "        T.copy(cm, X)\n";
    auto a = sim::randomData(M * K, 41, -1, 1), b = sim::randomData(N * K, 42, -1, 1);
    std::vector<double> s(N, std::nan("")), x(N, std::nan("")), ws(N, 0), wx(N, 0.5);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double c = 0;
            for (int q = 0; q < K; ++q) c += a[i * K + q] * b[j * K + q];
            ws[j] += c;
            wx[j] = std::max(wx[j], c);
        }
    runSim(src, {{"A", &a}, {"B", &b}, {"S", &s}, {"X", &x}});
    sim::expectNear(s, ws, 1e-4, "S");
    sim::expectNear(x, wx, 1e-4, "X");
}

TEST(LowerSimFragments, ColumnReductionsOver2x2Warps) { columnReductions("Square", 128); }
TEST(LowerSimFragments, ColumnReductionsOver4x1Warps) { columnReductions("FullRow", 128); }
TEST(LowerSimFragments, ColumnReductionsOver1x4Warps) { columnReductions("FullCol", 128); }
TEST(LowerSimFragments, ColumnReductionsOneWarp) { columnReductions("Square", 32); }

/// acc = A B^T scaled per column by a nest over (j, i), then transposed into t by `t[j, i] = acc[i, j]`; a diagonal
/// of its lower half read across threads (`acc[i + 32, i]`).
TEST(LowerSimFragments, PermutedNestsAndTransposedAccumulator) {
    const int M = 64, N = 32, K = 32;
    const char *src = R"(import tilelang.language as T
@T.prim_func
def k(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 32), "float16"), W: T.Tensor((32,), "float32"),
      O: T.Tensor((32, 64), "float32"), R: T.Tensor((32,), "float32")):
    with T.Kernel(1, threads=128) as bx:
        a = T.alloc_shared((64, 32), "float16")
        b = T.alloc_shared((32, 32), "float16")
        acc = T.alloc_fragment((64, 32), "float32")
        w = T.alloc_fragment((32,), "float32")
        t = T.alloc_fragment((32, 64), "float32")
        T.copy(A, a)
        T.copy(B, b)
        T.copy(W, w)
        T.clear(acc)
        T.gemm(a, b, acc, transpose_B=True)
        for j, i in T.Parallel(32, 64):
            acc[i, j] = acc[i, j] * w[j]
        for i, j in T.Parallel(64, 32):
            t[j, i] = acc[i, j] + 1
        T.copy(t, O)
        for i in T.Parallel(32):
            R[i] = acc[i + 32, i]
)";
    auto a = sim::randomData(M * K, 43, -1, 1), b = sim::randomData(N * K, 44, -1, 1), w = sim::randomData(N, 45, -1, 1);
    std::vector<double> o(N * M, std::nan("")), want(N * M), r(N, std::nan("")), wantR(N);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double c = 0;
            for (int q = 0; q < K; ++q) c += a[i * K + q] * b[j * K + q];
            want[j * M + i] = c * w[j] + 1;
            if (i == j + 32) wantR[j] = c * w[j];
        }
    runSim(src, {{"A", &a}, {"B", &b}, {"W", &w}, {"O", &o}, {"R", &r}});
    sim::expectNear(o, want, 1e-4, "O");
    sim::expectNear(r, wantR, 1e-4, "R");
}

/// `xt[i, j] = x[j, i] * sinks[j]`: x (4096 elements, too many to hold whole in every thread) read through a
/// shared copy; `sinks`, a (128,) copy in every thread, filled by a nest over 64 that indexes no fragment exactly.
TEST(LowerSimFragments, TransposedReadAndPerThreadCopies) {
    const int N = 64;
    const char *src = R"(import tilelang.language as T
@T.prim_func
def k(X: T.Tensor((64, 64), "float32"), S: T.Tensor((2,), "float32"), Y: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=128) as bx:
        x = T.alloc_fragment((64, 64), "float32")
        xt = T.alloc_fragment((64, 64), "float32")
        sinks = T.alloc_fragment((128,), "float32")
        for i in T.Parallel(64):
            sinks[i] = S[0] + S[1] * i
        T.copy(X, x)
        for i, j in T.Parallel(64, 64):
            xt[i, j] = x[j, i] * sinks[j]
        T.copy(xt, Y)
)";
    auto x = sim::randomData(N * N, 46, -1, 1), sc = sim::randomData(2, 47, -1, 1);
    std::vector<double> y(N * N, std::nan("")), want(N * N);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) want[i * N + j] = x[j * N + i] * (sc[0] + sc[1] * j);
    runSim(src, {{"X", &x}, {"S", &sc}, {"Y", &y}});
    sim::expectNear(y, want, 1e-5, "Y");
}

/// Accesses at the nest iteration's row-major element (src/lower/FlatIndexViews.cpp): `g[j] += x[i, j] * 2` in a
/// nest over (1, 512) (the layernorm backward's dgamma) and `f[i, j * 8 + k]` in a nest over (16, 4, 8).
TEST(LowerSimFragments, FlatIndexViews) {
    const char *src = R"(import tilelang.language as T
@T.prim_func
def k(X: T.Tensor((1, 512), "float32"), G: T.Tensor((512,), "float32"), F: T.Tensor((16, 32), "float32")):
    with T.Kernel(1, threads=128) as bx:
        x = T.alloc_fragment((1, 512), "float32")
        g = T.alloc_fragment((512,), "float32")
        f = T.alloc_fragment((16, 32), "float32")
        T.copy(X, x)
        T.copy(G, g)
        for i, j in T.Parallel(1, 512):
            g[j] += x[i, j] * 2
        T.copy(g, G)
        for i, j, k in T.Parallel(16, 4, 8):
            f[i, j * 8 + k] = i * 100 + j * 10 + k + x[0, i * 32 + j * 8 + k]
        T.copy(f, F)
)";
    auto x = sim::randomData(512, 48, -1, 1), g = sim::randomData(512, 49, -1, 1);
    std::vector<double> wantG(512), f(512, std::nan("")), wantF(512);
    for (int j = 0; j < 512; ++j) wantG[j] = g[j] + x[j] * 2;
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 4; ++j)
            for (int k = 0; k < 8; ++k) wantF[i * 32 + j * 8 + k] = i * 100 + j * 10 + k + x[i * 32 + j * 8 + k];
    runSim(src, {{"X", &x}, {"G", &g}, {"F", &f}});
    sim::expectNear(g, wantG, 1e-6, "G");
    sim::expectNear(f, wantF, 1e-6, "F");
}

/// On sm_90a's warp roles (a TMA producer, wgmma consumers): the column sums of the accumulator and its transpose
/// after the pipelined loop, in consumer code (named barriers of the consumers), under several interleavings.
TEST(LowerSimFragments, ColumnSumsAndTransposeInConsumerWarpgroups) {
    const int M = 128, N = 128, K = 256;
    const char *src = R"(import tilelang.language as T
@T.prim_func
def k(A: T.Tensor((128, 256), "float16"), B: T.Tensor((128, 256), "float16"), O: T.Tensor((128, 128), "float32"),
      S: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=256) as bx:
        a = T.alloc_shared((128, 64), "float16")
        b = T.alloc_shared((128, 64), "float16")
        acc = T.alloc_fragment((128, 128), "float32")
        t = T.alloc_fragment((128, 128), "float32")
        cs = T.alloc_fragment((128,), "float32")
        T.clear(acc)
        for ko in T.Pipelined(4, num_stages=2):
            T.copy(A[0, ko * 64], a)
            T.copy(B[0, ko * 64], b)
            T.gemm(a, b, acc, transpose_B=True)
        T.reduce_sum(acc, cs, dim=0)
        for i, j in T.Parallel(128, 128):
            t[j, i] = acc[i, j]
        T.copy(t, O)
        T.copy(cs, S)
)";
    tilec::Variant v{*tilec::Target::parse("sm_90a"), {}};
    v.options.clusters = false;
    tilec::lowertest::LowerRun r;
    r.run(src, "t.tile", v);
    ASSERT_TRUE(r.lowered) << r.diags();
    const tilec::ir::Kernel *k = nullptr;
    for (auto &kk : r.lowered->kernels)
        if (kk->producerThreads) k = kk.get();
    ASSERT_TRUE(k) << "no warp roles";
    auto a = sim::quarters((size_t)M * K, 3), b = sim::quarters((size_t)N * K, 4);
    std::vector<double> wantO(M * N), wantS(N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double c = 0;
            for (int q = 0; q < K; ++q) c += a[i * K + q] * b[j * K + q];
            wantO[j * M + i] = c;
            wantS[j] += c;
        }
    for (uint64_t seed : {0, 1, 2}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::vector<double> o(M * N, std::nan("")), cs(N, std::nan(""));
        sim::Simulator s(*k, {{"A", &a}, {"B", &b}, {"O", &o}, {"S", &cs}}, {}, seed);
        try {
            s.run();
        } catch (const sim::SimError &e) {
            FAIL() << e.what();
        }
        for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
        sim::expectNear(o, wantO, 1e-9, "O");
        sim::expectNear(cs, wantS, 1e-9, "S");
    }
}

} // namespace

namespace {

/// A fragment written and read at (i, j * 8 + k) by a nest over (i, j) with a loop over k in [0, 8) inside
/// (TileKernels' cast_back_e5m6: eight values unpacked per iteration, stored under T.vectorized(8)): iteration
/// p's elements p * 8 ... p * 8 + 7 stay in its thread (inferLayouts' Use::expand), instead of the fragment
/// being held whole in every thread (an error for 7168 elements). `rows` x 64 float16 elements over 32 threads: the
/// fragment's vector of 8 (its copy to Z in 16-byte vectors) is 16 bytes; a float32 one would be 32, wider than
/// a vector access: replicated.
void expansionCase(int rows, const char *inner) {
    const std::string n = std::to_string(rows);
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(X: T.Tensor((" + n + ", 64), 'float32'), Y: T.Tensor((" + n + ", 64), 'float32'),\n"
                      "      Z: T.Tensor((" + n + ", 64), 'float16')):\n"
                      "    with T.Kernel(1, threads=32) as bx:\n"
                      "        f = T.alloc_fragment((" + n + ", 64), 'float16')\n"
                      "        for i, j in T.Parallel(" + n + ", 8):\n"
                      "            for k in T." + inner + "(8):\n"
                      "                f[i, j * 8 + k] = X[i, j * 8 + k] * 2 + k\n"
                      "        for i, j in T.Parallel(" + n + ", 8):\n"
                      "            for k in T.serial(8):\n"
                      "                Y[i, j * 8 + k] = f[i, 8 * j + k] - 1\n"
                      "        T.copy(f, Z)\n";
    const size_t count = (size_t)rows * 64;
    std::vector<double> x(count), y(count, std::nan("")), z(count, std::nan("")), wantZ(count), wantY(count);
    for (size_t e = 0; e < count; ++e) x[e] = (double)((int)((e * 7919) % 33) - 16) / 4; // quarters: exact in float16
    for (size_t e = 0; e < count; ++e) wantZ[e] = x[e] * 2 + (double)(e % 8), wantY[e] = wantZ[e] - 1;
    runSim(src, {{"X", &x}, {"Y", &y}, {"Z", &z}});
    sim::expectNear(z, wantZ, 0, "Z");
    sim::expectNear(y, wantY, 0, "Y");
}

} // namespace

TEST(SimFragments, ExpansionByAVectorizedLoopStaysInItsThread) { expansionCase(4, "vectorized"); }
TEST(SimFragments, ExpansionBySerialLoopOverManyRounds) { expansionCase(16, "serial"); }

/// A T.gemm accumulator stored in halves through one shared buffer, as sparse MLA's backward stores acc_dkv:
/// `half[i, d] = acc[i + s * 16, d]` under `if i < 16`, and a last quarter under `if i <= 7` at offset 24; the
/// shifted nests (src/lower/ShiftFragmentOffsets.cpp) read each thread's own registers, with no races.
TEST(LowerSimFragments, AccumulatorRowsAtAnOffset) {
    const int M = 32, N = 64, K = 32;
    const char *src = R"(import tilelang.language as T
@T.prim_func
def k(A: T.Tensor((32, 32), "float16"), B: T.Tensor((64, 32), "float16"), O: T.Tensor((2, 16, 64), "float32"),
      Q: T.Tensor((8, 64), "float32")):
    with T.Kernel(1, threads=128) as bx:
        a = T.alloc_shared((32, 32), "float16")
        b = T.alloc_shared((64, 32), "float16")
        acc = T.alloc_fragment((32, 64), "float32")
        half = T.alloc_shared((16, 64), "float32")
        T.copy(A, a)
        T.copy(B, b)
        T.gemm(a, b, acc, transpose_B=True, clear_accum=True)
        for s in range(2):
            for i, d in T.Parallel(32, 64):
                if i < 16:
                    half[i, d] = acc[i + s * 16, d] * 2
            T.copy(half, O[s, :, :])
        for i, d in T.Parallel(32, 64):
            if i <= 7:
                Q[i, d] = acc[i + 24, d] - 1
)";
    auto a = sim::randomData(M * K, 48, -1, 1), b = sim::randomData(N * K, 49, -1, 1);
    std::vector<double> o(M * N, std::nan("")), want(M * N), q(8 * N, std::nan("")), wantQ(8 * N);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double c = 0;
            for (int x = 0; x < K; ++x) c += a[i * K + x] * b[j * K + x];
            want[i * N + j] = c * 2; // O[s, r, j] is row s * 16 + r
            if (i >= 24) wantQ[(i - 24) * N + j] = c - 1;
        }
    runSim(src, {{"A", &a}, {"B", &b}, {"O", &o}, {"Q", &q}});
    sim::expectNear(o, want, 1e-4, "O");
    sim::expectNear(q, wantQ, 1e-4, "Q");
}

/// A per-row fragment declared with fewer elements than the rows a T.Parallel nest indexes it by (attention_sink's
/// `sinks = T.alloc_fragment([heads])` written and read as `sinks[i]` over block_M rows) holds the nest's extent,
/// laid out beside the T.gemm accumulator's rows it is added to (src/lower/GrowIndexedFragments.cpp).
void grownToNest(const char *arch) {
    const int M = 64, N = 64, K = 32;
    const std::string src = R"(import tilelang.language as T
@T.prim_func
def k(A: T.Tensor((64, 32), "float16"), B: T.Tensor((64, 32), "float16"), S: T.Tensor((4,), "float32"),
      O: T.Tensor((64,), "float32")):
    with T.Kernel(4, threads=128) as bx:
        a = T.alloc_shared((64, 32), "float16")
        b = T.alloc_shared((64, 32), "float16")
        acc = T.alloc_fragment((64, 64), "float32")
        rs = T.alloc_fragment((64,), "float32")
        sinks = T.alloc_fragment((8,), "float32")
        T.copy(A, a)
        T.copy(B, b)
        T.gemm(a, b, acc, transpose_B=True, clear_accum=True)
        T.reduce_sum(acc, rs, dim=1)
        for i in T.Parallel(64):
            sinks[i] = S[bx] + i
        for i in T.Parallel(64):
            rs[i] += sinks[i] * 2
        if bx == 2:
            T.copy(rs, O)
)";
    auto a = sim::randomData(M * K, 50, -1, 1), b = sim::randomData(N * K, 51, -1, 1), s = sim::randomData(4, 52, -1, 1);
    std::vector<double> o(M, std::nan("")), want(M, 0);
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j)
            for (int x = 0; x < K; ++x) want[i] += a[i * K + x] * b[j * K + x];
        want[i] += (s[2] + i) * 2;
    }
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, src, arch);
    ASSERT_TRUE(r.lowered) << r.diags();
    sim::runAll(r, {{"A", &a}, {"B", &b}, {"S", &s}, {"O", &o}});
    sim::expectNear(o, want, 1e-4, "O");
}
TEST(LowerSimFragments, GrownToNestSm80) { grownToNest("sm_80"); }
TEST(LowerSimFragments, GrownToNestSm90a) { grownToNest("sm_90a"); }
