/// \file
/// The lanes of a vectorized loop, for vectorizeAccesses (VectorLanes.h).
#include "VectorLanes.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"

#include <algorithm>

namespace tilec::passes::lanes {

using namespace ir;

bool isZero(const Expr &e) {
    if (auto f = as<FloatImm>(e)) return f->value == 0.0;
    if (auto i = as<IntImm>(e)) return i->value == 0;
    return false;
}

bool isMemory(const Buffer &b) { return b && (b->scope == Scope::Global || b->scope == Scope::Shared); }

void Inside::visit(const For &op) {
    bound.insert(op.var.get());
    IRVisitor::visit(op);
}
void Inside::visit(const Store &op) {
    stored.insert(op.buffer.get());
    IRVisitor::visit(op);
}
void Inside::visit(const AtomicAdd &op) {
    stored.insert(op.dst.buffer.get());
    IRVisitor::visit(op);
}

bool mentionsAny(const Expr &e, const std::set<const VarNode *> &vars) {
    for (auto *v : vars)
        if (uses(e, v)) return true;
    return false;
}

bool SizeAssumptions::multiple(const Expr &e, int64_t width, const Buffer &tensor) {
    if (width <= 1 || knownMultiple(e) % width == 0) return true;
    if (!tensor || tensor->scope != Scope::Global) return false;
    // e with the sizes in `taken` replaced by multiples of the width: the values e takes where they are.
    auto dividesWith = [&](const std::vector<const VarNode *> &taken) {
        VarMap m;
        for (auto *v : taken) m[v] = binary(BinaryOp::Mul, Expr(sizes.at(v)), intImm(width, v->dtype));
        return knownMultiple(substitute(e, m)) % width == 0;
    };
    std::vector<const VarNode *> taken;
    for (auto &[v, var] : sizes)
        if (uses(e, v)) taken.push_back(v);
    if (taken.empty() || !dividesWith(taken)) return false;
    for (size_t i = 0; i < taken.size();) { // the fewest: a size another one's multiple covers is not taken
        std::vector<const VarNode *> rest = taken;
        rest.erase(rest.begin() + (ptrdiff_t)i);
        if (dividesWith(rest)) taken = std::move(rest);
        else ++i;
    }
    for (auto *v : taken) {
        Assumption a{tensor, Expr(sizes.at(v)), width * tensor->dtype.bytes()};
        if (std::find(made.begin(), made.end(), a) == made.end()) made.push_back(a);
    }
    return true;
}

/// The base of `index` as `base + lane` with base aligned to `width`, or null.
Expr alignedBase(const Expr &index, const VarNode *lane, int64_t width, SizeAssumptions *assumed, const Buffer &tensor) {
    auto lin = linearIn(index, lane);
    if (!lin || lin->second != 1) return nullptr;
    Expr base = lin->first ? lin->first : intImm(0, index->dtype);
    if (knownMultiple(base) % width == 0) return base;
    return assumed && !uses(base, lane) && assumed->multiple(base, width, tensor) ? base : nullptr;
}

/// The top-level store of a vectorized loop's body (a statement of its Seq, optionally under an if without else).
const Store *topStore(const Stmt &s) {
    if (auto i = as<IfThenElse>(s); i && !i->otherwise) return as<Store>(i->then);
    return as<Store>(s);
}

namespace {

/// Whether `e` loads an element of a buffer `reads` picks, or makes a call `calls` picks (none when null).
bool readsAny(const Expr &e, const std::function<bool(const BufferNode *)> &reads,
              const std::function<bool(const Call &)> &calls) {
    struct Reads : IRVisitor {
        using IRVisitor::visit;
        const std::function<bool(const BufferNode *)> *reads;
        const std::function<bool(const Call &)> *calls;
        bool found = false;
        void visit(const Load &op) override {
            found |= (*reads)(op.buffer.get());
            IRVisitor::visit(op);
        }
        void visit(const Call &op) override {
            found |= *calls && (*calls)(op);
            IRVisitor::visit(op);
        }
    } r;
    r.reads = &reads;
    r.calls = &calls;
    r.visit(e);
    return r.found;
}

bool anyCall(const Call &) { return true; }

} // namespace

/// Whether a condition reads nothing (no load, no call): evaluating it again, or once for several lanes or
/// statements, gives the same answer.
bool pureIndexTest(const Expr &c) {
    return !readsAny(c, [](const BufferNode *) { return true; }, anyCall);
}

/// Whether a condition may be evaluated before a vectorized loop's body: it calls nothing and reads only
/// registers (local buffers) that the body does not write, so it gives the same answer there, and reading it
/// touches no memory (a conjunct that loads global memory may be guarded by the conjuncts before it).
bool registerTest(const Expr &c, const std::set<const BufferNode *> &stored) {
    auto memoryOrStored = [&](const BufferNode *b) {
        return b->scope == Scope::Global || b->scope == Scope::Shared || stored.count(b) > 0;
    };
    return !readsAny(c, memoryOrStored, anyCall);
}

/// Whether `e` loads an element of one of `bufs`.
bool loadsAny(const Expr &e, const std::set<const BufferNode *> &bufs) {
    return readsAny(e, [&](const BufferNode *b) { return bufs.count(b) > 0; }, nullptr);
}

namespace {

/// Whether `e` makes a call with an effect (T.call_extern's functions, library calls that are not pure
/// expressions): running it once instead of once per lane would change what it does.
bool callsWithEffect(const Expr &e) {
    auto effect = [](const Call &c) {
        const lib::Info *info = lib::find(c.name);
        return c.name.rfind("extern:", 0) == 0 || (info && !(info->effects & lib::kPure));
    };
    return readsAny(e, [](const BufferNode *) { return false; }, effect);
}

} // namespace

/// The statements at the head of a vectorized loop's body that set a register to the same value in every lane
/// (a Python name bound in a T.Parallel body, `idx = Indices[i]`, is a one-element register the body stores
/// first and its gather's index reads): the value and the index use neither the lane nor a variable bound in
/// the body, load nothing the body stores (the register included) and call nothing with an effect (an extern
/// atomic); the register is stored nowhere else in the body and read by no statement before. Each lane would
/// store the same value again, so the statement runs once before the loop instead, and the loads whose
/// address reads the register may become vector loads.
size_t invariantRegisterDefs(const std::vector<Stmt> &stmts, const VarNode *lane,
                             const std::set<const VarNode *> &bound,
                             const std::set<const BufferNode *> &stored) {
    auto laneInvariant = [&](const Expr &e) {
        return !uses(e, lane) && !mentionsAny(e, bound) && !loadsAny(e, stored) && !callsWithEffect(e);
    };
    size_t n = 0;
    for (; n < stmts.size(); ++n) {
        auto st = as<Store>(stmts[n]);
        if (!st || isMemory(st->buffer) || !laneInvariant(st->value)) break;
        if (!std::all_of(st->indices.begin(), st->indices.end(), laneInvariant)) break;
        int storesHere = 0;
        for (auto &s : stmts) {
            Inside in;
            in.visit(s);
            storesHere += in.stored.count(st->buffer.get()) > 0;
        }
        bool readBefore = false;
        for (size_t i = 0; i < n; ++i) readBefore |= loads(stmts[i], st->buffer.get());
        if (storesHere != 1 || readBefore) break;
    }
    return n;
}

/// A vectorized loop's body with each top-level `if c { s1; s2; ... }` (no else, c a pure index test: no load,
/// no call) split into `if c s1; if c s2; ...`: the stores under a program's own bounds test then sink one by one.
Stmt splitGuards(const Stmt &body) {
    auto seq = as<Seq>(body);
    std::vector<Stmt> stmts = seq ? seq->stmts : std::vector<Stmt>{body};
    std::vector<Stmt> out;
    bool changed = false;
    for (auto &st : stmts) {
        auto i = as<IfThenElse>(st);
        auto inner = i && !i->otherwise ? as<Seq>(i->then) : nullptr;
        if (!inner || !pureIndexTest(i->cond)) {
            out.push_back(st);
            continue;
        }
        for (auto &t : inner->stmts) out.push_back(IfThenElse::make(i->cond, t, nullptr, i->loc));
        changed = true;
    }
    return changed ? Seq::make(std::move(out), body->loc) : body;
}

/// Whether memory buffer `b` is only read-modified-written in `body` (`b[i] = f(b[i], ...)`, `+=` on a tensor): one
/// top-level store to it, and every load of it inside that store's value at the store's own index. Each lane then
/// reads and writes its own element alone, so all lanes' loads may run before the body and all stores after it.
bool readModifyWriteOnly(const Stmt &body, const BufferNode *b) {
    std::vector<Stmt> stmts = Seq::items(body);
    const Store *store = nullptr;
    for (auto &s : stmts) {
        const Store *st = topStore(s);
        if (st && st->buffer.get() == b) {
            if (store) return false;
            store = st;
        }
    }
    if (!store || store->indices.size() != 1) return false;
    struct Accesses : IRVisitor {
        using IRVisitor::visit;
        const BufferNode *b;
        std::vector<const Load *> loads;
        int stores = 0;
        void visit(const Load &op) override {
            if (op.buffer.get() == b) loads.push_back(&op);
            IRVisitor::visit(op);
        }
        void visit(const Store &op) override {
            stores += op.buffer.get() == b;
            IRVisitor::visit(op);
        }
        void visit(const AtomicAdd &op) override {
            stores += op.dst.buffer.get() == b;
            IRVisitor::visit(op);
        }
    } all, inValue;
    all.b = inValue.b = b;
    all.visit(body);
    inValue.visit(store->value);
    if (all.stores != 1 || all.loads.size() != inValue.loads.size()) return false;
    for (auto *l : inValue.loads)
        if (l->indices.size() != 1 || !structurallyEqual(l->indices[0], store->indices[0])) return false;
    return true;
}

void conjuncts(const Expr &c, std::vector<Expr> &out) {
    if (auto b = as<Binary>(c); b && b->op == BinaryOp::And) {
        conjuncts(b->a, out);
        conjuncts(b->b, out);
        return;
    }
    out.push_back(c);
}

/// A comparison of `base + lane` with a bound, as the same comparison of `base` alone when both are multiples
/// of the lane count W: for lane in [0, W), base + lane < b exactly when base < b, and base + lane >= b
/// exactly when base >= b. So the test holds for every lane of an aligned vector or for none, and is made
/// once per vector. Null when `c` is not of that form.
Expr laneFree(const Expr &c, const VarNode *lane, int64_t width, SizeAssumptions *assumed, const Buffer &tensor) {
    auto b = as<Binary>(c);
    if (!b || width < 1) return nullptr; // no lanes to be uniform over (and no division by 0 below)
    Expr x = b->a, y = b->b;
    BinaryOp op = b->op;
    if (uses(y, lane)) { // y > x is x < y; y <= x is x >= y
        if (op != BinaryOp::GT && op != BinaryOp::LE) return nullptr;
        std::swap(x, y);
        op = op == BinaryOp::GT ? BinaryOp::LT : BinaryOp::GE;
    }
    if ((op != BinaryOp::LT && op != BinaryOp::GE) || uses(y, lane)) return nullptr;
    Expr base = alignedBase(x, lane, width);
    if (!base && assumed) { // both sides assumed: neither is taken unless both may be
        auto lin = linearIn(x, lane);
        base = lin && lin->second == 1 ? (lin->first ? lin->first : intImm(0, x->dtype)) : nullptr;
        SizeAssumptions trial{assumed->sizes, {}};
        if (!base || uses(base, lane) || !trial.multiple(base, width, tensor) || !trial.multiple(y, width, tensor))
            return nullptr;
        for (auto &a : trial.made)
            if (std::find(assumed->made.begin(), assumed->made.end(), a) == assumed->made.end()) assumed->made.push_back(a);
        return binary(op, base, y, c->loc);
    }
    if (!base || uses(base, lane)) return nullptr;
    if (knownMultiple(y) % width != 0 && !(assumed && assumed->multiple(y, width, tensor))) return nullptr;
    return binary(op, base, y, c->loc);
}

/// A comparison that holds for every value its operands can take.
bool provablyTrue(const Expr &c, const RangeMap &ranges) {
    auto b = as<Binary>(c);
    if (!b) return false;
    Interval x = boundsOf(b->a, ranges), y = boundsOf(b->b, ranges);
    switch (b->op) {
    case BinaryOp::LT: return x.hi && y.lo && *x.hi < *y.lo;
    case BinaryOp::LE: return x.hi && y.lo && *x.hi <= *y.lo;
    case BinaryOp::GT: return x.lo && y.hi && *x.lo > *y.hi;
    case BinaryOp::GE: return x.lo && y.hi && *x.lo >= *y.hi;
    default: return false;
    }
}

namespace {

bool sameTest(const Expr &a, const Expr &b) {
    auto x = as<Binary>(a), y = as<Binary>(b);
    if (!x || !y) return structurallyEqual(a, b);
    return x->op == y->op && provablyEqual(x->a, y->a) && provablyEqual(x->b, y->b);
}

} // namespace

/// A hoisted load `e` (a load, or `c ? load : 0`) read only where `guards` hold as well, zero elsewhere; the
/// guards that repeat a test of its own are left out.
Expr underGuards(Expr e, const std::vector<Expr> &guards) {
    std::vector<Expr> own, extra;
    if (auto s = as<Select>(e)) conjuncts(s->cond, own);
    for (auto &g : guards) {
        bool known = false;
        for (auto &o : own) known |= sameTest(o, g);
        if (!known) extra.push_back(g);
    }
    if (extra.empty()) return e;
    Expr g = extra[0];
    for (size_t i = 1; i < extra.size(); ++i) g = binary(BinaryOp::And, g, extra[i], e->loc);
    if (auto s = as<Select>(e)) return Select::make(binary(BinaryOp::And, g, s->cond, e->loc), s->t, s->f, s->loc);
    Expr zero = e->dtype.isFloat() ? floatImm(0.0, e->dtype) : IntImm::make(e->dtype, 0);
    return Select::make(g, e, zero, e->loc);
}

namespace {

/// The conditions of the ifs in a vectorized loop's body, tested once per vector where they can be
/// (laneFree), without the tests that always hold (a tile inside the tensor) or that repeat an enclosing one
/// (the program's own bounds test and predicateBounds'), nested ifs without else merged into one: so a store
/// under the program's `if i < n and j < h` becomes one vector store under one test.
struct LaneConditions : IRMutator {
    using IRMutator::visit;
    LaneConditions(const VarNode *lane, int64_t width, const RangeMap &ranges, SizeAssumptions *assumed)
        : lane(lane), width(width), ranges(ranges), assumed(assumed) {}
    const VarNode *lane;
    int64_t width;
    const RangeMap &ranges;
    SizeAssumptions *assumed;
    std::vector<Expr> outer; ///< the tests of the enclosing ifs (as rewritten)

    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
        if (op->otherwise) return IRMutator::visit(op);
        std::vector<Expr> parts, kept;
        conjuncts(op->cond, parts);
        const Store *st = topStore(op->then); // a test of the stored tensor's bounds may rely on its sizes
        const Buffer tensor = st ? st->buffer : nullptr;
        for (Expr c : parts) {
            if (Expr f = uses(c, lane) ? laneFree(c, lane, width, assumed, tensor) : nullptr) c = f;
            bool known = provablyTrue(c, ranges);
            for (auto &o : outer) known |= sameTest(o, c);
            for (auto &k : kept) known |= sameTest(k, c);
            if (!known) kept.push_back(c);
        }
        size_t depth = outer.size();
        outer.insert(outer.end(), kept.begin(), kept.end());
        Stmt then = mutate(op->then);
        outer.resize(depth);
        if (kept.empty()) return then;
        if (auto inner = as<IfThenElse>(then); inner && !inner->otherwise) { // if a { if b { s } }: if a && b { s }
            kept.push_back(inner->cond);
            then = inner->then;
        }
        Expr cond = kept[0];
        for (size_t i = 1; i < kept.size(); ++i) cond = binary(BinaryOp::And, cond, kept[i], op->cond->loc);
        return IfThenElse::make(cond, then, nullptr, op->loc);
    }
};

/// `x // c * c + x % c` as x (Python's floor division and remainder: the identity holds for every x and every
/// c != 0), the flattened index of `B[x // c, x % c]` over a buffer of rows of c (a thread's run of a flattened
/// tile, TileLang's dequantization kernels): the lanes of `x = base + lane` are then consecutive elements of B,
/// whether or not the run crosses a row.
struct FoldDivMod : IRMutator {
    using IRMutator::visit;
    static bool remainderOf(const Expr &e, const Expr &x, const Expr &c) {
        auto m = as<Binary>(e);
        return m && m->op == BinaryOp::FloorMod && structurallyEqual(m->a, x) && structurallyEqual(m->b, c);
    }
    /// x when `e` is `x // c * c` (or `c * (x // c)`) and `rest` is `x % c`; null otherwise.
    static Expr whole(const Expr &e, const Expr &rest) {
        auto mul = as<Binary>(e);
        if (!mul || mul->op != BinaryOp::Mul) return nullptr;
        for (auto [q, c] : {std::pair{mul->a, mul->b}, std::pair{mul->b, mul->a}}) {
            auto d = as<Binary>(q);
            auto cv = constValue(c);
            if (d && d->op == BinaryOp::FloorDiv && cv && *cv != 0 && structurallyEqual(d->b, c) &&
                remainderOf(rest, d->a, c))
                return d->a;
        }
        return nullptr;
    }
    static void terms(const Expr &e, std::vector<Expr> &out) {
        if (auto b = as<Binary>(e); b && b->op == BinaryOp::Add) {
            terms(b->a, out);
            terms(b->b, out);
        } else {
            out.push_back(e);
        }
    }
    /// The terms of a sum (`base + x // c * c + x % c`, in any order and grouping), each pair folded.
    Expr visit(const std::shared_ptr<const Binary> &op) override {
        Expr e = IRMutator::visit(op);
        auto b = as<Binary>(e);
        if (!b || b->op != BinaryOp::Add) return e;
        std::vector<Expr> ts;
        terms(e, ts);
        bool folded = false;
        for (size_t i = 0; i < ts.size(); ++i)
            for (size_t j = 0; ts[i] && j < ts.size(); ++j)
                if (Expr x = i != j && ts[j] ? whole(ts[i], ts[j]) : nullptr) {
                    ts[i] = x, ts[j] = nullptr, folded = true;
                    break;
                }
        if (!folded) return e;
        Expr sum;
        for (auto &t : ts)
            if (t) sum = sum ? binary(BinaryOp::Add, sum, t, e->loc) : t;
        return sum;
    }
};

/// The lanes of a vector taken as one where they provably are (TileLang's im2col gathers 8 channels of one
/// pixel): with n = R + lane, R a known multiple of the lane count W and d a constant multiple of W, every lane
/// of an aligned vector lies in one period of d, so n // d is R // d and n % d is R % d + lane (Python's floor
/// division, any sign of R). Nested zero-selects become one (`c1 ? (c2 ? x : 0) : 0` is `c1 && c2 ? x : 0`:
/// a load hoisted out of it keeps every test that guards it), and a select's comparisons of `base + lane` become
/// tests of the vector (laneFree), repeated ones dropped: so a guarded gather becomes one predicated vector load.
struct LaneSplit : IRMutator {
    using IRMutator::visit;
    LaneSplit(const Var &laneVar, int64_t width, SizeAssumptions *assumed)
        : laneVar(laneVar), lane(laneVar.get()), width(width), assumed(assumed) {}
    Var laneVar;
    const VarNode *lane;
    int64_t width;
    SizeAssumptions *assumed;

    Expr visit(const std::shared_ptr<const Binary> &op) override {
        Expr e = IRMutator::visit(op);
        auto b = as<Binary>(e);
        if (!b || (b->op != BinaryOp::FloorDiv && b->op != BinaryOp::FloorMod) || !uses(b->a, lane)) return e;
        auto d = constValue(b->b);
        auto lin = linearIn(b->a, lane);
        if (!d || *d <= 0 || *d % width || !lin || lin->second != 1) return e;
        Expr rest = lin->first ? lin->first : intImm(0, b->a->dtype);
        if (knownMultiple(rest) % width) return e;
        Expr q = binary(b->op, rest, b->b, b->loc);
        return b->op == BinaryOp::FloorDiv ? q : binary(BinaryOp::Add, q, cast(q->dtype, Expr(laneVar)), b->loc);
    }

    Expr visit(const std::shared_ptr<const Select> &op) override {
        Expr e = IRMutator::visit(op);
        auto s = as<Select>(e);
        if (!s || !isZero(s->f)) return e;
        std::vector<Expr> parts, kept;
        conjuncts(s->cond, parts);
        Expr value = s->t;
        while (auto inner = as<Select>(value)) { // c1 ? (c2 ? x : 0) : 0
            if (!isZero(inner->f)) break;
            conjuncts(inner->cond, parts);
            value = inner->t;
        }
        auto load = as<Load>(value); // a test of the loaded tensor's bounds may rely on its sizes
        const Buffer tensor = load ? load->buffer : nullptr;
        for (Expr c : parts) {
            if (Expr f = uses(c, lane) ? laneFree(c, lane, width, assumed, tensor) : nullptr) c = f;
            bool known = false;
            for (auto &k : kept) known |= sameTest(k, c);
            if (!known) kept.push_back(c);
        }
        Expr cond = kept[0];
        for (size_t i = 1; i < kept.size(); ++i) cond = binary(BinaryOp::And, cond, kept[i], s->cond->loc);
        return Select::make(cond, value, s->f, s->loc);
    }
};

/// `(rest + lane) // d` and `(rest + lane) % d` split where d divides rest (see laneOffsets).
struct SplitLaneDivisions : IRMutator {
    using IRMutator::visit;
    explicit SplitLaneDivisions(const Var &lane) : lane(lane) {}
    Var lane;
    Expr visit(const std::shared_ptr<const Binary> &op) override {
        Expr e = IRMutator::visit(op);
        auto b = as<Binary>(e);
        if (!b || (b->op != BinaryOp::FloorDiv && b->op != BinaryOp::FloorMod) || !uses(b->a, lane.get())) return e;
        auto d = constValue(b->b);
        auto lin = linearIn(b->a, lane.get());
        if (!d || *d <= 0 || !lin || lin->second != 1 || (lin->first && knownMultiple(lin->first) % *d)) return e;
        Expr part = binary(b->op, cast(b->a->dtype, Expr(lane)), b->b, b->loc);
        if (b->op == BinaryOp::FloorMod || !lin->first) return part;
        return binary(BinaryOp::Add, binary(BinaryOp::FloorDiv, lin->first, b->b, b->loc), part, b->loc);
    }
};

/// The terms of a sum (through widening integer casts) into those free of the lane and those of the lane alone;
/// false where a term mixes the lane with anything else.
bool splitTerms(const Expr &e, const VarNode *lane, Expr &base, Expr &offset) {
    auto add = [&](Expr &sum, const Expr &t) { sum = sum ? binary(BinaryOp::Add, sum, t, e->loc) : t; };
    if (!uses(e, lane)) return add(base, e), true;
    if (auto b = as<Binary>(e); b && b->op == BinaryOp::Add)
        return splitTerms(b->a, lane, base, offset) && splitTerms(b->b, lane, base, offset);
    if (auto c = as<Cast>(e); c && c->dtype.isInt() && c->value->dtype.isInt() && c->dtype.bits() >= c->value->dtype.bits()) {
        Expr b, o;
        if (!splitTerms(c->value, lane, b, o)) return false;
        if (b) add(base, cast(c->dtype, b));
        return add(offset, cast(c->dtype, o)), true;
    }
    if (!evalInt(e, {{lane, 0}})) return false; // reads something besides the lane
    return add(offset, e), true;
}

} // namespace

std::optional<LaneOffsets> laneOffsets(const Expr &index, const Var &lane, int64_t width) {
    LaneOffsets r;
    Expr e = SplitLaneDivisions(lane).mutate(index);
    if (!splitTerms(e, lane.get(), r.base, r.offset) || !r.offset) return std::nullopt;
    for (int64_t v = 0; v < width; ++v) {
        auto o = evalInt(r.offset, {{lane.get(), v}});
        if (!o) return std::nullopt;
        r.values.push_back(*o);
    }
    return r;
}

Stmt laneConditions(const Stmt &body, const VarNode *lane, int64_t width, const RangeMap &ranges, SizeAssumptions *assumed) {
    return LaneConditions(lane, width, ranges, assumed).mutate(body);
}

Stmt splitLanes(const Stmt &body, const Var &lane, int64_t width, SizeAssumptions *assumed) {
    return LaneSplit(lane, width, assumed).mutate(FoldDivMod().mutate(body));
}

} // namespace tilec::passes::lanes
