/// \file
/// Floor divisions and remainders of global offsets split over their dividend's terms
/// (include/tilec/passes/SplitIndexDivisions.h).
#include "tilec/passes/SplitIndexDivisions.h"

#include "EachKernel.h"
#include "OffsetTerms.h"
#include "RangeScopedMutator.h"
#include "tilec/IROperator.h"

#include <cstdlib>
#include <limits>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

using offsets::kMaxCoefficient;
using offsets::Term;

/// A known divisor of every value of a term (1 past 64 bits; 0 for 0).
int64_t termMultiple(const Term &t) {
    if (!t.leaf) return std::llabs(t.coeff);
    int64_t m;
    if (__builtin_mul_overflow(knownMultiple(t.leaf), t.coeff, &m) || m == std::numeric_limits<int64_t>::min()) return 1;
    return std::llabs(m);
}

/// A group of terms rebuilt as one sum, with what is known of it.
struct Part {
    Expr sum;              ///< null when the part has no term
    Interval range = Interval::point(0);
    int64_t multiple = 0;  ///< a known divisor of every value (0: the part is 0)

    void add(const Term &t, DType type, const RangeMap &ranges) {
        Expr e = t.leaf ? binary(BinaryOp::Mul, t.leaf, intImm(t.coeff, type)) : intImm(t.coeff, type);
        sum = sum ? binary(BinaryOp::Add, sum, e) : e;
        range = boundsOf(sum, ranges);
        multiple = gcd64(multiple, termMultiple(t));
    }
    /// The largest remainder modulo c the part can leave; nullopt when it may be negative or is unbounded.
    std::optional<int64_t> maxRemainder(int64_t c) const {
        if (!sum) return 0;
        if (!range.lo || *range.lo < 0 || !range.hi) return std::nullopt;
        if (*range.hi < c) return *range.hi;
        return c - gcd64(multiple == 0 ? c : multiple, c);
    }
    /// The part's quotient and remainder by c, below c when its whole range is.
    Expr quotient(int64_t c, DType t) const {
        if (!sum || (range.hi && range.lo && *range.lo >= 0 && *range.hi < c)) return intImm(0, t);
        return binary(BinaryOp::FloorDiv, sum, intImm(c, t));
    }
    Expr remainder(int64_t c, DType t) const {
        if (!sum) return intImm(0, t);
        if (range.hi && range.lo && *range.lo >= 0 && *range.hi < c) return sum;
        return binary(BinaryOp::FloorMod, sum, intImm(c, t));
    }
};

class Split : public RangeScopedMutator {
  public:
    using RangeScopedMutator::visit;
    explicit Split(const Kernel &k) : RangeScopedMutator(k) {}

    Stmt visit(const std::shared_ptr<const For> &op) override {
        const std::set<const VarNode *> saved = fixed_;
        // nvcc unrolls a _Pragma("unroll") loop of constant trip count whole: its variable is a constant there.
        if (offsets::unrolledWhole(*op)) fixed_.insert(op->var.get());
        Stmt s = RangeScopedMutator::visit(op);
        fixed_ = saved;
        return s;
    }

    Expr visit(const std::shared_ptr<const Load> &op) override {
        const bool saved = global_, savedOther = otherIndex_;
        global_ = op->buffer->scope == Scope::Global;
        otherIndex_ = !global_;
        Expr e = RangeScopedMutator::visit(op);
        global_ = saved, otherIndex_ = savedOther;
        return e;
    }

    Stmt visit(const std::shared_ptr<const Store> &op) override {
        const bool saved = global_, savedOther = otherIndex_;
        global_ = op->buffer->scope == Scope::Global;
        otherIndex_ = !global_;
        bool changed = false;
        std::vector<Expr> idx;
        for (auto &i : op->indices) idx.push_back(mutate(i)), changed |= idx.back() != i;
        global_ = false, otherIndex_ = savedOther;
        Expr value = mutate(op->value);
        global_ = saved;
        if (!changed && value == op->value) return op;
        return Store::make(op->buffer, std::move(idx), std::move(value), op->loc);
    }

    Stmt visit(const std::shared_ptr<const AtomicAdd> &op) override {
        const bool saved = global_;
        changed_ = false;
        Region dst = region(op->dst);
        std::optional<Region> src;
        if (op->src) src = region(*op->src);
        global_ = false;
        Expr value = mutate(op->value);
        global_ = saved;
        if (!changed_ && value == op->value) return op;
        return AtomicAdd::make(std::move(dst), std::move(src), std::move(value), op->loc);
    }

    Expr visit(const std::shared_ptr<const Binary> &op) override {
        // The operands of a comparison outside any shared or register index (a block-causal mask's
        // `(warp * 16 + h * 8 + lane / 4) / 16 == (ni * 8 + lane % 4 * 2) / 16`) are split like global offsets:
        // nvcc then compares a value computed once per thread with a constant per unrolled iteration.
        const bool saved = global_;
        if (isComparison(op->op) && !otherIndex_) global_ = true;
        Expr e = RangeScopedMutator::visit(op);
        global_ = saved;
        auto b = as<Binary>(e);
        // A division this pass folded to 0 leaves `0 + x` in the sum that held it.
        if (b && e != op && (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) && b->a->dtype == e->dtype &&
            b->b->dtype == e->dtype) {
            if (constValue(b->b) == 0) return b->a;
            if (b->op == BinaryOp::Add && constValue(b->a) == 0) return b->b;
        }
        if (!global_ || !b || (b->op != BinaryOp::FloorDiv && b->op != BinaryOp::FloorMod) ||
            (e->dtype != DType::Int32 && e->dtype != DType::Int64))
            return e;
        auto c = constValue(b->b);
        if (!c || *c <= 1 || *c >= kMaxCoefficient) return e;
        Expr s = split(*b, *c);
        return s ? s : e;
    }

  private:
    std::set<const VarNode *> fixed_;
    bool global_ = false;  ///< inside the index of a global access, or a comparison's operands
    bool otherIndex_ = false; ///< inside the index of a shared or register access (left as it is)
    bool changed_ = false; ///< region() changed a bound

    Region region(const Region &r) {
        global_ = r.buffer->scope == Scope::Global;
        const bool savedOther = otherIndex_;
        otherIndex_ = !global_;
        Region out = r;
        for (auto &rg : out.ranges) {
            Expr m = mutate(rg.min), x = mutate(rg.extent);
            changed_ |= m != rg.min || x != rg.extent;
            rg.min = m, rg.extent = x;
        }
        otherIndex_ = savedOther;
        return out;
    }

    /// b (x // c or x % c) over x's terms, or null where nothing moves.
    Expr split(const Binary &b, int64_t c) {
        const DType t = b.dtype;
        std::vector<Term> terms;
        if (!offsets::flatten(b.a, 1, t, terms)) return nullptr;
        std::vector<Term> multiples;
        Part fixed, runtime;
        for (auto &term : terms) {
            if (termMultiple(term) % c == 0) multiples.push_back(term);
            else if (!term.leaf || offsets::readsOnly(term.leaf, fixed_)) fixed.add(term, t, ranges());
            else runtime.add(term, t, ranges());
        }
        auto rf = fixed.maxRemainder(c), rr = runtime.maxRemainder(c);
        const bool apart = fixed.sum && runtime.sum && rf && rr && *rf + *rr < c;
        // x // c is 0 and x % c is x where x lies in [0, c) (`tx / 32 % 4 / 4`, `tx / 32 % 4 % 4`).
        const Interval whole = boundsOf(b.a, ranges());
        const bool below = whole.lo && *whole.lo >= 0 && whole.hi && *whole.hi < c;
        if (below) return b.op == BinaryOp::FloorDiv ? intImm(0, t) : b.a;
        if (!apart && multiples.empty()) return nullptr;
        const bool div = b.op == BinaryOp::FloorDiv;
        Expr out;
        if (apart) {
            out = div ? binary(BinaryOp::Add, fixed.quotient(c, t), runtime.quotient(c, t))
                      : binary(BinaryOp::Add, fixed.remainder(c, t), runtime.remainder(c, t));
        } else {
            Part rest = fixed;
            if (runtime.sum) rest.sum = rest.sum ? binary(BinaryOp::Add, rest.sum, runtime.sum) : runtime.sum;
            rest.range = rest.sum ? boundsOf(rest.sum, ranges()) : Interval::point(0);
            out = div ? rest.quotient(c, t) : rest.remainder(c, t);
        }
        if (div)
            for (auto &m : multiples) {
                Expr e = m.leaf ? binary(BinaryOp::Mul, m.leaf, intImm(m.coeff, t)) : intImm(m.coeff, t);
                out = binary(BinaryOp::Add, out, binary(BinaryOp::FloorDiv, e, intImm(c, t)));
            }
        return simplify(out);
    }
};

} // namespace

Program splitIndexDivisions(const Program &p) {
    return eachKernel(p, [](const KernelP &k) { return Split(*k).mutate(k); });
}

} // namespace tilec::passes
