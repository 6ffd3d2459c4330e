/// \file
/// `T.gemm(a, b, c, transpose_A=True)` with `a` a fragment (DeepSeek's indexer backward: `d_logits_qk_cast1`, a
/// (block_I, heads) fragment, as the A of dQ = P^T K) runs on the CPU simulator as A^T B: the product reads a
/// transposed copy of the fragment in the tensor cores' A order (src/lower/TransposeFragments.cpp), against a
/// float64 reference.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

namespace sim = tilec::simtest;

void transposedA(const std::string &target) {
    const int K = 32, M = 64, N = 32;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def at_b(A: T.Tensor((32, 64), \"float16\"), B: T.Tensor((32, 32), \"float16\"), C: T.Tensor((64, 32), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        a = T.alloc_fragment((32, 64), \"float16\")\n"
          "        b = T.alloc_shared((32, 32), \"float16\")\n"
          "        c = T.alloc_fragment((64, 32), \"float32\")\n"
          "        T.copy(A, a)\n"
          "        for i, j in T.Parallel(32, 64):\n"
          "            a[i, j] = a[i, j] * 2\n"
          "        T.copy(B, b)\n"
          "        T.clear(c)\n"
          "        T.gemm(a, b, c, transpose_A=True)\n"
          "        T.copy(c, C)\n",
          "t.tile", *tilec::Target::parse(target));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto a = sim::quarters(K * M, 61), b = sim::quarters(K * N, 62);
    std::vector<double> c(M * N, std::nan("")), want(M * N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int q = 0; q < K; ++q) want[i * N + j] += 2 * a[q * M + i] * b[q * N + j];
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    sim::simulate(*r.lowered->kernels[0], {{"A", &a}, {"B", &b}, {"C", &c}});
    sim::expectNear(c, want, 1e-6, "C");
}

TEST(LowerSimTransposedOperand, FragmentAOnMma) { transposedA("sm_80"); }
TEST(LowerSimTransposedOperand, FragmentAOnHopper) { transposedA("sm_90a"); }

/// The user's own transpose into a fragment that is a T.gemm's A operand (gdn's chunk_delta_bwd:
/// `Q_t[k, s] = Q[s, k]` with Q_t the tf32 A of dh += Q_t dO^T): transposeFragments runs the nest in Q_t's
/// tensor-core order and stages Q, so the values must still be A^T B. float32 operands (tf32 products) and
/// float16 ones.
void userTransposeIntoA(const std::string &target, const std::string &dtype, const std::string &adtype, double tol) {
    const int S = 32, K = 64, N = 32; // Q: (S, K); Q_t: (K, S) = A (M = K, K = S); B: (S, N)
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def qt_b(Q: T.Tensor((32, 64), \"" + dtype + "\"), B: T.Tensor((32, 32), \"" + dtype + "\"), C: T.Tensor((64, 32), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        q_shared = T.alloc_shared((32, 64), \"" + dtype + "\")\n"
          "        q = T.alloc_fragment((32, 64), \"float32\")\n"
          "        q_t = T.alloc_fragment((64, 32), \"" + adtype + "\")\n"
          "        b = T.alloc_shared((32, 32), \"" + dtype + "\")\n"
          "        c = T.alloc_fragment((64, 32), \"float32\")\n"
          "        T.copy(Q, q_shared)\n"
          "        T.copy(q_shared, q)\n"
          "        for s, k in T.Parallel(32, 64):\n"
          "            q[s, k] = q[s, k] * 2\n"
          "        for s, k in T.Parallel(32, 64):\n"
          "            q_t[k, s] = q[s, k]\n"
          "        T.copy(B, b)\n"
          "        T.clear(c)\n"
          "        T.gemm(q_t, b, c)\n"
          "        T.copy(c, C)\n",
          "t.tile", *tilec::Target::parse(target));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto q = sim::quarters(S * K, 71), b = sim::quarters(S * N, 72);
    std::vector<double> c(K * N, std::nan("")), want(K * N, 0);
    for (int i = 0; i < K; ++i)
        for (int j = 0; j < N; ++j)
            for (int t = 0; t < S; ++t) want[i * N + j] += 2 * q[t * K + i] * b[t * N + j];
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    sim::simulate(*r.lowered->kernels[0], {{"Q", &q}, {"B", &b}, {"C", &c}});
    sim::expectNear(c, want, tol, "C");
}

TEST(LowerSimTransposedOperand, UserTransposeIntoF16A) { userTransposeIntoA("sm_80", "float16", "float16", 1e-6); }
TEST(LowerSimTransposedOperand, UserTransposeIntoF16AOnHopper) { userTransposeIntoA("sm_90a", "float16", "float16", 1e-6); }
TEST(LowerSimTransposedOperand, UserTransposeIntoTf32AOnHopper) { userTransposeIntoA("sm_90a", "float32", "tfloat32", 1e-6); }

} // namespace
