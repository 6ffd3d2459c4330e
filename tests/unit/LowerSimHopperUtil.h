/// \file
/// Shared by LowerSimHopperTest.cpp and LowerSimHopperMutantTest.cpp: examples/gemm.tile (and variants: another
/// type, B stored (N, K)) lowered for sm_90a or sm_90, with TMA (warp roles) and without, run on the simulator
/// against the float64 product, and the lowered kernel with its library calls rewritten by role.
#pragma once

#include "LowerSimUtil.h"

#include "tilec/IROperator.h"

#include <cmath>
#include <initializer_list>

namespace tilec::simtest::gemm {

using lowertest::LowerRun;
namespace lib = passes::lib;

/// One instantiation of examples/gemm.tile, optionally in another type or with B stored (N, K).
struct GemmCase {
    int M, N, K, bm, bn, bk, stages, threads;
    const char *dtype = "float16";
    bool transB = false;
};

inline void replace(std::string &s, const std::string &from, const std::string &to) {
    auto at = s.find(from);
    ASSERT_NE(at, std::string::npos) << "examples/gemm.tile no longer has: " << from;
    s.replace(at, from.size(), to);
}

inline std::string gemmSource(const GemmCase &g) {
    std::string src = simtest::withExport("gemm.tile", "k = matmul(" + std::to_string(g.M) + ", " + std::to_string(g.N) + ", " +
                                                           std::to_string(g.K) + ", " + std::to_string(g.bm) + ", " +
                                                           std::to_string(g.bn) + ", " + std::to_string(g.bk) + ", " +
                                                           std::to_string(g.stages) + ", " + std::to_string(g.threads) + ")");
    if (g.transB) {
        replace(src, "B: T.Tensor((K, N)", "B: T.Tensor((N, K)");
        replace(src, "T.alloc_shared((block_K, block_N)", "T.alloc_shared((block_N, block_K)");
        replace(src, "T.copy(B[ko * block_K, bx * block_N], B_shared)", "T.copy(B[bx * block_N, ko * block_K], B_shared)");
        replace(src, "T.gemm(A_shared, B_shared, C_local)", "T.gemm(A_shared, B_shared, C_local, transpose_B=True)");
    }
    const std::string from = "\"float16\"", to = std::string("\"") + g.dtype + "\"";
    for (auto at = src.find(from); at != std::string::npos; at = src.find(from, at + to.size())) src.replace(at, from.size(), to);
    return src;
}

/// The sm_90a (or `arch`'s) lowerings: with TMA (warp roles) and without (the variant the launcher runs when
/// run-time pointers break TMA's rules).
struct Lowered {
    LowerRun r, noTma;
    const ir::Kernel *roles = nullptr, *plain = nullptr;
    explicit Lowered(const GemmCase &g, bool both = false, const char *arch = "sm_90a") {
        Variant t{*Target::parse(arch), {}};
        t.options.clusters = false; // the simulator runs one block at a time: clusters are not modelled (it refuses them)
        r.run(gemmSource(g), "gemm.tile", t);
        roles = warpRoles(r);
        if (!both) return;
        t.options.tma = false;
        noTma.run(gemmSource(g), "gemm.tile", t);
        plain = noTma.kernel("k");
    }
};

/// C = A B of `g` on kernel `k` under the interleaving of `seed`, A and B quarters (exact products and sums),
/// compared element by element with the float64 product rounded to C's type.
inline Outcome simulate(const ir::Kernel &k, const GemmCase &g, uint64_t seed, const Scalars &sizes = {}) {
    auto a = quarters((size_t)g.M * g.K, 1), b = quarters((size_t)g.K * g.N, 2);
    std::vector<double> c((size_t)g.M * g.N, std::nan(""));
    Outcome o = runCaught(k, {{"A", &a}, {"B", &b}, {"C", &c}}, sizes, seed);
    DType out = k.params[2].buffer->dtype;
    for (int i = 0; i < g.M; ++i)
        for (int j = 0; j < g.N; ++j) {
            double acc = 0;
            for (int kk = 0; kk < g.K; ++kk) acc += a[(size_t)i * g.K + kk] * b[g.transB ? (size_t)j * g.K + kk : (size_t)kk * g.N + j];
            double want = roundToDType(out, acc), got = c[(size_t)i * g.N + j];
            o.check(got == want, [&] {
                return "C[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(got) + ", expected " + std::to_string(want);
            });
        }
    return o;
}

inline void expectCorrect(const ir::Kernel &k, const GemmCase &g, std::initializer_list<uint64_t> seeds,
                   const Scalars &sizes = {}) {
    for (uint64_t seed : seeds) {
        Outcome o = simulate(k, g, seed, sizes);
        EXPECT_EQ(o.error, "") << "seed " << seed;
        for (auto &r : o.races) ADD_FAILURE() << "seed " << seed << ": race: " << r;
        EXPECT_EQ(o.wrong, 0) << "seed " << seed << ": " << o.firstWrong;
    }
}

/// Both variants of an sm_90a (or `arch`'s) lowering: warp roles under three interleavings, and the cp.async
/// variant.
inline void hopperCase(const GemmCase &g, const char *arch = "sm_90a") {
    Lowered l(g, true, arch);
    ASSERT_TRUE(l.roles) << "no warp-specialized kernel for " << arch << "\n" << l.r.diags();
    EXPECT_EQ(l.roles->threads, g.threads);
    expectCorrect(*l.roles, g, {0, 1, 2});
    ASSERT_TRUE(l.plain && !l.plain->producerThreads) << "no variant without TMA\n" << l.noTma.diags();
    expectCorrect(*l.plain, g, {0});
}

/// The kernel with each library-call statement passed through `f` (`consumer`: in the consumer role), which
/// returns the replacement (null: removed).
struct Mutated {
    std::shared_ptr<ir::Kernel> kernel;
    Mutated(const ir::Kernel &k, std::function<ir::Stmt(const ir::Evaluate &, const ir::Call &, bool consumer)> f)
        : kernel(rewriteCalls(k, [f](const ir::Evaluate &e, const ir::Call &c, Role r) { return f(e, c, r == Role::Consumer); })) {}
};

inline const GemmCase kMutant{100, 72, 320, 64, 64, 64, 2, 128}; // five k-blocks through a ring of two

/// The epilogue calls of the consumer role, by kind.
inline std::map<lib::Fn, int> epilogueCalls(const ir::Kernel &k) {
    std::map<lib::Fn, int> n;
    Mutated(k, [&](const ir::Evaluate &e, const ir::Call &c, bool consumer) {
        for (lib::Fn f : {lib::Fn::StmatrixTile, lib::Fn::TmaStoreTile, lib::Fn::TmaStoreWait, lib::Fn::FenceProxyAsync})
            if (consumer && lib::is(c, f)) ++n[f];
        return ir::Evaluate::make(e.value, e.loc);
    });
    return n;
}

} // namespace tilec::simtest::gemm
