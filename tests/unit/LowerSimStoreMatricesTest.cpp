/// \file
/// storeMatrices on the CPU simulator: a tensor-core accumulator copied into a 16-bit shared tile
/// (`T.copy(acc, c_s)`, converted or not, plain or transposed) is stored by each warp's stmatrix on sm_90 and
/// sm_90a, and every output element equals the per-thread stores' (--no-stmatrix-copies, and sm_80, which has no
/// stmatrix), for wgmma accumulators (sm_90a) and mma.sync ones (sm_90), float16 and bfloat16, tiles the bank model
/// swizzles and tiles it leaves row-major, x4 and x2 (an odd number of 8-column tiles a warp), a tile a later GEMM
/// reads in the panel layout or the row swizzle. The simulator's stmatrix is the hardware's: with its rows written
/// to the unswizzled addresses, or transposed, the results are wrong.
#include "LowerSimUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Outcome;
namespace lib = tilec::passes::lib;

constexpr const char *kKernels = R"(
import tilelang.language as T

def staged(M, N, K, bm, bn, bk, threads, dtype, form="plain"):
    c_shape, s_shape = ((N, M), (bn, bm)) if form == "transposed" else ((M, N), (bm, bn + 4 if form == "padded" else bn))

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor(c_shape, dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            a_s = T.alloc_shared((bm, bk), "float16")
            b_s = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            c_s = T.alloc_shared(s_shape, dtype)
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[by * bm, k * bk], a_s)
                T.copy(B[k * bk, bx * bn], b_s)
                T.gemm(a_s, b_s, acc)
            if form == "transposed":
                for i, j in T.Parallel(bm, bn):
                    c_s[j, i] = acc[i, j]
                T.copy(c_s, C[bx * bn, by * bm])
            elif form == "narrowed":
                acc16 = T.alloc_fragment((bm, bn), dtype)
                T.copy(acc, acc16)
                T.copy(acc16, c_s)
                T.copy(c_s, C[by * bm, bx * bn])
            elif form == "scaled" or form == "indexed":
                for i, j in T.Parallel(bm, bn):
                    c_s[i, j] = acc[i, j] * 0.5 if form == "scaled" else acc[i, j] + j
                T.copy(c_s, C[by * bm, bx * bn])
            elif form == "padded":
                T.copy(acc, c_s[0:bm, 0:bn])
                T.copy(c_s[0:bm, 0:bn], C[by * bm, bx * bn])
            else:
                T.copy(acc, c_s)
                T.copy(c_s, C[by * bm, bx * bn])
    return main

def chained(M, N, K, bm, bn, bk, threads, dtype):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, bk), "float16"), C: T.Tensor((M, bk), "float32")):
        with T.Kernel(1, T.ceildiv(M, bm), threads=threads) as (bx, by):
            a_s = T.alloc_shared((bm, bk), "float16")
            b_s = T.alloc_shared((bk, bk), "float16")
            s = T.alloc_fragment((bm, bk), "float32")
            p_s = T.alloc_shared((bm, bk), dtype)
            v_s = T.alloc_shared((bk, bk), dtype)
            o = T.alloc_fragment((bm, bk), "float32")
            T.copy(A[by * bm, 0], a_s)
            T.copy(B[0, 0], b_s)
            T.clear(s)
            T.gemm(a_s, b_s, s)
            T.copy(s, p_s)
            for i, j in T.Parallel(bk, bk):
                v_s[i, j] = T.if_then_else(i == j, 1.0, 0.0)
            T.clear(o)
            T.gemm(p_s, v_s, o)
            T.copy(o, C[by * bm, 0])
    return main
)";

/// One lowering's output C for the kernel `call` (C of `cElems` elements), with what the run reported.
struct Lowered {
    std::vector<double> c;
    Outcome outcome;
    std::map<lib::Fn, int> calls;
};

Variant variant(const char *arch, bool stmatrix) {
    Variant v{*Target::parse(arch), {}};
    v.options.stmatrixCopies = stmatrix;
    return v;
}

/// A, B multiples of 1/4 in [-2, 2] (every partial sum exact in float32).
struct Inputs {
    std::vector<double> a, b;
    Inputs(int M, int N, int K) : a(simtest::quarters((size_t)M * K, 3)), b(simtest::quarters((size_t)K * N, 4)) {}
};

Lowered lowerAndRun(const std::string &call, const Variant &v, Inputs &in, size_t cElems,
                const std::function<std::shared_ptr<ir::Kernel>(const ir::Kernel &)> &mutate = nullptr) {
    LowerRun r;
    r.run(std::string(kKernels) + "k = " + call + "\n", "t.tile", v);
    Lowered out;
    if (!r.lowered || r.lowered->kernels.size() != 1) {
        ADD_FAILURE() << call << ": " << r.diags();
        return out;
    }
    const ir::Kernel &k = *r.lowered->kernels[0];
    out.calls = simtest::callCounts(k);
    out.c.assign(cElems, std::nan(""));
    auto mutated = mutate ? mutate(k) : nullptr;
    out.outcome = simtest::runCaught(mutated ? *mutated : k, {{"A", &in.a}, {"B", &in.b}, {"C", &out.c}});
    return out;
}

int swizzleCalls(const std::map<lib::Fn, int> &calls) {
    int n = 0;
    for (lib::Fn f : {lib::Fn::Swz, lib::Fn::SwzSplit, lib::Fn::SwzPanels, lib::Fn::SwzPanelsSplit})
        n += calls.count(f) ? calls.at(f) : 0;
    return n;
}

/// `call` lowered for `arch` with and without storeMatrices: the same C, element for element (NaN-free), clean
/// runs, `stmatrix` calls (0 where the target has none) and the tile swizzled or not as `swizzled` says.
void expectSame(const char *arch, const std::string &call, int M, int N, int K, size_t cElems, int stmatrix, bool swizzled) {
    Inputs in(M, N, K);
    Lowered off = lowerAndRun(call, variant(arch, false), in, cElems), on = lowerAndRun(call, variant(arch, true), in, cElems);
    const std::string what = std::string(arch) + " " + call;
    for (const Lowered *r : {&off, &on})
        EXPECT_FALSE(simtest::anyFailure(r->outcome)) << what << ": " << r->outcome.error << (r->outcome.races.empty() ? "" : r->outcome.races[0]);
    EXPECT_EQ(off.calls[lib::Fn::Stmatrix], 0) << what;
    EXPECT_EQ(on.calls[lib::Fn::Stmatrix], stmatrix) << what;
    EXPECT_EQ(swizzleCalls(on.calls) > 0, swizzled) << what << ": the staged tile's layout";
    ASSERT_EQ(on.c.size(), off.c.size());
    size_t wrong = 0;
    for (size_t e = 0; e < on.c.size(); ++e) wrong += !(on.c[e] == off.c[e]); // NaN (unwritten) counts as wrong
    EXPECT_EQ(wrong, 0u) << what << ": elements differing from the per-thread stores'";
}

// wgmma accumulators (sm_90a): 256-byte rows (swizzled), 128-byte rows of bfloat16, rows of 96 bytes (no row
// swizzle applies) and a warpgroup's 24 columns (three 8-column tiles: x2).
TEST(LowerSimStoreMatrices, WgmmaAccumulatorsSameAsThreadStores) {
    expectSame("sm_90a", "staged(256, 256, 64, 128, 128, 32, 256, 'float16')", 256, 256, 64, 256 * 256, 1, true);
    expectSame("sm_90a", "staged(128, 128, 64, 64, 64, 32, 128, 'bfloat16')", 128, 128, 64, 128 * 128, 1, true);
    expectSame("sm_90a", "staged(128, 96, 64, 64, 48, 32, 128, 'float16')", 128, 96, 64, 128 * 96, 1, false);
    expectSame("sm_90a", "staged(128, 48, 64, 64, 24, 32, 128, 'bfloat16')", 128, 48, 64, 128 * 48, 1, false);
}

// mma.sync accumulators (sm_90: stmatrix without wgmma) over 2 x 2 and 4 x 2 warps; sm_80 keeps the per-thread
// stores (no stmatrix there).
TEST(LowerSimStoreMatrices, MmaSyncAccumulatorsSameAsThreadStores) {
    expectSame("sm_90", "staged(256, 256, 64, 128, 128, 32, 128, 'float16')", 256, 256, 64, 256 * 256, 1, true);
    expectSame("sm_90", "staged(128, 128, 64, 128, 64, 32, 256, 'bfloat16')", 128, 128, 64, 128 * 128, 1, true);
    expectSame("sm_90", "staged(64, 48, 64, 64, 24, 32, 64, 'float16')", 64, 48, 64, 64 * 48, 1, false);
    expectSame("sm_80", "staged(128, 128, 64, 64, 64, 32, 128, 'float16')", 128, 128, 64, 128 * 128, 0, true);
}

// The copy's other forms: transposed (stmatrix.trans), from a 16-bit fragment (no conversion in the copy), scaled
// by a constant, into a tile of 256-byte rows that the next GEMM reads (wgmma's layout of 128-byte panels on
// sm_90a, mma.sync's row swizzle on sm_90). Nests stmatrix cannot store keep the per-thread stores: a value that
// depends on the column itself, a tile whose rows are padded to 68 elements (no 16-byte aligned pieces).
TEST(LowerSimStoreMatrices, TransposedNarrowedAndChainedSameAsThreadStores) {
    for (const char *arch : {"sm_90a", "sm_90"}) {
        expectSame(arch, "staged(128, 128, 64, 64, 64, 32, 128, 'float16', 'transposed')", 128, 128, 64, 128 * 128, 1, true);
        expectSame(arch, "staged(128, 128, 64, 64, 64, 32, 128, 'bfloat16', 'narrowed')", 128, 128, 64, 128 * 128, 1, true);
        expectSame(arch, "staged(128, 128, 64, 64, 64, 32, 128, 'float16', 'scaled')", 128, 128, 64, 128 * 128, 1, true);
        expectSame(arch, "staged(128, 128, 64, 64, 64, 32, 128, 'float16', 'indexed')", 128, 128, 64, 128 * 128, 0, true);
        expectSame(arch, "staged(128, 128, 64, 64, 64, 32, 128, 'bfloat16', 'padded')", 128, 128, 64, 128 * 128, 0, false);
        expectSame(arch, "chained(128, 128, 128, 64, 128, 128, 128, 'float16')", 128, 128, 128, 128 * 128, 1, true);
    }
}

/// The kernel with each stmatrix call's arguments passed through `f`.
std::shared_ptr<ir::Kernel> rewriteStmatrix(const ir::Kernel &k, const std::function<std::vector<ir::Expr>(std::vector<ir::Expr>)> &f) {
    return simtest::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, simtest::Role) -> ir::Stmt {
        if (!lib::is(c, lib::Fn::Stmatrix)) return simtest::same(e);
        return ir::Evaluate::make(ir::Call::make(c.dtype, c.name, f(c.args), c.loc), e.loc);
    });
}

/// Swizzle calls in an expression replaced by the offsets they map.
struct Unswizzle : ir::IRMutator {
    using ir::IRMutator::visit;
    ir::Expr visit(const std::shared_ptr<const ir::Call> &op) override {
        ir::Expr e = ir::IRMutator::visit(op);
        auto c = ir::as<ir::Call>(e);
        if (lib::is(*c, lib::Fn::Swz)) return lib::arg(*c, lib::Fn::Swz, "offset");
        if (lib::is(*c, lib::Fn::SwzSplit))
            return ir::binary(ir::BinaryOp::Add, lib::arg(*c, lib::Fn::SwzSplit, "runtime"), lib::arg(*c, lib::Fn::SwzSplit, "fixed"));
        return e;
    }
};

TEST(LowerSimStoreMatrices, SimulatorSeesUnswizzledOrTransposedRows) {
    const std::string call = "staged(128, 128, 64, 64, 64, 32, 128, 'float16')";
    Inputs in(128, 128, 64);
    const size_t n = 128 * 128;
    Lowered good = lowerAndRun(call, variant("sm_90a", true), in, n);
    ASSERT_FALSE(simtest::anyFailure(good.outcome)) << good.outcome.error;
    auto differs = [&](const Lowered &r) { return simtest::anyFailure(r.outcome) || r.c != good.c; };
    Lowered plain = lowerAndRun(call, variant("sm_90a", true), in, n, [](const ir::Kernel &k) {
        return rewriteStmatrix(k, [](std::vector<ir::Expr> a) {
            const size_t d = lib::argIndex(lib::Fn::Stmatrix, "dst");
            a[d] = Unswizzle().mutate(a[d]);
            return a;
        });
    });
    EXPECT_TRUE(differs(plain)) << "stmatrix rows at unswizzled addresses under swizzled reads went unnoticed";
    Lowered trans = lowerAndRun(call, variant("sm_90a", true), in, n, [](const ir::Kernel &k) {
        return rewriteStmatrix(k, [](std::vector<ir::Expr> a) {
            a[lib::argIndex(lib::Fn::Stmatrix, "trans")] = ir::intImm(1, DType::Int32);
            return a;
        });
    });
    EXPECT_TRUE(differs(trans)) << "stmatrix.trans in place of stmatrix went unnoticed";
}

} // namespace
