/// \file
/// Pipeline stages each thread reads only where its own cp.async wrote them (src/lower/PrivateStages.h): the
/// shape of TileKernels' engram_grad_w_reduce, written here from its mathematics (partial rows of a (B, H, D)
/// tensor summed over B, a stage of `rows` x `bd` read row by row by a nest whose thread of each column is the
/// transfer's), and of a GEMV whose stage is copied into a fragment laid out as the transfer. Lowered, the loop
/// has no block barrier and the transfers store unswizzled; run on the CPU simulator (cp.async destinations
/// poisoned and claimed at issue, filled at their wait; races reported) against float64 on sm_80 and sm_90a,
/// with tiles that divide the tensor and tiles that do not (rows and columns past its edge zero-filled), a
/// run-time B, two and three stages. Reads of two columns per thread where the transfer moves four keep the
/// barrier (a transfer narrowed to the reads' threads is not taken). Mutations the simulator must report: the transfer at another width (its
/// thread of an element then another than the reader: with no barrier a race), and a wait that leaves one group
/// too many in flight. A nest reading other threads' copies (columns reversed) keeps the barrier and the swizzle.
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

const char *kReduceRows = R"(import tilelang.language as T

def reduce_rows(B, H, D, rows, bd, threads, dtype, stages, flip):
    @T.prim_func
    def main(P: T.Tensor((B, H, D), dtype), O: T.Tensor((H, D), "float32")):
        with T.Kernel(H, T.ceildiv(D, bd), threads=threads) as (ph, pb):
            s = T.alloc_shared((rows, bd), dtype)
            acc = T.alloc_fragment((bd,), "float32")
            T.clear(acc)
            for r in T.Pipelined(T.ceildiv(B, rows), num_stages=stages):
                T.copy(P[r * rows : (r + 1) * rows, ph, pb * bd : (pb + 1) * bd], s)
                for i in T.Serial(rows):
                    for j in T.Parallel(bd):
                        if flip:
                            acc[j] += s[i, bd - 1 - j]
                        else:
                            acc[j] += s[i, j]
            T.copy(acc, O[ph, pb * bd])
    return main
B = T.dynamic("B")
)";

const char *kGemv = R"(import tilelang.language as T

def gemv(M, N, bm, bn, threads, stages):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), x: T.Tensor((N,), "float16"), O: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            a_s = T.alloc_shared((bm, bn), "float16")
            a_f = T.alloc_fragment((bm, bn), "float16")
            x_f = T.alloc_fragment((bn,), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            o_f = T.alloc_fragment((bm,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(N, bn), num_stages=stages):
                T.copy(A[bx * bm, k * bn], a_s)
                T.copy(a_s, a_f)
                T.copy(x[k * bn], x_f)
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] += a_f[i, j] * x_f[j]
            T.reduce_sum(acc, o_f, dim=1)
            T.copy(o_f, O[bx * bm])
    return main
)";

/// The kernel's tile transfers: how many, and how many of them store their tile unswizzled.
std::pair<int, int> transfers(const ir::Kernel &k) {
    int all = 0, plain = 0;
    simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) {
        if (lib::is(c, lib::Fn::CopyG2S)) ++all, plain += *ir::constInt(lib::arg(c, lib::Fn::CopyG2S, "swizzle")) == 0;
        return simtest::same(e);
    });
    return {all, plain};
}

/// The kernel with every transfer's access width replaced by `vec` (the thread of each element then changes).
std::shared_ptr<ir::Kernel> withTransferWidth(const ir::Kernel &k, int64_t vec) {
    return simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) -> ir::Stmt {
        if (!lib::is(c, lib::Fn::CopyG2S)) return simtest::same(e);
        std::vector<ir::Expr> args = c.args;
        args[lib::argIndex(lib::Fn::CopyG2S, "vec")] = ir::intImm(vec);
        return ir::Evaluate::make(ir::Call::make(c.dtype, c.name, std::move(args), c.loc), e.loc);
    });
}

/// The kernel with the loop's wait leaving one more group in flight.
std::shared_ptr<ir::Kernel> withLateWait(const ir::Kernel &k, int64_t loopPending) {
    return simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) -> ir::Stmt {
        if (!lib::is(c, lib::Fn::CpAsyncWait) || *ir::constInt(lib::arg(c, lib::Fn::CpAsyncWait, "pending")) != loopPending)
            return simtest::same(e);
        return lib::stmt(lib::Fn::CpAsyncWait, {ir::intImm(loopPending + 1)}, e.loc);
    });
}

struct Rows {
    const char *arch = "sm_90a";
    int B = 66, H = 2, D = 1024, rows = 33, bd = 512, threads = 128;
    const char *dtype = "float32";
    int stages = 2;
    bool flip = false, dynamicB = false;
    int narrowVec = 2; ///< a transfer width whose threads are not the readers'
    bool own = true;   ///< the reads are the copier's own (not so when flipped, or with fewer columns per thread)
};

void expectOwnRows(const Rows &c) {
    auto s = [](int v) { return std::to_string(v); };
    const std::string src = std::string(kReduceRows) + "k = reduce_rows(" + (c.dynamicB ? std::string("B") : s(c.B)) + ", " + s(c.H) +
                            ", " + s(c.D) + ", " + s(c.rows) + ", " + s(c.bd) + ", " + s(c.threads) + ", \"" + c.dtype + "\", " +
                            s(c.stages) + ", " + (c.flip ? "True" : "False") + ")\n";
    LowerRun r;
    simtest::lowerFor(r, src, c.arch);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    auto [all, plain] = transfers(k);
    EXPECT_GT(all, 0) << r.diags();
    if (!c.own) {
        EXPECT_GT(simtest::callCounts(k)[lib::Fn::Sync], 0);
        EXPECT_EQ(plain, 0);
    } else {
        EXPECT_EQ(simtest::callCounts(k)[lib::Fn::Sync], 0);
        EXPECT_EQ(plain, all);
    }
    std::map<std::string, std::vector<double>> io;
    io["P"] = simtest::randomData((size_t)c.B * c.H * c.D, 21, -1, 1);
    for (auto &e : io["P"]) e = std::round(e * 16) / 16; // exact in float16 and in every partial sum
    std::vector<double> want((size_t)c.H * c.D, 0);
    for (int h = 0; h < c.H; ++h)
        for (int d = 0; d < c.D; ++d) {
            int col = d;
            if (c.flip) { // acc[j] += s[i, bd - 1 - j]: column pb * bd + bd - 1 - j, zero past the edge
                int pb = d / c.bd, j = d % c.bd;
                col = pb * c.bd + c.bd - 1 - j;
                if (col >= c.D) continue;
            }
            for (int b = 0; b < c.B; ++b) want[(size_t)h * c.D + d] += io["P"][((size_t)b * c.H + h) * c.D + col];
        }
    const simtest::Scalars scalars = c.dynamicB ? simtest::Scalars{{"B", (double)c.B}} : simtest::Scalars{};
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        io["O"].assign(want.size(), std::nan(""));
        simtest::Tensors ptrs{{"P", &io["P"]}, {"O", &io["O"]}};
        Outcome o = simtest::runCaught(kernel, ptrs, scalars, seed);
        for (size_t e = 0; e < want.size(); ++e)
            o.check(io["O"][e] == want[e], [&] { return "O[" + std::to_string(e) + "] = " + std::to_string(io["O"][e]) + ", expected " + std::to_string(want[e]); });
        return o;
    };
    for (uint64_t seed : {0, 1, 2}) {
        Outcome o = run(k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
    if (!c.own) return;
    // The transfer at a width whose thread of an element is not the reader's: with no barrier, a race.
    EXPECT_TRUE(simtest::anyFailure(run(*withTransferWidth(k, c.narrowVec), 0))) << "a transfer by other threads than the readers went unnoticed";
    const int trips = (c.B + c.rows - 1) / c.rows;
    // (the loop's wait: S - 2 groups left in flight, or S - 1 where the stage is refilled after its last use, as
    // a ring of two stages is)
    const int64_t loopWait = c.stages == 2 ? 1 : c.stages - 2;
    if (trips > 1) EXPECT_TRUE(simtest::anyFailure(run(*withLateWait(k, loopWait), 0))) << "a wait leaving one more group in flight went unnoticed";
}

void expectOwnGemv(const char *arch, int M, int N, int bm, int bn, int threads, int stages) {
    auto s = [](int v) { return std::to_string(v); };
    const std::string src = std::string(kGemv) + "k = gemv(" + s(M) + ", " + s(N) + ", " + s(bm) + ", " + s(bn) + ", " + s(threads) + ", " + s(stages) + ")\n";
    LowerRun r;
    simtest::lowerFor(r, src, arch);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    auto [all, plain] = transfers(k);
    EXPECT_GT(all, 0);
    EXPECT_EQ(plain, all);
    std::map<std::string, std::vector<double>> io;
    io["A"] = simtest::randomData((size_t)M * N, 31, -1, 1);
    io["x"] = simtest::randomData((size_t)N, 32, -1, 1);
    for (auto *t : {&io["A"], &io["x"]})
        for (auto &e : *t) e = std::round(e * 16) / 16;
    std::vector<double> want((size_t)M, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) want[(size_t)i] += io["A"][(size_t)i * N + j] * io["x"][(size_t)j];
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        io["O"].assign((size_t)M, std::nan(""));
        simtest::Tensors ptrs{{"A", &io["A"]}, {"x", &io["x"]}, {"O", &io["O"]}};
        Outcome o = simtest::runCaught(kernel, ptrs, {}, seed);
        for (size_t e = 0; e < want.size(); ++e)
            o.check(std::fabs(io["O"][e] - want[e]) <= 1e-4 * std::max(1.0, std::fabs(want[e])),
                    [&] { return "O[" + std::to_string(e) + "] = " + std::to_string(io["O"][e]) + ", expected " + std::to_string(want[e]); });
        return o;
    };
    for (uint64_t seed : {0, 1, 2}) {
        Outcome o = run(k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
    EXPECT_TRUE(simtest::anyFailure(run(*withTransferWidth(k, 4), 0))) << "a transfer by other threads than the readers went unnoticed";
}

} // namespace

// {arch, B, H, D, rows, bd, threads, dtype, stages, flip, dynamicB, narrowVec}
TEST(LowerSimOwnStages, Sm90aEngramShape) { expectOwnRows({}); }
TEST(LowerSimOwnStages, Sm80PartialRowsAndColumns) { expectOwnRows({"sm_80", 70, 2, 1000, 16, 512, 128, "float32", 2}); }
TEST(LowerSimOwnStages, Sm90aDynamicRowsThreeStages) { expectOwnRows({"sm_90a", 77, 2, 640, 8, 256, 64, "float32", 3, false, true}); }
TEST(LowerSimOwnStages, Sm90aDynamicOneTrip) { expectOwnRows({"sm_90a", 5, 2, 640, 8, 256, 64, "float32", 3, false, true}); }
TEST(LowerSimOwnStages, Sm90aOthersCopiesKeepTheBarrier) { expectOwnRows({"sm_90a", 70, 2, 1000, 16, 256, 128, "float32", 2, true, false, 2, false}); }
// Two columns per thread where the transfer moves four: its threads are not the readers' (a narrower transfer is
// not taken), so the barrier and the swizzle stay.
TEST(LowerSimOwnStages, Sm80NarrowerReadsKeepTheBarrier) { expectOwnRows({"sm_80", 70, 2, 1000, 16, 256, 128, "float32", 2, false, false, 2, false}); }
TEST(LowerSimOwnStages, Sm90aGemvRegisterCopy) { expectOwnGemv("sm_90a", 256, 520, 128, 128, 256, 2); }
TEST(LowerSimOwnStages, Sm90aGemvRegisterCopyThreeStages) { expectOwnGemv("sm_90a", 96, 328, 32, 64, 128, 3); }
