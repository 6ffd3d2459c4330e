/// \file
/// T.async_copy as per-thread cp.async (src/lower/LowerAsyncCopies.cpp), the shape of TileKernels'
/// engram_gate_bwd written here from its schedule: a persistent loop over tokens, each token's (2, 1024) rows
/// copied in two (2, 512) tiles through a two-stage ring in the author's loop_layout (thread 64 i + (j / 4) % 64),
/// the second tile issued before the first is read (T.ptx_wait_group(1)), the next token's first tile prefetched
/// in this token's iteration, and a 1-D row in tilec's own thread map read by other threads. Run on the CPU
/// simulator (each chunk poisoned at its issue, landed at the wait that retires its group, races reported)
/// against the exact result under several interleavings, with token counts that do and do not divide among the
/// blocks. Mutations the simulator must report: the lowered kernel without its first wait (a read of a chunk still
/// in flight), and without the barrier before the cross-thread read (a race). A program whose wait does not cover
/// its reads (T.ptx_wait_group(3) where the tile read is the third newest group) is lowered with synchronous copies, and is then exact too.
/// Also rows of fewer chunks than threads (multilayer_recompute's mix rows), issued by the threads that have one.
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

const char *kRows = R"(import tilelang.language as T

def rows(i, j):
    return i * 64 + (j // 4) % 64, (j % 4) + (j // 256) * 4

def make(blocks, pending):
    N = T.dynamic("N")
    @T.prim_func
    def main(X: T.Tensor((N, 2, 1024), "float32"), V: T.Tensor((N, 1536), "float16"), Y: T.Tensor((N, 2, 1024), "float32"),
             Z: T.Tensor((N, 128), "float32")):
        with T.Kernel(blocks, threads=128) as b:
            tx = T.get_thread_binding()
            layout = T.Fragment((2, 512), forward_fn=rows)
            xs = T.alloc_shared((2, 2, 512), "float32")
            vs = T.alloc_shared((1536,), "float16")
            per = T.ceildiv(N, blocks)
            start = T.min(per * b, N)
            end = T.min(per * (b + 1), N)
            for t in T.serial(start, end):
                if t == start:
                    T.async_copy(X[t, :, 0:512], xs[0, :, :], loop_layout=layout)
                T.async_copy(V[t, :], vs)
                for i_b in T.unroll(1, 2):
                    T.async_copy(X[t, :, i_b * 512:(i_b + 1) * 512], xs[i_b % 2, :, :], loop_layout=layout)
                    T.ptx_wait_group(pending)
                    for r in T.serial(2):
                        for e in T.vectorized(4):
                            Y[t, tx // 64, (i_b - 1) * 512 + ((tx % 64) + r * 64) * 4 + e] = xs[(i_b - 1) % 2, tx // 64, ((tx % 64) + r * 64) * 4 + e] * 2.0
                T.ptx_wait_group(0)
                for r in T.serial(2):
                    for e in T.vectorized(4):
                        Y[t, tx // 64, 512 + ((tx % 64) + r * 64) * 4 + e] = xs[1, tx // 64, ((tx % 64) + r * 64) * 4 + e] * 2.0
                Z[t, tx] = xs[1, tx // 64, 511 - tx % 64] + vs[1535 - tx * 12]
                if t + 1 < end:
                    T.async_copy(X[t + 1, :, 0:512], xs[0, :, :], loop_layout=layout)
    return main
)";

/// The kernel without its wait in the tile loop (the one that leaves groups in flight).
std::shared_ptr<ir::Kernel> withoutFirstWait(const ir::Kernel &k) {
    return simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) -> ir::Stmt {
        if (lib::is(c, lib::Fn::CpAsyncWait) && ir::constInt(lib::arg(c, lib::Fn::CpAsyncWait, "pending")) != std::optional<int64_t>(0))
            return ir::Seq::make({}, e.loc);
        return simtest::same(e);
    });
}

/// The kernel without its last barrier (the one before the cross-thread read of Z's operands).
std::shared_ptr<ir::Kernel> withoutLastSync(const ir::Kernel &k) {
    int syncs = simtest::callCounts(k)[lib::Fn::Sync], seen = 0;
    return simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) -> ir::Stmt {
        if (lib::is(c, lib::Fn::Sync) && ++seen == syncs) return ir::Seq::make({}, e.loc);
        return simtest::same(e);
    });
}

void expectRows(int N, int blocks, int pending, const char *arch) {
    const std::string src = std::string(kRows) + "k = make(" + std::to_string(blocks) + ", " + std::to_string(pending) + ")\n";
    LowerRun r;
    simtest::lowerFor(r, src, arch);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    auto calls = simtest::callCounts(k);
    const bool async = pending < 3; // wait(2) still retires the tile read (the row's group is newer)
    if (async) {
        EXPECT_EQ(calls[lib::Fn::CpAsyncCopy], 4) << r.diags(); // 3 tile copies (16-byte chunks, 2 a thread), the row (8-byte, 3)
        EXPECT_EQ(calls[lib::Fn::CpAsyncCommit], 4);
        // the program's two, and one at the kernel's end: the next token's prefetch (under `if t + 1 < end`) may
        // be in flight there as far as the proof knows, and no block exits with a cp.async still writing
        EXPECT_EQ(simtest::cpAsyncWaits(k), (std::vector<int64_t>{pending, 0, 0}));
        EXPECT_EQ(calls[lib::Fn::Sync], 2); // before the row's copy (the last token's cross reads), before the cross reads
    } else { // the wait leaves a read tile in flight: synchronous copies, no groups
        EXPECT_EQ(calls[lib::Fn::CpAsyncCopy], 0);
        EXPECT_EQ(calls[lib::Fn::CpAsyncWait], 0);
    }
    std::map<std::string, std::vector<double>> io;
    io["X"] = simtest::randomData((size_t)N * 2048, 41, -1, 1);
    io["V"] = simtest::randomData((size_t)N * 1536, 42, -1, 1);
    for (auto *t : {&io["X"], &io["V"]})
        for (auto &e : *t) e = std::round(e * 64) / 64; // exact in float16 and in float32 sums
    std::vector<double> wantY((size_t)N * 2048), wantZ((size_t)N * 128);
    for (size_t e = 0; e < wantY.size(); ++e) wantY[e] = io["X"][e] * 2;
    for (int t = 0; t < N; ++t)
        for (int x = 0; x < 128; ++x)
            wantZ[(size_t)t * 128 + x] = io["X"][(size_t)t * 2048 + (x / 64) * 1024 + 512 + 511 - x % 64] + io["V"][(size_t)t * 1536 + 1535 - x * 12];
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        io["Y"].assign(wantY.size(), std::nan(""));
        io["Z"].assign(wantZ.size(), std::nan(""));
        simtest::Tensors ptrs{{"X", &io["X"]}, {"V", &io["V"]}, {"Y", &io["Y"]}, {"Z", &io["Z"]}};
        Outcome o = simtest::runCaught(kernel, ptrs, {{"N", (double)N}}, seed);
        for (auto [name, want] : {std::pair{"Y", &wantY}, std::pair{"Z", &wantZ}})
            for (size_t e = 0; e < want->size(); ++e)
                o.check(io[name][e] == (*want)[e], [&] {
                    return std::string(name) + "[" + std::to_string(e) + "] = " + std::to_string(io[name][e]) + ", expected " + std::to_string((*want)[e]);
                });
        return o;
    };
    for (uint64_t seed : {0, 1, 2, 3}) {
        Outcome o = run(k, seed);
        EXPECT_FALSE(simtest::anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
    if (!async) return;
    EXPECT_TRUE(simtest::anyFailure(run(*withoutFirstWait(k), 0))) << "a read of a tile still in flight went unnoticed";
    EXPECT_TRUE(simtest::anyFailure(run(*withoutLastSync(k), 0))) << "a cross-thread read without a barrier went unnoticed";
}

/// One run of `kernel` on `tensors` with N tokens, its output `y` (one of them) first all NaN, then checked
/// element by element against `want`.
Outcome runY(const ir::Kernel &kernel, const simtest::Tensors &tensors, std::vector<double> &y, const std::vector<double> &want, int N,
             uint64_t seed) {
    y.assign(want.size(), std::nan(""));
    Outcome o = simtest::runCaught(kernel, tensors, {{"N", (double)N}}, seed);
    for (size_t e = 0; e < want.size(); ++e)
        o.check(y[e] == want[e], [&] { return "Y[" + std::to_string(e) + "] = " + std::to_string(y[e]) + ", expected " + std::to_string(want[e]); });
    return o;
}

/// TileKernels' engram_gate_fwd's second pass in small: a ring of two stages fed two tiles ahead under `if i_b + 2 <
/// 4`, the stage chosen by the parity of the tile, the wait `T.ptx_wait_group(1)` in every tile but the last, which
/// waits for all and then prefetches the next token's first tile of X into a part of `xs` the last tile does not
/// read. Only walking the tile loop iteration by iteration (its trip count known) proves the waits cover the reads.
const char *kRing = R"(import tilelang.language as T

def make(blocks):
    N = T.dynamic("N")
    @T.prim_func
    def main(X: T.Tensor((N, 1024), "float32"), V: T.Tensor((N, 1024), "float32"), Y: T.Tensor((N, 1024), "float32")):
        with T.Kernel(blocks, threads=64) as b:
            tx = T.get_thread_binding()
            xs = T.alloc_shared((1024,), "float32")
            kv = T.alloc_shared((2, 256), "float32")
            per = T.ceildiv(N, blocks)
            start = T.min(per * b, N)
            end = T.min(per * (b + 1), N)
            for t in T.serial(start, end):
                if t == start:
                    T.async_copy(X[t, 0:256], xs[0:256])
                T.async_copy(X[t, 256:1024], xs[256:1024])
                T.async_copy(V[t, 0:256], kv[1, :])
                T.async_copy(V[t, 256:512], kv[0, :])
                for i_b in T.serial(4):
                    phase = (1 + i_b) % 2
                    if i_b < 3:
                        T.ptx_wait_group(1)
                    else:
                        T.ptx_wait_group(0)
                        if t + 1 < end:
                            T.async_copy(X[t + 1, 0:256], xs[0:256])
                    for e in T.vectorized(4):
                        Y[t, i_b * 256 + tx * 4 + e] = kv[phase, tx * 4 + e] + xs[i_b * 256 + tx * 4 + e]
                    if i_b + 2 < 4:
                        T.async_copy(V[t, (i_b + 2) * 256:(i_b + 3) * 256], kv[phase, :])
    return main
)";

void expectRing(int N, int blocks, const char *arch) {
    LowerRun r;
    simtest::lowerFor(r, std::string(kRing) + "k = make(" + std::to_string(blocks) + ")\n", arch);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    auto calls = simtest::callCounts(k);
    // every T.async_copy of the program asynchronous (a later pass splits the tile loop at i_b = 2, copying the
    // ring's prefetch and its commit into both parts): none is left as the synchronous copy it also is
    EXPECT_GE(calls[lib::Fn::CpAsyncCopy], 6) << r.diags();
    EXPECT_GE(calls[lib::Fn::CpAsyncCommit], 6);
    EXPECT_EQ(simtest::cpAsyncWaits(k).size(), 4u) << "the program's three waits and the one at the kernel's end";
    std::map<std::string, std::vector<double>> io;
    io["X"] = simtest::randomData((size_t)N * 1024, 51, -1, 1);
    io["V"] = simtest::randomData((size_t)N * 1024, 52, -1, 1);
    for (auto *t : {&io["X"], &io["V"]})
        for (auto &e : *t) e = std::round(e * 64) / 64; // exact sums
    std::vector<double> want((size_t)N * 1024);
    for (size_t e = 0; e < want.size(); ++e) want[e] = io["X"][e] + io["V"][e];
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        return runY(kernel, {{"X", &io["X"]}, {"V", &io["V"]}, {"Y", &io["Y"]}}, io["Y"], want, N, seed);
    };
    simtest::expectClean([&](uint64_t seed) { return run(k, seed); }, {0, 1, 2});
    EXPECT_TRUE(simtest::anyFailure(run(*withoutFirstWait(k), 0))) << "a read of a stage still in flight went unnoticed";
}

/// TileKernels' multilayer_recompute in small: per layer a row of 512 bfloat16 and mix rows of 4 and 4 x 4 floats,
/// fetched one layer ahead into the stage `1 - i % 2` of two-stage rings by 64 threads, and a row of 336 floats
/// once, every thread reading elements other threads copied. The mix rows are 1 and 4 chunks of 16 bytes and the
/// long row 84: cp.async on the threads that have a chunk (`if tx < 1`, `if tx < 4`, a second round on 20).
const char *kLayers = R"(import tilelang.language as T

def make(L):
    N = T.dynamic("N")
    @T.prim_func
    def main(X: T.Tensor((L, N, 512), "bfloat16"), M: T.Tensor((L, N, 4), "float32"), C: T.Tensor((L, N, 4, 4), "float32"),
             W: T.Tensor((N, 336), "float32"), Y: T.Tensor((L, N, 4, 512), "float32")):
        with T.Kernel(N, threads=64) as b:
            tx = T.get_thread_binding()
            xs = T.alloc_shared((2, 512), "bfloat16")
            ms = T.alloc_shared((2, 4), "float32")
            cs = T.alloc_shared((2, 4, 4), "float32")
            ws = T.alloc_shared((336,), "float32")
            T.async_copy(W[b, 0:336], ws)
            T.async_copy(X[0, b, 0:512], xs[0, :])
            T.async_copy(M[0, b, 0:4], ms[0, :])
            T.async_copy(C[0, b, 0:4, 0:4], cs[0, :, :])
            for i in T.serial(L):
                phase = i % 2
                if i + 1 < L:
                    T.async_copy(X[i + 1, b, 0:512], xs[1 - phase, :])
                    T.async_copy(M[i + 1, b, 0:4], ms[1 - phase, :])
                    T.async_copy(C[i + 1, b, 0:4, 0:4], cs[1 - phase, :, :])
                if i + 1 < L:
                    T.ptx_wait_group(3)
                else:
                    T.ptx_wait_group(0)
                for r in T.serial(4):
                    for e in T.serial(8):
                        Y[i, b, r, tx * 8 + e] = T.cast(xs[phase, tx * 8 + e], "float32") * ms[phase, r] + cs[phase, r, e % 4] + ws[(tx * 5 + e) % 336]
    return main
)";

/// Every barrier of the kernel removed.
std::shared_ptr<ir::Kernel> withoutSyncs(const ir::Kernel &k) {
    return simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) -> ir::Stmt {
        return lib::is(c, lib::Fn::Sync) ? ir::Seq::make({}, e.loc) : simtest::same(e);
    });
}

void expectLayers(int N, int L, const char *arch) {
    LowerRun r;
    simtest::lowerFor(r, std::string(kLayers) + "k = make(" + std::to_string(L) + ")\n", arch);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    auto calls = simtest::callCounts(k);
    EXPECT_GE(calls[lib::Fn::CpAsyncCopy], 7) << r.diags(); // every T.async_copy of the program, none synchronous
    EXPECT_EQ(calls[lib::Fn::CopyG2S], 0);
    std::map<std::string, std::vector<double>> io;
    io["X"] = simtest::randomData((size_t)L * N * 512, 61, -1, 1);
    io["M"] = simtest::randomData((size_t)L * N * 4, 62, -1, 1);
    io["C"] = simtest::randomData((size_t)L * N * 16, 63, -1, 1);
    io["W"] = simtest::randomData((size_t)N * 336, 64, -1, 1);
    for (auto *t : {&io["X"], &io["M"], &io["C"], &io["W"]})
        for (auto &e : *t) e = std::round(e * 16) / 16; // exact in bfloat16 and in the float sums and products
    std::vector<double> want((size_t)L * N * 4 * 512);
    for (int i = 0; i < L; ++i)
        for (int t = 0; t < N; ++t)
            for (int row = 0; row < 4; ++row)
                for (int j = 0; j < 512; ++j)
                    want[(((size_t)i * N + t) * 4 + row) * 512 + j] =
                        io["X"][((size_t)i * N + t) * 512 + j] * io["M"][((size_t)i * N + t) * 4 + row] +
                        io["C"][((size_t)i * N + t) * 16 + row * 4 + j % 4] + io["W"][(size_t)t * 336 + (j / 8 * 5 + j % 8) % 336];
    auto run = [&](const ir::Kernel &kernel, uint64_t seed) {
        return runY(kernel, {{"X", &io["X"]}, {"M", &io["M"]}, {"C", &io["C"]}, {"W", &io["W"]}, {"Y", &io["Y"]}}, io["Y"], want, N, seed);
    };
    simtest::expectClean([&](uint64_t seed) { return run(k, seed); }, {0, 1, 2});
    EXPECT_TRUE(simtest::anyFailure(run(*withoutFirstWait(k), 0))) << "a read of a stage still in flight went unnoticed";
    EXPECT_TRUE(simtest::anyFailure(run(*withoutSyncs(k), 0))) << "a read of another thread's chunk without a barrier went unnoticed";
}

} // namespace


TEST(LowerSimAsyncCopy, Sm90aTokensDivide) { expectRows(12, 4, 1, "sm_90a"); }
TEST(LowerSimAsyncCopy, Sm80TokensDoNotDivide) { expectRows(7, 3, 1, "sm_80"); }
TEST(LowerSimAsyncCopy, OneTokenPerBlockAndIdleBlocks) { expectRows(3, 4, 1, "sm_90a"); }
TEST(LowerSimAsyncCopy, WaitForTheTileAloneIsEnough) { expectRows(7, 3, 2, "sm_80"); }
TEST(LowerSimAsyncCopy, WaitThatDoesNotCoverIsSynchronous) { expectRows(7, 3, 3, "sm_90a"); }

TEST(LowerSimAsyncCopy, RingFedAheadWithLastTilePrefetch) { expectRing(7, 3, "sm_90a"); }
TEST(LowerSimAsyncCopy, RingFedAheadOneTokenPerBlock) { expectRing(2, 4, "sm_80"); }

TEST(LowerSimAsyncCopy, RowsOfFewChunksTwoLayers) { expectLayers(3, 2, "sm_90a"); }
TEST(LowerSimAsyncCopy, RowsOfFewChunksThreeLayers) { expectLayers(2, 3, "sm_80"); }
