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

} // namespace
