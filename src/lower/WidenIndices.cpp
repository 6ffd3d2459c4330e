/// \file
/// Index arithmetic given the width its values need (include/tilec/passes/WidenIndices.h). Signed overflow is
/// undefined in C and in the tile language alike, so computing an operation in 64 bits where 32 may overflow
/// only gives the value the program means; it is done where the exact range says it is needed, so kernels
/// whose indices fit keep 32-bit arithmetic.
#include "tilec/passes/WidenIndices.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"

#include <limits>
#include <set>
#include <tuple>

namespace tilec::passes {

using namespace ir;

namespace {

constexpr __int128 kMin32 = std::numeric_limits<int32_t>::min(), kMax32 = std::numeric_limits<int32_t>::max();
constexpr __int128 kMin64 = std::numeric_limits<int64_t>::min(), kMax64 = std::numeric_limits<int64_t>::max();

/// The integer operations whose value can pass their type's range.
bool mayOverflow(BinaryOp op) {
    switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul:
    case BinaryOp::Shl: return true;
    default: return false;
    }
}

std::string decimal(__int128 v) {
    bool neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    std::string s;
    do {
        s.insert(s.begin(), char('0' + int(u % 10)));
        u /= 10;
    } while (u);
    return neg ? "-" + s : s;
}

class Widen : public IRMutator {
  public:
    using IRMutator::visit;
    Widen(const Kernel &k, DiagnosticEngine &diag)
        : ranges_(kernelRanges(k)), diag_(diag), staticSizes_(k.dynamicSymbols.empty()) {}

    Expr visit(const std::shared_ptr<const Binary> &op) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        DType t = op->dtype;
        bool narrowSigned = t.isInt() && t.isSigned() && t.bits() <= 32 && !t.isBool();
        if (narrowSigned && mayOverflow(op->op) && (index_ || !readsMemory(op))) {
            Expr same = a == op->a && b == op->b ? Expr(op) : Binary::make(op->op, a, b, op->loc);
            WideInterval r = exactBoundsOf(same, ranges_);
            if (!r.within(kMin32, kMax32)) {
                check(r, op->loc, same);
                return binary(op->op, cast(DType::Int64, a), cast(DType::Int64, b), op->loc);
            }
        }
        if (t.isInt() && t.isSigned() && t.bits() == 64 && mayOverflow(op->op) && (index_ || !readsMemory(op))) {
            Expr same = a == op->a && b == op->b ? Expr(op) : Binary::make(op->op, a, b, op->loc);
            check(exactBoundsOf(same, ranges_), op->loc, same);
        }
        if (a == op->a && b == op->b) return op;
        if (a->dtype == op->a->dtype && b->dtype == op->b->dtype) return Binary::make(op->op, a, b, op->loc);
        return binary(op->op, a, b, op->loc);
    }

    Expr visit(const std::shared_ptr<const Cast> &op) override {
        Expr v = mutate(op->value);
        if (v == op->value) return op;
        return cast(op->dtype, v, op->loc);
    }

    Expr visit(const std::shared_ptr<const Select> &op) override {
        Expr c = mutate(op->cond), t = mutate(op->t), f = mutate(op->f);
        if (c == op->cond && t == op->t && f == op->f) return op;
        return select(c, t, f, op->loc);
    }

    Expr visit(const std::shared_ptr<const Unary> &op) override {
        Expr a = mutate(op->a);
        if (a == op->a) return op;
        return Unary::make(op->op, a, op->loc);
    }

    Expr visit(const std::shared_ptr<const Load> &op) override {
        std::vector<Expr> idx = indices(op->buffer, op->indices, op->loc);
        if (idx == op->indices) return op;
        return Load::make(op->buffer, idx, op->loc);
    }

    Stmt visit(const std::shared_ptr<const Store> &op) override {
        std::vector<Expr> idx = indices(op->buffer, op->indices, op->loc);
        Expr value = mutate(op->value);
        if (idx == op->indices && value == op->value) return op;
        return Store::make(op->buffer, idx, value, op->loc);
    }

    Stmt visit(const std::shared_ptr<const AtomicAdd> &op) override {
        bool saved = index_;
        index_ = op->dst.buffer && op->dst.buffer->scope == Scope::Global;
        Region dst = mutateRegion(op->dst);
        std::optional<Region> src;
        if (op->src) src = mutateRegion(*op->src);
        index_ = saved;
        Expr value = op->value ? mutate(op->value) : op->value;
        if (sameRegion(dst, op->dst) && (!src || sameRegion(*src, *op->src)) && value == op->value) return op;
        return AtomicAdd::make(dst, src, value, op->loc);
    }

    Stmt visit(const std::shared_ptr<const For> &op) override;

  private:
    RangeMap ranges_;
    DiagnosticEngine &diag_;
    bool index_ = false;
    /// Past 2^63 is an error only where every size is known here: with a T.dynamic size (or an index read from
    /// memory) the bound is what the types allow, not what a tensor that exists can hold (its bytes fit 64 bits).
    bool staticSizes_;
    std::set<std::tuple<int, int, int>> reported_;
    SourceRange site_; ///< the access being widened: where an error points when the operation has no range

    /// Only a tensor in global memory can be large: an index of shared or local memory that passes 32 bits is
    /// out of bounds whatever its width, so those stay what they are (ring counters, fragment offsets).
    std::vector<Expr> indices(const Buffer &b, const std::vector<Expr> &in, const SourceRange &loc) {
        SourceRange savedSite = site_;
        if (loc.valid()) site_ = loc;
        bool saved = index_;
        index_ = b && b->scope == Scope::Global;
        std::vector<Expr> out;
        for (auto &i : in) out.push_back(mutate(i));
        index_ = saved;
        site_ = savedSite;
        return out;
    }

    /// An index value past 64 bits cannot be computed: the tensor or the loop is too large for any width C has.
    void check(const WideInterval &r, const SourceRange &loc, const Expr &e) {
        if (!staticSizes_ || !r.lo || !r.hi || r.within(kMin64, kMax64) || readsMemory(e)) return;
        __int128 worst = *r.hi > kMax64 ? *r.hi : *r.lo;
        const SourceRange &at = loc.valid() ? loc : site_;
        if (!reported_.insert({at.file, at.line, at.col}).second) return; // once per access
        diag_.error(at, "index arithmetic overflows 64 bits: this value reaches " + decimal(worst) +
                             " (the tensor or the loop is too large)");
    }
};

Stmt Widen::visit(const std::shared_ptr<const For> &op) {
    if (op->loc.valid()) site_ = op->loc;
    // Bounds read from memory are data (a loop over a loaded count): only load-free bounds are index arithmetic.
    Expr min = mutate(op->min), extent = mutate(op->extent);
    Var var = op->var;
    Stmt body = op->body;
    if (var && var->dtype.isInt() && var->dtype.bits() <= 32 && !readsMemory(min) && !readsMemory(extent)) {
        // The loop runs to min + extent: that value must fit the variable's type too.
        WideInterval end = exactBoundsOf(binary(BinaryOp::Add, cast(DType::Int64, min), cast(DType::Int64, extent)), ranges_);
        if (!end.within(kMin32, kMax32)) {
            check(end, op->loc, op->extent);
            var = makeVar(op->var->name, DType::Int64, op->var->loc);
            min = cast(DType::Int64, min);
            extent = cast(DType::Int64, extent);
            body = substitute(body, VarMap{{op->var.get(), var}});
        }
    }
    auto savedRanges = ranges_;
    For shape;
    shape.var = var;
    shape.min = min;
    shape.extent = extent;
    // min and extent are final here (mutated above): a narrow operation of them stays narrow, so its value fits
    // its type, and the variable's range may rely on that (a ragged count `cu[b + 1] - cu[b]` is below 2^31).
    addTypedLoopRange(ranges_, shape);
    body = mutate(body);
    ranges_ = std::move(savedRanges);
    if (var == op->var && min == op->min && extent == op->extent && body == op->body) return op;
    return For::make(var, min, extent, op->forKind, op->numStages, body, op->loc);
}

} // namespace

Program widenIndices(const Program &p, DiagnosticEngine &diag) {
    Program out;
    for (auto &k : p.kernels) {
        // The grid is host arithmetic, computed in 64 bits by the launcher: only the body is device code.
        Widen m(*k, diag);
        Stmt body = m.mutate(k->body);
        if (body == k->body) {
            out.kernels.push_back(k);
            continue;
        }
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
