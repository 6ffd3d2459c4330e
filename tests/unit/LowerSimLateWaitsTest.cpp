/// \file
/// Tile transfers waited for in place wait where their tiles are first needed (src/lower/SinkTransferWaits.cpp):
/// a kernel whose Q and dO tiles are copied into shared memory, then an LSE row (global loads, shared stores),
/// then K, then two GEMMs, then V read by a third right after its copy, run on the CPU simulator (races reported) against a
/// float64 reference, with the schedule checked: Q, dO and K issued together under one later wait, V waited for
/// in place (nothing to overlap).
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

namespace {

namespace sim = tilec::simtest;
using tilec::passes::lib::Fn;

const char *kSource = R"(import tilelang.language as T
@T.prim_func
def k(Q: T.Tensor((64, 32), "float16"), dO: T.Tensor((64, 32), "float16"), LSE: T.Tensor((64,), "float32"),
      K: T.Tensor((32, 32), "float16"), V: T.Tensor((32, 32), "float16"), O: T.Tensor((64, 32), "float32")):
    with T.Kernel(2, threads=128) as bx:
        q = T.alloc_shared((32, 32), "float16")
        do = T.alloc_shared((32, 32), "float16")
        kk = T.alloc_shared((32, 32), "float16")
        v = T.alloc_shared((32, 32), "float16")
        lse = T.alloc_shared((32,), "float32")
        acc = T.alloc_fragment((32, 32), "float32")
        T.copy(Q[bx * 32:(bx + 1) * 32, :], q)
        T.copy(dO[bx * 32:(bx + 1) * 32, :], do)
        T.copy(LSE[bx * 32:(bx + 1) * 32], lse)
        T.clear(acc)
        T.copy(K, kk)
        T.gemm(q, kk, acc, transpose_B=True)
        T.gemm(do, kk, acc, transpose_B=True)
        T.copy(V, v)
        T.gemm(q, v, acc)
        for i, j in T.Parallel(32, 32):
            acc[i, j] = acc[i, j] - lse[i]
        T.copy(acc, O[bx * 32:(bx + 1) * 32, :])
)";

TEST(LowerSimLateWaits, TransfersWaitAtFirstUse) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, kSource, "sm_80");
    ASSERT_TRUE(r.lowered) << r.diags();
    auto ints = [](size_t n, int mod, int off) {
        std::vector<double> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = (double)((int)(i * 7 % mod) - off);
        return v;
    };
    std::vector<double> q = ints(64 * 32, 5, 2), dO = ints(64 * 32, 3, 1), lse = ints(64, 9, 4), kk = ints(32 * 32, 7, 3),
                        v = ints(32 * 32, 11, 5), out(64 * 32, std::nan("")), want(64 * 32);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 32; ++j) {
            double s = 0;
            for (int d = 0; d < 32; ++d) s += (q[i * 32 + d] + dO[i * 32 + d]) * kk[j * 32 + d];
            for (int d = 0; d < 32; ++d) s += q[i * 32 + d] * v[d * 32 + j];
            want[i * 32 + j] = s - lse[i];
        }
    sim::runAll(r, {{"Q", &q}, {"dO", &dO}, {"LSE", &lse}, {"K", &kk}, {"V", &v}, {"O", &out}});
    sim::expectNear(out, want, 0, "O");
    auto calls = sim::callCounts(*r.lowered->kernels[0]);
    EXPECT_EQ(calls[Fn::CopyG2S], 3) << "Q, dO and K issued without their own waits";
    EXPECT_EQ(calls[Fn::CopyG2SWait], 1) << "V, read right after its copy, waited for in place";
    EXPECT_GE(calls[Fn::CpAsyncWait], 1);
}

} // namespace
