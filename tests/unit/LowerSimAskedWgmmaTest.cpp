/// \file
/// Explicit warp roles whose tiles the threads fill (no T.tma_copy), with T.wgmma_gemm products, on the CPU
/// simulator: tests/lit/codegen/warp_roles_asked_wgmma.tile's kernels. The products the program asks to run on
/// wgmma, and the T.gemm tied to them, run on wgmma over tiles stored in the panel layout (wgmmaNeeds), with the
/// threads' writes fenced for the async proxy; right and race-free under several interleavings. Where wgmma
/// cannot compute them (16 rows), the kernel keeps mma.sync and is right as well.
#include "LowerSimUtil.h"
#include "SimTestUtil.h"

#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

namespace {

using namespace tilec;
namespace sim = tilec::simtest;
namespace lib = passes::lib;

constexpr int N = 64, K = 64;

struct Data {
    int M;
    std::vector<double> A, B, C, want;
    explicit Data(int m) : M(m), A(sim::quarters(2 * m * K, 5)), B(sim::quarters(K * 2 * N, 6)), C(2 * m * N, std::nan("")),
                           want(2 * m * N, 0) {
        // Rows of group 0: twice A[:M] B[:, :N] (T.wgmma_gemm, then T.gemm into the same accumulator); of group 1:
        // A[M:] B[:, N:].
        for (int g = 0; g < 2; ++g)
            for (int i = 0; i < M; ++i)
                for (int j = 0; j < N; ++j) {
                    double p = 0;
                    for (int q = 0; q < K; ++q) p += A[(g * M + i) * K + q] * B[q * 2 * N + g * N + j];
                    want[(g * M + i) * N + j] = g ? p : 2 * p;
                }
    }
    sim::Tensors tensors() { return {{"A", &A}, {"B", &B}, {"C", &C}}; }
};

const ir::Kernel *lowered(lowertest::LowerRun &r, const std::string &call) {
    r.run(sim::withExport("warp_roles_asked_wgmma.tile", "k = " + call, "tests/lit/codegen"), "warp_roles_asked_wgmma.tile",
          *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    EXPECT_TRUE(k && k->producerThreads) << r.diags();
    return k && k->producerThreads ? k : nullptr;
}

void expectRight(const ir::Kernel &k, int M) {
    for (uint64_t seed : {0, 1, 2, 3}) {
        SCOPED_TRACE(seed);
        Data d(M);
        sim::Outcome o = sim::runCaught(k, d.tensors(), {}, seed);
        EXPECT_EQ(o.error, "");
        EXPECT_TRUE(o.races.empty()) << o.races.front();
        sim::expectNear(d.C, d.want, 0, "C");
    }
}

TEST(SimAskedWgmma, ThreadFilledTilesOnWgmma) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r, "both()");
    ASSERT_TRUE(k);
    auto calls = sim::callCounts(*k);
    EXPECT_EQ(calls[lib::Fn::WgmmaSS], 3); // the two T.wgmma_gemm and the T.gemm tied to the first
    EXPECT_EQ(calls[lib::Fn::GemmSS], 0);
    expectRight(*k, 64);
}

TEST(SimAskedWgmma, SixteenRowsStayOnMmaSync) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r, "both(M=16)");
    ASSERT_TRUE(k);
    auto calls = sim::callCounts(*k);
    EXPECT_EQ(calls[lib::Fn::WgmmaSS], 0);
    EXPECT_EQ(calls[lib::Fn::GemmSS], 3);
    expectRight(*k, 16);
}

} // namespace
