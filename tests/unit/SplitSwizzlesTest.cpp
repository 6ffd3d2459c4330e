/// \file
/// Swizzled offsets split into the part unrolled loops fix and the rest (src/lower/SplitSwizzles.cpp). The device
/// library's swz_split / swz_panels_split (stdlib/tilec/swizzle.cuh, compiled here as host C++) equal the whole
/// map of the sum on the pass's conditions (parts that share no bit below the period, the fixed part below it),
/// over every row swizzle (rows of 32, 64, 128 and 512 bytes; tiles of 8 rows or more, of 4 rows, of 33), and the
/// panel layout; and differ where the parts overlap (the conditions are needed). Lowered kernels whose unrolled
/// nests read swizzled tiles (mHC's bfloat16 rows into a tf32 gemm_rs operand, a float16 one) take the split form
/// and compute their GEMMs exactly on the CPU simulator, which checks every split offset against the whole map; a
/// fixed part moved by one chunk is reported.
#define __host__
#define __device__
#define __forceinline__ inline
#include "tilec/swizzle.cuh"
#undef __host__
#undef __device__
#undef __forceinline__

#include "ExactGemm.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Outcome;
namespace lib = tilec::passes::lib;

namespace {

/// Every pair (a, b) the pass may form below 2 * period (a, and b where the period is a power of two; b below the
/// period where not), or random ones past a million pairs: swz_split(a, b) is the whole map of a + b.
/// `Span`: the panel layout's (its rows' widest by default, or a narrower one the plan chose).
template <int Cols, int EB, int TileElems, bool Panels, int Span = tilec::panel_span<Cols * EB>()> void expectSplitEqualsWhole(int period) {
    auto whole = [](int x) {
        return Panels ? tilec::swz_panels<Cols, EB, TileElems, Span>(x) : tilec::swz_in_tiles<Cols, EB, TileElems>(x);
    };
    auto split = [](int a, int b) {
        return Panels ? tilec::swz_panels_split<Cols, EB, TileElems, Span>(a, b) : tilec::swz_split<Cols, EB, TileElems>(a, b);
    };
    const bool pow2 = (period & (period - 1)) == 0;
    const int low = pow2 ? period - 1 : ~0;
    std::mt19937 rng(7);
    const long long pairs = (pow2 ? 4LL : 2LL) * period * period;
    int checked = 0, failed = 0;
    auto check = [&](int a, int b) {
        if ((a & b & low) || (!pow2 && a + b >= period)) return;
        ++checked;
        if (split(a, b) != whole(a + b) && ++failed <= 5)
            ADD_FAILURE() << "swz_split<" << Cols << ", " << EB << ", " << TileElems << (Panels ? ">, panels of " + std::to_string(Span) : ">") << "(" << a
                          << ", " << b << ") = " << split(a, b) << ", the whole map " << whole(a + b);
    };
    if (pairs <= (1LL << 22)) {
        for (int a = 0; a < 2 * period; ++a)
            for (int b = 0; b < (pow2 ? 2 : 1) * period; ++b) check(a, b);
    } else {
        for (int i = 0; i < (1 << 20); ++i) {
            const int b = (int)(rng() % (unsigned)((pow2 ? 2 : 1) * period)), a = (int)(rng() % (unsigned)(2 * period));
            check(a & ~(pow2 ? b : 0), b);
            check(a & ~b, b);
        }
    }
    EXPECT_GT(checked, 1000);
    EXPECT_EQ(failed, 0);
}

TEST(SplitSwizzles, DeviceFormulaIsTheWholeMapOfTheSum) {
    expectSplitEqualsWhole<256, 2, 8192, false>(8 * 256);  // mHC: 512-byte rows, 32 rows
    expectSplitEqualsWhole<64, 2, 8192, false>(8 * 64);    // 128-byte rows
    expectSplitEqualsWhole<32, 2, 2048, false>(8 * 32);    // 64-byte rows: (row / 2) % 4
    expectSplitEqualsWhole<16, 2, 1024, false>(8 * 16);    // 32-byte rows: (row / 4) % 2
    expectSplitEqualsWhole<64, 2, 256, false>(256);        // 4 rows: the pattern starts afresh every tile
    expectSplitEqualsWhole<32, 4, 4096, false>(8 * 32);    // float, 128-byte rows
    expectSplitEqualsWhole<512, 4, 16896, false>(16896);   // 33 rows of 2048 bytes: a period that is not a power of two
    expectSplitEqualsWhole<128, 2, 4096, true>(4096);      // panels: 256-byte rows in two 128-byte panels
    expectSplitEqualsWhole<256, 1, 8192, true>(8192);      // panels of float8
    // narrower panels than the rows' widest (a B its warpgroups split at 32 or 16 columns: cpAsyncWgmma)
    expectSplitEqualsWhole<64, 2, 4096, true, 64>(4096);   // 128-byte rows in two 64-byte panels
    expectSplitEqualsWhole<64, 2, 4096, true, 32>(4096);   // ... in four 32-byte panels
    expectSplitEqualsWhole<32, 2, 1024, true, 32>(1024);   // 64-byte rows in two 32-byte panels
}

/// The simulator's panel layout (src/sim/Simulator.h's panelled, which the LowerSim tests trust) is the device
/// library's swz_panels of every span, narrower ones among them, over two tiles (pipeline stages).
template <int Cols, int EB, int TileElems, int Span> void expectSimulatorPanels() {
    int wrong = 0;
    for (int o = 0; o < 2 * TileElems; ++o)
        wrong += simtest::panelled(Cols, EB, Span, TileElems, o) != tilec::swz_panels<Cols, EB, TileElems, Span>(o);
    EXPECT_EQ(wrong, 0) << Cols << " columns of " << EB << " bytes in panels of " << Span;
}

TEST(SplitSwizzles, SimulatorPanelsAreTheLibrarys) {
    expectSimulatorPanels<128, 2, 4096, 128>();
    expectSimulatorPanels<64, 2, 4096, 128>();
    expectSimulatorPanels<64, 2, 4096, 64>();
    expectSimulatorPanels<64, 2, 4096, 32>();
    expectSimulatorPanels<32, 2, 1024, 32>();
    expectSimulatorPanels<64, 4, 2048, 64>();
}

TEST(SplitSwizzles, OverlappingPartsAreNotTheSum) {
    // 8 + 8 carries into the next chunk bit: the split form XORs the chunk bits instead.
    EXPECT_NE((tilec::swz_split<256, 2, 8192>(8, 8)), (tilec::swz_in_tiles<256, 2, 8192>(16)));
    // row bits that carry: rows 1 + 1 are row 2, whose XOR value is not the XOR of row 1's with itself
    EXPECT_NE((tilec::swz_split<64, 2, 8192>(64, 64)), (tilec::swz_in_tiles<64, 2, 8192>(128)));
}

/// Rows whose length is not a power of two (splitRowsNotPow2): for every offset a that is a multiple of the
/// 16-byte chunk and b below it, swz(a + b) = swz(a) + b; whole periods (8 rows, or the tile where its rows are
/// fewer or not a multiple of 8) add outside the map. And a part that reaches the next chunk is not the sum.
template <int Cols, int EB, int TileElems> void expectRowsNotPow2Identities() {
    constexpr int C = 16 / EB;
    constexpr int P = (TileElems / Cols) % 8 == 0 ? 8 * Cols : TileElems;
    auto whole = [](int x) { return tilec::swz_in_tiles<Cols, EB, TileElems>(x); };
    int failed = 0, moved = 0;
    for (int a = 0; a < 3 * P; a += C) {
        for (int b = 0; b < C; ++b)
            if (whole(a + b) != whole(a) + b && ++failed <= 5)
                ADD_FAILURE() << "swz<" << Cols << ", " << EB << ", " << TileElems << ">(" << a << " + " << b << ") = " << whole(a + b)
                              << ", not swz(" << a << ") + " << b;
        for (int k = 1; k <= 3; ++k)
            if (whole(a + k * P) != whole(a) + k * P && ++failed <= 5)
                ADD_FAILURE() << "swz<" << Cols << ", " << EB << ", " << TileElems << ">(" << a << " + " << k << " periods) is not outside the map";
        moved += whole(a + C) != whole(a) + C; // a whole chunk further is XORed with the row's value
    }
    EXPECT_EQ(failed, 0);
    EXPECT_GT(moved, 0) << "swz<" << Cols << ", " << EB << ", " << TileElems << "> moves no chunk: the test proves nothing";
}

TEST(SplitSwizzles, RowsNotPow2KeepChunksAndPeriods) {
    expectRowsNotPow2Identities<192, 2, 192 * 128>(); // attention backward's dK, head dimension 192
    expectRowsNotPow2Identities<192, 4, 192 * 64>();  // float32 rows of 768 bytes
    expectRowsNotPow2Identities<96, 4, 96 * 16>();    // 384-byte rows
    expectRowsNotPow2Identities<320, 2, 320 * 4>();   // 4 rows: the pattern starts afresh every tile
    expectRowsNotPow2Identities<576, 2, 576 * 33>();  // 33 rows: a period of the whole tile
    expectRowsNotPow2Identities<48, 8, 48 * 8>();     // 8-byte elements, 2 per chunk
}

const char *kKernels = R"(import tilelang.language as T

def rows_into_fragment(M, H, hb, stages):
    @T.prim_func
    def main(X: T.Tensor((M, H), "bfloat16"), W: T.Tensor((32, H), "float32"), O: T.Tensor((M, 32), "float32")):
        with T.Kernel(T.ceildiv(M, 32), threads=128) as px:
            acc = T.alloc_fragment((32, 32), "float32")
            T.clear(acc)
            for pz in T.Pipelined(H // hb, num_stages=stages):
                x_s = T.alloc_shared((32, hb), "bfloat16")
                w_s = T.alloc_shared((32, hb), "float32")
                T.copy(X[px * 32, pz * hb], x_s)
                T.copy(W[0, pz * hb], w_s)
                x16 = T.alloc_fragment((32, hb), "bfloat16")
                T.copy(x_s, x16)
                x32 = T.alloc_fragment((32, hb), "float32")
                T.copy(x16, x32)
                T.gemm(x32, w_s, acc, transpose_B=True)
            T.copy(acc, O[px * 32, 0])
    return main

def scaled_operand(M, K, N, bm, bk):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            a_s = T.alloc_shared((bm, bk), "float16")
            b_s = T.alloc_shared((bk, N), "float16")
            a_f = T.alloc_fragment((bm, bk), "float16")
            acc = T.alloc_fragment((bm, N), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[bx * bm, k * bk], a_s)
                T.copy(B[k * bk, 0], b_s)
                T.copy(a_s, a_f)
                for i, j in T.Parallel(bm, bk):
                    a_f[i, j] = a_f[i, j] * T.float16(2)
                T.gemm(a_f, b_s, acc)
            T.copy(acc, C[bx * bm, 0])
    return main

def serial_panel_rows(M, N, K, bm, bn, bk, threads):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            a_s = T.alloc_shared((bm, bk), "float16")
            b_s = T.alloc_shared((bn, bk), "float16")
            b_d = T.alloc_shared((bn, bk), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            tx = T.get_thread_binding()
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[by * bm, k * bk], a_s)
                T.copy(B[bx * bn, k * bk], b_s)
                for i in T.serial(bn * bk // (threads * 8)):
                    for v in T.vectorized(8):
                        idx = i * threads * 8 + tx * 8 + v
                        b_d[idx // bk, idx % bk] = b_s[idx // bk, idx % bk] * T.float16(2)
                T.gemm(a_s, b_d, acc, transpose_B=True)
            T.copy(acc, C[by * bm, bx * bn])
    return main

def wide_rows_out(M, N, K, block_M=64, block_N=192, block_K=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            C_l = T.alloc_fragment((block_M, block_N), "float")
            C_s = T.alloc_shared((block_M, block_N), "float")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * block_M, bx * block_N])
    return main
)";

/// Every split offset's fixed part moved by `by` elements.
struct MoveFixed : ir::IRMutator {
    using ir::IRMutator::visit;
    int64_t by = 0;
    ir::Expr visit(const std::shared_ptr<const ir::Call> &op) override {
        ir::Expr e = ir::IRMutator::visit(op);
        auto c = ir::as<ir::Call>(e);
        if (!lib::is(*c, lib::Fn::SwzSplit)) return e;
        std::vector<ir::Expr> args = c->args;
        auto &f = args[lib::argIndex(lib::Fn::SwzSplit, "fixed")];
        f = ir::binary(ir::BinaryOp::Add, f, ir::intImm(by));
        return ir::Call::make(c->dtype, c->name, std::move(args), c->loc);
    }
};

/// C = scale * A B^T (or A B) on the simulator against float64, A and B multiples of 1/16 in [-1, 1] (exact in
/// every type here and in every partial sum); the kernel's split offsets counted first.
void expectSplitGemm(const char *arch, const std::string &call, const char *a, const char *b, const char *c, int M, int K,
                     int N, bool transB, double scale) {
    LowerRun r;
    // the cp.async path's unrolled reads (rows_into_fragment's product reads A from registers, which takes warp
    // roles by default on sm_90a since session 42: --no-mma-warp-roles keeps the path this test is about)
    Variant v{*Target::parse(arch), {}};
    v.options.mmaWarpRoles = LoweringOptions::MmaWarpRoles::Off;
    r.run(std::string(kKernels) + "k = " + call + "\n", "t.tile", v);
    ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    auto calls = simtest::callCounts(k);
    EXPECT_GT(calls[lib::Fn::SwzSplit], 0) << arch << " " << call << ": no split swizzle offset";
    EXPECT_EQ(calls[lib::Fn::Swz], 0) << arch << " " << call << ": an offset left whole";
    simtest::ExactGemm g(a, b, c, M, N, K, transB, scale, 51);
    auto run = [&](const ir::Kernel &kernel) { return g.run(kernel); };
    Outcome o = run(k);
    EXPECT_FALSE(simtest::anyFailure(o)) << arch << " " << call << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    MoveFixed m;
    m.by = 8; // one 16-byte chunk of 16-bit elements: another element, or parts that overlap
    auto moved = std::make_shared<ir::Kernel>(k);
    moved->body = m.mutate(k.body);
    EXPECT_TRUE(simtest::anyFailure(run(*moved))) << arch << " " << call << ": a fixed part moved by a chunk went unnoticed";
}

/// Stores into `name` at `outside + swz_panels(...)` (the panel layout's row terms moved out of the map), counted;
/// with `scale` set, their outside part doubled instead.
struct PanelRowStores : ir::IRMutator {
    using ir::IRMutator::visit;
    std::string name;
    bool scale = false;
    int found = 0;
    ir::Stmt visit(const std::shared_ptr<const ir::Store> &op) override {
        ir::Stmt s = ir::IRMutator::visit(op);
        auto st = ir::as<ir::Store>(s);
        auto add = st->buffer->name == name ? ir::as<ir::Binary>(st->indices[0]) : nullptr;
        if (!add || add->op != ir::BinaryOp::Add) return s;
        auto c = ir::as<ir::Call>(add->b);
        if (!c || !(lib::is(*c, lib::Fn::SwzPanels) || lib::is(*c, lib::Fn::SwzPanelsSplit)) || ir::as<ir::Call>(add->a)) return s;
        ++found;
        if (!scale) return s;
        ir::Expr moved = ir::binary(ir::BinaryOp::Add, ir::binary(ir::BinaryOp::Mul, add->a, ir::intImm(2)), add->b);
        return ir::Store::make(st->buffer, {moved}, st->value, st->loc);
    }
};

/// A T.serial loop over rows of a wgmma operand in the panel layout (a dequantizing GEMM's B tile, 256-byte rows:
/// `i * 1024 + tx * 8` over 128 threads) addresses it as `i * 512 + swz_panels(tx * 8)`: 8 rows are 512 elements of
/// a 64-wide panel. Exact on the simulator (cp.async path and warp roles); the outside part doubled is wrong.
TEST(SplitSwizzles, SerialRowsOfPanelTilesLeaveTheMapOnTheSimulator) {
    for (bool roles : {true, false}) {
        LowerRun r;
        const std::string src = std::string(kKernels) + "k = serial_panel_rows(128, 256, 256, 64, 128, 128, 128)\n";
        Variant v{*Target::parse("sm_90a"), {}};
        v.options.warpSpecialize = roles;
        r.run(src, "t.tile", v);
        ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
        const ir::Kernel &k = *r.lowered->kernels[0];
        PanelRowStores count;
        count.name = "b_d";
        (void)count.mutate(k.body);
        EXPECT_GT(count.found, 0) << (roles ? "warp roles" : "cp.async") << ": b_d's rows are not outside the map";
        simtest::ExactGemm g("A", "B", "C", 128, 256, 256, true, 2, 71);
        auto run = [&](const ir::Kernel &kernel) { return g.run(kernel); };
        Outcome o = run(k);
        EXPECT_FALSE(simtest::anyFailure(o)) << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
        PanelRowStores moved;
        moved.name = "b_d", moved.scale = true;
        auto mutated = std::make_shared<ir::Kernel>(k);
        mutated->body = moved.mutate(k.body);
        EXPECT_TRUE(simtest::anyFailure(run(*mutated))) << "rows moved twice as far went unnoticed";
    }
}

TEST(SplitSwizzles, UnrolledReadsOfSwizzledTilesOnTheSimulator) {
    for (const char *arch : {"sm_80", "sm_90a"}) {
        expectSplitGemm(arch, "rows_into_fragment(64, 512, 256, 2)", "X", "W", "O", 64, 512, 32, true, 1);
        expectSplitGemm(arch, "scaled_operand(256, 256, 64, 128, 64)", "A", "B", "C", 256, 256, 64, false, 2);
    }
}

/// Offsets `swz(rest) + low` (splitRowsNotPow2's part below a chunk outside the map): counted, and with `by` set,
/// their low part moved by that many elements.
struct ChunkLowParts : ir::IRMutator {
    using ir::IRMutator::visit;
    int64_t by = 0;
    int found = 0;
    ir::Expr visit(const std::shared_ptr<const ir::Binary> &op) override {
        ir::Expr e = ir::IRMutator::visit(op);
        auto add = ir::as<ir::Binary>(e);
        auto c = add && add->op == ir::BinaryOp::Add ? ir::as<ir::Call>(add->a) : nullptr;
        if (!c || !lib::is(*c, lib::Fn::Swz)) return e;
        ++found;
        return by ? ir::binary(ir::BinaryOp::Add, add->a, ir::binary(ir::BinaryOp::Add, add->b, ir::intImm(by))) : e;
    }
};

/// A GEMM's 64 x 192 float32 accumulator staged through a swizzled shared tile of 768-byte rows and copied out
/// under the bounds of 100 rows: the copy's unrolled reads of a chunk take `swz(base) + v` (one 16-byte access
/// for nvcc instead of four, each with its own division by 192), exact against float64 on the simulator on both
/// paths; the low part moved by one chunk is wrong.
TEST(SplitSwizzles, RowsNotPow2OnTheSimulator) {
    for (const char *arch : {"sm_80", "sm_90a"}) {
        LowerRun r;
        simtest::lowerFor(r, std::string(kKernels) + "k = wide_rows_out(100, 192, 64)\n", arch);
        ASSERT_TRUE(r.lowered && !r.lowered->kernels.empty()) << r.diags();
        const ir::Kernel &k = *r.lowered->kernels[0];
        ChunkLowParts count;
        (void)count.mutate(k.body);
        EXPECT_GT(count.found, 0) << arch << ": no offset with its part below a chunk outside the map";
        simtest::ExactGemm g("A", "B", "C", 100, 192, 64, false, 1, 91);
        Outcome o = g.run(k);
        EXPECT_FALSE(simtest::anyFailure(o)) << arch << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
        ChunkLowParts moved;
        moved.by = 4;
        auto mutated = std::make_shared<ir::Kernel>(k);
        mutated->body = moved.mutate(k.body);
        EXPECT_TRUE(simtest::anyFailure(g.run(*mutated))) << arch << ": a low part moved by a chunk went unnoticed";
    }
}

} // namespace
