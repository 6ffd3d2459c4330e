/// \file
/// wgmma with the consumer warpgroups splitting the product's columns (policy FullCol, or fewer 64-row slices
/// than warpgroups), checked on the CPU simulator (src/sim/Simulator.h): DeepSeek's MLA decoding as TileLang's
/// examples/deepseek_mla writes it (tests/lit/codegen/gemm_rs_column_split.tile, at smaller sizes), with P.V
/// reading P from shared memory (SS) or from a fragment loaded from it (RS: every warpgroup column holds a copy
/// of P's rows, Layout::warpCopies), on the warp-role (TMA) path and on the cp.async path, against float64.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRVisitor.h"
#include "tilec/passes/Layout.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;
namespace lib = tilec::passes::lib;

namespace {

struct MlaCase {
    int batch, heads, seqlen, dim, peDim, blockN, blockH;
    bool splitP;               ///< P.V from a fragment loaded from S_shared (RS) instead of from S_shared (SS)
    bool warpRoles = true;     ///< the TMA / warp-role path, else --no-warp-specialize (cp.async)
    std::string source() const {
        auto n = [](int v) { return std::to_string(v); };
        return simtest::withExport("gemm_rs_column_split.tile",
                                   "k = mla(" + n(batch) + ", " + n(heads) + ", " + n(seqlen) + ", " + n(dim) + ", " + n(peDim) +
                                       ", " + n(blockN) + ", " + n(blockH) + ", " + (splitP ? "True" : "False") + ")",
                                   "tests/lit/codegen");
    }
};

std::map<lib::Fn, int> callCounts(const ir::Kernel &k) {
    struct V : ir::IRVisitor {
        using ir::IRVisitor::visit;
        std::map<lib::Fn, int> n;
        void visit(const ir::Call &c) override {
            if (auto *i = lib::find(c.name)) ++n[i->fn];
            if (lib::is(c, lib::Fn::WgmmaSSInit)) ++n[lib::Fn::WgmmaSS]; // overwriting its accumulators: still SS
            ir::IRVisitor::visit(c);
        }
    } v;
    v.visit(k.body);
    return v.n;
}

/// softmax([Q, Q_pe] [KV, K_pe]^T * scale) KV per (batch, head), in float64, with P rounded to float16 as the
/// kernel's S_shared holds it.
std::vector<double> reference(const MlaCase &c, const std::vector<double> &q, const std::vector<double> &qpe,
                              const std::vector<double> &kv, const std::vector<double> &kpe) {
    std::vector<double> out((size_t)c.batch * c.heads * c.dim);
    const double scale = 1.0 / std::sqrt((double)(c.dim + c.peDim));
    for (int b = 0; b < c.batch; ++b)
        for (int h = 0; h < c.heads; ++h) {
            std::vector<double> s((size_t)c.seqlen);
            double mx = -INFINITY, sum = 0;
            for (int t = 0; t < c.seqlen; ++t) {
                double dot = 0;
                for (int x = 0; x < c.dim; ++x) dot += q[((size_t)b * c.heads + h) * c.dim + x] * kv[((size_t)b * c.seqlen + t) * c.dim + x];
                for (int x = 0; x < c.peDim; ++x)
                    dot += qpe[((size_t)b * c.heads + h) * c.peDim + x] * kpe[((size_t)b * c.seqlen + t) * c.peDim + x];
                mx = std::max(mx, s[(size_t)t] = dot * scale);
            }
            for (auto &e : s) sum += e = std::exp(e - mx);
            for (int x = 0; x < c.dim; ++x) {
                double o = 0;
                for (int t = 0; t < c.seqlen; ++t) o += s[(size_t)t] * kv[((size_t)b * c.seqlen + t) * c.dim + x];
                out[((size_t)b * c.heads + h) * c.dim + x] = o / sum;
            }
        }
    return out;
}

void mlaCase(const MlaCase &c) {
    Variant v{*Target::parse("sm_90a"), {}};
    v.options.warpSpecialize = c.warpRoles;
    LowerRun r;
    r.run(c.source(), "mla.tile", v);
    ASSERT_TRUE(r.lowered) << r.diags();
    const ir::Kernel *k = nullptr;
    for (auto &x : r.lowered->kernels)
        if (!c.warpRoles || x->producerThreads) k = x.get();
    ASSERT_TRUE(k) << "no warp-role kernel\n" << r.diags();
    auto calls = callCounts(*k);
    EXPECT_EQ(calls[lib::Fn::WgmmaSS], c.splitP ? 2 : 3);
    EXPECT_EQ(calls[lib::Fn::WgmmaRS], c.splitP ? 1 : 0);
    EXPECT_EQ(calls[lib::Fn::GemmSS] + calls[lib::Fn::GemmRS], 0) << "mma.sync left";
    const size_t nq = (size_t)c.batch * c.heads;
    std::vector<double> q = simtest::randomData(nq * c.dim, 11, -1, 1), qpe = simtest::randomData(nq * c.peDim, 12, -1, 1);
    std::vector<double> kv = simtest::randomData((size_t)c.batch * c.seqlen * c.dim, 13, -1, 1);
    std::vector<double> kpe = simtest::randomData((size_t)c.batch * c.seqlen * c.peDim, 14, -1, 1);
    std::vector<double> out(nq * c.dim, std::nan(""));
    simtest::simulate(*k, {{"Q", &q}, {"Q_pe", &qpe}, {"KV", &kv}, {"K_pe", &kpe}, {"Output", &out}});
    // P and the output in float16: about 2^-11 relative, the sums of seqlen terms a little more
    simtest::expectNear(out, reference(c, q, qpe, kv, kpe), 4e-3, "Output");
}

// 64 heads by a 128-wide V over two warpgroups (each 64 x 64 of the output), three key blocks; P read from
// S_shared by the product keeps the cp.async path (S_shared is no TMA tile)
TEST(SimWgmmaColumnSplit, RegisterPWarpRoles) { mlaCase({1, 64, 192, 128, 32, 64, 64, true}); }
TEST(SimWgmmaColumnSplit, SharedPCpAsync) { mlaCase({1, 64, 192, 128, 32, 64, 64, false, false}); }
TEST(SimWgmmaColumnSplit, RegisterPCpAsync) { mlaCase({2, 128, 128, 128, 32, 64, 64, true, false}); }
// 128 heads per block: FullCol still splits the columns (TileLang's rule), two 64-row tiles per warpgroup
TEST(SimWgmmaColumnSplit, RegisterPTwoRowTiles) { mlaCase({1, 128, 128, 128, 32, 64, 128, true}); }

// The layout of such an A fragment: each element in one thread of each warpgroup column, first copies first.
TEST(SimWgmmaColumnSplit, WarpCopiesLayout) {
    using passes::Layout;
    Layout a = Layout::mma({64, 64}, 256, 4, 1, true);
    EXPECT_EQ(a.warpCopies(), 2);
    EXPECT_EQ(a.slotsPerThread(), 32);
    for (int t = 0; t < 128; ++t)
        for (int64_t s = 0; s < a.slotsPerThread(); ++s) EXPECT_EQ(passes::elementOf(a, t, s), passes::elementOf(a, t + 128, s));
    Layout c = Layout::mma({64, 512}, 256, 4, 2, true);
    EXPECT_EQ(c.warpCopies(), 1);
    EXPECT_NE(passes::elementOf(c, 0, 0), passes::elementOf(c, 128, 0));
}

} // namespace
