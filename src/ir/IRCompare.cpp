/// \file
/// Structural equality of lowered kernels (include/tilec/IRCompare.h).
#include "tilec/IRCompare.h"

#include <cstring>
#include <map>

namespace tilec::ir {

namespace {

/// One comparison: the variables and buffers of `a` matched so far to those of `b`, both ways.
class Matcher {
  public:
    bool var(const VarNode *x, const VarNode *y) {
        if (!x || !y) return x == y;
        auto [it, fresh] = vars_.emplace(x, y);
        auto [back, freshBack] = varsBack_.emplace(y, x);
        if (!fresh || !freshBack) return it->second == y && back->second == x;
        return x->name == y->name && x->dtype == y->dtype;
    }
    bool var(const Var &x, const Var &y) { return var(x.get(), y.get()); }

    bool buffer(const BufferNode *x, const BufferNode *y) {
        if (!x || !y) return x == y;
        auto [it, fresh] = buffers_.emplace(x, y);
        auto [back, freshBack] = buffersBack_.emplace(y, x);
        if (!fresh || !freshBack) return it->second == y && back->second == x;
        return x->name == y->name && x->scope == y->scope && x->dtype == y->dtype && exprs(x->shape, y->shape);
    }
    bool buffer(const Buffer &x, const Buffer &y) { return buffer(x.get(), y.get()); }

    bool exprs(const std::vector<Expr> &x, const std::vector<Expr> &y) {
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i)
            if (!expr(x[i], y[i])) return false;
        return true;
    }

    bool expr(const Expr &x, const Expr &y) {
        if (!x || !y) return x == y;
        if (x->kind != y->kind || !(x->dtype == y->dtype)) return false;
        switch (x->kind) {
        case NodeKind::IntImm: return as<IntImm>(x)->value == as<IntImm>(y)->value;
        case NodeKind::FloatImm: { // bit for bit: -0.0 is not 0.0, and a NaN equals itself
            double a = as<FloatImm>(x)->value, b = as<FloatImm>(y)->value;
            return std::memcmp(&a, &b, sizeof a) == 0;
        }
        case NodeKind::Var: return var(static_cast<const VarNode *>(x.get()), static_cast<const VarNode *>(y.get()));
        case NodeKind::Binary: {
            auto a = as<Binary>(x), b = as<Binary>(y);
            return a->op == b->op && expr(a->a, b->a) && expr(a->b, b->b);
        }
        case NodeKind::Unary: return as<Unary>(x)->op == as<Unary>(y)->op && expr(as<Unary>(x)->a, as<Unary>(y)->a);
        case NodeKind::Select: {
            auto a = as<Select>(x), b = as<Select>(y);
            return expr(a->cond, b->cond) && expr(a->t, b->t) && expr(a->f, b->f);
        }
        case NodeKind::Cast: return expr(as<Cast>(x)->value, as<Cast>(y)->value);
        case NodeKind::Call: return as<Call>(x)->name == as<Call>(y)->name && exprs(as<Call>(x)->args, as<Call>(y)->args);
        case NodeKind::Load:
            return buffer(as<Load>(x)->buffer, as<Load>(y)->buffer) && exprs(as<Load>(x)->indices, as<Load>(y)->indices);
        default: return false;
        }
    }

    bool region(const Region &x, const Region &y) {
        if (!buffer(x.buffer, y.buffer) || x.ranges.size() != y.ranges.size()) return false;
        for (size_t i = 0; i < x.ranges.size(); ++i)
            if (!expr(x.ranges[i].min, y.ranges[i].min) || !expr(x.ranges[i].extent, y.ranges[i].extent)) return false;
        return true;
    }

    bool stmt(const Stmt &x, const Stmt &y) {
        if (!x || !y) return x == y;
        if (x->kind != y->kind) return false;
        switch (x->kind) {
        case NodeKind::Seq: {
            auto &a = as<Seq>(x)->stmts, &b = as<Seq>(y)->stmts;
            if (a.size() != b.size()) return false;
            for (size_t i = 0; i < a.size(); ++i)
                if (!stmt(a[i], b[i])) return false;
            return true;
        }
        case NodeKind::For: {
            auto a = as<For>(x), b = as<For>(y);
            return a->forKind == b->forKind && a->numStages == b->numStages && var(a->var, b->var) &&
                   expr(a->min, b->min) && expr(a->extent, b->extent) && stmt(a->body, b->body);
        }
        case NodeKind::Store: {
            auto a = as<Store>(x), b = as<Store>(y);
            return buffer(a->buffer, b->buffer) && exprs(a->indices, b->indices) && expr(a->value, b->value);
        }
        case NodeKind::IfThenElse: {
            auto a = as<IfThenElse>(x), b = as<IfThenElse>(y);
            return expr(a->cond, b->cond) && stmt(a->then, b->then) && stmt(a->otherwise, b->otherwise);
        }
        case NodeKind::While: return expr(as<While>(x)->cond, as<While>(y)->cond) && stmt(as<While>(x)->body, as<While>(y)->body);
        case NodeKind::Evaluate: return expr(as<Evaluate>(x)->value, as<Evaluate>(y)->value);
        case NodeKind::Copy: return region(as<Copy>(x)->src, as<Copy>(y)->src) && region(as<Copy>(x)->dst, as<Copy>(y)->dst);
        case NodeKind::Fill: return region(as<Fill>(x)->dst, as<Fill>(y)->dst) && expr(as<Fill>(x)->value, as<Fill>(y)->value);
        case NodeKind::Gemm: {
            auto a = as<Gemm>(x), b = as<Gemm>(y);
            return a->transA == b->transA && a->transB == b->transB && a->clearAccum == b->clearAccum &&
                   a->policy == b->policy && a->instr == b->instr && a->liveRows == b->liveRows && region(a->a, b->a) &&
                   (a->liveRowsAt ? b->liveRowsAt && expr(a->liveRowsAt, b->liveRowsAt) : !b->liveRowsAt) &&
                   region(a->b, b->b) && region(a->c, b->c) && a->sparse() == b->sparse() &&
                   (!a->sparse() || region(a->e, b->e));
        }
        case NodeKind::Reduce: {
            auto a = as<Reduce>(x), b = as<Reduce>(y);
            return a->reduceKind == b->reduceKind && a->dim == b->dim && a->clear == b->clear && buffer(a->src, b->src) &&
                   buffer(a->dst, b->dst);
        }
        case NodeKind::AtomicAdd: {
            auto a = as<AtomicAdd>(x), b = as<AtomicAdd>(y);
            return region(a->dst, b->dst) && a->src.has_value() == b->src.has_value() && (!a->src || region(*a->src, *b->src)) &&
                   expr(a->value, b->value);
        }
        case NodeKind::WarpRoles: {
            auto a = as<WarpRoles>(x), b = as<WarpRoles>(y);
            return a->consumerThreads == b->consumerThreads && a->producerThreads == b->producerThreads &&
                   a->producerRegs == b->producerRegs && a->consumerRegs == b->consumerRegs && stmt(a->producer, b->producer) &&
                   stmt(a->consumer, b->consumer);
        }
        default: return false;
        }
    }

    /// Equal sizes and `same(x[i], y[i])` for every i.
    template <class T, class F> static bool all(const std::vector<T> &x, const std::vector<T> &y, F same) {
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i)
            if (!same(x[i], y[i])) return false;
        return true;
    }

  private:
    std::map<const VarNode *, const VarNode *> vars_, varsBack_;
    std::map<const BufferNode *, const BufferNode *> buffers_, buffersBack_;
};

bool sameSignature(Matcher &m, const KernelSignature &a, const KernelSignature &b) {
    auto param = [&](const Param &x, const Param &y) {
        return x.kind == y.kind && x.workspace == y.workspace && m.buffer(x.buffer, y.buffer) && m.var(x.var, y.var) &&
               m.buffer(x.viewOf, y.viewOf);
    };
    return a.name == b.name && a.part == b.part && a.parts == b.parts && a.outputs == b.outputs &&
           Matcher::all(a.params, b.params, param) &&
           Matcher::all(a.dynamicSymbols, b.dynamicSymbols, [&](const Var &x, const Var &y) { return m.var(x, y); });
}

bool sameLaunch(Matcher &m, const LaunchConfig &a, const LaunchConfig &b) {
    if (a.gridDims != b.gridDims || a.threads != b.threads || a.producerThreads != b.producerThreads ||
        a.minBlocksPerSM != b.minBlocksPerSM || a.persistent != b.persistent || a.walkSlowest != b.walkSlowest ||
        a.walkGroup != b.walkGroup || a.clusterSize != b.clusterSize || a.clusterAxis != b.clusterAxis ||
        a.sharedTiles != b.sharedTiles || a.clusterMinWaves != b.clusterMinWaves || a.clusterDims != b.clusterDims || a.swizzlePanel != b.swizzlePanel)
        return false;
    for (size_t d = 0; d < 3; ++d)
        if (!m.expr(a.grid[d], b.grid[d]) || !m.var(a.blockIdx[d], b.blockIdx[d])) return false;
    return m.var(a.threadIdx, b.threadIdx);
}

/// Everything but the targets (and the fragment layouts, which lowering drops when it ends).
bool sameResult(Matcher &m, const LoweringResult &a, const LoweringResult &b) {
    auto map = [&](const TensorMap &x, const TensorMap &y) {
        return m.buffer(x.tensor, y.tensor) && x.box == y.box && x.swizzleBytes == y.swizzleBytes;
    };
    auto offset = [&](const std::pair<const BufferNode *, int64_t> &x, const std::pair<const BufferNode *, int64_t> &y) {
        return m.buffer(x.first, y.first) && x.second == y.second;
    };
    auto assumption = [&](const Assumption &x, const Assumption &y) {
        return m.buffer(x.tensor, y.tensor) && m.expr(x.extent, y.extent) && x.bytes == y.bytes;
    };
    auto tile = [&](const TileLayout &x, const TileLayout &y) {
        return m.buffer(x.buffer, y.buffer) && x.swizzleBytes == y.swizzleBytes && x.tma == y.tma;
    };
    return a.needsTma == b.needsTma && a.shared.bytes == b.shared.bytes && a.shared.alignment == b.shared.alignment &&
           Matcher::all(a.tensorMaps, b.tensorMaps, map) && Matcher::all(a.shared.offsets, b.shared.offsets, offset) &&
           Matcher::all(a.assumptions, b.assumptions, assumption) && Matcher::all(a.tileLayouts, b.tileLayouts, tile);
}

} // namespace

bool sameLowering(const Kernel &a, const Kernel &b) {
    Matcher m;
    auto buffer = [&](const Buffer &x, const Buffer &y) { return m.buffer(x, y); };
    auto layout = [&](const TensorLayout &x, const TensorLayout &y) {
        return m.buffer(x.tensor, y.tensor) && Matcher::all(x.vars, y.vars, [&](const Var &u, const Var &v) { return m.var(u, v); }) &&
               m.exprs(x.forward, y.forward) && m.exprs(x.shape, y.shape);
    };
    auto view = [&](const std::pair<Buffer, Buffer> &x, const std::pair<Buffer, Buffer> &y) {
        return m.buffer(x.first, y.first) && m.buffer(x.second, y.second);
    };
    auto addressed = [&](const Kernel::AddressedTensor &x, const Kernel::AddressedTensor &y) {
        return m.buffer(x.tensor, y.tensor) && m.buffer(x.address, y.address);
    };
    // In the order the printer shows them, so that the buffers and variables are met in the same order in both.
    return sameSignature(m, a, b) && sameLaunch(m, a, b) && Matcher::all(a.tensorLayouts, b.tensorLayouts, layout) &&
           Matcher::all(a.allocs, b.allocs, buffer) && Matcher::all(a.fragmentViews, b.fragmentViews, view) &&
           Matcher::all(a.addressedTensors, b.addressedTensors, addressed) && a.importedSources == b.importedSources &&
           a.noTma == b.noTma && a.noWarpSpecialize == b.noWarpSpecialize && a.fastMath == b.fastMath &&
           a.noThreadSync == b.noThreadSync && m.stmt(a.body, b.body) && sameResult(m, a, b);
}

} // namespace tilec::ir
