/// \file
/// What TileLang's own programs need beyond the core language, continued (LowerSimCompatTest.cpp): reductions
/// that share scratch memory, TVM's cross-thread reduction (T.tvm_thread_allreduce), T.alloc_reducer updated in
/// nests, and where elements live (a T.Layout on a global tensor, T.StridedTensor, fragments read by slices
/// or by half their column); lowered for sm_80 and run on the CPU simulator (src/sim/Simulator.h) against float64
/// references.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace tilec;
using namespace tilec::simtest;
using tilec::lowertest::LowerRun;

namespace {

// Two reductions of a T.gemm accumulator whose warps split the columns (FullCol), in a kernel whose shared
// buffers and the reductions' own scratch together pass the target's limit (sm_86: 101376 bytes): they
// exchange through one scratch buffer, so a barrier must order the row maxima's reads before the row sums'
// writes (TileLang's MLA decoding fits sm_90a's shared memory only so). The values, and no race.
TEST(LowerSimCompat, ReductionsShareScratchWhenTight) {
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "def f(big_elems):\n"
          "    @T.prim_func\n"
          "    def main(A: T.Tensor((64, 32), \"float16\"), B: T.Tensor((32, 64), \"float16\"),\n"
          "             Mx: T.Tensor((64,), \"float32\"), Sm: T.Tensor((64,), \"float32\")):\n"
          "        with T.Kernel(1, threads=128) as bx:\n"
          "            big = T.alloc_shared((big_elems,), \"float32\")\n"
          "            A_s = T.alloc_shared((64, 32), \"float16\")\n"
          "            B_s = T.alloc_shared((32, 64), \"float16\")\n"
          "            acc = T.alloc_fragment((64, 64), \"float32\")\n"
          "            mx = T.alloc_fragment((64,), \"float32\")\n"
          "            sm = T.alloc_fragment((64,), \"float32\")\n"
          "            for i in T.Parallel(64):\n"
          "                big[i] = 1.0\n"
          "            T.copy(A, A_s)\n"
          "            T.copy(B, B_s)\n"
          "            T.gemm(A_s, B_s, acc, policy=T.GemmWarpPolicy.FullCol, clear_accum=True)\n"
          "            T.reduce_max(acc, mx, dim=1)\n"
          "            T.reduce_sum(acc, sm, dim=1)\n"
          "            for i in T.Parallel(64):\n"
          "                Mx[i] = mx[i]\n"
          "                Sm[i] = sm[i] + big[i]\n"
          "    return main\n"
          "k = f(22900)\n",
          "t.tile", *Target::parse("sm_86"));
    ASSERT_TRUE(r.lowered) << r.diags();
    int scratches = 0;
    for (auto &b : r.lowered->kernels[0]->allocs)
        if (b && b->scope == ir::Scope::Shared && b->name.find("scratch") != std::string::npos) {
            ++scratches;
            EXPECT_EQ(b->name, "reduce_scratch_float32");
        }
    EXPECT_EQ(scratches, 1);
    auto a = randomData(64 * 32, 41), b = randomData(32 * 64, 42);
    // Multiples of 1/64 below 2 in magnitude are float16 values: the products are exact, only sums round.
    for (auto *v : {&a, &b})
        for (auto &x : *v) x = std::round(x * 64) / 64;
    std::vector<double> mx(64, std::nan("")), sm(64, std::nan("")), wantMx(64), wantSm(64);
    for (int i = 0; i < 64; ++i) {
        double m = -INFINITY, s = 0;
        for (int j = 0; j < 64; ++j) {
            double c = 0;
            for (int k = 0; k < 32; ++k) c += a[(size_t)i * 32 + k] * b[(size_t)k * 64 + j];
            m = std::max(m, c), s += c;
        }
        wantMx[i] = m, wantSm[i] = s + 1.0;
    }
    runLaunches(r, "k", {{"A", &a}, {"B", &b}, {"Mx", &mx}, {"Sm", &sm}}, 1);
    expectNear(mx, wantMx, 1e-4, "Mx");
    expectNear(sm, wantSm, 1e-3, "Sm");
}

// TVM's cross-thread reduction (T.attr "reduce_scope" around T.tvm_thread_allreduce) as TileLang's split-K
// GEMV example uses it: threads=(n_per_block, 32), each thread a partial dot product over its k-slices, summed
// over the 32 threads of coordinate 1 (strided by the block's x extent, across two warps).
TEST(LowerSimCompat, ThreadAllreduceSumsSplitKPartials) {
    const int N = 6, K = 512;
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "def gemv(N, K, rows, lanes, dtype=\"float16\", acc_t=\"float32\"):\n"
          "    vec = 8\n"
          "    chunk = lanes * vec\n"
          "    @T.prim_func\n"
          "    def main(X: T.Tensor((K,), dtype), W: T.Tensor((N, K), dtype), Y: T.Tensor((N,), dtype)):\n"
          "        with T.Kernel(T.ceildiv(N, rows), threads=(rows, lanes)) as bn:\n"
          "            tn = T.get_thread_binding(0)\n"
          "            tk = T.get_thread_binding(1)\n"
          "            xs = T.alloc_local((vec,), dtype)\n"
          "            ws = T.alloc_local((vec,), dtype)\n"
          "            part = T.alloc_local((1,), acc_t)\n"
          "            T.clear(part)\n"
          "            for c in T.serial(T.ceildiv(K, chunk)):\n"
          "                for v in T.vectorized(vec):\n"
          "                    xs[v] = X[c * chunk + tk * vec + v]\n"
          "                    ws[v] = W[bn * rows + tn, c * chunk + tk * vec + v]\n"
          "                for v in T.serial(vec):\n"
          "                    part[0] += xs[v].astype(acc_t) * ws[v].astype(acc_t)\n"
          "            total = T.alloc_local((1,), acc_t)\n"
          "            with T.attr(T.comm_reducer(lambda p, q: p + q, [T.cast(0, acc_t)]), \"reduce_scope\",\n"
          "                        T.reinterpret(T.uint64(0), dtype=\"handle\")):\n"
          "                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), part[0], True, total[0], tk, dtype=\"handle\"))\n"
          "            Y[bn * rows + tn] = total[0]\n"
          "    return main\n"
          "k = gemv(6, 512, 2, 32)\n",
          "t.tile", *Target::parse("sm_80"));
    auto x = randomData(K, 51), w = randomData((size_t)N * K, 52);
    // Multiples of 1/64 below 2 in magnitude are float16 values: the products are exact, only sums round.
    for (auto *v : {&x, &w})
        for (auto &e : *v) e = std::round(e * 64) / 64;
    std::vector<double> y(N, std::nan("")), want(N, 0.0);
    for (int n = 0; n < N; ++n)
        for (int k = 0; k < K; ++k) want[(size_t)n] += x[(size_t)k] * w[(size_t)n * K + k];
    runLaunches(r, "k", {{"X", &x}, {"W", &w}, {"Y", &y}}, 1);
    expectNear(y, want, 2e-3, "Y"); // the float16 result
}

// A group of neighbouring lanes (coordinate 0 of threads=(32, 4), the fp16 x int4 dequantizing GEMV's): the
// values meet through a butterfly of warp shuffles, with no shared scratch and no barrier; every thread of the
// group holds the sum (each row's four warps write it from their lane 5, not lane 0).
TEST(LowerSimCompat, ThreadAllreduceWithinAWarpShuffles) {
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(A: T.Tensor((4, 64), \"float32\"), Y: T.Tensor((4,), \"float32\")):\n"
          "    with T.Kernel(1, threads=(32, 4)) as bx:\n"
          "        kr = T.get_thread_binding(0)\n"
          "        ni = T.get_thread_binding(1)\n"
          "        part = T.alloc_local((1,), \"float32\")\n"
          "        total = T.alloc_local((1,), \"float32\")\n"
          "        part[0] = A[ni, kr] + A[ni, kr + 32]\n"
          "        with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, \"float32\")]), \"reduce_scope\", 0):\n"
          "            T.tvm_thread_allreduce(T.uint32(1), part[0], True, total[0], kr)\n"
          "        if kr == 5:\n"
          "            Y[ni] = total[0]\n",
          "t.tile", *Target::parse("sm_80"));
    const ir::Kernel *kern = r.kernel("k");
    ASSERT_NE(kern, nullptr);
    EXPECT_EQ(countSyncs(kern->body), 0) << "no barrier";
    EXPECT_EQ(callCounts(*kern)[passes::lib::Fn::ShflXor], 5) << "a butterfly over 32 lanes";
    for (auto &b : kern->allocs) EXPECT_NE(b->scope, ir::Scope::Shared) << b->name;
    auto a = randomData(4 * 64, 71);
    for (auto &e : a) e = std::round(e * 64) / 64; // exact sums in any order
    std::vector<double> y(4, std::nan("")), want(4, 0.0);
    for (int n = 0; n < 4; ++n)
        for (int k = 0; k < 64; ++k) want[(size_t)n] += a[(size_t)n * 64 + k];
    runLaunches(r, "k", {{"A", &a}, {"Y", &y}}, 1);
    expectNear(y, want, 0, "Y");
}

// Another combiner, in a loop (the scratch is written again each row: a barrier must keep the next row's
// writes after this row's reads), over coordinate 0 of threads=(4, 16) (groups of 4 neighbouring threads),
// and over both coordinates at once (the whole block) into a T.alloc_var.
TEST(LowerSimCompat, ThreadAllreduceMaxPerGroupInALoop) {
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(A: T.Tensor((3, 64), \"float32\"), G: T.Tensor((3, 16), \"float32\"), S: T.Tensor((3,), \"float32\")):\n"
          "    with T.Kernel(1, threads=(4, 16)) as bx:\n"
          "        i = T.get_thread_binding(0)\n"
          "        j = T.get_thread_binding(1)\n"
          "        m = T.alloc_local((1,), \"float32\")\n"
          "        s = T.alloc_var(\"float32\")\n"
          "        for row in T.serial(3):\n"
          "            with T.attr(T.comm_reducer(lambda a, b: T.max(a, b), [-T.infinity(\"float32\")]), \"reduce_scope\", 0):\n"
          "                T.tvm_thread_allreduce(T.uint32(1), A[row, j * 4 + i], True, m[0], i)\n"
          "            with T.attr(T.comm_reducer(lambda a, b: a + b, [0.0]), \"reduce_scope\", 0):\n"
          "                T.tvm_thread_allreduce(T.uint32(1), m[0], True, s, j, i)\n"
          "            if i == 3:\n"
          "                G[row, j] = m[0]\n"
          "            if i + j == 0:\n"
          "                S[row] = s\n",
          "t.tile", *Target::parse("sm_80"));
    auto a = randomData(3 * 64, 61);
    std::vector<double> g(3 * 16, std::nan("")), s(3, std::nan("")), wantG(3 * 16), wantS(3, 0.0);
    for (int row = 0; row < 3; ++row)
        for (int j = 0; j < 16; ++j) {
            double m = -INFINITY;
            for (int i = 0; i < 4; ++i) m = std::max(m, a[(size_t)row * 64 + j * 4 + i]);
            wantG[(size_t)row * 16 + j] = m, wantS[(size_t)row] += 4 * m;
        }
    runLaunches(r, "k", {{"A", &a}, {"G", &g}, {"S", &s}}, 1);
    expectNear(g, wantG, 0, "G");
    expectNear(s, wantS, 1e-5, "S");
}

// FlashAttention's backward dQ in small: a T.Layout on a global tensor places element (b, l, h, d) at the
// row-major offset of the layout's indices in its output shape. The first kernel adds into dQ element by
// element (as the backward kernel's atomics do), the second copies it out by tiles; both see dQ by its own
// shape, the memory holds it in the layout's order.
TEST(LowerSimCompat, GlobalTensorLayoutPlacesElements) {
    const int L = 16, H = 2, D = 16, N = L * H * D;
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "def dq_layout(dQ):\n"
          "    return T.Layout(dQ.shape, lambda b, l, h, d: [b, l // 8, h, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2])\n"
          "shape = (1, 16, 2, 16)\n"
          "@T.prim_func\n"
          "def scatter(X: T.Tensor(shape, \"float32\"), dQ: T.Tensor(shape, \"float32\")):\n"
          "    with T.Kernel(2, threads=128) as by:\n"
          "        T.annotate_layout({dQ: dq_layout(dQ)})\n"
          "        for i, j in T.Parallel(16, 16):\n"
          "            T.atomic_add(dQ[0, i, by, j], X[0, i, by, j])\n"
          "@T.prim_func\n"
          "def post(dQ: T.Tensor(shape, \"float32\"), Out: T.Tensor(shape, \"float16\")):\n"
          "    with T.Kernel(2, threads=64) as by:\n"
          "        T.annotate_layout({dQ: dq_layout(dQ)})\n"
          "        T.copy(dQ[0, 0:16, by, :], Out[0, 0:16, by, :])\n",
          "t.tile", *Target::parse("sm_80"));
    auto x = randomData(N, 21);
    std::vector<double> dq(N, 0.0), out(N, std::nan("")), placed(N, std::nan(""));
    runLaunches(r, "scatter", {{"X", &x}, {"dQ", &dq}}, 1);
    for (int l = 0; l < L; ++l)
        for (int h = 0; h < H; ++h)
            for (int d = 0; d < D; ++d) {
                // (1, 2, 2, 2, 2, 32): strides 256, 128, 64, 32, 1 for l // 8, h, d // 8, d % 2, the last index
                int at = l / 8 * 256 + h * 128 + d / 8 * 64 + d % 2 * 32 + 4 * (l % 8) + d % 8 / 2;
                placed[(size_t)at] = x[(size_t)((l * H + h) * D + d)];
            }
    expectNear(dq, placed, 0, "dQ");
    runLaunches(r, "post", {{"dQ", &dq}, {"Out", &out}}, 1);
    std::vector<double> want(N);
    for (int i = 0; i < N; ++i) want[(size_t)i] = (double)(float)x[(size_t)i];
    expectNear(out, want, 2e-3, "Out"); // float16
}

// TileKernels' row-strided inputs in small: T.StridedTensor[(M, 64), (stride, 1), ...] with a run-time stride
// reads row i at i * stride, whatever lies between the rows (NaN here) untouched; the output is dense.
TEST(LowerSimCompat, StridedTensorReadsRowsAtTheStride) {
    const int M = 5, N = 64, S = 80;
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "M = T.dynamic('M')\n"
          "stride = T.dynamic('stride')\n"
          "@T.prim_func\n"
          "def rows(x: T.StridedTensor[(M, 64), (stride, 1), T.float32], y: T.Tensor[(M, 64), T.float32]):\n"
          "    with T.Kernel(T.ceildiv(M, 4), threads=64) as bx:\n"
          "        for i, j in T.Parallel(4, 64):\n"
          "            y[bx * 4 + i, j] = x[bx * 4 + i, j] * 2.0\n",
          "t.tile", *Target::parse("sm_80"));
    auto x = randomData((size_t)(M - 1) * S + N, 31);
    for (int i = 0; i + 1 < M; ++i)
        for (int j = N; j < S; ++j) x[(size_t)(i * S + j)] = std::nan(""); // between the rows: never read
    std::vector<double> y((size_t)M * N, std::nan("")), want((size_t)M * N);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) want[(size_t)(i * N + j)] = (double)(float)(x[(size_t)(i * S + j)] * 2.0);
    runLaunches(r, "rows", {{"x", &x}, {"y", &y}}, 1, {{"M", M}, {"stride", S}});
    expectNear(y, want, 0, "y");
}

// mHC's post-mix in small (TileKernels' mhc_post, TileLang's example_mhc_post): a nest over (o, h) reads b[m, h]
// and d[h], slices that leave out the nest's first variable: every thread holds the columns h its iterations
// have, for every m, and reads them for each o.
TEST(LowerSimCompat, NestReadsSlicesWithoutItsFirstVariable) {
    const int R = 4, H = 256;
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def post(a: T.Tensor((4, 4), 'float32'), b: T.Tensor((4, 256), 'float32'), c: T.Tensor((4,), 'float32'),\n"
          "         d: T.Tensor((256,), 'float32'), x: T.Tensor((4, 256), 'float32')):\n"
          "    with T.Kernel(1, threads=64) as bx:\n"
          "        a_l = T.alloc_fragment((4, 4), 'float32')\n"
          "        b_l = T.alloc_fragment((4, 256), 'float32')\n"
          "        c_l = T.alloc_fragment((4,), 'float32')\n"
          "        d_l = T.alloc_fragment((256,), 'float32')\n"
          "        x_l = T.alloc_fragment((4, 256), 'float32')\n"
          "        T.copy(a, a_l)\n"
          "        T.copy(b, b_l)\n"
          "        T.copy(c, c_l)\n"
          "        T.copy(d, d_l)\n"
          "        for o, h in T.Parallel(4, 256):\n"
          "            x_l[o, h] = c_l[o] * d_l[h]\n"
          "            for m in T.serial(4):\n"
          "                x_l[o, h] += a_l[m, o] * b_l[m, h]\n"
          "        T.copy(x_l, x)\n",
          "t.tile", *Target::parse("sm_80"));
    auto a = randomData(R * R, 41), b = randomData(R * H, 42), c = randomData(R, 43), d = randomData(H, 44);
    std::vector<double> x(R * H, std::nan("")), want(R * H);
    for (int o = 0; o < R; ++o)
        for (int h = 0; h < H; ++h) {
            float v = (float)c[(size_t)o] * (float)d[(size_t)h];
            for (int m = 0; m < R; ++m) v += (float)a[(size_t)(m * R + o)] * (float)b[(size_t)(m * H + h)];
            want[(size_t)(o * H + h)] = v;
        }
    runLaunches(r, "post", {{"a", &a}, {"b", &b}, {"c", &c}, {"d", &d}, {"x", &x}}, 1);
    expectNear(x, want, 1e-5, "x");
    // b_l and d_l are spread over the threads (not held whole in every thread): 4 * 256 / 64 and 256 / 64 each.
    ASSERT_TRUE(r.lowered);
    for (auto &k : r.lowered->kernels)
        for (auto &buf : k->allocs) {
            if (buf->name == "b_l") EXPECT_EQ(buf->constElements(), 16);
            if (buf->name == "d_l") EXPECT_EQ(buf->constElements(), 4);
        }
}

// A dequantizing GEMM's unpacking in small (TileLang's example_dequant_gemm_fp4_hopper): a nest over (i, j) reads
// the packed fragment B[i, j // 2]. Both iterations of a pair sit in one thread's vector, which holds the pair's
// element of B, so B stays spread over the threads.
TEST(LowerSimCompat, NestReadsPackedFragmentByHalfItsColumn) {
    const int N = 64, K = 64;
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def unpack(B: T.Tensor((64, 32), 'float32'), C: T.Tensor((64, 64), 'float32')):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        B_l = T.alloc_fragment((64, 32), 'float32')\n"
          "        C_l = T.alloc_fragment((64, 64), 'float32')\n"
          "        T.copy(B, B_l)\n"
          "        for i, j in T.Parallel(64, 64):\n"
          "            C_l[i, j] = B_l[i, j // 2] * (j % 2 + 1)\n"
          "        T.copy(C_l, C)\n",
          "t.tile", *Target::parse("sm_80"));
    auto b = randomData(N * K / 2, 51);
    std::vector<double> c(N * K, std::nan("")), want(N * K);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < K; ++j) want[(size_t)(i * K + j)] = (float)b[(size_t)(i * K / 2 + j / 2)] * (float)(j % 2 + 1);
    runLaunches(r, "unpack", {{"B", &b}, {"C", &c}}, 1);
    expectNear(c, want, 0, "C");
    ASSERT_TRUE(r.lowered);
    for (auto &buf : r.lowered->kernels[0]->allocs)
        if (buf->name == "B_l") EXPECT_EQ(buf->constElements(), 16); // 64 * 32 / 128 per thread, not all 2048
}


// TileKernels' top-k gate in small: one-element reducers (`idx[0]`, `tot[0]`) fed by a one-variable nest under an
// `if` (the first index whose score passes, and the sum of those scores): an iteration whose condition fails
// contributes the reducer's own value (min) or 0 (sum).
TEST(LowerSimCompat, ConditionalOneElementReducers) {
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def pick(S: T.Tensor((256,), 'float32'), O: T.Tensor((2,), 'float32')):\n"
          "    with T.Kernel(1, threads=64) as bx:\n"
          "        s = T.alloc_fragment((256,), 'float32')\n"
          "        idx = T.alloc_reducer((1,), 'int32', 'min', replication='all')\n"
          "        tot = T.alloc_reducer((1,), 'float32', 'sum', replication='all')\n"
          "        T.copy(S, s)\n"
          "        T.fill(idx, 1000)\n"
          "        T.clear(tot)\n"
          "        for i in T.Parallel(256):\n"
          "            if s[i] > 0.5:\n"
          "                idx[0] = T.min(idx[0], i)\n"
          "        for i in T.Parallel(256):\n"
          "            if s[i] > 0.5:\n"
          "                tot[0] += s[i]\n"
          "        T.finalize_reducer(idx)\n"
          "        T.finalize_reducer(tot)\n"
          "        for i in T.Parallel(1):\n"
          "            O[0] = T.Cast('float32', idx[0])\n"
          "            O[1] = tot[0]\n",
          "t.tile", *Target::parse("sm_80"));
    auto s = randomData(256, 61);
    for (auto &x : s) x = std::fabs(x); // some above 0.5, some below
    std::vector<double> o(2, std::nan("")), want(2);
    double first = 1000, total = 0;
    for (int i = 0; i < 256; ++i)
        if ((float)s[(size_t)i] > 0.5f) first = std::min(first, (double)i), total += (float)s[(size_t)i];
    want[0] = first, want[1] = total;
    runLaunches(r, "pick", {{"S", &s}, {"O", &o}}, 1);
    expectNear(o, want, 1e-4, "O");
    EXPECT_LT(first, 1000); // the data has a score above 0.5
}

// TileKernels' mHC backward norm in small: a reducer updated once among the nest's other statements, directly and
// under an `if` with another store (the contributions of the iterations whose condition fails are filled with
// what leaves the reducer unchanged).
TEST(LowerSimCompat, ReducerUpdatedAmongOtherStatements) {
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(X: T.Tensor((256,), 'float32'), O: T.Tensor((256,), 'float32'), Y: T.Tensor((256,), 'float32'),\n"
          "      R: T.Tensor((2,), 'float32')):\n"
          "    with T.Kernel(1, threads=64) as bx:\n"
          "        x = T.alloc_fragment((256,), 'float32')\n"
          "        s = T.alloc_reducer((1,), 'float32', 'sum', replication='all')\n"
          "        m = T.alloc_reducer((1,), 'float32', 'max', replication='all')\n"
          "        T.copy(X, x)\n"
          "        T.clear(s)\n"
          "        T.fill(m, -100.0)\n"
          "        for i in T.Parallel(256):\n"
          "            O[i] = x[i] * 2.0\n"
          "            s[0] += x[i]\n"
          "        for i in T.Parallel(256):\n"
          "            if x[i] < 0.5:\n"
          "                Y[i] = x[i]\n"
          "                m[0] = T.max(m[0], x[i])\n"
          "        T.finalize_reducer(m)\n"
          "        T.finalize_reducer(s)\n"
          "        R_l = T.alloc_fragment((2,), 'float32')\n"
          "        for i in T.Parallel(2):\n"
          "            R_l[i] = T.if_then_else(i == 0, s[0], m[0])\n"
          "        T.copy(R_l, R)\n",
          "t.tile", *Target::parse("sm_80"));
    auto x = randomData(256, 71);
    std::vector<double> o(256, std::nan("")), y(256, 0.0), res(2, std::nan("")), wantO(256), wantY(256, 0.0), wantR(2);
    double sum = 0, mx = -100;
    for (int i = 0; i < 256; ++i) {
        float v = (float)x[(size_t)i];
        wantO[(size_t)i] = v * 2.0f, sum += v;
        if (v < 0.5f) wantY[(size_t)i] = v, mx = std::max(mx, (double)v);
    }
    wantR[0] = sum, wantR[1] = mx;
    runLaunches(r, "k", {{"X", &x}, {"O", &o}, {"Y", &y}, {"R", &res}}, 1);
    expectNear(o, wantO, 0, "O");
    expectNear(y, wantY, 0, "Y");
    expectNear(res, wantR, 1e-4, "R");
    EXPECT_GT(mx, -100); // some x is below 0.5
}

// TileKernels' mHC head-mix backward in small: two reducers updated in one 2-D nest under a bounds check, one per
// column (`base[j]`, over the rows) and one of a single element (`scale[0]`, over both variables: a reduction
// along the columns, then along the rows).
TEST(LowerSimCompat, TwoReducersInOneNestOneOverBothVariables) {
    const int Rows = 20, Cols = 4; // 20 of the nest's 32 rows are inside the tensor
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def mix(G: T.Tensor((20, 4), 'float32'), P: T.Tensor((5,), 'float32')):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        scale = T.alloc_reducer((1,), 'float32', 'sum', replication='all')\n"
          "        base = T.alloc_reducer((4,), 'float32', 'sum', replication='all')\n"
          "        T.clear(scale)\n"
          "        T.clear(base)\n"
          "        for i, j in T.Parallel(32, 4):\n"
          "            if i < 20:\n"
          "                scale[0] += G[i, j] * 2.0\n"
          "                base[j] += G[i, j]\n"
          "        T.finalize_reducer(scale)\n"
          "        T.finalize_reducer(base)\n"
          "        T.copy(scale, P[0:1])\n"
          "        T.copy(base, P[1:5])\n",
          "t.tile", *Target::parse("sm_80"));
    auto g = randomData(Rows * Cols, 81);
    std::vector<double> p(5, std::nan("")), want(5, 0.0);
    for (int i = 0; i < Rows; ++i)
        for (int j = 0; j < Cols; ++j) {
            want[0] += (float)g[(size_t)(i * Cols + j)] * 2.0f;
            want[(size_t)(1 + j)] += (float)g[(size_t)(i * Cols + j)];
        }
    runLaunches(r, "mix", {{"G", &g}, {"P", &p}}, 1);
    expectNear(p, want, 1e-4, "P");
}

} // namespace
