/// \file
/// Two one-warpgroup GEMM tiles to a block (passes::widenGemmTiles, issue 27's seed gemm.tile as written): the
/// seed's 128x128 tile on 128 threads widened to 128x256 on 256 (two consumer warpgroups), lowered for sm_90a
/// (warp roles, TMA, wgmma m64n256) and run on the CPU simulator against float64 references: K not a multiple of
/// the tile, B stored (K, N) and (N, K), the same bits as the narrow kernel under other interleavings; and the
/// kernels it must leave alone.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/passes/WidenGemmTiles.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace tilec;
using tilec::simtest::Simulator;

namespace {

/// The seed's GEMM (128x128x64, 3 stages, 128 threads), B stored (N, K) where `nt`.
std::string seedSource(int m, int n, int k, bool nt = false, int threads = 128, int blockN = 128) {
    const std::string bn = std::to_string(blockN);
    return "import tilelang.language as T\n"
           "M = " + std::to_string(m) + "\nN = " + std::to_string(n) + "\nK = " + std::to_string(k) + "\n"
           "@T.prim_func\n"
           "def g(A: T.Tensor((M, K), \"float16\"), B: T.Tensor(" + std::string(nt ? "(N, K)" : "(K, N)") +
           ", \"float16\"), C: T.Tensor((M, N), \"float16\")):\n"
           "    with T.Kernel(T.ceildiv(N, " + bn + "), T.ceildiv(M, 128), threads=" + std::to_string(threads) + ") as (bx, by):\n"
           "        A_s = T.alloc_shared((128, 64), \"float16\")\n"
           "        B_s = T.alloc_shared(" + std::string(nt ? "(" + bn + ", 64)" : "(64, " + bn + ")") + ", \"float16\")\n"
           "        acc = T.alloc_fragment((128, " + bn + "), \"float\")\n"
           "        T.clear(acc)\n"
           "        for ko in T.Pipelined(T.ceildiv(K, 64), num_stages=3):\n"
           "            T.copy(A[by * 128, ko * 64], A_s)\n" +
           std::string(nt ? "            T.copy(B[bx * " + bn + ", ko * 64], B_s)\n"
                          : "            T.copy(B[ko * 64, bx * " + bn + "], B_s)\n") +
           "            T.gemm(A_s, B_s, acc" + std::string(nt ? ", transpose_B=True" : "") + ")\n"
           "        T.copy(acc, C[by * 128, bx * " + bn + "])\n";
}

/// The front end, widenGemmTiles for a GPU of `sms` SMs, then lower() for sm_90a (clusters off: the simulator
/// runs one block at a time).
struct WideRun {
    evaltest::EvalRun front;
    std::optional<ir::Program> wide, lowered;
    WideRun(const std::string &src, int sms, bool widen = true) {
        Variant v{Target::parse("sm_90a")->withSmCount(sms), {}};
        v.options.clusters = false;
        v.options.widenGemmTiles = widen;
        front.run(src, "t.tile");
        if (!front.program || front.diag.hasErrors()) return;
        wide = passes::widenGemmTiles(*front.program, {v.target}, v.options);
        PassContext ctx;
        ctx.diag = &front.diag;
        ir::Program p = lower(*wide, v, ctx);
        if (!front.diag.hasErrors()) lowered = std::move(p);
    }
    int threads() const { return wide ? wide->kernels[0]->threads : 0; }
};

std::vector<double> run(const WideRun &r, int M, int N, const std::vector<double> &a, const std::vector<double> &b,
                        uint64_t seed = 0) {
    std::vector<double> c((size_t)M * N, std::nan("")), a2 = a, b2 = b;
    Simulator s(*r.lowered->kernels[0], {{"A", &a2}, {"B", &b2}, {"C", &c}}, {}, seed);
    try {
        s.run();
    } catch (const simtest::SimError &e) {
        ADD_FAILURE() << e.what();
    }
    for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    EXPECT_EQ(a2, a) << "A changed";
    EXPECT_EQ(b2, b) << "B changed";
    return c;
}

/// C = A B in float64, B stored (N, K) where `nt`.
std::vector<double> reference(int M, int N, int K, const std::vector<double> &a, const std::vector<double> &b, bool nt) {
    std::vector<double> ref((size_t)M * N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int k = 0; k < K; ++k) ref[(size_t)i * N + j] += a[(size_t)i * K + k] * b[nt ? (size_t)j * K + k : (size_t)k * N + j];
    return ref;
}

/// Quarters: every partial sum is exact in float32, so C is the float64 reference rounded once to float16.
void expectExact(const WideRun &r, int M, int N, int K, bool nt) {
    auto a = simtest::quarters((size_t)M * K, 1), b = simtest::quarters((size_t)K * N, 2);
    auto ref = reference(M, N, K, a, b, nt);
    auto got = run(r, M, N, a, b);
    int wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        double want = simtest::roundToDType(DType(DType::Float16), ref[i]);
        if (!(got[i] == want) && wrong++ < 5)
            ADD_FAILURE() << "C[" << i / N << ", " << i % N << "] = " << got[i] << ", expected " << want;
    }
}

} // namespace

// 256 x 512 x 200: 8 tiles of 128x128 (4 K blocks, the last 8 wide) become 4 of 128x256 on a GPU of 4 SMs, 256
// threads and a producer warpgroup; B stored (K, N) and (N, K).
TEST(SimWidenTiles, SeedTileWidenedRaggedK) {
    for (bool nt : {false, true}) {
        WideRun r(seedSource(256, 512, 200, nt), 4);
        ASSERT_TRUE(r.lowered) << r.front.diags();
        ASSERT_EQ(r.threads(), 256) << "nt " << nt;
        EXPECT_EQ(ir::constInt(r.wide->kernels[0]->grid[0]), 2);
        EXPECT_GT(r.lowered->kernels[0]->producerThreads, 0) << "no warp roles";
        expectExact(r, 256, 512, 200, nt);
    }
}

// N = 456: 4 column tiles, the last wide tile's columns 456..511 past C's end (zeros loaded, nothing stored).
TEST(SimWidenTiles, WideTilePastTheEnd) {
    for (bool nt : {false, true}) {
        WideRun r(seedSource(256, 456, 136, nt), 4);
        ASSERT_TRUE(r.lowered) << r.front.diags();
        ASSERT_EQ(r.threads(), 256) << "nt " << nt;
        expectExact(r, 256, 456, 136, nt);
    }
}

// Values that round in float32: the widened kernel's bits are the narrow kernel's, under other interleavings too.
TEST(SimWidenTiles, SameBitsAsTheNarrowKernel) {
    const int M = 128, N = 512, K = 320;
    WideRun wide(seedSource(M, N, K), 2), narrow(seedSource(M, N, K), 2, false);
    ASSERT_TRUE(wide.lowered && narrow.lowered) << wide.front.diags() << narrow.front.diags();
    ASSERT_EQ(wide.threads(), 256);
    ASSERT_EQ(narrow.threads(), 128);
    auto a = simtest::randomData((size_t)M * K, 5), b = simtest::randomData((size_t)K * N, 6);
    auto want = run(narrow, M, N, a, b);
    for (uint64_t seed : {0, 1, 2}) {
        auto got = run(wide, M, N, a, b, seed);
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)), 0) << "seed " << seed;
    }
    simtest::expectNear(want, reference(M, N, K, a, b, false), 2e-3, "C");
}

// Left alone: fewer wide tiles than SMs, an odd count of column tiles, two warpgroups already, a 64-column tile,
// the switch off.
TEST(SimWidenTiles, LeftAlone) {
    EXPECT_EQ(WideRun(seedSource(256, 512, 256), 8).threads(), 128);  // 4 wide tiles on 8 SMs
    EXPECT_EQ(WideRun(seedSource(256, 384, 256), 1).threads(), 128);  // 3 column tiles
    WideRun wg2(seedSource(256, 512, 256, false, 256), 1);
    ASSERT_TRUE(wg2.wide);
    EXPECT_EQ(ir::constInt(wg2.wide->kernels[0]->grid[0]), 4);
    EXPECT_EQ(WideRun(seedSource(256, 512, 256, false, 128, 64), 1).threads(), 128);
    EXPECT_EQ(WideRun(seedSource(256, 512, 256), 1, false).threads(), 128);
}
