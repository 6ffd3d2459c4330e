/// \file
/// Thread-dependent reads of replicated fragments as a choice among constant slots
/// (include/tilec/passes/SelectRegisterSlots.h).
#include "tilec/passes/SelectRegisterSlots.h"

#include "RangeScopedMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"

#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// The terms of a sum (`a + b + c`), in order.
void terms(const Expr &e, std::vector<Expr> &out) {
    if (auto b = as<Binary>(e); b && b->op == BinaryOp::Add) {
        terms(b->a, out);
        terms(b->b, out);
        return;
    }
    out.push_back(e);
}

Expr sum(const std::vector<Expr> &ts) {
    Expr s;
    for (auto &t : ts) s = s ? binary(BinaryOp::Add, s, t) : t;
    return s ? s : i32(0);
}

class Selector : public RangeScopedMutator {
  public:
    using RangeScopedMutator::visit;
    explicit Selector(const Kernel &k) : RangeScopedMutator(k), tid_(k.threadIdx.get()) {
        const KernelLayouts &l = layoutsOf(k);
        for (auto &[f, layout] : l.fragments)
            if (layout.kind == Layout::Replicated) replicated_.insert(l.registers.at(f).get());
    }

    /// An address argument stays `&f[index]` (a call takes the array there, not one element).
    Expr visit(const std::shared_ptr<const Call> &op) override {
        if (lib::is(*op, lib::Fn::AddressOf)) return op;
        return RangeScopedMutator::visit(op);
    }

    Expr visit(const std::shared_ptr<const Load> &op) override {
        Expr e = RangeScopedMutator::visit(op);
        auto l = as<Load>(e);
        if (!tid_ || !l || !replicated_.count(l->buffer.get()) || l->indices.size() != 1) return e;
        auto size = constInt(l->buffer->shape[0]);
        Expr idx = simplify(l->indices[0]);
        if (!size || !uses(idx, tid_)) return e;
        // idx = a + b: b the terms that use the thread index, a the others (loop variables, constants).
        std::vector<Expr> ts, as_, bs;
        terms(idx, ts);
        for (auto &t : ts) (uses(t, tid_) ? bs : as_).push_back(t);
        Expr a = simplify(sum(as_)), b = simplify(sum(bs));
        Interval ra = boundsOf(a, ranges()), rb = boundsOf(b, ranges());
        if (!ra.lo || !ra.hi || !rb.lo || !rb.hi) return e;
        // The values of b some value of a keeps inside the array: others would read past it, as before.
        const int64_t lo = std::max(*rb.lo, -*ra.hi), hi = std::min(*rb.hi, *size - 1 - *ra.lo);
        if (hi < lo || hi - lo + 1 > kMaxSelectedSlots) return e;
        Expr out;
        for (int64_t c = hi; c >= lo; --c) {
            Expr at = simplify(binary(BinaryOp::Add, a, i32(c)));
            // An index a + c no value of a keeps inside (a choice never taken) is clamped into the array: a
            // constant out of bounds would be undefined even unread.
            Interval r = boundsOf(at, ranges());
            if (!r.lo || *r.lo < 0) at = binary(BinaryOp::Max, at, i32(0));
            if (!r.hi || *r.hi > *size - 1) at = binary(BinaryOp::Min, at, i32(*size - 1));
            Expr slot = Load::make(l->buffer, {at}, l->loc);
            out = out ? select(binary(BinaryOp::EQ, b, i32(c)), slot, out, l->loc) : slot;
        }
        return out;
    }

  private:
    const VarNode *tid_;
    std::set<const BufferNode *> replicated_;
};

} // namespace

Program selectRegisterSlots(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        if (!k || !k->layouts) {
            out.kernels.push_back(k);
            continue;
        }
        Selector s(*k);
        out.kernels.push_back(s.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
