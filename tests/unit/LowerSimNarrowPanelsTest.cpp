/// \file
/// An N-major B whose product's warpgroups split N inside the row's widest swizzle panel (cpAsyncWgmma's
/// narrowSplitPanels, sm_90a, the cp.async path): a 64x64 output at 256 threads (two warpgroups of 32 columns, B's
/// 128-byte rows stored in 64-byte panels) and a 64x32 one (16 columns each, 64-byte rows in 32-byte panels). The
/// whole kernel runs on the CPU simulator (src/sim/Simulator.h) against float64: the pipelined transfers fill the
/// tile in the narrower panels (copy_g2s's layout names the span), the threads' own scaling of B reads and writes
/// it through swz_panels / swz_panels_split of that span, and the simulated wgmma reads it with its descriptors'
/// span (swzB) at each warpgroup's panel offset: any of them disagreeing with the span recorded on the kernel
/// (Kernel::tileLayouts) reads the wrong elements.
#include "sim/Simulator.h"
#include "CallCounts.h"
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
using tilec::simtest::quarters;

namespace {

/// C = A (B * 2) over 128 x 128 x 128 in bm x bn tiles, K steps of bk, two pipeline stages, 256 threads.
std::string source(int bn, int bk) {
    const std::string n = std::to_string(bn), k = std::to_string(bk);
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def k(A: T.Tensor((128, 128), \"float16\"), B: T.Tensor((128, 128), \"float16\"), C: T.Tensor((128, 128), \"float32\")):\n"
           "    with T.Kernel(128 // " + n + ", 2, threads=256) as (bx, by):\n"
           "        A_s = T.alloc_shared((64, " + k + "), \"float16\")\n"
           "        B_s = T.alloc_shared((" + k + ", " + n + "), \"float16\")\n"
           "        c = T.alloc_fragment((64, " + n + "), \"float32\")\n"
           "        T.clear(c)\n"
           "        for ko in T.Pipelined(128 // " + k + ", num_stages=2):\n"
           "            T.copy(A[by * 64, ko * " + k + "], A_s)\n"
           "            T.copy(B[ko * " + k + ", bx * " + n + "], B_s)\n"
           "            for i, j in T.Parallel(" + k + ", " + n + "):\n"
           "                B_s[i, j] = B_s[i, j] * T.float16(2)\n"
           "            T.gemm(A_s, B_s, c)\n"
           "        T.copy(c, C[by * 64, bx * " + n + "])\n";
}

TEST(LowerSimNarrowPanels, SplitNMajorBInNarrowerPanels) {
    struct Case {
        int bn, bk, span;
    };
    for (Case c : {Case{64, 64, 64}, Case{32, 32, 32}}) {
        SCOPED_TRACE("bn " + std::to_string(c.bn));
        LowerRun r;
        r.run(source(c.bn, c.bk), "t.tile", *Target::parse("sm_90a"));
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k) << r.diags();
        auto calls = simtest::callCounts(*k);
        EXPECT_EQ(calls["tilec.wgmma_ss"], 1) << "the product on wgmma";
        EXPECT_EQ(calls["tilec.gemm_ss"], 0);
        EXPECT_GT(calls["tilec.swz_panels"] + calls["tilec.swz_panels_split"], 0) << "B's scaling addresses the narrower panels";
        int bSpan = 0;
        for (auto &t : k->tileLayouts)
            if (t.buffer->name.rfind("B_s", 0) == 0) bSpan = t.swizzleBytes;
        EXPECT_EQ(bSpan, c.span) << "B's panel span on the kernel";
        auto a = quarters(128 * 128, 1), b = quarters(128 * 128, 2);
        std::vector<double> out(128 * 128, std::nan(""));
        Simulator s(*k, {{"A", &a}, {"B", &b}, {"C", &out}});
        s.run();
        EXPECT_TRUE(s.races.empty()) << s.races.front();
        int wrong = 0;
        for (int i = 0; i < 128; ++i)
            for (int j = 0; j < 128; ++j) {
                double want = 0;
                for (int kk = 0; kk < 128; ++kk) want += a[(size_t)i * 128 + kk] * 2 * b[(size_t)kk * 128 + j];
                wrong += out[(size_t)i * 128 + j] != want;
            }
        EXPECT_EQ(wrong, 0) << "C = A (2 B)";
    }
}

} // namespace
