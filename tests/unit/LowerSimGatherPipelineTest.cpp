/// \file
/// Gathered tile fills in a T.Parallel nest (issue 25: TileLang's dsa_sparse_finetune sparse_mla_fwd,
/// `KV_shared[i, d] = KV[bos + Indices[..., k * BI + i], g, d]`) are issued ahead by pipelineLoops as each thread's
/// cp.async chunks into a stage of the tile's ring (GatherTransfers.h), zero-filled where the gathered row lies
/// outside the tensor: gathered-row scores S = Q K^T of two row blocks over a head part of 64 columns and a tail
/// of 16 (a fill of fewer chunks than threads), written here from their mathematics and run on the CPU
/// simulator (cp.async groups land only at their wait; races reported) against float64, with indices -1 and
/// past the last row among the gathered ones, on sm_80 and sm_90a. A fill whose rows the iteration computes
/// itself (from a fragment the body writes) stays synchronous, and right; so does one whose named row the program
/// reads after the nest. A row named in the nest's body (`r = idx[...]`, then `KV[r, d]`) is issued ahead.
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

const char *kGather = R"(import tilelang.language as T

def gathered(rows, sel, stages, mode):
    @T.prim_func
    def main(Q: T.Tensor((2, 32, 80), "float16"), KV: T.Tensor((rows, 80), "float16"),
             idx: T.Tensor((2, sel * 32), "int32"), S: T.Tensor((2, 32, sel * 32), "float32")):
        with T.Kernel(2, threads=128) as bz:
            q_s = T.alloc_shared((32, 64), "float16")
            qt_s = T.alloc_shared((32, 16), "float16")
            kv_s = T.alloc_shared((32, 64), "float16")
            kt_s = T.alloc_shared((32, 16), "float16")
            acc = T.alloc_fragment((32, 32), "float32")
            row = T.alloc_fragment((32,), "int32")
            kept = T.alloc_var("int32")
            T.copy(Q[bz, :, 0:64], q_s)
            T.copy(Q[bz, :, 64:80], qt_s)
            for k in T.Pipelined(sel, num_stages=stages):
                if mode == "computed":
                    for i in T.Parallel(32):
                        row[i] = idx[bz, k * 32 + i]
                    for i, d in T.Parallel(32, 64):
                        kv_s[i, d] = KV[row[i], d]
                elif mode == "named":
                    for i in T.Parallel(32):
                        r = idx[bz, k * 32 + i]
                        row[i] = r
                    for i, d in T.Parallel(32, 64):
                        r = idx[bz, k * 32 + i]
                        kv_s[i, d] = KV[r, d]
                elif mode == "kept":
                    for i, d in T.Parallel(32, 64):
                        kept = idx[bz, k * 32 + i]
                        kv_s[i, d] = KV[kept, d]
                else:
                    for i, d in T.Parallel(32, 64):
                        kv_s[i, d] = KV[idx[bz, k * 32 + i], d]
                for i, d in T.Parallel(32, 16):
                    kt_s[i, d] = KV[idx[bz, k * 32 + i], 64 + d]
                if mode == "kept":
                    for i, j in T.Parallel(32, 32):
                        acc[i, j] = T.if_then_else(kept > 1000, 1.0, 0.0)
                else:
                    T.clear(acc)
                T.gemm(q_s, kv_s, acc, transpose_B=True)
                T.gemm(qt_s, kt_s, acc, transpose_B=True)
                T.copy(acc, S[bz, :, k * 32 : k * 32 + 32])

    return main
)";

constexpr int kRows = 80, kSel = 3, kM = 32, kBI = 32;

struct Inputs {
    std::map<std::string, std::vector<double>> io;
    std::vector<double> want;
    Inputs() {
        io["Q"] = simtest::randomData((size_t)2 * kM * 80, 1, -1, 1);
        io["KV"] = simtest::randomData((size_t)kRows * 80, 2, -1, 1);
        for (auto *t : {&io["Q"], &io["KV"]})
            for (auto &x : *t) x = std::round(x * 16) / 16; // exact in float16
        auto &idx = io["idx"];
        const int n = kSel * kBI;
        for (int b = 0; b < 2; ++b)
            for (int j = 0; j < n; ++j) idx.push_back((double)((j * 7 + b * 3) % kRows));
        idx[5] = -1, idx[40] = kRows, idx[2 * n - 1] = kRows + 3; // outside KV: zero rows
        io["S"] = std::vector<double>((size_t)2 * kM * n, std::nan(""));
        want.assign(io["S"].size(), 0);
        for (int b = 0; b < 2; ++b)
            for (int m = 0; m < kM; ++m)
                for (int j = 0; j < n; ++j) {
                    const int r = (int)idx[(size_t)b * n + j];
                    double s = 0;
                    if (r >= 0 && r < kRows)
                        for (int d = 0; d < 80; ++d) s += io["Q"][((size_t)b * kM + m) * 80 + d] * io["KV"][(size_t)r * 80 + d];
                    want[((size_t)b * kM + m) * n + j] = s;
                }
    }
    Outcome run(const ir::Kernel &k, uint64_t seed) { return simtest::runChecked(k, io, "S", want, seed); }
};

const ir::Kernel *lowered(LowerRun &r, const char *arch, int stages, const std::string &mode) {
    r.run(std::string(kGather) + "k = gathered(" + std::to_string(kRows) + ", " + std::to_string(kSel) + ", " + std::to_string(stages) +
              ", \"" + mode + "\")\n",
          "gathered.tile", *Target::parse(arch));
    return r.lowered && !r.lowered->kernels.empty() ? r.lowered->kernels[0].get() : nullptr;
}

void expectRight(const ir::Kernel &k) {
    Inputs in;
    simtest::expectClean([&](uint64_t seed) { return in.run(k, seed); }, {0, 1, 2});
}

/// Both fills of `mode` ("inline", or "named": the row named in the nest's body) issued ahead as cp.async chunks
/// (prologue and refill: kv_s two chunks per thread, kt_s's 64 chunks by half the threads), the result right; a
/// wait leaving one group more in flight is seen.
void expectIssuedAhead(const std::string &mode) {
    for (auto [arch, stages] : simtest::pipelineVariants()) {
        SCOPED_TRACE(std::string(arch) + " stages " + std::to_string(stages));
        LowerRun r;
        const ir::Kernel *k = lowered(r, arch, stages, mode);
        ASSERT_TRUE(k) << r.diags();
        EXPECT_EQ(simtest::callCounts(*k)[lib::Fn::CpAsyncChunk], 2 * (stages + 1)) << r.diags(); // both tiles: prologue, refill
        expectRight(*k);
        auto late = simtest::withLaterWaits(*k);
        EXPECT_TRUE(simtest::anyFailure(Inputs().run(*late, 0))) << "a wait leaving a stage in flight went unnoticed";
    }
}

} // namespace

TEST(LowerSimGatherPipeline, GatheredFillsIssuedAhead) { expectIssuedAhead("inline"); }

/// Rows the iteration computes into a fragment first: that fill stays synchronous (the tail's is still issued
/// ahead), and the result right.
TEST(LowerSimGatherPipeline, RowsComputedInTheBodyStaySynchronous) {
    LowerRun r;
    const ir::Kernel *k = lowered(r, "sm_80", 2, "computed");
    ASSERT_TRUE(k) << r.diags();
    auto calls = simtest::callCounts(*k);
    // the tail's alone: its ring's prologue (both stages of two: the refill follows the last use) and refill
    EXPECT_EQ(calls[lib::Fn::CpAsyncChunk], 3) << r.diags();
    expectRight(*k);
}

/// A gathered row named in the program (`r = idx[...]` in the nest's body, as deepseek_v4's sparse_attn_fwd_sm90
/// writes it; TileLang's value semantics make `r` a per-thread scalar, set again by the nest before it): the fill
/// is issued ahead like an inline one, and right.
TEST(LowerSimGatherPipeline, NamedRowsIssuedAhead) { expectIssuedAhead("named"); }

/// A named row the program reads again after the nest (a T.alloc_var: the value the nest leaves is observed):
/// that fill stays synchronous, and right.
TEST(LowerSimGatherPipeline, NamedRowReadLaterStaysSynchronous) {
    LowerRun r;
    const ir::Kernel *k = lowered(r, "sm_80", 2, "kept");
    ASSERT_TRUE(k) << r.diags();
    EXPECT_EQ(simtest::callCounts(*k)[lib::Fn::CpAsyncChunk], 3) << r.diags();
    expectRight(*k);
}
