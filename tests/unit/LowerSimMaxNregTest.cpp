/// \file
/// T.set_max_nreg kept in explicit warp roles (keepMaxNreg) on the CPU simulator: tests/lit/codegen/
/// warp_roles_set_max_nreg.tile's kernel, whose two consumer warp groups raise their registers (240, 168) and whose
/// producer lowers its own (80). The calls change no value, so the products are right; setmaxnreg must be run by
/// all 128 threads of a warp group together, which the simulator checks: the same kernel with a consumer group's
/// call under a condition that holds for half of the group's threads is reported, at the call's line.
#include "LowerSimUtil.h"
#include "SimTestUtil.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

namespace {

using namespace tilec;
namespace sim = tilec::simtest;
namespace lib = passes::lib;

constexpr int M = 64, N = 64, K = 64;

struct Data {
    std::vector<double> A = sim::quarters(M * K, 5), B = sim::quarters(K * 2 * N, 6);
    std::vector<double> C = std::vector<double>(M * 2 * N, std::nan("")), want = std::vector<double>(M * 2 * N, 0);
    Data() {
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < 2 * N; ++j)
                for (int k = 0; k < K; ++k) want[i * 2 * N + j] += A[i * K + k] * B[k * 2 * N + j];
    }
    sim::Tensors tensors() { return {{"A", &A}, {"B", &B}, {"C", &C}}; }
};

const ir::Kernel *lowered(lowertest::LowerRun &r) {
    r.run(sim::withExport("warp_roles_set_max_nreg.tile", "k = nreg_roles()", "tests/lit/codegen"), "warp_roles_set_max_nreg.tile",
          *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    EXPECT_TRUE(k && k->producerThreads) << r.diags();
    return k && k->producerThreads ? k : nullptr;
}

TEST(LowerSimMaxNreg, KeptCallsChangeNoValue) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r);
    ASSERT_TRUE(k);
    auto calls = sim::callCounts(*k);
    EXPECT_EQ(calls[lib::Fn::MaxNregInc], 2);
    EXPECT_EQ(calls[lib::Fn::MaxNregDec], 1);
    EXPECT_EQ(k->minBlocksPerSM, 1);
    for (uint64_t seed : {0, 1, 2}) {
        SCOPED_TRACE(seed);
        Data d;
        sim::Outcome o = sim::runCaught(*k, d.tensors(), {}, seed);
        EXPECT_EQ(o.error, "");
        EXPECT_TRUE(o.races.empty());
        sim::expectNear(d.C, d.want, 0, "C");
    }
}

// setmaxnreg.sync.aligned run by 64 of a warp group's 128 threads: the simulator reports it where it stands.
TEST(LowerSimMaxNreg, HalfAWarpGroupIsReported) {
    lowertest::LowerRun r;
    const ir::Kernel *k = lowered(r);
    ASSERT_TRUE(k && k->threadIdx);
    int moved = 0;
    auto mutant = sim::rewriteCalls(*k, [&](const ir::Evaluate &e, const ir::Call &c, sim::Role role) -> ir::Stmt {
        if (role != sim::Role::Consumer || !lib::is(c, lib::Fn::MaxNregInc) || moved++) return sim::same(e);
        return ir::IfThenElse::make(ir::binary(ir::BinaryOp::LT, k->threadIdx, ir::intImm(64)), sim::same(e), nullptr, e.loc);
    });
    ASSERT_EQ(moved, 2);
    Data d;
    sim::Outcome o = sim::runCaught(*mutant, d.tensors());
    EXPECT_NE(o.error.find("setmaxnreg (line "), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("run by 64 of the 128 threads of warp group 0"), std::string::npos) << o.error;
}

} // namespace
