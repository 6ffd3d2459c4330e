/// \file
/// TileKernels' persistent token loop (engram_gate_bwd's shape: `for i_s in T.serial(t_start, t_end)` with
/// t_end = T.min(per_block * (pid + 1), num_tokens), the next token's row read under `if i_s + 1 < t_end`, and
/// one T.vectorized loop storing two tensors): lowered with no bounds test on the rows (predicateBounds proves them
/// from the loop's end, foldImpliedConditions the next row from the branch's test) and with both stores as
/// vectors (vectorizeAccesses), then run on the CPU simulator against float64 for token counts that leave blocks
/// empty, partial and full, and a token count of zero. A row past the tensor would be an access outside its
/// memory, which the simulator reports.
#include "LowerSimUtil.h"

#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Outcome;

namespace {

const char *kPersistent = R"(import tilelang.language as T

num_tokens = T.dynamic("num_tokens")

@T.prim_func
def k(X: T.Tensor((num_tokens, 256), "float32"), Y: T.Tensor((num_tokens, 256), "float32"),
      Z: T.Tensor((num_tokens, 256), "float32")):
    with T.Kernel(4, threads=64) as pid:
        tx = T.get_thread_binding()
        per_block = T.ceildiv(num_tokens, 4)
        t_start = T.min(per_block * pid, num_tokens)
        t_end = T.min(per_block * (pid + 1), num_tokens)
        x_local = T.alloc_local((4,), "float32")
        for i_s in T.serial(t_start, t_end):
            for i_k in T.vectorized(4):
                x_local[i_k] = X[i_s, tx * 4 + i_k]
            if i_s + 1 < t_end:
                for i_k in T.vectorized(4):
                    x_local[i_k] += X[i_s + 1, tx * 4 + i_k]
            for i_k in T.vectorized(4):
                Y[i_s, tx * 4 + i_k] = x_local[i_k] * 2.0
                Z[i_s, tx * 4 + i_k] = x_local[i_k] - 1.0
)";


void expectPersistentRows(int n) {
    LowerRun r;
    simtest::lowerFor(r, kPersistent, "sm_90a");
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    // The rows of the loop's own tokens need no test (i_s < t_end <= num_tokens); the next token's row, read under
    // the program's `if i_s + 1 < t_end`, needs none either (i_s + 1 < t_end <= num_tokens), folded after the passes
    // that could move its load out of the branch (foldImpliedConditions).
    EXPECT_EQ(simtest::countConditions(k.body), 1) << "the program's own `if i_s + 1 < t_end` only";
    std::map<std::string, std::vector<double>> io;
    io["X"] = simtest::randomData((size_t)n * 256, 51, -1, 1);
    for (auto &e : io["X"]) e = std::round(e * 16) / 16;
    const int per = (n + 3) / 4;
    std::vector<double> y((size_t)n * 256), z((size_t)n * 256);
    for (int t = 0; t < n; ++t) {
        const int end = std::min(per * (t / std::max(per, 1) + 1), n);
        for (int c = 0; c < 256; ++c) {
            double x = io["X"][(size_t)t * 256 + c] + (t + 1 < end ? io["X"][(size_t)(t + 1) * 256 + c] : 0.0);
            y[(size_t)t * 256 + c] = x * 2.0, z[(size_t)t * 256 + c] = x - 1.0;
        }
    }
    io["Y"].assign(y.size(), std::nan(""));
    io["Z"].assign(z.size(), std::nan(""));
    simtest::Tensors ptrs{{"X", &io["X"]}, {"Y", &io["Y"]}, {"Z", &io["Z"]}};
    Outcome o = simtest::runCaught(k, ptrs, {{"num_tokens", (double)n}}, 0);
    for (size_t e = 0; e < y.size(); ++e) {
        o.check(io["Y"][e] == y[e], [&] { return "Y[" + std::to_string(e) + "] = " + std::to_string(io["Y"][e]) + ", expected " + std::to_string(y[e]); });
        o.check(io["Z"][e] == z[e], [&] { return "Z[" + std::to_string(e) + "] = " + std::to_string(io["Z"][e]) + ", expected " + std::to_string(z[e]); });
    }
    EXPECT_FALSE(simtest::anyFailure(o)) << "n = " << n << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
}

} // namespace

TEST(LowerSimPersistentRows, EmptyPartialAndFullBlocks) {
    for (int n : {0, 1, 5, 7, 8, 9}) expectPersistentRows(n);
}
