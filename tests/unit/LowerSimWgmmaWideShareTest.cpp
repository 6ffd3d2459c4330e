/// \file
/// wgmma products whose warpgroups each own more than 256 accumulator columns (several instructions per k-step:
/// n256 first, then the rest), from tests/lit/codegen/wgmma_wide_share.tile: 512 columns on one warpgroup (MLA's
/// dQ += dP KV shape), a K-major B of 320 rows, 1024 columns split by two warpgroups. Lowered for sm_90a on the
/// cp.async path and run on the CPU simulator (src/sim/Simulator.h) against float64: the accumulator layout and
/// the product's instructions agree over the whole share, and no product is left on mma.sync.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

using namespace tilec;
using tilec::lowertest::LowerRun;
namespace lib = tilec::passes::lib;

namespace {

int calls(const ir::Kernel &k, lib::Fn fn) {
    struct V : ir::IRVisitor {
        using ir::IRVisitor::visit;
        lib::Fn fn;
        int n = 0;
        void visit(const ir::Call &c) override {
            if (auto *i = lib::find(c.name); i && i->fn == fn) ++n;
            ir::IRVisitor::visit(c);
        }
    } v;
    v.fn = fn;
    v.visit(k.body);
    return v.n;
}

/// O (M x N) = A (M x K) B, B given (K x N) or, transB, (N x K); inputs in float16 / bfloat16 steps of 1/4.
void wideCase(const std::string &kernel, int M, int N, int K, bool transB) {
    Variant v{*Target::parse("sm_90a"), {}};
    v.options.warpSpecialize = false;
    LowerRun r;
    r.run(simtest::example("wgmma_wide_share.tile", "tests/lit/codegen"), "wgmma_wide_share.tile", v);
    ASSERT_TRUE(r.lowered) << r.diags();
    const ir::Kernel *k = r.kernel(kernel);
    ASSERT_TRUE(k) << r.diags();
    EXPECT_EQ(calls(*k, lib::Fn::WgmmaSS), 1);
    EXPECT_EQ(calls(*k, lib::Fn::GemmSS), 0) << "mma.sync left";
    std::vector<double> a = simtest::quarters((size_t)M * K, 1), b = simtest::quarters((size_t)K * N, 2);
    std::vector<double> want((size_t)M * N, 0), out((size_t)M * N, std::nan(""));
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int x = 0; x < K; ++x)
                want[(size_t)i * N + j] += a[(size_t)i * K + x] * b[transB ? (size_t)j * K + x : (size_t)x * N + j];
    const bool dq = kernel == "dq";
    simtest::simulate(*k, {{dq ? "P" : "A", &a}, {dq ? "KV" : "B", &b}, {"O", &out}});
    simtest::expectNear(out, want, 1e-6, "O"); // quarters: every product and sum is exact in float32
}

TEST(SimWgmmaWideShare, OneWarpgroup512Columns) { wideCase("dq", 64, 512, 32, false); }
TEST(SimWgmmaWideShare, KMajorB320Rows) { wideCase("kmajor", 64, 320, 64, true); }
TEST(SimWgmmaWideShare, TwoWarpgroups1024Columns) { wideCase("cols", 64, 1024, 16, false); }

} // namespace
