/// \file
/// The parts of a GEMM kernel written the usual way (src/lower/GemmKernelShape.h).
#include "GemmKernelShape.h"

#include "tilec/IROperator.h"
#include "tilec/passes/Arith.h"

#include <algorithm>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// Whether `r` is its whole buffer (every range from 0 to the buffer's extent).
bool isWhole(const Region &r) {
    if (!r.buffer || r.ranges.size() != r.buffer->shape.size()) return false;
    for (size_t d = 0; d < r.ranges.size(); ++d)
        if (constValue(r.ranges[d].min) != 0 || !provablyEqual(r.ranges[d].extent, r.buffer->shape[d])) return false;
    return true;
}

bool isGlobalParam(const Kernel &k, const Buffer &b) {
    return std::any_of(k.params.begin(), k.params.end(),
                       [&](const Param &p) { return p.kind == Param::Tensor && p.buffer == b; });
}

/// The K loop's body: copies into shared tiles and T.gemms accumulating into `acc` (nothing else).
bool loopBodyFits(const Stmt &body, const Buffer &acc) {
    std::vector<Stmt> stmts = Seq::items(body);
    bool gemm = false;
    for (auto &s : stmts) {
        if (auto c = as<Copy>(s)) {
            if (!c->dst.buffer || c->dst.buffer->scope != Scope::Shared) return false;
        } else if (auto g = as<Gemm>(s)) {
            // (T.gemm_sp: the workload model counts dense products, so a sparse one keeps its single launch)
            if (g->c.buffer != acc || g->clearAccum || g->sparse()) return false;
            gemm = true;
        } else {
            return false;
        }
    }
    return gemm;
}

} // namespace

GemmShape matchGemmKernel(const Kernel &k) {
    GemmShape m;
    if (k.wrapped()) return {0, nullptr, nullptr, "it has workspaces or views"};
    // (T.use_swizzle's rasterization permutes grid x and y only: the splits along z keep it.)
    if (k.clusterDims != std::array<int, 3>{1, 1, 1} || !k.tensorLayouts.empty())
        return {0, nullptr, nullptr, "it asks for clusters or tensor layouts"};
    auto seq = as<Seq>(k.body);
    if (!seq || seq->stmts.size() < 3) return {0, nullptr, nullptr, "it is not a clear, a K loop and a copy out"};
    const auto &st = seq->stmts;
    auto store = as<Copy>(st.back());
    auto loop = as<For>(st[st.size() - 2]);
    if (!store || !loop) return {0, nullptr, nullptr, "it does not end with a K loop and a copy out"};
    const Buffer &acc = store->src.buffer;
    if (!acc || acc->scope != Scope::Fragment || acc->dtype != DType::Float32 || !isWhole(store->src) || !isGlobalParam(k, store->dst.buffer) ||
        store->dst.buffer->shape.size() != 2)
        return {0, nullptr, nullptr, "its last copy is not of a float32 accumulator to a 2-D tensor"};
    if ((loop->forKind != ForKind::Pipelined && loop->forKind != ForKind::Serial) || constInt(loop->min) != 0 ||
        !loopBodyFits(loop->body, acc))
        return {0, nullptr, nullptr, "its K loop does more than copy tiles and multiply them"};
    // Everything before the loop only clears fragments, the accumulator among them.
    bool cleared = false;
    for (size_t i = 0; i + 2 < st.size(); ++i) {
        auto f = as<Fill>(st[i]);
        if (!f || f->dst.buffer->scope != Scope::Fragment) return {0, nullptr, nullptr, "it does more than clear before its K loop"};
        auto zero = as<FloatImm>(f->value);
        cleared |= f->dst.buffer == acc && isWhole(f->dst) && ((zero && zero->value == 0) || constValue(f->value) == 0);
    }
    if (!cleared) return {0, nullptr, nullptr, "its accumulator is not cleared before the K loop"};
    m.loopAt = st.size() - 2;
    m.loop = loop;
    m.store = store;
    return m;
}

} // namespace tilec::passes
