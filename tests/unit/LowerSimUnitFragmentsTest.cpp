/// \file
/// Fragments of shape (M, 1) (TileKernels' pre_norm_fn_bwd_mul: `sqrsum_grad_frag = T.alloc_fragment((128, 1))`
/// copied from one column of a tensor and read as `sqrsum_grad_frag[i, 0]` beside a T.gemm accumulator) lowered by
/// squeezeUnitFragments to shape (M,): the fragment takes the accumulator's per-row layout (each thread holds its
/// rows) instead of being held whole by every thread, and the kernel, run on the CPU simulator, computes
/// Out = G F + 2 X S against float64 over token counts that leave the last tile partial or empty. Fragments whose
/// trailing index is not the constant 0 keep their shape (and their values).
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;

namespace {

/// The kernel with a per-row fragment of `cols` columns, read in the T.Parallel as `s[i, 0]` (one column) or
/// `s[i, j % 2]` (two, a fragment that keeps its shape).
std::string source(int cols) {
    const std::string c = std::to_string(cols);
    return std::string(R"(import tilelang.language as T

num_tokens = T.dynamic("num_tokens")

@T.prim_func
def k(G: T.Tensor((num_tokens, 32), "float32"), S: T.Tensor((num_tokens, 4), "float32"), F: T.Tensor((32, 128), "float32"),
      X: T.Tensor((num_tokens, 128), "float32"), Out: T.Tensor((num_tokens, 128), "float32")):
    with T.Kernel(2, threads=128) as bx:
        f_s = T.alloc_shared((32, 64), "float32")
        T.copy(F[0, bx * 64], f_s)
        for px in T.serial(T.ceildiv(num_tokens, 64)):
            g_s = T.alloc_shared((64, 32), "float32")
            x_s = T.alloc_shared((64, 64), "float32")
            T.copy(G[px * 64, 0], g_s)
            T.copy(X[px * 64, bx * 64], x_s)
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            T.gemm(g_s, f_s, acc)
            s = T.alloc_fragment((64, )") + c + R"(), "float32")
            T.copy(S[px * 64, bx * 2], s)
            for i, j in T.Parallel(64, 64):
                acc[i, j] += 2 * x_s[i, j] * s[i, )" + (cols == 1 ? "0" : "j % 2") + R"(]
            T.copy(acc, Out[px * 64, bx * 64])
)";
}

/// Lowers the kernel for `arch` (layouts dumped), checks the layout of `s` and runs it for `n` tokens.
void run(int cols, const char *arch, int n, const std::string &layout) {
    LowerRun r;
    r.dumpAfter = "inferLayouts";
    simtest::lowerFor(r, source(cols), arch);
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    EXPECT_NE(r.dump.str().find("fragment s: " + layout), std::string::npos) << r.dump.str();
    auto q = [](std::vector<double> v) {
        for (auto &e : v) e = std::round(e * 16) / 16; // exact in tf32 and in their sums
        return v;
    };
    std::vector<double> G = q(simtest::randomData((size_t)n * 32, 3, -1, 1)), S = q(simtest::randomData((size_t)n * 4, 5, -1, 1));
    std::vector<double> F = q(simtest::randomData(32 * 128, 7, -1, 1)), X = q(simtest::randomData((size_t)n * 128, 9, -1, 1));
    std::vector<double> out((size_t)n * 128, std::nan("")), want((size_t)n * 128);
    for (int t = 0; t < n; ++t)
        for (int o = 0; o < 128; ++o) {
            double acc = 0;
            for (int kk = 0; kk < 32; ++kk) acc += G[(size_t)t * 32 + kk] * F[(size_t)kk * 128 + o];
            const int b = o / 64, j = o % 64;
            const double s = S[(size_t)t * 4 + b * 2 + (cols == 1 ? 0 : j % 2)];
            want[(size_t)t * 128 + o] = acc + 2 * X[(size_t)t * 128 + o] * s;
        }
    simtest::simulate(*k, {{"G", &G}, {"S", &S}, {"F", &F}, {"X", &X}, {"Out", &out}}, {{"num_tokens", (double)n}});
    simtest::expectNear(out, want, 1e-5, "Out");
}

} // namespace

TEST(LowerSimUnitFragments, ColumnFragmentTakesTheAccumulatorRows) {
    for (const char *arch : {"sm_80", "sm_90a"})
        for (int n : {64, 100, 1, 0}) {
            SCOPED_TRACE(std::string(arch) + ", " + std::to_string(n) + " tokens");
            run(1, arch, n, "rows of an mma accumulator over 2x2 warps, 4 slots per thread");
        }
}

TEST(LowerSimUnitFragments, TwoColumnsKeepTheirShape) {
    // Not a unit trailing dimension: held whole by every thread, as before, and still right.
    run(2, "sm_80", 100, "replicated");
}
