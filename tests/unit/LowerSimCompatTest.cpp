/// \file
/// What TileLang's own programs need beyond the core language: prim_funcs of several launches with
/// T.alloc_global workspaces, views of a tensor's data (T.Tensor(shape, dtype, X.data)), T.im2col, fragments
/// read by slices (`lse[k, j]` in a nest over j), copies of a constant part of a T.gemm accumulator, run-time
/// `while` loops and warp shuffles; lowered for sm_80 (and sm_90a) and run on the CPU simulator
/// (src/sim/Simulator.h) launch after launch against float64 references: the numbers the GPU would give, since
/// these lowerings cannot be checked on a device here. Reductions, reducers and placed elements are in
/// LowerSimCompatLayoutsTest.cpp.
#include "LowerSimUtil.h"

#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using namespace tilec::simtest;
using tilec::lowertest::LowerRun;

namespace {

// Split-KV decoding's shape in small: partial sums of squares into a workspace, then a combine launch; the
// first launch reads its input through a 2-D view of a 3-D tensor.
TEST(LowerSimCompat, SplitThenCombineThroughWorkspace) {
    const int n = 100, splits = 3, width = 32;
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "def row_norms(n, splits, width, block=64):\n"
          "    @T.prim_func\n"
          "    def main(A: T.Tensor((n, splits, width), \"float32\"), Out: T.Tensor((n,), \"float32\")):\n"
          "        partial = T.alloc_global((n, splits), \"float32\")\n"
          "        with T.Kernel(T.ceildiv(n, block), splits, threads=128) as (bx, by):\n"
          "            A2 = T.Tensor((n, splits * width), \"float32\", A.data)\n"
          "            tile = T.alloc_fragment((block, width), \"float32\")\n"
          "            sums = T.alloc_fragment((block,), \"float32\")\n"
          "            for i, j in T.Parallel(block, width):\n"
          "                tile[i, j] = A2[bx * block + i, by * width + j] * A2[bx * block + i, by * width + j]\n"
          "            T.reduce_sum(tile, sums, dim=1)\n"
          "            for i in T.Parallel(block):\n"
          "                partial[bx * block + i, by] = sums[i]\n"
          "        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:\n"
          "            acc = T.alloc_fragment((block,), \"float32\")\n"
          "            T.clear(acc)\n"
          "            for k in T.serial(splits):\n"
          "                for i in T.Parallel(block):\n"
          "                    acc[i] += partial[bx * block + i, k]\n"
          "            for i in T.Parallel(block):\n"
          "                Out[bx * block + i] = T.sqrt(acc[i])\n"
          "    return main\n"
          "norms = row_norms(100, 3, 32)\n",
          "t.tile", *Target::parse("sm_80"));
    auto a = randomData((size_t)n * splits * width, 11);
    std::vector<double> out(n, std::nan("")), partial((size_t)n * splits, std::nan("")), want(n);
    for (int i = 0; i < n; ++i) {
        double s = 0;
        for (int j = 0; j < splits * width; ++j) s += a[(size_t)i * splits * width + j] * a[(size_t)i * splits * width + j];
        want[i] = std::sqrt(s);
    }
    // The view is the same memory as its tensor.
    runLaunches(r, "norms", {{"A", &a}, {"A2", &a}, {"Out", &out}, {"partial", &partial}}, 2);
    expectNear(out, want, 1e-5, "Out");
}

// TileLang's convolution example in small (N, H, W, C) = (2, 5, 6, 8), a 3x3 filter with padding 1 and
// stride 1, and with stride 2 and dilation 2: T.im2col tiles times the filter viewed as a matrix, the output
// written through a view. The last column tile runs past KH * KW * C and the last pixel tile past N * OH * OW.
/// `arch`, `tile` (block_M, block_N, block_K): the target and the tiles. Returns how often the kernel calls
/// each device-library function.
std::map<std::string, int> convolutionCase(int S, int D, int P, int C = 8, const char *arch = "sm_80", const std::string &tile = "32, 16, 32") {
    const int N = 2, H = 5, W = 6, F = 16, K = 3;
    const int OH = (H + 2 * P - D * (K - 1) - 1) / S + 1, OW = (W + 2 * P - D * (K - 1) - 1) / S + 1;
    std::string args = std::to_string(S) + ", " + std::to_string(D) + ", " + std::to_string(P);
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "def convolution(N, C, H, W, F, K, S, D, P, block_M, block_N, block_K):\n"
          "    KH, KW = K, K\n"
          "    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1\n"
          "    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1\n"
          "    @T.prim_func\n"
          "    def main(data: T.Tensor((N, H, W, C), \"float16\"), kernel: T.Tensor((KH, KW, C, F), \"float16\"),\n"
          "             out: T.Tensor((N, OH, OW, F), \"float16\")):\n"
          "        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=128) as (bx, by):\n"
          "            data_shared = T.alloc_shared((block_M, block_K), \"float16\")\n"
          "            kernel_shared = T.alloc_shared((block_K, block_N), \"float16\")\n"
          "            out_local = T.alloc_fragment((block_M, block_N), \"float\")\n"
          "            kernel_flat = T.Tensor((KH * KW * C, F), \"float16\", kernel.data)\n"
          "            out_flat = T.Tensor((N * OH * OW, F), \"float16\", out.data)\n"
          "            T.clear(out_local)\n"
          "            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=2):\n"
          "                T.im2col(data, data_shared, by, k_iter, KH, S, D, P)\n"
          "                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)\n"
          "                T.gemm(data_shared, kernel_shared, out_local)\n"
          "            T.copy(out_local, out_flat[by * block_M, bx * block_N])\n"
          "    return main\n"
          "conv = convolution(2, " + std::to_string(C) + ", 5, 6, 16, 3, " + args + ", " + tile + ")\n",
          "t.tile", *Target::parse(arch));
    auto img = randomData((size_t)N * H * W * C, 21), filt = randomData((size_t)K * K * C * F, 22);
    // Multiples of 1/64 below 2 in magnitude are float16 values: the products are exact, only sums round.
    for (auto &x : img) x = std::round(x * 64) / 64;
    for (auto &x : filt) x = std::round(x * 64) / 64;
    std::vector<double> out((size_t)N * OH * OW * F, std::nan("")), want(out.size(), 0.0), bound(out.size(), 0.0);
    for (int n = 0; n < N; ++n)
        for (int oh = 0; oh < OH; ++oh)
            for (int ow = 0; ow < OW; ++ow)
                for (int f = 0; f < F; ++f) {
                    size_t o = (((size_t)n * OH + oh) * OW + ow) * F + f;
                    for (int kh = 0; kh < K; ++kh)
                        for (int kw = 0; kw < K; ++kw) {
                            int h = oh * S - P + kh * D, w = ow * S - P + kw * D;
                            if (h < 0 || h >= H || w < 0 || w >= W) continue;
                            for (int c = 0; c < C; ++c) {
                                double p = img[(((size_t)n * H + h) * W + w) * C + c] * filt[(((size_t)kh * K + kw) * C + c) * F + f];
                                want[o] += p;
                                bound[o] += std::fabs(p);
                            }
                        }
                }
    runLaunches(r, "conv", {{"data", &img}, {"kernel", &filt}, {"kernel_flat", &filt}, {"out", &out}, {"out_flat", &out}}, 1);
    // docs/INTERFACE.md's GEMM rule for float16 operands, the output rounded to float16.
    double u = std::ldexp(1.0, -11);
    for (size_t i = 0; i < out.size(); ++i)
        EXPECT_LE(std::fabs(out[i] - want[i]), 4 * u * bound[i] + u * std::fabs(want[i]) + 1e-12)
            << "out[" << i << "] = " << out[i] << ", want " << want[i];
    struct Calls : ir::IRVisitor {
        using IRVisitor::visit;
        std::map<std::string, int> n;
        void visit(const ir::Call &c) override { ++n[c.name], IRVisitor::visit(c); }
    } calls;
    if (const ir::Kernel *k = r.kernel("conv")) calls.visit(k->body);
    return calls.n;
}

TEST(LowerSimCompat, ConvolutionThroughIm2colAndViews) { convolutionCase(1, 1, 1); }
TEST(LowerSimCompat, ConvolutionStrideAndDilation) { convolutionCase(2, 2, 2); }
// 8 channels a pixel are one 16-byte vector of the gather (one test of the padding per vector, VectorizeAccesses'
// LaneSplit); 4 are not (a vector spans two pixels: element by element), nor 12 (vectors cross pixels).
TEST(LowerSimCompat, ConvolutionChannelsAcrossVectors) {
    convolutionCase(1, 1, 1, 4);
    convolutionCase(2, 1, 1, 12);
    convolutionCase(1, 1, 1, 16);
}
// sm_90a: the cp.async path's products on wgmma, the tiles whose rows are wider than 128 bytes in the panel
// layout (64-column panels): the filter tile's 256-byte rows filled by the transfers, and with block_K = 128 the
// im2col tile's too, filled by the threads' own (vector) stores through tilec.swz_panels.
TEST(LowerSimCompat, ConvolutionOnWgmmaOverPanels) {
    for (std::string tile : {"64, 128, 64", "64, 128, 128", "64, 64, 192"}) {
        SCOPED_TRACE(tile);
        for (auto calls : {convolutionCase(1, 1, 1, 16, "sm_90a", tile), convolutionCase(2, 2, 2, 24, "sm_90a", tile)}) {
            // one per copy of the K loop: splitUniformConditions splits it where im2col's `k * BK + j < K` holds
            // for the whole tile (where the tile's depth does not divide K), the last block keeping the check
            EXPECT_TRUE(calls["tilec.wgmma_ss"] == 1 || calls["tilec.wgmma_ss"] == 2) << calls["tilec.wgmma_ss"];
            EXPECT_EQ(calls["tilec.gemm_ss"], 0);
            // (mapped whole, or split by splitSwizzles into the thread's part and the unrolled loops')
            EXPECT_EQ(calls["tilec.swz_panels"] + calls["tilec.swz_panels_split"] > 0, tile != "64, 128, 64") << "the im2col tile's stores";
        }
    }
}

// Split-KV decoding's combine step: an (8, 128) fragment of per-split values read a split at a time inside a
// serial loop (lse[k, j] in a T.Parallel over j), each thread holding whole columns; and the first rows of a
// T.gemm accumulator copied out (acc[:16, :]) with the accumulator in its tensor-core layout.
TEST(LowerSimCompat, FragmentSlicesAndAccumulatorPart) {
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def k(L: T.Tensor((8, 128), \"float32\"), O: T.Tensor((128,), \"float32\"), A: T.Tensor((64, 32), \"float16\"),\n"
          "      B: T.Tensor((32, 64), \"float16\"), C: T.Tensor((16, 64), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        lse = T.alloc_fragment((8, 128), \"float32\")\n"
          "        acc = T.alloc_fragment((128,), \"float32\")\n"
          "        a = T.alloc_shared((64, 32), \"float16\")\n"
          "        b = T.alloc_shared((32, 64), \"float16\")\n"
          "        c = T.alloc_fragment((64, 64), \"float32\")\n"
          "        T.copy(L, lse)\n"
          "        T.clear(acc)\n"
          "        for s in T.serial(8):\n"
          "            for j in T.Parallel(128):\n"
          "                acc[j] += T.exp2(lse[s, j])\n"
          "        T.copy(acc, O)\n"
          "        T.copy(A, a)\n"
          "        T.copy(B, b)\n"
          "        T.gemm(a, b, c, clear_accum=True)\n"
          "        T.copy(c[:16, :], C)\n",
          "t.tile", *Target::parse("sm_80"));
    auto l = randomData(8 * 128, 31), a = randomData(64 * 32, 32), b = randomData(32 * 64, 33);
    for (auto *v : {&a, &b})
        for (auto &x : *v) x = std::round(x * 64) / 64; // float16 values: exact products
    std::vector<double> o(128, std::nan("")), c(16 * 64, std::nan("")), wantO(128, 0.0), wantC(16 * 64, 0.0);
    for (int j = 0; j < 128; ++j)
        for (int s = 0; s < 8; ++s) wantO[j] += std::exp2(l[s * 128 + j]);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 64; ++j)
            for (int q = 0; q < 32; ++q) wantC[i * 64 + j] += a[i * 32 + q] * b[q * 64 + j];
    runLaunches(r, "k", {{"L", &l}, {"O", &o}, {"A", &a}, {"B", &b}, {"C", &c}}, 1);
    expectNear(o, wantO, 1e-5, "O");
    expectNear(c, wantC, 1e-5, "C");
}

// Split-KV decoding's combine as TileLang's GQA and MHA decoding examples write it: the log-sum-exps of every
// split in an (S, 128) fragment, their maximum over the splits by T.reduce_max(dim=0), then nests over the 128
// heads reading one split at a time (lse[k, j]) next to that maximum. Holding the maximum whole in every thread
// would make those nests run whole in every thread, and lse with them (too big for registers): the reduction's
// result is spread over the threads like the nests, each thread folding its own column. `sums`, reduced along
// the splits from a fragment spread differently (4-wide, two threads per column), reaches its own layout
// through shared memory.
TEST(LowerSimCompat, SplitCombineSpreadsReductionResult) {
    for (int threads : {128, 64}) {
        LowerRun r;
        r.run("import tilelang.language as T\n"
              "def combine(S, threads):\n"
              "    @T.prim_func\n"
              "    def main(L: T.Tensor((S, 128), \"float32\"), P: T.Tensor((S, 128), \"float32\"),\n"
              "             O: T.Tensor((128,), \"float32\"), W: T.Tensor((4, 256), \"float32\"),\n"
              "             Ws: T.Tensor((256,), \"float32\")):\n"
              "        with T.Kernel(1, threads=threads) as bx:\n"
              "            lse = T.alloc_fragment((S, 128), \"float32\")\n"
              "            mx = T.alloc_fragment((128,), \"float32\")\n"
              "            logsum = T.alloc_fragment((128,), \"float32\")\n"
              "            scale = T.alloc_fragment((128,), \"float32\")\n"
              "            acc = T.alloc_fragment((128,), \"float32\")\n"
              "            w = T.alloc_fragment((4, 256), \"float32\")\n"
              "            sums = T.alloc_fragment((256,), \"float32\")\n"
              "            for k, j in T.Parallel(S, 128):\n"
              "                lse[k, j] = L[k, j]\n"
              "            T.reduce_max(lse, mx, dim=0, clear=True)\n"
              "            T.clear(logsum)\n"
              "            T.clear(acc)\n"
              "            for k in T.serial(S):\n"
              "                for j in T.Parallel(128):\n"
              "                    logsum[j] += T.exp2(lse[k, j] - mx[j])\n"
              "            for j in T.Parallel(128):\n"
              "                logsum[j] = T.log2(logsum[j]) + mx[j]\n"
              "            for k in T.serial(S):\n"
              "                for j in T.Parallel(128):\n"
              "                    scale[j] = T.exp2(lse[k, j] - logsum[j])\n"
              "                for i in T.Parallel(128):\n"
              "                    acc[i] += P[k, i] * scale[i]\n"
              "            T.copy(acc, O)\n"
              "            T.copy(W, w)\n"
              "            T.fill(sums, 1.0)\n"
              "            T.reduce_sum(w, sums, dim=0, clear=False)\n"
              "            T.copy(sums, Ws)\n"
              "    return main\n"
              "k = combine(8, " + std::to_string(threads) + ")\n",
              "t.tile", *Target::parse("sm_80"));
        ASSERT_TRUE(r.lowered) << r.diags();
        const int S = 8;
        auto l = randomData(S * 128, 51), p = randomData(S * 128, 52), w = randomData(4 * 256, 53);
        std::vector<double> o(128, std::nan("")), ws(256, std::nan("")), wantO(128, 0.0), wantWs(256, 1.0);
        for (int j = 0; j < 128; ++j) {
            double m = -INFINITY, sum = 0;
            for (int k = 0; k < S; ++k) m = std::max(m, l[k * 128 + j]);
            for (int k = 0; k < S; ++k) sum += std::exp2(l[k * 128 + j] - m);
            double ls = std::log2(sum) + m;
            for (int k = 0; k < S; ++k) wantO[j] += p[k * 128 + j] * std::exp2(l[k * 128 + j] - ls);
        }
        for (int j = 0; j < 256; ++j)
            for (int k = 0; k < 4; ++k) wantWs[j] += w[k * 256 + j];
        runLaunches(r, "k", {{"L", &l}, {"P", &p}, {"O", &o}, {"W", &w}, {"Ws", &ws}}, 1);
        expectNear(o, wantO, 1e-5, "O");
        expectNear(ws, wantWs, 1e-5, "Ws");
    }
}

// Stream-K's walk in small: each of 4 blocks takes 40 of the 160 rows, in pieces that end at a tile boundary
// (tiles of 24 rows) or at its share's end, summing each piece's rows through shared memory and adding the sum
// to its tile's row of C atomically (tiles shared between blocks get two pieces). The `while` on the run-time
// condition start < last carries start in a per-thread buffer; the barriers inside it, and the result.
TEST(LowerSimCompat, WhileLoopWalksRunTimePieces) {
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def walk(A: T.Tensor((160, 32), \"float32\"), C: T.Tensor((7, 32), \"float32\")):\n"
          "    with T.Kernel(4, threads=64) as pid:\n"
          "        s = T.alloc_shared((1, 32), \"float32\")\n"
          "        acc = T.alloc_fragment((32,), \"float32\")\n"
          "        start = T.alloc_fragment((1,), T.int32, \"local\")\n"
          "        end = T.alloc_fragment((1,), T.int32, \"local\")\n"
          "        start[0] = pid * 40\n"
          "        last = (pid + 1) * 40\n"
          "        while start[0] < last:\n"
          "            end[0] = T.min(start[0] + (24 - start[0] % 24), last)\n"
          "            tile = start[0] // 24\n"
          "            T.clear(acc)\n"
          "            for k in T.serial(end[0] - start[0]):\n"
          "                T.copy(A[start[0] + k, 0], s)\n"
          "                for j in T.Parallel(32):\n"
          "                    acc[j] += s[0, j]\n"
          "            for j in T.Parallel(32):\n"
          "                T.atomic_add(C[tile, j], acc[j])\n"
          "            start[0] = end[0]\n",
          "t.tile", *Target::parse("sm_80"));
    auto a = randomData(160 * 32, 61);
    std::vector<double> c(7 * 32, 0.0), want(7 * 32, 0.0);
    for (int i = 0; i < 160; ++i)
        for (int j = 0; j < 32; ++j) want[(i / 24) * 32 + j] += a[i * 32 + j];
    runLaunches(r, "walk", {{"A", &a}, {"C", &c}}, 1);
    expectNear(c, want, 1e-5, "C");
}

// T.tvm_warp_shuffle as TileLang's Hadamard example uses it: a butterfly over the lanes of each warp (lane
// tx ^ 2^i, the lower lane keeping the sum, the upper the difference) is the Walsh-Hadamard transform of every
// 32 consecutive values; with width 16 the lanes 16-31 form their own group, so two rounds stay in a half-warp.
TEST(LowerSimCompat, WarpShuffleButterfly) {
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "def wht(n, rounds, width):\n"
          "    @T.prim_func\n"
          "    def main(A: T.Tensor((n,), \"float32\"), B: T.Tensor((n,), \"float32\")):\n"
          "        with T.Kernel(n // 64, threads=64) as bx:\n"
          "            tx = T.get_thread_binding(0)\n"
          "            local = T.alloc_local((1,), \"float32\")\n"
          "            other = T.alloc_local((1,), \"float32\")\n"
          "            local[0] = A[bx * 64 + tx]\n"
          "            for i in T.serial(rounds):\n"
          "                other[0] = T.tvm_warp_shuffle(0xFFFFFFFF, local[0], (tx ^ (1 << i)) % width, width, 32)\n"
          "                local[0] = T.if_then_else(((tx >> i) & 1) == 0, local[0] + other[0], other[0] - local[0])\n"
          "            B[bx * 64 + tx] = local[0]\n"
          "    return main\n"
          "full = wht(128, 5, 32)\n"
          "halves = wht(128, 2, 16)\n",
          "t.tile", *Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    for (auto [name, rounds] : {std::pair<const char *, int>{"full", 5}, {"halves", 2}}) {
        auto a = randomData(128, 31);
        std::vector<double> b(128, std::nan("")), want = a;
        for (int h = 1; h < (1 << rounds); h *= 2)
            for (int j = 0; j < 128; ++j)
                if (!(j & h)) {
                    double x = want[j], y = want[j + h];
                    want[j] = x + y, want[j + h] = x - y;
                }
        runLaunches(r, name, {{"A", &a}, {"B", &b}}, 1);
        expectNear(b, want, 1e-5, name); // float32 sums
    }
}

} // namespace
