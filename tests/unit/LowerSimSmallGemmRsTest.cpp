/// \file
/// T.gemm with operand A in a fragment whose 32 rows cannot give each of the block's 4 warps 16 of its own
/// (DeepSeek's lightning-indexer backward, mHC's pre-norm product, TileKernels' norm_fn): the warps split the
/// product 2x2, as TileLang's policy does, and each warp column holds a copy of its warp row's A (Layout::
/// warpCopies), for 16-bit, float (tf32) and 8-bit A alike. A is also read per row through a slice of its
/// columns (mHC's sum of squares), which goes through a shared copy. Run on the CPU simulator against exact sums.
#include "sim/Simulator.h"
#include "CallCounts.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;

namespace {

/// C = (A * 2) B^T (or A B over (K, N) B), A (32, 64) in a fragment, and S[i] = sum of A[i, j]^2 over the
/// first 16 columns, 4 at a time, as mHC's pre-norm reads its A fragment.
std::string source(const std::string &in, const std::string &acc, bool transB) {
    const std::string b = "(64, 64)"; // (N, K) when transB, else (K, N)
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def k(A: T.Tensor((32, 64), \"" + in + "\"), B: T.Tensor(" + b + ", \"" + in + "\"),\n"
           "      C: T.Tensor((32, 64), \"" + acc + "\"), S: T.Tensor((32,), \"" + acc + "\")):\n"
           "    with T.Kernel(1, threads=128) as bx:\n"
           "        A_s = T.alloc_shared((32, 64), \"" + in + "\")\n"
           "        B_s = T.alloc_shared(" + b + ", \"" + in + "\")\n"
           "        a = T.alloc_fragment((32, 64), \"" + in + "\")\n"
           "        c = T.alloc_fragment((32, 64), \"" + acc + "\")\n"
           "        part = T.alloc_fragment((32, 4), \"" + acc + "\")\n"
           "        s = T.alloc_fragment((32,), \"" + acc + "\")\n"
           "        T.copy(A, A_s)\n"
           "        T.copy(B, B_s)\n"
           "        for i, j in T.Parallel(32, 64):\n"
           "            a[i, j] = A_s[i, j] * 2\n"
           "        T.clear(c)\n"
           "        T.clear(part)\n"
           "        for jj in T.serial(4):\n"
           "            for i, j in T.Parallel(32, 4):\n"
           "                part[i, j] += a[i, jj * 4 + j] * a[i, jj * 4 + j]\n"
           "        T.gemm(a, B_s, c" + std::string(transB ? ", transpose_B=True" : "") + ")\n"
           "        T.reduce_sum(part, s, dim=1)\n"
           "        T.copy(c, C)\n"
           "        T.copy(s, S)\n";
}

std::vector<double> smallInts(size_t n, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::vector<double> v(n);
    for (auto &x : v) x = (double)((int64_t)(g() % 7) - 3);
    return v;
}

TEST(LowerSimSmallGemmRs, ThirtyTwoRowsOverFourWarps) {
    struct Case {
        const char *in, *acc;
        bool transB;
    };
    for (const Case &t : {Case{"bfloat16", "float32", false}, Case{"float16", "float32", true},
                          Case{"float32", "float32", true}, Case{"float32", "float32", false},
                          Case{"int8", "int32", true}}) {
        SCOPED_TRACE(std::string(t.in) + (t.transB ? " B^T" : " B"));
        for (const char *arch : {"sm_80", "sm_90a"}) {
            SCOPED_TRACE(arch);
            LowerRun r;
            r.run(source(t.in, t.acc, t.transB), "t.tile", *Target::parse(arch));
            const ir::Kernel *k = r.kernel("k");
            ASSERT_TRUE(k) << r.diags();
            auto calls = simtest::callCounts(*k);
            EXPECT_EQ(calls["tilec.gemm_rs"] + calls["tilec.gemm_rs_panels"], 1) << "A from registers";
            auto a = smallInts(32 * 64, 1), b = smallInts(64 * 64, 2);
            std::vector<double> c(32 * 64, std::nan("")), s(32, std::nan(""));
            Simulator sim(*k, {{"A", &a}, {"B", &b}, {"C", &c}, {"S", &s}});
            sim.run();
            EXPECT_TRUE(sim.races.empty()) << sim.races.front();
            int wrongC = 0, wrongS = 0;
            for (int i = 0; i < 32; ++i) {
                double sq = 0;
                for (int j = 0; j < 16; ++j) sq += 4 * a[(size_t)i * 64 + j] * a[(size_t)i * 64 + j];
                wrongS += s[(size_t)i] != sq;
                for (int j = 0; j < 64; ++j) {
                    double want = 0;
                    for (int kk = 0; kk < 64; ++kk)
                        want += 2 * a[(size_t)i * 64 + kk] * (t.transB ? b[(size_t)j * 64 + kk] : b[(size_t)kk * 64 + j]);
                    wrongC += c[(size_t)i * 64 + j] != want;
                }
            }
            EXPECT_EQ(wrongC, 0) << "C = 2A B";
            EXPECT_EQ(wrongS, 0) << "the per-row sums of squares read through A's shared copy";
        }
    }
}

} // namespace
