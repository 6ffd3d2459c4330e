/// \file
/// The code generation of issue 25 checked for numbers on the CPU simulator (which reports shared-memory
/// races) against references computed here: kernels whose loops lost their per-iteration __syncthreads() (each
/// iteration touching its own slice of a tensor, each thread its own run of a shared buffer, the barrier for
/// what was pending before a loop placed once before it), whose T.vectorized loops and guarded stores became
/// vector accesses, and reductions of multi-dimensional fragments whose results a nest reads broadcast along
/// its trailing variables (`x[i, j, k] - row_max[i, j]`), spread over the threads like the nest so that they
/// stay in registers; the ones that cannot be spread (a broadcast along a middle variable, a run of trailing
/// iterations wider than a thread's vector) are kept whole in every thread.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "LowerSimUtil.h"

#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace tilec;
using lowertest::LowerRun;
using simtest::expectNear, simtest::randomData, simtest::Simulator;

namespace {

using simtest::countSyncs;

/// Runs a lowered kernel on the simulator: no complaint, no shared-memory race.
void runSim(const ir::Kernel &k, std::map<std::string, std::vector<double> *> tensors,
            std::map<std::string, double> scalars = {}) {
    Simulator s(k, std::move(tensors), std::move(scalars));
    std::string error; // the simulator's complaint, if any, and the first race it saw
    try {
        s.run();
    } catch (const simtest::SimError &e) {
        error = e.what();
    }
    EXPECT_EQ(error, "");
    EXPECT_TRUE(s.races.empty()) << "race: " << (s.races.empty() ? std::string() : s.races.front());
}

void simulate(const std::string &src, std::map<std::string, std::vector<double> *> tensors,
              std::map<std::string, double> scalars, int maxSyncs) {
    LowerRun r;
    r.run(src, "t.tile", *Target::parse("sm_80"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    EXPECT_LE(countSyncs(k->body), maxSyncs);
    runSim(*k, std::move(tensors), std::move(scalars));
}

/// Sinkhorn's first steps on a (B, H, H) block: softmax along k, then each column (along j) normalized.
std::string sinkhorn(int B, int H, int threads) {
    std::string b = std::to_string(B), h = std::to_string(H);
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def k(X: T.Tensor((" + b + ", " + h + ", " + h + "), \"float32\"), Y: T.Tensor((" + b + ", " + h + ", " + h +
           "), \"float32\"), R: T.Tensor((" + b + ", " + h + "), \"float32\")):\n"
           "    with T.Kernel(1, threads=" + std::to_string(threads) + ") as bx:\n"
           "        f = T.alloc_fragment((" + b + ", " + h + ", " + h + "), \"float\")\n"
           "        mx = T.alloc_fragment((" + b + ", " + h + "), \"float\")\n"
           "        rs = T.alloc_fragment((" + b + ", " + h + "), \"float\")\n"
           "        cs = T.alloc_fragment((" + b + ", " + h + "), \"float\")\n"
           "        T.copy(X, f)\n"
           "        T.reduce_max(f, mx, dim=2)\n"
           "        for i, j, k in T.Parallel(" + b + ", " + h + ", " + h + "):\n"
           "            f[i, j, k] = T.exp(f[i, j, k] - mx[i, j])\n"
           "        T.reduce_sum(f, rs, dim=2)\n"
           "        for i, j, k in T.Parallel(" + b + ", " + h + ", " + h + "):\n"
           "            f[i, j, k] = f[i, j, k] / rs[i, j]\n"
           "        T.reduce_sum(f, cs, dim=1)\n"
           "        for i, j, k in T.Parallel(" + b + ", " + h + ", " + h + "):\n"
           "            f[i, j, k] = f[i, j, k] / cs[i, k]\n"
           "        T.copy(f, Y)\n"
           "        T.copy(rs, R)\n";
}

void sinkhornCase(int B, int H, int threads, const char *rowLayout) {
    LowerRun r;
    r.dumpAfter = "inferLayouts";
    r.run(sinkhorn(B, H, threads), "t.tile", *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    EXPECT_NE(r.dump.str().find(rowLayout), std::string::npos) << r.dump.str();
    auto x = randomData((size_t)B * H * H, 11, -3, 3);
    std::vector<double> y(x.size(), std::nan("")), rs((size_t)B * H, std::nan("")), want(x.size()), wantRs(rs.size());
    for (int i = 0; i < B; ++i) {
        for (int j = 0; j < H; ++j) {
            double m = -INFINITY, s = 0;
            for (int c = 0; c < H; ++c) m = std::max(m, x[(i * H + j) * H + c]);
            for (int c = 0; c < H; ++c) s += want[(i * H + j) * H + c] = std::exp(x[(i * H + j) * H + c] - m);
            for (int c = 0; c < H; ++c) want[(i * H + j) * H + c] /= s;
            wantRs[i * H + j] = s;
        }
        for (int c = 0; c < H; ++c) {
            double s = 0;
            for (int j = 0; j < H; ++j) s += want[(i * H + j) * H + c];
            for (int j = 0; j < H; ++j) want[(i * H + j) * H + c] /= s;
        }
    }
    runSim(*k, {{"X", &x}, {"Y", &y}, {"R", &rs}});
    expectNear(y, want, 1e-5, "Y");
    expectNear(rs, wantRs, 1e-5, "R");
}

} // namespace

// Rows of x copied into 3 slots of o under the program's own bounds test: n = 45 leaves a partial row tile.
TEST(LowerSimSyncs, ExpandIntoSlots) {
    const int n = 45, h = 64, slots = 3;
    std::string src = "import tilelang.language as T\n"
                      "n = T.dynamic('n')\n"
                      "@T.prim_func\n"
                      "def k(x: T.Tensor((n, 64), 'bfloat16'), o: T.Tensor((n, 3, 64), 'bfloat16')):\n"
                      "    with T.Kernel(T.ceildiv(n, 16), threads=64) as bi:\n"
                      "        xl = T.alloc_fragment((16, 64), 'bfloat16')\n"
                      "        T.copy(x[bi * 16, 0], xl)\n"
                      "        for m in T.serial(3):\n"
                      "            for i, j in T.Parallel(16, 64):\n"
                      "                if bi * 16 + i < n and j < 64:\n"
                      "                    o[bi * 16 + i, m, j] = xl[i, j]\n";
    auto x = randomData((size_t)n * h, 21);
    for (auto &v : x) v = (double)(float)v; // bfloat16 rounding is the simulator's; compare exactly what it stores
    std::vector<double> o((size_t)n * slots * h, std::nan("")), want(o.size());
    simulate(src, {{"x", &x}, {"o", &o}}, {{"n", n}}, 0);
    for (int i = 0; i < n; ++i)
        for (int m = 0; m < slots; ++m)
            for (int j = 0; j < h; ++j) want[((size_t)i * slots + m) * h + j] = x[(size_t)i * h + j];
    expectNear(o, want, 1e-2, "o");
}

// Each thread's run of a shared buffer written, then the next thread's read, twice; then stored back (a
// T.vectorized loop of 64 bytes: four 16-byte stores).
TEST(LowerSimSyncs, ExchangeThroughSharedRuns) {
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(A: T.Tensor((2, 1024), 'float32'), B: T.Tensor((2, 1024), 'float32')):\n"
                      "    with T.Kernel(2, threads=64) as bx:\n"
                      "        tx = T.get_thread_binding(0)\n"
                      "        local = T.alloc_local((16,), 'float32')\n"
                      "        s = T.alloc_shared((64, 16), 'float32')\n"
                      "        for i in T.vectorized(4):\n"
                      "            local[i] = A[bx, tx * 16 + i]\n"
                      "        for i in T.serial(12):\n"
                      "            local[i + 4] = A[bx, tx * 16 + i + 4]\n"
                      "        for r in T.serial(2):\n"
                      "            for j in T.serial(16):\n"
                      "                s[tx, j] = local[j] + r\n"
                      "            for j in T.serial(16):\n"
                      "                local[j] = s[(tx + 1) % 64, j]\n"
                      "        for i in T.vectorized(16):\n"
                      "            B[bx, tx * 16 + i] = local[i]\n";
    auto a = randomData(2 * 1024, 22);
    std::vector<double> b(a.size(), std::nan("")), want(a.size());
    simulate(src, {{"A", &a}, {"B", &b}}, {}, 2);
    for (int bx = 0; bx < 2; ++bx)
        for (int t = 0; t < 64; ++t)
            for (int j = 0; j < 16; ++j) // after two rounds thread t holds thread t+2's row, plus 0 and then 1
                want[bx * 1024 + t * 16 + j] = (double)(float)((float)a[bx * 1024 + (t + 2) % 64 * 16 + j] + 1.0f);
    expectNear(b, want, 1e-6, "B");
}

// 32 x 4 x 4 over 128 threads: each thread's 4-wide vector is one (i, j) row, so the row results take one slot.
TEST(LowerSimBroadcast, RowResultsInTheNestsThreads) { sinkhornCase(32, 4, 128, "fragment mx: distributed over 128 threads, 1-wide"); }
// 16 x 2 x 2 over 32 threads: the nest's vectors narrow to the rows of 2, one row result per vector.
TEST(LowerSimBroadcast, ShortRowsInNarrowVectors) {
    sinkhornCase(16, 2, 32, "fragment mx: distributed over 32 threads, 1-wide");
}
// 4 x 8 x 8 over 32 threads: rows of 8 wider than a 4-wide vector: the two threads of a row each hold a copy of
// its result (CopiedLayouts.h), not every thread all of them.
TEST(LowerSimBroadcast, RowsWiderThanAVectorHeldByTheirThreads) {
    sinkhornCase(4, 8, 32, "fragment mx: distributed over 16 threads, 1-wide, each held by 2 threads (copy bits 1)");
}

namespace {

/// Whether the kernel stores to global tensor `name` from a vectorized loop (one vector store per thread's run).
bool vectorStoreTo(const ir::Stmt &s, const std::string &name) {
    struct Find : ir::IRVisitor {
        using IRVisitor::visit;
        const std::string *name;
        int vectorized = 0;
        bool found = false;
        void visit(const ir::For &op) override {
            vectorized += op.forKind == ir::ForKind::Vectorized;
            IRVisitor::visit(op);
            vectorized -= op.forKind == ir::ForKind::Vectorized;
        }
        void visit(const ir::Store &op) override {
            found |= vectorized > 0 && op.buffer->scope == ir::Scope::Global && op.buffer->name == *name;
            IRVisitor::visit(op);
        }
    } f;
    f.name = &name;
    f.visit(s);
    return f.found;
}

/// Lowers `src` (kernel k, sm_80), expects a vector store to each of `stores`, and runs it on the simulator.
void simulateVectorStores(const std::string &src, const std::vector<std::string> &stores,
                          std::map<std::string, std::vector<double> *> tensors, std::map<std::string, double> scalars = {}) {
    LowerRun r;
    r.run(src, "t.tile", *Target::parse("sm_80"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    for (auto &name : stores) EXPECT_TRUE(vectorStoreTo(k->body, name)) << name;
    runSim(*k, std::move(tensors), std::move(scalars));
}

} // namespace

// `+=` on global tensors under the program's own bounds test (TileKernels' fn_normw_merge_bwd): each lane reads and
// writes its own element, so the loads become one vector load before the lanes and the stores one vector store
// after them; n = 520 leaves the last block partial.
TEST(LowerSimVector, ReadModifyWriteOfTensors) {
    const int m = 3, n = 520;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(fn: T.Tensor((3, 520), 'float32'), nw: T.Tensor((520,), 'float32'),\n"
                      "      g: T.Tensor((3, 520), 'float32'), fg: T.Tensor((3, 520), 'float32'),\n"
                      "      nwg: T.Tensor((520,), 'float32')):\n"
                      "    with T.Kernel(T.ceildiv(520, 256), threads=128) as p:\n"
                      "        nf = T.alloc_fragment(256, 'float32')\n"
                      "        T.copy(nw[p * 256], nf)\n"
                      "        ng = T.alloc_fragment(256, 'float32')\n"
                      "        T.clear(ng)\n"
                      "        for im in T.serial(3):\n"
                      "            for i in T.Parallel(256):\n"
                      "                if p * 256 + i < 520:\n"
                      "                    fg[im, p * 256 + i] += g[im, p * 256 + i] * nf[i]\n"
                      "                    ng[i] += g[im, p * 256 + i] * fn[im, p * 256 + i]\n"
                      "        for i in T.Parallel(256):\n"
                      "            nwg[p * 256 + i] += ng[i]\n";
    auto fn = randomData((size_t)m * n, 31), nw = randomData(n, 32), g = randomData((size_t)m * n, 33);
    auto fg = randomData((size_t)m * n, 34), nwg = randomData(n, 35);
    std::vector<double> wantFg = fg, wantNwg = nwg;
    for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int i = 0; i < m; ++i) {
            wantFg[(size_t)i * n + j] += g[(size_t)i * n + j] * nw[j];
            acc += g[(size_t)i * n + j] * fn[(size_t)i * n + j];
        }
        wantNwg[j] += acc;
    }
    simulateVectorStores(src, {"fg", "nwg"}, {{"fn", &fn}, {"nw", &nw}, {"g", &g}, {"fg", &fg}, {"nwg", &nwg}});
    expectNear(fg, wantFg, 1e-5, "fg");
    expectNear(nwg, wantNwg, 1e-5, "nwg");
}

// A T.vectorized loop of stores under the program's test of its row (TileKernels' normalize_weight): the lanes'
// stores are still independent of each other, so the 8 floats of a row go out as two 16-byte stores; n = 150
// leaves the second block partial.
TEST(LowerSimVector, GuardedProgramVectorizedStores) {
    const int n = 150, topk = 8;
    std::string src = "import tilelang.language as T\n"
                      "n = T.dynamic('n')\n"
                      "@T.prim_func\n"
                      "def k(w: T.Tensor((n, 8), 'float32'), d: T.Tensor((n,), 'float32'), o: T.Tensor((n, 8), 'float32')):\n"
                      "    with T.Kernel(T.ceildiv(n, 128), threads=128) as (pid, ):\n"
                      "        tid = T.get_thread_binding()\n"
                      "        wl = T.alloc_local((8,), 'float32')\n"
                      "        row = pid * 128 + tid\n"
                      "        if row < n:\n"
                      "            s = T.alloc_var('float32', init=1e-20)\n"
                      "            for i in T.vectorized(8):\n"
                      "                wl[i] = w[row, i]\n"
                      "            for i in T.unroll(8):\n"
                      "                s += wl[i]\n"
                      "            d[row] = s\n"
                      "            for i in T.vectorized(8):\n"
                      "                o[row, i] = wl[i] / s\n";
    auto w = randomData((size_t)n * topk, 41);
    for (auto &v : w) v = std::fabs(v) + 0.1;
    std::vector<double> d(n, std::nan("")), o((size_t)n * topk, std::nan("")), wantD(n), wantO(o.size());
    for (int i = 0; i < n; ++i) {
        float s = 1e-20f;
        for (int j = 0; j < topk; ++j) s += (float)w[(size_t)i * topk + j];
        wantD[i] = s;
        for (int j = 0; j < topk; ++j) wantO[(size_t)i * topk + j] = (float)w[(size_t)i * topk + j] / s;
    }
    simulateVectorStores(src, {"o"}, {{"w", &w}, {"d", &d}, {"o", &o}}, {{"n", n}});
    expectNear(d, wantD, 1e-5, "d");
    expectNear(o, wantO, 1e-5, "o");
}

// A load under the program's test of the row against a sequence's length (TileLang's varlen preprocess): the
// vector load takes the row test as its own predicate (rows past the sequence are not read), and the lanes still
// see zeros there; sequences of 5, 35 and 24 rows leave blocks partial and the first sequence's second block empty.
TEST(LowerSimVector, LoadsUnderRowTests) {
    const int total = 64, d = 32, maxLen = 40;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(x: T.Tensor((64, 32), 'float32'), cu: T.Tensor((4,), 'int32'), o: T.Tensor((3, 48), 'float32')):\n"
                      "    with T.Kernel(T.ceildiv(40, 16), 3, threads=64) as (by, bz):\n"
                      "        xf = T.alloc_fragment((16, 32), 'float32')\n"
                      "        s = T.alloc_fragment((16,), 'float32')\n"
                      "        start = cu[bz]\n"
                      "        seqlen = cu[bz + 1] - start\n"
                      "        for i, j in T.Parallel(16, 32):\n"
                      "            if by * 16 + i < seqlen and j < 32:\n"
                      "                xf[i, j] = x[start + by * 16 + i, j]\n"
                      "            else:\n"
                      "                xf[i, j] = 0.0\n"
                      "        T.reduce_sum(xf, s, 1)\n"
                      "        for i in T.Parallel(16):\n"
                      "            if by * 16 + i < seqlen:\n"
                      "                o[bz, by * 16 + i] = s[i]\n";
    auto x = randomData((size_t)total * d, 51);
    std::vector<double> cu = {0, 5, 40, 64}, o(3 * 48, std::nan("")), want = o;
    for (int b = 0; b < 3; ++b)
        for (int r = 0; r < (int)(cu[b + 1] - cu[b]) && r < maxLen; ++r) {
            double s = 0;
            for (int j = 0; j < d; ++j) s += x[(size_t)(cu[b] + r) * d + j];
            want[(size_t)b * 48 + r] = s;
        }
    LowerRun r;
    r.run(src, "t.tile", *Target::parse("sm_80"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    runSim(*k, {{"x", &x}, {"cu", &cu}, {"o", &o}});
    for (size_t i = 0; i < o.size(); ++i) {
        if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(o[i])) << "o[" << i << "] written";
        else EXPECT_NEAR(o[i], want[i], 1e-4) << "o[" << i << "]";
    }
}

// Barriers only for real shared-memory hazards across loop iterations: every element of a shared buffer
// touched by one thread over all the iterations (copies into slice `step`, per-thread stores to each
// thread's own piece of a tile) needs no barrier between those statements; reads in other threads' layout
// still wait for them.
// Sinkhorn backward's shape: intermediates saved slice by slice, read back transposed in reverse order.
TEST(LowerSimSyncs, SlicesSavedThenReadTransposed) {
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(X: T.Tensor((8, 4, 4), 'float32'), Y: T.Tensor((8, 4, 4), 'float32')):\n"
                      "    with T.Kernel(1, threads=32) as bx:\n"
                      "        f = T.alloc_fragment((8, 4, 4), 'float32')\n"
                      "        g = T.alloc_fragment((8, 4, 4), 'float32')\n"
                      "        rs = T.alloc_fragment((8, 4), 'float32')\n"
                      "        xs = T.alloc_shared((3, 8, 4, 4), 'float32')\n"
                      "        sums = T.alloc_shared((3, 8, 4), 'float32')\n"
                      "        T.copy(X, f)\n"
                      "        T.clear(g)\n"
                      "        for s in T.serial(3):\n"
                      "            T.reduce_sum(f, rs, dim=2)\n"
                      "            T.copy(rs, sums[s, 0, 0])\n"
                      "            T.copy(f, xs[s, 0, 0, 0])\n"
                      "            for i, j, k in T.Parallel(8, 4, 4):\n"
                      "                f[i, j, k] = f[i, j, k] * 0.5 + rs[i, j]\n"
                      "        for b in T.serial(3):\n"
                      "            for i, j, k in T.Parallel(8, 4, 4):\n"
                      "                g[i, j, k] = g[i, j, k] + xs[2 - b, i, k, j] * sums[2 - b, i, k]\n"
                      "        T.copy(g, Y)\n";
    auto x = randomData(8 * 16, 7);
    std::vector<double> y(x.size()), want(x.size(), 0), f = x, xs(3 * 128), sums(3 * 32);
    simulate(src, {{"X", &x}, {"Y", &y}}, {}, 1); // one barrier: before the loop that reads
    for (int s = 0; s < 3; ++s) {
        for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 4; ++j) {
                double r = 0;
                for (int k = 0; k < 4; ++k) r += f[i * 16 + j * 4 + k];
                sums[s * 32 + i * 4 + j] = r;
                for (int k = 0; k < 4; ++k) xs[s * 128 + i * 16 + j * 4 + k] = f[i * 16 + j * 4 + k];
            }
        for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 4; ++j)
                for (int k = 0; k < 4; ++k) f[i * 16 + j * 4 + k] = f[i * 16 + j * 4 + k] * 0.5 + sums[s * 32 + i * 4 + j];
    }
    for (int b = 0; b < 3; ++b)
        for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 4; ++j)
                for (int k = 0; k < 4; ++k)
                    want[i * 16 + j * 4 + k] += xs[(2 - b) * 128 + i * 16 + k * 4 + j] * sums[(2 - b) * 32 + i * 4 + k];
    expectNear(y, want, 1e-5, "Y");
}

// The mxfp4 dequantizing GEMM's shape: each thread stores its registers to its own run of a shared tile in a
// per-thread loop; the tile is then read reversed (by other threads).
TEST(LowerSimSyncs, PerThreadPiecesThenReversedRead) {
    const int rows = 32, cols = 64;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(A: T.Tensor((2048,), 'float32'), B: T.Tensor((32, 64), 'float32')):\n"
                      "    with T.Kernel(1, threads=64) as bx:\n"
                      "        s = T.alloc_shared((32, 64), 'float32')\n"
                      "        for i in T.serial(4):\n"
                      "            for v in T.vectorized(8):\n"
                      "                idx = i * 512 + T.get_thread_binding() * 8 + v\n"
                      "                s[idx // 64, idx % 64] = A[idx] * 2\n"
                      "        for i, j in T.Parallel(32, 64):\n"
                      "            B[i, j] = s[31 - i, 63 - j]\n";
    auto a = randomData(2048, 9);
    std::vector<double> b(2048), want(2048);
    simulate(src, {{"A", &a}, {"B", &b}}, {}, 1); // one barrier: between the stores and the read
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) want[i * cols + j] = a[(rows - 1 - i) * cols + cols - 1 - j] * 2;
    expectNear(b, want, 1e-6, "B");
}
