/// \file
/// One kernel whose products run on two instructions (sm_90a, the cp.async path: cpAsyncWgmma): the products
/// wgmma can compute on wgmma, a 32-row one (below wgmma's 64 rows per warpgroup) on mma.sync. A tile both read
/// with rows wider than one 128-byte panel is in the panel layout, which the mma.sync product then reads as
/// panels (gemm_ss_panels), and a tile only that product reads but with such rows, written by the threads
/// themselves, is in that layout too. Run on the CPU simulator (src/sim/Simulator.h) against float64, as the
/// sink-attention backward kernels of TileLang's examples need (their dq = dsT^T K has 32 rows).
#include "sim/Simulator.h"
#include "CallCounts.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <map>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;
using tilec::simtest::quarters;

namespace {

/// c1 = A B^T on wgmma (64 x 64, K = 128: A's and B's rows are two panels); c2 on mma.sync, 32 rows:
/// `nMajor`: D (32 x 64, one panel, written by the threads) times A (64 x 128, A's tile read as an N-major B);
/// else E (32 x 128, two panels, written by the threads) times A^T (A's tile read as a K-major B).
std::string source(bool nMajor) {
    const std::string e = nMajor ? "64" : "128", n2 = nMajor ? "128" : "64";
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def k(A: T.Tensor((64, 128), \"float16\"), B: T.Tensor((64, 128), \"float16\"), E: T.Tensor((32, " + e + "), \"float16\"),\n"
           "      C1: T.Tensor((64, 64), \"float32\"), C2: T.Tensor((32, " + n2 + "), \"float32\")):\n"
           "    with T.Kernel(1, threads=128) as bx:\n"
           "        A_s = T.alloc_shared((64, 128), \"float16\")\n"
           "        B_s = T.alloc_shared((64, 128), \"float16\")\n"
           "        E_s = T.alloc_shared((32, " + e + "), \"float16\")\n"
           "        c1 = T.alloc_fragment((64, 64), \"float32\")\n"
           "        c2 = T.alloc_fragment((32, " + n2 + "), \"float32\")\n"
           "        T.copy(A, A_s)\n"
           "        T.copy(B, B_s)\n"
           "        for i, j in T.Parallel(32, " + e + "):\n"
           "            E_s[i, j] = E[i, j] * T.float16(2)\n"
           "        T.clear(c1)\n"
           "        T.clear(c2)\n"
           "        T.gemm(A_s, B_s, c1, transpose_B=True)\n" +
           std::string(nMajor ? "        T.gemm(E_s, A_s, c2)\n" : "        T.gemm(E_s, A_s, c2, transpose_B=True)\n") +
           "        T.copy(c1, C1)\n"
           "        T.copy(c2, C2)\n";
}

TEST(LowerSimMixedGemm, WgmmaAndMmaSyncShareAPanelTile) {
    for (bool nMajor : {true, false}) {
        SCOPED_TRACE(nMajor ? "N-major" : "K-major");
        const int E = nMajor ? 64 : 128, N2 = nMajor ? 128 : 64;
        LowerRun r;
        r.run(source(nMajor), "t.tile", *Target::parse("sm_90a"));
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k) << r.diags();
        auto calls = simtest::callCounts(*k);
        EXPECT_EQ(calls["tilec.wgmma_ss"], 1);
        EXPECT_EQ(calls["tilec.gemm_ss_panels"], 1);
        EXPECT_EQ(calls["tilec.gemm_ss"], 0);
        EXPECT_EQ(calls["tilec.swz_panels"] + calls["tilec.swz_panels_split"] > 0, !nMajor) << "E's two-panel rows stored by the threads";
        auto a = quarters(64 * 128, 1), b = quarters(64 * 128, 2), e = quarters((size_t)32 * E, 3);
        std::vector<double> c1(64 * 64, std::nan("")), c2((size_t)32 * N2, std::nan(""));
        Simulator s(*k, {{"A", &a}, {"B", &b}, {"E", &e}, {"C1", &c1}, {"C2", &c2}});
        s.run();
        EXPECT_TRUE(s.races.empty()) << s.races.front();
        int wrong1 = 0, wrong2 = 0;
        for (int i = 0; i < 64; ++i)
            for (int j = 0; j < 64; ++j) {
                double want = 0;
                for (int kk = 0; kk < 128; ++kk) want += a[(size_t)i * 128 + kk] * b[(size_t)j * 128 + kk];
                wrong1 += c1[(size_t)i * 64 + j] != want;
            }
        for (int i = 0; i < 32; ++i)
            for (int j = 0; j < N2; ++j) {
                double want = 0;
                for (int kk = 0; kk < E; ++kk)
                    want += 2 * e[(size_t)i * E + kk] * (nMajor ? a[(size_t)kk * 128 + j] : a[(size_t)j * 128 + kk]);
                wrong2 += c2[(size_t)i * N2 + j] != want;
            }
        EXPECT_EQ(wrong1, 0) << "c1 = A B^T on wgmma";
        EXPECT_EQ(wrong2, 0) << "c2 on mma.sync over panels";
    }
}

} // namespace
