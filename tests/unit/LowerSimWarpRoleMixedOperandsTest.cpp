/// \file
/// Explicit warp roles whose T.gemm reads one tile that T.tma_copy loads and one that the threads fill
/// (tests/lit/codegen/warp_roles_mixed_operands.tile: the consumer's own T.copy, or the producer's
/// T.ptx_cp_async rows announced by T.cp_async_barrier_noinc) on the CPU simulator: the product runs on wgmma,
/// which reads both tiles in the panel layout at their absolute addresses, so the threads' tile must be stored
/// in that layout for C to come out right; a product tied to it by its accumulator (reading only the threads'
/// tiles) likewise. Stored in the row swizzle instead, the tile reads wrong. The consumer may also write its
/// output through the TMA tile itself (sparse MLA's queries' tile), in the layout TMA stored.
#include "LowerSimHopperUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

using namespace tilec;
using tilec::simtest::Outcome;

namespace {

const char *kFile = "../tests/lit/codegen/warp_roles_mixed_operands.tile";

/// `call` of the file lowered for sm_90a into `r`: its kernel of warp roles, or null (a test failure).
const ir::Kernel *roles(lowertest::LowerRun &r, const std::string &call) {
    r.run(simtest::withExport(kFile, "k = " + call), "warp_roles_mixed_operands.tile", *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    EXPECT_TRUE(k && k->producerThreads == 128) << r.diags();
    return k && k->producerThreads == 128 ? k : nullptr;
}

/// C = A B (+ A2 B2 where `tied`) on `k` under the interleaving of `seed`: A, B, A2, B2 quarters (exact
/// products and sums), C compared element by element with the float64 result; where `reuse`, also D = C[:, :64]
/// + A rounded to float16 (the consumer's sum in A's TMA tile).
Outcome simulate(const ir::Kernel &k, bool tied, uint64_t seed, bool reuse = false) {
    const int M = 64, N = 128, K = 64;
    auto a = simtest::quarters(M * K, 1), b = simtest::quarters(K * N, 2);
    auto a2 = simtest::quarters(M * K, 3), b2 = simtest::quarters(K * N, 4);
    std::vector<double> c((size_t)M * N, std::nan("")), d((size_t)M * K, std::nan(""));
    Outcome o = simtest::runCaught(k, {{"A", &a}, {"B", &b}, {"A2", &a2}, {"B2", &b2}, {"C", &c}, {"D", &d}}, {}, seed);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double want = 0;
            for (int kk = 0; kk < K; ++kk)
                want += a[i * K + kk] * b[kk * N + j] + (tied ? a2[i * K + kk] * b2[kk * N + j] : 0.0);
            double got = c[(size_t)i * N + j];
            o.check(got == want, [&] {
                return "C[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(got) + ", expected " +
                       std::to_string(want);
            });
            if (!reuse || j >= K) continue;
            double wantD = simtest::roundToDType(DType::Float16, want + a[i * K + j]), gotD = d[(size_t)i * K + j];
            o.check(gotD == wantD, [&] {
                return "D[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(gotD) + ", expected " +
                       std::to_string(wantD);
            });
        }
    return o;
}

void expectCorrect(const ir::Kernel &k, bool tied, bool reuse = false) {
    for (uint64_t seed : {0, 1, 2}) {
        Outcome o = simulate(k, tied, seed, reuse);
        EXPECT_EQ(o.error, "") << "seed " << seed;
        for (auto &r : o.races) ADD_FAILURE() << "seed " << seed << ": race: " << r;
        EXPECT_EQ(o.wrong, 0) << "seed " << seed << ": " << o.firstWrong;
    }
}

/// The number of wgmma_ss calls and proxy fences in `k`.
std::pair<int, int> wgmmasAndFences(const ir::Kernel &k) {
    auto n = simtest::callCounts(k);
    return {n[passes::lib::Fn::WgmmaSS], n[passes::lib::Fn::FenceProxyAsync]};
}

TEST(SimWarpRoleMixedOperands, TmaTileTimesTheConsumersOwnTileOnWgmma) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "mixed(fill=\"store\")");
    ASSERT_TRUE(k);
    EXPECT_EQ(wgmmasAndFences(*k), std::make_pair(1, 1));
    expectCorrect(*k, false);
}

TEST(SimWarpRoleMixedOperands, TmaTileTimesTheProducersCpAsyncRowsOnWgmma) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "mixed(fill=\"cp_async\")");
    ASSERT_TRUE(k);
    EXPECT_EQ(wgmmasAndFences(*k), std::make_pair(1, 1));
    expectCorrect(*k, false);
}

TEST(SimWarpRoleMixedOperands, ProductTiedByTheAccumulatorRunsOnWgmmaToo) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "mixed(fill=\"store\", tied=True)");
    ASSERT_TRUE(k);
    EXPECT_EQ(wgmmasAndFences(*k).first, 2);
    expectCorrect(*k, true);
}

// The consumer adds its product into A's TMA tile once the wgmma reading it has retired, and copies it out: its
// loads and stores index the tile in the layout TMA stored.
TEST(SimWarpRoleMixedOperands, ConsumerWritesItsOutputThroughTheTmaTile) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "mixed(fill=\"store\", reuse=True)");
    ASSERT_TRUE(k);
    expectCorrect(*k, false, true);
}

// The producer's rows stored in the row swizzle (tilec.swz) instead of the panel layout wgmma reads: wrong.
TEST(SimWarpRoleMixedOperands, ThreadsTileInTheRowSwizzleReadsWrong) {
    lowertest::LowerRun r;
    const ir::Kernel *k = roles(r, "mixed(fill=\"cp_async\")");
    ASSERT_TRUE(k);
    struct RowSwizzle : ir::IRMutator {
        using ir::IRMutator::visit;
        int changed = 0;
        ir::Expr visit(const std::shared_ptr<const ir::Call> &op) override {
            using passes::lib::Fn;
            bool split = passes::lib::is(*op, Fn::SwzPanelsSplit); // splitSwizzles' form of an unrolled access
            if (!split && !passes::lib::is(*op, Fn::SwzPanels)) return ir::IRMutator::visit(op);
            ++changed;
            std::vector<ir::Expr> args = op->args; // the row swizzle's: the panel span left out
            args.erase(args.begin() + (long)passes::lib::argIndex(split ? Fn::SwzPanelsSplit : Fn::SwzPanels, "span"));
            return passes::lib::call(split ? Fn::SwzSplit : Fn::Swz, std::move(args), op->loc, op->dtype);
        }
    } m;
    auto mutant = std::make_shared<ir::Kernel>(*k);
    mutant->body = m.mutate(k->body);
    ASSERT_GT(m.changed, 0) << "no store in the panel layout to mutate";
    bool caught = false;
    for (uint64_t seed : {0, 1}) caught |= simtest::anyFailure(simulate(*mutant, false, seed));
    EXPECT_TRUE(caught) << "rows stored in the row swizzle, read by wgmma as panels, unseen";
}

} // namespace
