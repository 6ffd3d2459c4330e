/// \file
/// What TileLang's own programs need beyond the core language: prim_funcs of several launches with
/// T.alloc_global workspaces, views of a tensor's data (T.Tensor(shape, dtype, X.data)), T.im2col, fragments
/// read by slices (`lse[k, j]` in a nest over j), copies of a constant part of a T.gemm accumulator and TVM's
/// cross-thread reduction (T.tvm_thread_allreduce);
/// lowered for sm_80 and run on the CPU simulator
/// (src/sim/Simulator.h) launch after launch against float64 references: the numbers the GPU would give, since
/// these lowerings cannot be checked on a device here.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;
using tilec::simtest::expectNear;
using tilec::simtest::randomData;

namespace {

/// Runs every launch of exported kernel `name`, in order, on the same memory (workspaces included).
void runLaunches(const LowerRun &r, const std::string &name, std::map<std::string, std::vector<double> *> tensors,
                 int expectedLaunches, const std::map<std::string, double> &scalars = {}) {
    ASSERT_TRUE(r.lowered) << r.diags();
    int launches = 0;
    for (auto &k : r.lowered->kernels) {
        if (k->name != name) continue;
        EXPECT_EQ(k->part, launches);
        ++launches;
        Simulator s(*k, tensors, scalars);
        try {
            s.run();
        } catch (const simtest::SimError &e) {
            FAIL() << "launch " << launches << ": " << e.what();
        }
        for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    }
    EXPECT_EQ(launches, expectedLaunches);
}

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
            EXPECT_EQ(calls["tilec.wgmma_ss"], 1);
            EXPECT_EQ(calls["tilec.gemm_ss"], 0);
            EXPECT_EQ(calls["tilec.swz_panels"] > 0, tile != "64, 128, 64") << "the im2col tile's stores";
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

} // namespace

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
