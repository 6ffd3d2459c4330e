/// \file
/// Copies under a condition in a T.Pipelined loop (issue 25: TileLang's sparse GQA decode,
/// `i_s = block_indices[...]; if i_s >= 0: T.copy(K[..., i_s * N ...], K_shared) ...`) are issued ahead by
/// pipelineLoops under that condition, evaluated for the later iteration, where the loop reads their tiles only
/// in that branch: a block-sparse GEMM over gathered row blocks (written here from its mathematics), run on the
/// CPU simulator (cp.async groups land only at their wait; races reported) against float64 with blocks skipped
/// (-1) among the selected ones, on sm_80 and sm_90a. Where the tile is also read outside the branch (it would
/// read the previous iteration's tile where the condition fails) the copies stay synchronous, and right.
#include "LowerSimUtil.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Outcome;
namespace lib = tilec::passes::lib;

namespace {

const char *kBlocks = R"(import tilelang.language as T

def blocks(nblocks, sel, stages, outside):
    @T.prim_func
    def main(A: T.Tensor((nblocks * 16, 32), "float16"), B: T.Tensor((nblocks * 16, 32), "float16"),
             idx: T.Tensor((2, sel), "int32"), C: T.Tensor((2 * 32, 32), "float32")):
        with T.Kernel(2, threads=128) as bz:
            a_s = T.alloc_shared((16, 32), "float16")
            b_s = T.alloc_shared((16, 32), "float16")
            acc = T.alloc_fragment((32, 32), "float32")
            i_s = T.alloc_var("int32")
            T.clear(acc)
            for k in T.Pipelined(sel, num_stages=stages):
                i_s = idx[bz, k]
                if i_s >= 0:
                    T.copy(A[i_s * 16 : (i_s + 1) * 16, :], a_s)
                    T.copy(B[i_s * 16 : (i_s + 1) * 16, :], b_s)
                    T.gemm(a_s, b_s, acc, transpose_A=True)
                if outside:
                    T.gemm(a_s, b_s, acc, transpose_A=True)
            T.copy(acc, C[bz * 32 : bz * 32 + 32, :])

    return main
)";

constexpr int kBlocksN = 6, kSel = 5;

struct Inputs {
    std::map<std::string, std::vector<double>> io;
    std::vector<double> want;
    explicit Inputs(bool outside) {
        io["A"] = simtest::randomData((size_t)kBlocksN * 16 * 32, 1, -1, 1);
        io["B"] = simtest::randomData((size_t)kBlocksN * 16 * 32, 2, -1, 1);
        for (auto *t : {&io["A"], &io["B"]})
            for (auto &x : *t) x = std::round(x * 16) / 16; // exact in float16
        io["idx"] = {4, -1, 0, -1, 5, 2, 3, -1, -1, 1}; // each block skips 2 of its 5, none its first
        io["C"] = std::vector<double>(2 * 32 * 32, std::nan(""));
        want.assign(io["C"].size(), 0);
        for (int b = 0; b < 2; ++b) {
            int last = -1; // the tile the branch left in a_s / b_s (outside: read again, also where it is skipped)
            for (int k = 0; k < kSel; ++k) {
                const int i = (int)io["idx"][(size_t)b * kSel + k];
                if (i >= 0) last = i;
                for (int times = (i >= 0) + (outside && last >= 0); times > 0; --times)
                    for (int m = 0; m < 32; ++m)
                        for (int n = 0; n < 32; ++n)
                            for (int r = 0; r < 16; ++r)
                                want[((size_t)b * 32 + m) * 32 + n] += io["A"][((size_t)last * 16 + r) * 32 + m] * io["B"][((size_t)last * 16 + r) * 32 + n];
            }
        }
    }
    Outcome run(const ir::Kernel &k, uint64_t seed) { return simtest::runChecked(k, io, "C", want, seed); }
};

const ir::Kernel *lowered(LowerRun &r, const char *arch, int stages, bool outside) {
    r.run(std::string(kBlocks) + "k = blocks(" + std::to_string(kBlocksN) + ", " + std::to_string(kSel) + ", " + std::to_string(stages) +
              ", " + (outside ? "True" : "False") + ")\n",
          "blocks.tile", *Target::parse(arch));
    return r.lowered && !r.lowered->kernels.empty() ? r.lowered->kernels[0].get() : nullptr;
}

void expectRight(const ir::Kernel &k, bool outside) {
    Inputs in(outside);
    simtest::expectClean([&](uint64_t seed) { return in.run(k, seed); }, {0, 1, 2});
}

} // namespace

/// Both tiles issued ahead (cp.async left in flight: no copy waited for where it is issued), the result right.
TEST(LowerSimGuardedPipeline, GuardedCopiesIssuedAhead) {
    for (auto [arch, stages] : simtest::pipelineVariants()) {
        SCOPED_TRACE(std::string(arch) + " stages " + std::to_string(stages));
        LowerRun r;
        const ir::Kernel *k = lowered(r, arch, stages, false);
        ASSERT_TRUE(k) << r.diags();
        auto calls = simtest::callCounts(*k);
        EXPECT_EQ(calls[lib::Fn::CopyG2SWait], 0) << r.diags();
        EXPECT_GE(calls[lib::Fn::CopyG2S], 2 * stages) << r.diags(); // prologue and refill of both tiles
        expectRight(*k, false);
        // The simulator sees a stage read before it lands: the loop's wait leaving one group more in flight.
        auto late = simtest::withLaterWaits(*k);
        EXPECT_TRUE(simtest::anyFailure(Inputs(false).run(*late, 0))) << "a wait leaving a stage in flight went unnoticed";
    }
}

/// A tile read outside the branch keeps its copies in place (waited for), and the result right.
TEST(LowerSimGuardedPipeline, TileReadOutsideBranchStaysInPlace) {
    LowerRun r;
    const ir::Kernel *k = lowered(r, "sm_80", 2, true);
    ASSERT_TRUE(k) << r.diags();
    EXPECT_EQ(simtest::callCounts(*k)[lib::Fn::CopyG2SWait], 2) << r.diags();
    expectRight(*k, true);
}
