/// \file
/// Vector loads and stores from the lanes of vectorized loops (include/tilec/passes/VectorizeAccesses.h).
#include "tilec/passes/VectorizeAccesses.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "ProgramVectorized.h"

#include <algorithm>
#include <functional>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// Structural equality with variables and buffers by identity.

bool isZero(const Expr &e) {
    if (auto f = as<FloatImm>(e)) return f->value == 0.0;
    if (auto i = as<IntImm>(e)) return i->value == 0;
    return false;
}

bool isMemory(const Buffer &b) { return b && (b->scope == Scope::Global || b->scope == Scope::Shared); }

/// Variables bound inside a statement, and buffers it stores to.
struct Inside : IRVisitor {
    using IRVisitor::visit;
    std::set<const VarNode *> bound;
    std::set<const BufferNode *> stored;
    void visit(const For &op) override {
        bound.insert(op.var.get());
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        stored.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const AtomicAdd &op) override {
        stored.insert(op.dst.buffer.get());
        IRVisitor::visit(op);
    }
};

bool mentionsAny(const Expr &e, const std::set<const VarNode *> &vars) {
    for (auto *v : vars)
        if (uses(e, v)) return true;
    return false;
}

/// The base of `index` as `base + lane` with base aligned to `width`, or null.
Expr alignedBase(const Expr &index, const VarNode *lane, int64_t width) {
    auto lin = linearIn(index, lane);
    if (!lin || lin->second != 1) return nullptr;
    Expr base = lin->first ? lin->first : intImm(0, index->dtype);
    return knownMultiple(base) % width == 0 ? base : nullptr;
}

/// The top-level store of a vectorized loop's body (a statement of its Seq, optionally under an if without else).
const Store *topStore(const Stmt &s) {
    if (auto i = as<IfThenElse>(s); i && !i->otherwise) return as<Store>(i->then);
    return as<Store>(s);
}

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

/// Whether a condition reads nothing (no load, no call): evaluating it again, or once for several lanes or
/// statements, gives the same answer.
bool anyCall(const Call &) { return true; }

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

/// Whether `e` makes a call with an effect (T.call_extern's functions, library calls that are not pure
/// expressions): running it once instead of once per lane would change what it does.
bool callsWithEffect(const Expr &e) {
    auto effect = [](const Call &c) {
        const lib::Info *info = lib::find(c.name);
        return c.name.rfind("extern:", 0) == 0 || (info && !(info->effects & lib::kPure));
    };
    return readsAny(e, [](const BufferNode *) { return false; }, effect);
}

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
    std::vector<Stmt> stmts;
    if (auto seq = as<Seq>(body)) stmts = seq->stmts;
    else stmts.push_back(body);
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
Expr laneFree(const Expr &c, const VarNode *lane, int64_t width) {
    auto b = as<Binary>(c);
    if (!b || width < 1) return nullptr; // no lanes to be uniform over (and no division by 0 below)
    Expr x = b->a, y = b->b;
    BinaryOp op = b->op;
    if (uses(y, lane)) { // y > x is x < y; y <= x is x >= y
        if (op != BinaryOp::GT && op != BinaryOp::LE) return nullptr;
        std::swap(x, y);
        op = op == BinaryOp::GT ? BinaryOp::LT : BinaryOp::GE;
    }
    if ((op != BinaryOp::LT && op != BinaryOp::GE) || uses(y, lane) || knownMultiple(y) % width != 0)
        return nullptr;
    Expr base = alignedBase(x, lane, width);
    return base && !uses(base, lane) ? binary(op, base, y, c->loc) : nullptr;
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

bool sameTest(const Expr &a, const Expr &b) {
    auto x = as<Binary>(a), y = as<Binary>(b);
    if (!x || !y) return structurallyEqual(a, b);
    return x->op == y->op && provablyEqual(x->a, y->a) && provablyEqual(x->b, y->b);
}

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

/// The conditions of the ifs in a vectorized loop's body, tested once per vector where they can be
/// (laneFree), without the tests that always hold (a tile inside the tensor) or that repeat an enclosing one
/// (the program's own bounds test and predicateBounds'), nested ifs without else merged into one: so a store
/// under the program's `if i < n and j < h` becomes one vector store under one test.
struct LaneConditions : IRMutator {
    using IRMutator::visit;
    LaneConditions(const VarNode *lane, int64_t width, const RangeMap &ranges) : lane(lane), width(width), ranges(ranges) {}
    const VarNode *lane;
    int64_t width;
    const RangeMap &ranges;
    std::vector<Expr> outer; ///< the tests of the enclosing ifs (as rewritten)

    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
        if (op->otherwise) return IRMutator::visit(op);
        std::vector<Expr> parts, kept;
        conjuncts(op->cond, parts);
        for (Expr c : parts) {
            if (Expr f = uses(c, lane) ? laneFree(c, lane, width) : nullptr) c = f;
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

/// The lanes of a vector taken as one where they provably are (TileLang's im2col gathers 8 channels of one
/// pixel): with n = R + lane, R a known multiple of the lane count W and d a constant multiple of W, every lane
/// of an aligned vector lies in one period of d, so n // d is R // d and n % d is R % d + lane (Python's floor
/// division, any sign of R). Nested zero-selects become one (`c1 ? (c2 ? x : 0) : 0` is `c1 && c2 ? x : 0`:
/// a load hoisted out of it keeps every test that guards it), and a select's comparisons of `base + lane` become
/// tests of the vector (laneFree), repeated ones dropped: so a guarded gather becomes one predicated vector load.
struct LaneSplit : IRMutator {
    using IRMutator::visit;
    LaneSplit(const Var &laneVar, int64_t width) : laneVar(laneVar), lane(laneVar.get()), width(width) {}
    Var laneVar;
    const VarNode *lane;
    int64_t width;

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
        for (Expr c : parts) {
            if (Expr f = uses(c, lane) ? laneFree(c, lane, width) : nullptr) c = f;
            bool known = false;
            for (auto &k : kept) known |= sameTest(k, c);
            if (!known) kept.push_back(c);
        }
        Expr cond = kept[0];
        for (size_t i = 1; i < kept.size(); ++i) cond = binary(BinaryOp::And, cond, kept[i], s->cond->loc);
        return Select::make(cond, value, s->f, s->loc);
    }
};

/// The lane count for a T.vectorized loop of the program (ProgramVectorized.h) over `extent` lanes whose body
/// is plain stores that either only load memory into registers, or only store registers to one memory
/// buffer: its lanes can be reordered, so its accesses become vector loads and stores like those of a
/// vectorized loop, 16 bytes at most each (a longer loop is taken that many lanes at a time). 0 for any other.
int64_t reorderableLanes(const For &f, int64_t extent) {
    if (f.forKind != ForKind::Unrolled || f.numStages != kProgramVectorized || !isZero(f.min)) return 0;
    std::vector<Stmt> stmts;
    if (auto seq = as<Seq>(f.body)) stmts = seq->stmts;
    else stmts.push_back(f.body);
    struct Mem : IRVisitor {
        using IRVisitor::visit;
        int bytes = 0;
        bool ok = true;
        std::set<const BufferNode *> loaded;
        void visit(const Load &op) override {
            if (isMemory(op.buffer)) loaded.insert(op.buffer.get()), bytes = std::max(bytes, op.buffer->dtype.bytes());
            IRVisitor::visit(op);
        }
        void visit(const Call &) override { ok = false; }
    } m;
    std::set<const BufferNode *> stored;
    for (auto &st : stmts) {
        auto store = topStore(st); // a store under the program's or predicateBounds' own test of the row
        auto guard = as<IfThenElse>(st);
        if (!store || (guard && !pureIndexTest(guard->cond))) return 0;
        if (isMemory(store->buffer)) stored.insert(store->buffer.get()), m.bytes = std::max(m.bytes, store->buffer->dtype.bytes());
        m.visit(st);
    }
    if (!m.ok || m.bytes == 0 || !(stored.empty() || (m.loaded.empty() && stored.size() == 1))) return 0;
    int64_t lanes = std::min<int64_t>(extent, 16 / m.bytes);
    while (lanes > 1 && (extent % lanes || (lanes & (lanes - 1)))) lanes /= 2;
    return lanes >= 2 ? lanes : 0;
}

class Vectorizer : public IRMutator {
  public:
    using IRMutator::visit;
    std::vector<Buffer> temps;
    explicit Vectorizer(const Kernel &k) : ranges_(kernelRanges(k)) {}

    Stmt visit(const std::shared_ptr<const For> &op) override {
        auto saved = ranges_;
        addLoopRange(ranges_, *op);
        Stmt s = IRMutator::visit(op);
        auto f = as<For>(s);
        auto width = f ? constInt(f->extent) : std::nullopt;
        if (f && f->forKind == ForKind::Vectorized && width && *width >= 2 && isZero(f->min)) {
            Stmt body = LaneSplit(f->var, *width).mutate(f->body);
            body = LaneConditions(f->var.get(), *width, ranges_).mutate(body);
            if (body != f->body) {
                s = For::make(f->var, f->min, f->extent, f->forKind, f->numStages, body, f->loc);
                f = as<For>(s);
            }
        }
        ranges_ = std::move(saved);
        // (lanes > 0: a loop of no trips is no loop of lanes, and vectorize must not move its statements out)
        if (int64_t lanes = f && width ? reorderableLanes(*f, *width) : 0; lanes > 0 && lanes == width) {
            return vectorize(s, *f, lanes);
        } else if (lanes) { // lanes at a time: for o: for l < lanes: body[v = o * lanes + l]
            Var o = makeVar(f->var->name + "_o", f->var->dtype, f->loc), l = makeVar(f->var->name, f->var->dtype, f->loc);
            Expr v = binary(BinaryOp::Add, binary(BinaryOp::Mul, Expr(o), intImm(lanes, f->var->dtype)), Expr(l));
            Stmt body = simplifyIndices(substitute(f->body, VarMap{{f->var.get(), v}}));
            Stmt inner = For::make(l, intImm(0, f->var->dtype), intImm(lanes, f->var->dtype), ForKind::Unrolled,
                                   kProgramVectorized, body, f->loc);
            return For::make(o, intImm(0, f->var->dtype), intImm(*width / lanes, f->var->dtype), ForKind::Unrolled, 0,
                             vectorize(inner, *as<For>(inner), lanes), f->loc);
        }
        if (!f || f->forKind != ForKind::Vectorized) return s;
        if (matchAtomicVector(*f)) return s; // code generation adds its lanes at once
        if (!width || *width < 2) return plain(s, *f);
        return vectorize(s, *f, *width);
    }

  private:
    int counter_ = 0;
    RangeMap ranges_; ///< block and thread indices, T.dynamic sizes, the enclosing loops

    /// The vectorized loop s (= f) unrolled, unless it is a pair conversion (code generation converts those two
    /// lanes at a time).
    static Stmt plain(const Stmt &s, const For &f) {
        if (matchPairConversion(f)) return s;
        return For::make(f.var, f.min, f.extent, ForKind::Unrolled, 0, f.body, f.loc);
    }

    struct Hoisted {
        Expr original; ///< the load, or the select around it
        Buffer temp;
    };

    Stmt vectorize(const Stmt &loop, const For &f, int64_t width) {
        if (Stmt split = splitGuards(f.body); split != f.body) {
            Stmt s = For::make(f.var, f.min, f.extent, f.forKind, f.numStages, split, f.loc);
            return vectorize(s, *as<For>(s), width);
        }
        const VarNode *lane = f.var.get();
        Inside in;
        in.visit(f.body);
        in.bound.erase(lane);
        {
            auto seq = as<Seq>(f.body);
            std::vector<Stmt> stmts = seq ? seq->stmts : std::vector<Stmt>{f.body};
            size_t defs = invariantRegisterDefs(stmts, lane, in.bound, in.stored);
            if (width > 0 && defs > 0 && defs < stmts.size()) { // the loop runs, so the statements run once
                std::vector<Stmt> out(stmts.begin(), stmts.begin() + (ptrdiff_t)defs);
                std::vector<Stmt> rest(stmts.begin() + (ptrdiff_t)defs, stmts.end());
                Stmt restBody = rest.size() == 1 ? rest[0] : Seq::make(std::move(rest), f.body->loc);
                Stmt s = For::make(f.var, f.min, f.extent, f.forKind, f.numStages, restBody, f.loc);
                out.push_back(vectorize(s, *as<For>(s), width));
                return Seq::make(std::move(out), f.loc);
            }
        }

        // Loads to hoist: memory, aligned, checked independently of the lane, not stored to in the body.
        std::vector<Hoisted> loads;
        auto candidate = [&](const Expr &e) -> bool {
            const Load *l = as<Load>(e);
            Expr cond;
            if (auto s = as<Select>(e)) {
                if (!isZero(s->f)) return false;
                l = as<Load>(s->t);
                cond = s->cond;
            }
            if (!l || !isMemory(l->buffer) || l->indices.size() != 1) return false;
            if (in.stored.count(l->buffer.get()) && !readModifyWriteOnly(f.body, l->buffer.get())) return false;
            if (cond && (uses(cond, lane) || mentionsAny(cond, in.bound))) return false;
            // Run before the body, the load would read the registers and memory its address and test read as
            // they were before any lane stored them (a gather's index register set by the body itself).
            if ((cond && loadsAny(cond, in.stored)) || loadsAny(l->indices[0], in.stored)) return false;
            Expr base = alignedBase(l->indices[0], lane, width);
            return base && !mentionsAny(base, in.bound) && !uses(base, lane);
        };
        struct Replace : IRMutator {
            using IRMutator::visit;
            Vectorizer *self;
            std::vector<Hoisted> *loads;
            std::function<bool(const Expr &)> candidate;
            const For *loop;
            /// The tests of the enclosing ifs' then-branches that hold for every lane or none (see thenTests):
            /// a load there is needed only where they hold, so its vector is read only then (zeros otherwise,
            /// which no lane uses). TileLang's varlen kernels read rows below a sequence's length this way.
            std::vector<Expr> guards;
            std::function<void(const Expr &, std::vector<Expr> &)> thenTests;
            Expr hoist(Expr e) {
                e = underGuards(e, guards);
                for (auto &h : *loads)
                    if (structurallyEqual(h.original, e)) return Load::make(h.temp, {Expr(loop->var)});
                Buffer t = self->temp(e->dtype, loop->extent, e->loc);
                loads->push_back({e, t});
                return Load::make(t, {Expr(loop->var)});
            }
            Expr visit(const std::shared_ptr<const Select> &op) override {
                if (candidate(op)) return hoist(op);
                // A load under a bounds check that depends on the lane stays a checked scalar load: hoisted
                // alone, it would read past the tensor's end.
                if (as<Load>(op->t) && isZero(op->f)) {
                    Expr c = mutate(op->cond);
                    return c == op->cond ? Expr(op) : Select::make(c, op->t, op->f, op->loc);
                }
                ++conditions;
                Expr e = IRMutator::visit(op);
                --conditions;
                return e;
            }
            Expr visit(const std::shared_ptr<const Load> &op) override {
                // Global loads are safe anywhere (checked or proven inside the tensor); a shared load under a
                // condition may be guarded by it, so it stays where it is.
                bool guarded = conditions > 0 && op->buffer->scope == Scope::Shared;
                if (!guarded && candidate(op)) return hoist(op);
                return IRMutator::visit(op);
            }
            int conditions = 0;
            Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
                ++conditions;
                Expr cond = mutate(op->cond);
                size_t depth = guards.size();
                thenTests(op->cond, guards);
                Stmt then = mutate(op->then);
                guards.resize(depth);
                Stmt otherwise = op->otherwise ? mutate(op->otherwise) : nullptr;
                --conditions;
                if (cond == op->cond && then == op->then && otherwise == op->otherwise) return op;
                return IfThenElse::make(cond, then, otherwise, op->loc);
            }
        } rep;
        rep.self = this;
        rep.loads = &loads;
        rep.candidate = candidate;
        rep.loop = &f;
        // The conjuncts of an if's test that are the same for all lanes (lane-free ones, or `base + lane < b` made
        // once per vector by laneFree), read only registers the body leaves alone, and do not always hold.
        rep.thenTests = [&](const Expr &cond, std::vector<Expr> &out) {
            std::vector<Expr> parts;
            conjuncts(cond, parts);
            for (Expr c : parts) {
                if (uses(c, lane)) c = laneFree(c, lane, width);
                if (c && !mentionsAny(c, in.bound) && registerTest(c, in.stored) && !provablyTrue(c, ranges_))
                    out.push_back(c);
            }
        };
        Stmt body = rep.mutate(f.body);

        // Stores to sink: top-level statements of the body, optionally under a lane-free check.
        std::vector<Stmt> stmts;
        if (auto seq = as<Seq>(body)) stmts = seq->stmts;
        else stmts.push_back(body);
        std::vector<Stmt> sunk;
        for (auto &s : stmts) {
            Expr cond;
            const Store *st = topStore(s);
            if (auto i = as<IfThenElse>(s); i && !i->otherwise) cond = i->cond;
            if (!st || !isMemory(st->buffer) || st->indices.size() != 1) continue;
            if (cond && (uses(cond, lane) || mentionsAny(cond, in.bound))) continue;
            // Run after the body, the store's address and test would read what the last lane left there.
            if ((cond && loadsAny(cond, in.stored)) || loadsAny(st->indices[0], in.stored)) continue;
            Expr base = alignedBase(st->indices[0], lane, width);
            if (!base || mentionsAny(base, in.bound)) continue;
            if (ir::loads(body, st->buffer.get())) continue;
            Buffer t = temp(st->value->dtype, f.extent, st->loc);
            Stmt back = Store::make(st->buffer, {st->indices[0]}, Load::make(t, {Expr(f.var)}), st->loc);
            if (cond) back = IfThenElse::make(cond, back, nullptr, s->loc);
            sunk.push_back(For::make(f.var, f.min, f.extent, ForKind::Vectorized, 0, back, f.loc));
            s = Store::make(t, {Expr(f.var)}, st->value, st->loc);
        }
        if (loads.empty() && sunk.empty()) return plain(loop, f);

        std::vector<Stmt> out;
        for (auto &h : loads)
            out.push_back(For::make(f.var, f.min, f.extent, ForKind::Vectorized, 0,
                                    Store::make(h.temp, {Expr(f.var)}, h.original, f.loc), f.loc));
        Stmt rest = For::make(f.var, f.min, f.extent, ForKind::Vectorized, 0, Seq::make(stmts, f.loc), f.loc);
        out.push_back(plain(rest, *as<For>(rest)));
        for (auto &s : sunk) out.push_back(s);
        return Seq::make(std::move(out), f.loc);
    }

  public:
    Buffer temp(DType t, const Expr &extent, const SourceRange &loc) {
        Buffer b = makeBuffer("vec" + std::to_string(counter_++), Scope::Local, t, {extent}, loc);
        temps.push_back(b);
        return b;
    }
};

} // namespace

std::optional<PairConversion> matchPairConversion(const For &f) {
    auto lanes = constInt(f.extent);
    auto st = as<Store>(f.body);
    if (f.forKind != ForKind::Vectorized || !lanes || *lanes < 2 || *lanes % 2 || !st ||
        st->buffer->scope != Scope::Local || st->indices.size() != 1)
        return std::nullopt;
    const DType t = st->buffer->dtype;
    auto c = as<Cast>(st->value);
    if ((t.kind != DType::Float16 && t.kind != DType::BFloat16) || !c || c->dtype != t ||
        c->value->dtype.kind != DType::Float32)
        return std::nullopt;
    Expr base = alignedBase(st->indices[0], f.var.get(), 2);
    // Both lanes' values are computed before either is stored: e must not read what the loop writes.
    if (!base || uses(base, f.var.get()) || loads(f.body, st->buffer.get())) return std::nullopt;
    return PairConversion{st, base, *lanes};
}

Program vectorizeAccesses(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Vectorizer v(*k);
        Stmt body = v.mutate(k->body);
        if (body == k->body) {
            out.kernels.push_back(k);
            continue;
        }
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        for (auto &b : v.temps) nk->allocs.push_back(b);
        out.kernels.push_back(nk);
    }
    return out;
}

std::optional<AtomicVector> matchAtomicVector(const For &f) {
    auto lanes = constInt(f.extent);
    if (f.forKind != ForKind::Vectorized || !isZero(f.min) || !lanes || (*lanes != 2 && *lanes != 4)) return std::nullopt;
    const VarNode *lane = f.var.get();
    AtomicVector a;
    a.lanes = *lanes;
    Stmt body = f.body;
    if (auto i = as<IfThenElse>(body); i && !i->otherwise && !uses(i->cond, lane)) a.cond = i->cond, body = i->then;
    a.add = as<AtomicAdd>(body);
    if (!a.add || a.add->src || !a.add->value || a.add->dst.ranges.size() != 1) return std::nullopt;
    const Buffer &dst = a.add->dst.buffer;
    if (!dst || dst->scope != Scope::Global || dst->dtype != DType::Float32) return std::nullopt;
    auto reg = as<Load>(a.add->value);
    if (!reg || reg->buffer->scope != Scope::Local || reg->buffer->dtype != DType::Float32 || reg->indices.size() != 1)
        return std::nullopt;
    a.base = alignedBase(a.add->dst.ranges[0].min, lane, a.lanes);
    auto r = linearIn(reg->indices[0], lane);
    if (!a.base || uses(a.base, lane) || !r || r->second != 1) return std::nullopt;
    a.regBase = r->first ? r->first : intImm(0, reg->indices[0]->dtype);
    a.regs = reg->buffer.get();
    return a;
}

} // namespace tilec::passes
