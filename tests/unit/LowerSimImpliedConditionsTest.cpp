/// \file
/// Bounds tests folded by the branch around them (foldImpliedConditions): an author's interior-tile branch
/// (TileKernels' per_block_cast shape) loses the row tests under it and keeps them in the last tile's branch; a
/// per-element branch whose loads of A's row and of the row scale S are moved ahead of it (vectorizeAccesses,
/// hoistNestInvariants) keeps those loads' tests. Both on the CPU simulator, which reports an access outside a
/// tensor: row tests folded before those passes moved the loads out of their branch (session 30's defect,
/// 00b0fb6) read A and S past their ends for a row count that leaves a block partial.
#include "LowerSimUtil.h"

#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;

namespace {

const char *kInterior = R"(import tilelang.language as T

n = T.dynamic("n")

@T.prim_func
def k(X: T.Tensor((n, 256), "float32"), Y: T.Tensor((n, 256), "float32")):
    with T.Kernel(T.ceildiv(n, 8), 2, threads=64) as (bx, by):
        f = T.alloc_fragment((8, 128), "float32")
        if bx < T.ceildiv(n, 8) - 1:
            T.copy(X[bx * 8, by * 128], f)
            for i, j in T.Parallel(8, 128):
                Y[bx * 8 + i, by * 128 + j] = f[i, j] * 2.0 + 1.0
        else:
            T.copy(X[bx * 8, by * 128], f)
            for i, j in T.Parallel(8, 128):
                Y[bx * 8 + i, by * 128 + j] = f[i, j] * 2.0 + 1.0
)";

const char *kPerRow = R"(import tilelang.language as T

n = T.dynamic("n")

@T.prim_func
def k(A: T.Tensor((n, 128), "float32"), S: T.Tensor((n,), "float32"), B: T.Tensor((n, 128), "float32")):
    with T.Kernel(T.ceildiv(n, 4), threads=64) as bx:
        for i, j in T.Parallel(4, 128):
            if bx * 4 + i < n:
                B[bx * 4 + i, j] = A[bx * 4 + i, j] * S[bx * 4 + i]
)";


/// The kernel's outermost if (the author's branch).
const ir::IfThenElse *outerIf(const ir::Stmt &s) {
    if (auto i = ir::as<ir::IfThenElse>(s)) return i;
    for (auto &t : ir::Seq::items(s))
        if (t != s)
            if (auto i = outerIf(t)) return i;
    return nullptr;
}

TEST(LowerSimImpliedConditions, InteriorBranchLosesItsRowTests) {
    LowerRun r;
    simtest::lowerFor(r, kInterior, "sm_90a");
    ASSERT_TRUE(r.lowered && r.lowered->kernels.size() == 1u) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    const ir::IfThenElse *branch = outerIf(k.body);
    ASSERT_TRUE(branch && branch->otherwise);
    EXPECT_EQ(simtest::countConditions(branch->then), 0) << "rows of an interior tile need no test";
    EXPECT_GT(simtest::countConditions(branch->otherwise), 0) << "the last tile keeps its row tests";
    for (int n : {1, 7, 8, 9, 23, 24}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        auto x = simtest::randomData((size_t)n * 256, 61 + n);
        std::vector<double> y((size_t)n * 256, std::nan("")), want((size_t)n * 256);
        for (size_t e = 0; e < want.size(); ++e) want[e] = x[e] * 2.0 + 1.0;
        simtest::simulate(k, {{"X", &x}, {"Y", &y}}, {{"n", n}});
        simtest::expectNear(y, want, 1e-6, "Y");
    }
}

TEST(LowerSimImpliedConditions, RowScaleHoistedOutOfItsBranchKeepsItsTest) {
    LowerRun r;
    simtest::lowerFor(r, kPerRow, "sm_90a");
    ASSERT_TRUE(r.lowered && r.lowered->kernels.size() == 1u) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    for (int n : {1, 5, 9, 12}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        auto a = simtest::randomData((size_t)n * 128, 71 + n), s = simtest::randomData((size_t)n, 81 + n);
        std::vector<double> b((size_t)n * 128, std::nan("")), want((size_t)n * 128);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < 128; ++j) want[(size_t)i * 128 + j] = a[(size_t)i * 128 + j] * s[i];
        simtest::simulate(k, {{"A", &a}, {"S", &s}, {"B", &b}}, {{"n", n}});
        simtest::expectNear(b, want, 1e-6, "B");
    }
}

} // namespace
