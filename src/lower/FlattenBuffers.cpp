/// \file
/// Row-major flattening of buffer indices (include/tilec/passes/FlattenBuffers.h).
#include "tilec/passes/FlattenBuffers.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/passes/Arith.h"

#include <limits>

namespace tilec::passes {

using namespace ir;

namespace {

class Flatten : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Flatten(const Kernel &k) : kernel_(k), ranges_(kernelRanges(k)) {}

    Stmt visit(const std::shared_ptr<const For> &op) override {
        auto saved = ranges_;
        addLoopRange(ranges_, *op);
        Stmt s = IRMutator::visit(op);
        ranges_ = std::move(saved);
        return s;
    }

    Expr visit(const std::shared_ptr<const Load> &op) override {
        std::vector<Expr> idx;
        for (auto &i : op->indices) idx.push_back(mutate(i));
        return Load::make(op->buffer, {offset(op->buffer, idx)}, op->loc);
    }

    Stmt visit(const std::shared_ptr<const Store> &op) override {
        std::vector<Expr> idx;
        for (auto &i : op->indices) idx.push_back(mutate(i));
        return Store::make(op->buffer, {offset(op->buffer, idx)}, mutate(op->value), op->loc);
    }

    Stmt visit(const std::shared_ptr<const AtomicAdd> &op) override {
        std::vector<Expr> idx;
        for (auto &r : op->dst.ranges) idx.push_back(mutate(r.min));
        Region dst{op->dst.buffer, {{offset(op->dst.buffer, idx), intImm(1)}}, op->dst.loc};
        Expr value = mutate(op->value);
        return AtomicAdd::make(dst, std::nullopt, value, op->loc);
    }

  private:
    const Kernel &kernel_;
    RangeMap ranges_;

    /// The row-major offset of element `idx` of `b`; for a global tensor with a T.Layout, of the layout's
    /// output indices in its output shape.
    Expr offset(const Buffer &b, const std::vector<Expr> &idx) {
        TILEC_ASSERT(b && idx.size() == b->shape.size(), "access of '" + (b ? b->name : std::string("?")) +
                                                             "' with the wrong number of indices");
        if (const TensorLayout *l = kernel_.layoutOf(b.get())) {
            VarMap at;
            for (size_t d = 0; d < idx.size(); ++d) at[l->vars[d].get()] = idx[d];
            std::vector<Expr> out;
            for (auto &e : l->forward) out.push_back(simplify(substitute(e, at)));
            return rowMajor(l->shape, out);
        }
        return rowMajor(b->shape, idx);
    }

    Expr rowMajor(const std::vector<Expr> &shape, const std::vector<Expr> &idx) {
        if (idx.empty()) return intImm(0);
        if (idx.size() == 1) return idx[0];
        auto build = [&](DType t) {
            Expr flat, stride;
            for (size_t d = idx.size(); d-- > 0;) {
                Expr i = cast(t, idx[d]);
                Expr term = stride ? binary(BinaryOp::Mul, i, stride) : i;
                flat = flat ? binary(BinaryOp::Add, term, flat) : term;
                Expr ext = cast(t, shape[d]);
                stride = stride ? binary(BinaryOp::Mul, ext, stride) : ext;
            }
            return simplify(flat);
        };
        Expr narrow = build(DType::Int32);
        Interval iv = boundsOf(narrow, ranges_);
        bool fits = iv.lo && iv.hi && *iv.lo >= std::numeric_limits<int32_t>::min() &&
                    *iv.hi <= std::numeric_limits<int32_t>::max();
        // The extents' product must fit as well, since the strides are computed too.
        int64_t total = 1;
        for (auto &e : shape) {
            Interval ev = boundsOf(e, ranges_);
            if (!ev.hi || __builtin_mul_overflow(total, *ev.hi, &total)) total = std::numeric_limits<int64_t>::max();
        }
        if (fits && total <= std::numeric_limits<int32_t>::max()) return narrow;
        return build(DType::Int64);
    }
};

} // namespace

Program flattenBuffers(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Flatten m(*k);
        out.kernels.push_back(m.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
