/// \file
/// 1-D tiles a T.Pipelined loop copies from a tensor's last dimension (a row of scales beside a 2-D tile: the
/// shape of TileLang's deepseek_mhc mhc_post, `T.copy(d[i_n, i0_h * h_blk], d_shared)` beside the (hc, h_blk) tile
/// of b; attention backward's lse and delta rows) join the loop's cp.async ring as one-row transfers instead of
/// being loaded synchronously in every iteration. Lowered, every transfer of the loop is a CopyG2S (the row ones of
/// one row, stored unswizzled) and no synchronous load of the row is left; run on the CPU simulator (cp.async
/// destinations poisoned and claimed at issue, filled at their wait; races reported) against float64 on sm_80 and
/// sm_90a, with tiles that divide the rows and tiles that do not (the last row tile zero-filled past the edge), a
/// run-time token count, two and three stages. A row each thread reads fewer elements of than the widest access moves
/// is issued at its readers' width, so that each thread reads only what it copied, and then needs no barrier.
/// Mutations the simulator must report: the waits leaving one more group in flight (a tile is then read before its
/// copy lands); such a row issued at the widest width again (another thread copies what one reads, unordered).
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

const char *kPost = R"(import tilelang.language as T

def post(hc, hidden, h_blk, threads, stages):
    n = T.dynamic("n")
    @T.prim_func
    def main(a: T.Tensor((n, hc), "float32"), b: T.Tensor((n, hc, hidden), "bfloat16"), d: T.Tensor((n, hidden), "bfloat16"),
             x: T.Tensor((n, hc, hidden), "float32")):
        with T.Kernel(n, threads=threads) as i_n:
            b_shared = T.alloc_shared((hc, h_blk), "bfloat16")
            d_shared = T.alloc_shared((h_blk,), "bfloat16")
            b_local = T.alloc_fragment((hc, h_blk), "float32")
            d_local = T.alloc_fragment((h_blk,), "float32")
            x_local = T.alloc_fragment((hc, h_blk), "float32")
            a_local = T.alloc_fragment((hc,), "float32")
            T.copy(a[i_n, 0], a_local)
            for i0_h in T.Pipelined(T.ceildiv(hidden, h_blk), num_stages=stages):
                T.copy(b[i_n, 0, i0_h * h_blk], b_shared)
                T.copy(d[i_n, i0_h * h_blk], d_shared)
                T.copy(b_shared, b_local)
                T.copy(d_shared, d_local)
                for i, j in T.Parallel(hc, h_blk):
                    x_local[i, j] = a_local[i] * d_local[j] + b_local[i, j]
                T.copy(x_local, x[i_n, 0, i0_h * h_blk])
    return main
)";

/// The kernel's tile transfers: how many, and how many copy one row stored unswizzled.
std::pair<int, int> transfers(const ir::Kernel &k) {
    int all = 0, rows = 0;
    simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) {
        if (lib::is(c, lib::Fn::CopyG2S) || lib::is(c, lib::Fn::CopyG2SWait)) {
            ++all;
            const lib::Fn f = lib::is(c, lib::Fn::CopyG2S) ? lib::Fn::CopyG2S : lib::Fn::CopyG2SWait;
            rows += *ir::constInt(lib::arg(c, f, "rows")) == 1 && *ir::constInt(lib::arg(c, f, "swizzle")) == 0;
        }
        return simtest::same(e);
    });
    return {all, rows};
}

/// The widest access width of the one-row transfers (bfloat16: 8 elements, 16 bytes), and the kernel with every
/// one-row transfer at that width: where the row was issued narrower for its readers' sake (each thread reads only
/// what it copied, so no barrier orders the row), the widest one's thread of an element is another than the
/// reader's, a race with no barrier.
constexpr int64_t kWidestRow = 8;
int narrowRows(const ir::Kernel &k) {
    int n = 0;
    simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) {
        if (lib::is(c, lib::Fn::CopyG2S) && *ir::constInt(lib::arg(c, lib::Fn::CopyG2S, "rows")) == 1)
            n += *ir::constInt(lib::arg(c, lib::Fn::CopyG2S, "vec")) < kWidestRow;
        return simtest::same(e);
    });
    return n;
}
std::shared_ptr<ir::Kernel> withWidestRows(const ir::Kernel &k) {
    return simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) -> ir::Stmt {
        if (!lib::is(c, lib::Fn::CopyG2S) || *ir::constInt(lib::arg(c, lib::Fn::CopyG2S, "rows")) != 1) return simtest::same(e);
        std::vector<ir::Expr> args = c.args;
        args[lib::argIndex(lib::Fn::CopyG2S, "vec")] = ir::intImm(kWidestRow);
        return ir::Evaluate::make(ir::Call::make(c.dtype, c.name, std::move(args), c.loc), e.loc);
    });
}

/// The kernel with every wait leaving one more group in flight.
std::shared_ptr<ir::Kernel> withLateWaits(const ir::Kernel &k) {
    return simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) -> ir::Stmt {
        if (!lib::is(c, lib::Fn::CpAsyncWait)) return simtest::same(e);
        return lib::stmt(lib::Fn::CpAsyncWait, {ir::intImm(*ir::constInt(lib::arg(c, lib::Fn::CpAsyncWait, "pending")) + 1)}, e.loc);
    });
}

struct Post {
    const char *arch = "sm_90a";
    int n = 3, hc = 4, hidden = 1280, h_blk = 256, threads = 128, stages = 2;
    bool ownRow = true; ///< each thread reads fewer than 8 elements of the row, all of them its own copies
};

void expectPipelinedRows(const Post &c) {
    auto s = [](int v) { return std::to_string(v); };
    const std::string src = std::string(kPost) + "k = post(" + s(c.hc) + ", " + s(c.hidden) + ", " + s(c.h_blk) + ", " + s(c.threads) +
                            ", " + s(c.stages) + ")\n";
    LowerRun r;
    simtest::lowerFor(r, src, c.arch);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    auto [all, rows] = transfers(k);
    EXPECT_GT(rows, 0) << "the row of d is not a transfer of the ring";
    EXPECT_EQ(all % 2, 0) << "b's tile and d's row are issued together";
    EXPECT_EQ(all, 2 * rows);
    std::map<std::string, std::vector<double>> io;
    io["a"] = simtest::randomData((size_t)c.n * c.hc, 41, -1, 1);
    io["b"] = simtest::randomData((size_t)c.n * c.hc * c.hidden, 42, -1, 1);
    io["d"] = simtest::randomData((size_t)c.n * c.hidden, 43, -1, 1);
    for (auto *t : {&io["a"], &io["b"], &io["d"]})
        for (auto &e : *t) e = std::round(e * 16) / 16; // exact in bfloat16 and in every product and sum
    const int tiles = (c.hidden + c.h_blk - 1) / c.h_blk;
    std::vector<double> want((size_t)c.n * c.hc * c.hidden, 0);
    for (int t = 0; t < c.n; ++t)
        for (int i = 0; i < c.hc; ++i)
            for (int j = 0; j < c.hidden; ++j)
                want[((size_t)t * c.hc + i) * c.hidden + j] =
                    io["a"][(size_t)t * c.hc + i] * io["d"][(size_t)t * c.hidden + j] + io["b"][((size_t)t * c.hc + i) * c.hidden + j];
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        io["x"].assign(want.size(), std::nan(""));
        simtest::Tensors ptrs{{"a", &io["a"]}, {"b", &io["b"]}, {"d", &io["d"]}, {"x", &io["x"]}};
        Outcome o = simtest::runCaught(kernel, ptrs, {{"n", (double)c.n}}, seed);
        for (size_t e = 0; e < want.size(); ++e)
            o.check(io["x"][e] == want[e], [&] { return "x[" + std::to_string(e) + "] = " + std::to_string(io["x"][e]) + ", expected " + std::to_string(want[e]); });
        return o;
    };
    for (uint64_t seed : {0, 1, 2}) {
        Outcome o = run(k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
    if (tiles > 1) EXPECT_TRUE(simtest::anyFailure(run(*withLateWaits(k), 0))) << "waits leaving one more group in flight went unnoticed";
    EXPECT_EQ(narrowRows(k) > 0, c.ownRow) << "the row's width is its readers' exactly where each thread reads what it copies";
    if (narrowRows(k) > 0) EXPECT_TRUE(simtest::anyFailure(run(*withWidestRows(k), 0))) << "a row copied by other threads than its readers went unnoticed";
}

} // namespace

TEST(LowerSimPipelinedRows, RowBesideATileSm90a) { expectPipelinedRows({}); }
TEST(LowerSimPipelinedRows, RowBesideATileSm80) { expectPipelinedRows({"sm_80"}); }
TEST(LowerSimPipelinedRows, ThreeStages) { expectPipelinedRows({"sm_90a", 2, 4, 1280, 256, 128, 3}); }
TEST(LowerSimPipelinedRows, LastTilePastTheEdge) { expectPipelinedRows({"sm_90a", 2, 4, 1000, 256, 128, 2}); }
TEST(LowerSimPipelinedRows, MoreChunksThanThreads) { expectPipelinedRows({"sm_80", 2, 2, 4096, 1024, 64, 2}); }
