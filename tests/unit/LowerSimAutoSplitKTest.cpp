/// \file
/// Split-K chosen by tilec (passes::splitK, issue 27): a GEMM written the usual way whose output tiles leave
/// the GPU idle becomes two launches (partials into a workspace, a fixed-order sum), lowered for sm_90a (warp
/// roles, TMA, wgmma) and sm_80 (cp.async, mma.sync) and run on the CPU simulator launch after launch on the
/// same memory, against float64 references: K not a multiple of the tile, splits of unequal length (the trip
/// count a function of the split), bit-identical results under other interleavings; and the kernels it must
/// leave alone.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRPrinter.h"
#include "tilec/passes/SplitK.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace tilec;
using tilec::simtest::Simulator;

namespace {

/// The seed's GEMM with small tiles (a size may be `T.dynamic("K")`).
std::string gemmSource(const std::string &m, const std::string &n, const std::string &k, const std::string &out = "float16") {
    return "import tilelang.language as T\n"
           "M = " + m + "\nN = " + n + "\nK = " + k + "\n"
           "@T.prim_func\n"
           "def g(A: T.Tensor((M, K), \"float16\"), B: T.Tensor((K, N), \"float16\"), C: T.Tensor((M, N), \"" + out + "\")):\n"
           "    with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):\n"
           "        A_s = T.alloc_shared((64, 64), \"float16\")\n"
           "        B_s = T.alloc_shared((64, 64), \"float16\")\n"
           "        acc = T.alloc_fragment((64, 64), \"float\")\n"
           "        T.clear(acc)\n"
           "        for ko in T.Pipelined(T.ceildiv(K, 64), num_stages=2):\n"
           "            T.copy(A[by * 64, ko * 64], A_s)\n"
           "            T.copy(B[ko * 64, bx * 64], B_s)\n"
           "            T.gemm(A_s, B_s, acc)\n"
           "        T.copy(acc, C[by * 64, bx * 64])\n";
}

/// The front end, split-K for a GPU of `sms` SMs, then lower() for `arch` (clusters off: the simulator runs
/// one block at a time).
struct SplitRun {
    evaltest::EvalRun front;
    std::optional<ir::Program> split, lowered;
    SplitRun(const std::string &src, const char *arch, int sms, bool splitK = true) {
        Variant v{Target::parse(arch)->withSmCount(sms), {}};
        v.options.clusters = false;
        v.options.splitK = splitK;
        front.run(src, "t.tile");
        if (!front.program || front.diag.hasErrors()) return;
        split = passes::splitK(*front.program, {v.target}, v.options);
        PassContext ctx;
        ctx.diag = &front.diag;
        ir::Program p = lower(*split, v, ctx);
        if (!front.diag.hasErrors()) lowered = std::move(p);
    }
};

/// Runs every launch of `r` in order on the same memory (the workspace filled with NaN) and returns C.
std::vector<double> run(const SplitRun &r, int M, int N, int K, const std::vector<double> &a, const std::vector<double> &b,
                        uint64_t seed = 0) {
    std::vector<double> c((size_t)M * N, std::nan("")), a2 = a, b2 = b, ws;
    const auto &ks = r.lowered->kernels;
    if (ks.size() == 2) ws.assign((size_t)*ir::constInt(ks[0]->grid[2]) * M * N, std::nan(""));
    for (auto &k : ks) {
        if (k->part == 1) {
            int unwritten = 0;
            for (double x : ws) unwritten += std::isnan(x);
            EXPECT_EQ(unwritten, 0) << "K " << K << ": partials the first launch did not write";
        }
        Simulator s(*k, {{"A", &a2}, {"B", &b2}, {"C", &c}, {"splitk_partials", &ws}}, {}, seed);
        try {
            s.run();
        } catch (const simtest::SimError &e) {
            ADD_FAILURE() << "K " << K << ": launch " << k->part << ": " << e.what();
        }
        for (auto &race : s.races) ADD_FAILURE() << "launch " << k->part << ": race: " << race;
    }
    EXPECT_EQ(a2, a) << "A changed";
    EXPECT_EQ(b2, b) << "B changed";
    return c;
}

std::vector<double> reference(int M, int N, int K, const std::vector<double> &a, const std::vector<double> &b) {
    std::vector<double> ref((size_t)M * N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int k = 0; k < K; ++k) ref[(size_t)i * N + j] += a[(size_t)i * K + k] * b[(size_t)k * N + j];
    return ref;
}

/// Quarters: every partial sum is exact in float32, so C is the float64 reference rounded once to float16.
void expectExact(const SplitRun &r, int M, int N, int K) {
    auto a = simtest::quarters((size_t)M * K, 1), b = simtest::quarters((size_t)K * N, 2);
    auto ref = reference(M, N, K, a, b);
    auto got = run(r, M, N, K, a, b);
    int wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        double want = simtest::roundToDType(DType(DType::Float16), ref[i]);
        if (!(got[i] == want) && wrong++ < 5)
            ADD_FAILURE() << "K " << K << ": C[" << i / N << ", " << i % N << "] = " << got[i] << ", expected " << want;
    }
}

int64_t splitsOf(const SplitRun &r) {
    if (!r.lowered || r.lowered->kernels.size() != 2) return 1;
    return ir::constInt(r.lowered->kernels[0]->grid[2]).value_or(-1);
}

} // namespace

// 16 x 192 x 1000 on 64 x 64 x 64 tiles: 3 output tiles on a GPU of 16 SMs, 16 K blocks (the last 40 wide):
// the fewest divisors of 16 that make a wave (6) with 4 or more K blocks each: 8 would leave 2, so 4 splits.
TEST(SimAutoSplitK, StaticRaggedKHopperAndAmpere) {
    for (const char *arch : {"sm_90a", "sm_80"}) {
        SplitRun r(gemmSource("16", "192", "1000"), arch, 16);
        ASSERT_TRUE(r.lowered) << r.front.diags();
        ASSERT_EQ(splitsOf(r), 4) << arch;
        EXPECT_EQ(r.lowered->kernels[0]->part, 0);
        EXPECT_EQ(r.lowered->kernels[1]->part, 1);
        if (std::string(arch) == "sm_90a") EXPECT_GT(r.lowered->kernels[0]->producerThreads, 0) << "no warp roles";
        expectExact(r, 16, 192, 1000);
    }
}

// 13 K blocks, a prime: no divisor splits them, so 3 splits of 5, 5 and 3 K blocks (the last 54 wide).
TEST(SimAutoSplitK, StaticUnevenSplits) {
    for (const char *arch : {"sm_90a", "sm_80"}) {
        SplitRun r(gemmSource("16", "192", "822"), arch, 132);
        ASSERT_TRUE(r.lowered) << r.front.diags();
        ASSERT_EQ(splitsOf(r), 3) << arch;
        expectExact(r, 16, 192, 822);
    }
}

// Values that round in float32: other interleavings of the roles give the same bits, close to float64.
TEST(SimAutoSplitK, BitIdenticalUnderOtherInterleavings) {
    const int M = 16, N = 128, K = 1000;
    SplitRun r(gemmSource("16", "128", "1000"), "sm_90a", 8);
    ASSERT_TRUE(r.lowered) << r.front.diags();
    ASSERT_EQ(splitsOf(r), 4); // 2 tiles on 8 SMs, 16 K blocks
    auto a = simtest::randomData((size_t)M * K, 5), b = simtest::randomData((size_t)K * N, 6);
    auto first = run(r, M, N, K, a, b, 0);
    for (uint64_t seed : {1, 2}) {
        auto again = run(r, M, N, K, a, b, seed);
        EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(double)), 0) << "seed " << seed;
    }
    simtest::expectNear(first, reference(M, N, K, a, b), 2e-3, "C");
}

// Kernels split-K leaves alone: tiles that fill more than half the GPU, T.dynamic M (a run-time tile count),
// T.dynamic K (partials' traffic that cannot be weighed at compile time),
// 7 K blocks (too few for two splits of 4), partials that would cost more than half the operands' bytes
// (a square GEMM), --no-split-k.
TEST(SimAutoSplitK, LeftAlone) {
    SplitRun full(gemmSource("192", "256", "1024"), "sm_90a", 16); // 12 tiles on 16 SMs
    ASSERT_TRUE(full.split);
    EXPECT_EQ(full.split->kernels.size(), 1u);
    SplitRun dynM(gemmSource("T.dynamic(\"M\")", "192", "1024"), "sm_90a", 132);
    ASSERT_TRUE(dynM.split);
    EXPECT_EQ(dynM.split->kernels.size(), 1u);
    SplitRun dynK(gemmSource("16", "192", "T.dynamic(\"K\")"), "sm_90a", 132);
    ASSERT_TRUE(dynK.split);
    EXPECT_EQ(dynK.split->kernels.size(), 1u);
    SplitRun prime(gemmSource("16", "192", "448"), "sm_90a", 132);
    ASSERT_TRUE(prime.split);
    EXPECT_EQ(prime.split->kernels.size(), 1u);
    SplitRun square(gemmSource("256", "256", "1024"), "sm_90a", 132); // 16 tiles, 1 MiB of operands
    ASSERT_TRUE(square.split);
    EXPECT_EQ(square.split->kernels.size(), 1u);
    SplitRun off(gemmSource("16", "192", "1024"), "sm_90a", 132, false);
    ASSERT_TRUE(off.split);
    EXPECT_EQ(off.split->kernels.size(), 1u);
    SplitRun on(gemmSource("16", "192", "1024"), "sm_90a", 132);
    ASSERT_TRUE(on.split);
    EXPECT_EQ(on.split->kernels.size(), 2u);
}
