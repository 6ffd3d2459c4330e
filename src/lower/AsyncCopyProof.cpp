/// \file
/// Which groups of T.async_copy chunks the program's waits provably retire before anything else touches their
/// bytes (src/lower/AsyncCopyProof.h; lowerAsyncCopies issues the copies as cp.async only where this proves it).
#include "AsyncCopyProof.h"

#include "SyncElements.h"
#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedAliases.h"

#include <optional>
#include <vector>

namespace tilec::passes {

using namespace ir;

const Copy *asyncCopyOf(const Stmt &s) {
    auto i = as<IfThenElse>(s);
    return i && lib::is(i->cond, lib::Fn::AsyncCopyOn) && !i->otherwise ? as<Copy>(i->then) : nullptr;
}

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

bool hasAsync(const Stmt &s) { return s && callsAny(s, {lib::Fn::AsyncCopyOn, lib::Fn::CpAsyncCommit, lib::Fn::CpAsyncWait}); }

// ---------------------------------------------------------------------------------------------------------
// The proof: which parts of which buffers the groups in flight may still write (destinations) or read (sources).

/// Per dimension the closed interval [lo, hi] of indices a group in flight touches; none: the whole buffer.
struct Piece {
    const BufferNode *buffer = nullptr;
    bool source = false; ///< the copy reads it (only writes conflict)
    std::vector<std::pair<Expr, Expr>> dims;
    /// Equal for equal pieces: the printed bounds and the identity of every variable in them.
    std::string key() const {
        struct Vars : IRVisitor {
            using IRVisitor::visit;
            std::string ids;
            void visit(const VarNode &v) override { ids += " " + std::to_string((uintptr_t)&v); }
        } vars;
        std::string k = std::to_string((uintptr_t)buffer) + (source ? "s" : "d");
        for (auto &[lo, hi] : dims) {
            k += "[" + print(lo) + ":" + print(hi) + "]";
            vars.visit(lo), vars.visit(hi);
        }
        return k + vars.ids;
    }
};
using Group = std::map<std::string, Piece>;

/// The groups committed and in flight (oldest first) and the copies issued since the last commit.
struct Flight {
    std::vector<Group> groups;
    Group open;
    bool operator==(const Flight &o) const {
        auto keys = [](const Group &g) {
            std::set<std::string> s;
            for (auto &[k, p] : g) s.insert(k);
            return s;
        };
        if (groups.size() != o.groups.size() || keys(open) != keys(o.open)) return false;
        for (size_t i = 0; i < groups.size(); ++i)
            if (keys(groups[i]) != keys(o.groups[i])) return false;
        return true;
    }
};

void add(Group &g, const Piece &p) { g.emplace(p.key(), p); }

/// Either path's groups: the i-th newest of the result holds both paths' i-th newest.
Flight join(const Flight &a, const Flight &b) {
    Flight r;
    const size_t n = std::max(a.groups.size(), b.groups.size());
    r.groups.resize(n);
    for (const Flight *f : {&a, &b})
        for (size_t i = 0; i < f->groups.size(); ++i)
            for (auto &[k, p] : f->groups[i]) add(r.groups[n - f->groups.size() + i], p);
    for (const Flight *f : {&a, &b})
        for (auto &[k, p] : f->open) add(r.open, p);
    return r;
}

constexpr size_t kMaxGroups = 32;
constexpr int64_t kMaxExactTrips = 16; ///< loops of at most this many iterations, known at the walk, walked one by one

class Proof {
  public:
    explicit Proof(const Kernel &k) : kernel_(k), ranges_(kernelRanges(k)), tx_(k.threadIdx.get()) {}
    std::string why;     ///< the first reason the waits are not proved to cover the copies (empty: proved)
    SourceRange whyAt;
    /// Per CpAsyncWait statement, the destinations of the groups it may retire (on any path, in any iteration).
    std::map<const StmtNode *, std::set<const BufferNode *>> landings;

    void run(const Stmt &s, Flight &f) {
        if (!s || !why.empty()) return;
        if (!hasAsync(s)) return touch(s, f); // (its loops leave what is in flight as it was)
        if (auto q = as<Seq>(s)) {
            for (auto &c : q->stmts) run(c, f);
        } else if (const Copy *c = asyncCopyOf(s)) {
            issue(*c, f, s->loc);
        } else if (const Call *c = callOf(s); c && lib::is(*c, lib::Fn::CpAsyncCommit)) {
            f.groups.push_back(std::move(f.open));
            f.open.clear();
            if (f.groups.size() > kMaxGroups) fail(s->loc, "more than " + std::to_string(kMaxGroups) + " groups may be in flight");
        } else if (c && lib::is(*c, lib::Fn::CpAsyncWait)) {
            auto n = constInt(lib::arg(*c, lib::Fn::CpAsyncWait, "pending"));
            auto &lands = landings[s.get()];
            while (n && f.groups.size() > (size_t)*n) {
                for (auto &[k, p] : f.groups.front())
                    if (!p.source) lands.insert(p.buffer);
                f.groups.erase(f.groups.begin());
            }
        } else if (auto i = as<IfThenElse>(s)) {
            branch(*i, f);
        } else if (auto l = as<For>(s); l && l->forKind != ForKind::Parallel && l->forKind != ForKind::Vectorized) {
            loop(*l, f);
        } else if (auto w = as<While>(s)) {
            touch(w->cond, f);
            if (hasAsync(w->body) && threadDependent(w->cond)) return fail(s->loc, "a copy or wait under a thread-dependent loop");
            Flight x = f;
            iterate(w->body, x, syncs::loopVars(w->body), nullptr);
            f = join(f, x);
        } else {
            if (hasAsync(s)) return fail(s->loc, "a copy or wait inside a T.Parallel loop or warp roles");
            touch(s, f);
        }
    }

  private:
    const Kernel &kernel_;
    RangeMap ranges_;
    const VarNode *tx_;
    VarMap first_; ///< the loops walked at one iteration (their first, or each: walkEach): variable -> its value
    VarMap later_; ///< the loops walked in their later iterations: variable -> min

    void fail(const SourceRange &at, const std::string &what) {
        if (why.empty()) why = what, whyAt = at;
    }

    bool threadDependent(const Expr &e) const { return (tx_ && uses(e, tx_)) || readsMemory(e); }

    /// The bytes `b` names: a shared alias's base, a view's tensor.
    const BufferNode *storage(const BufferNode *b) const {
        for (auto &p : kernel_.params)
            if (p.buffer.get() == b && p.viewOf) return p.viewOf.get();
        return storageOf(kernel_, b);
    }

    Piece pieceOf(const Region &r, bool source) const {
        Piece p{storage(r.buffer.get()), source, {}};
        for (auto &rg : r.ranges) {
            const Expr &lo = rg.min;
            Expr hi = constInt(rg.extent) == std::optional<int64_t>(1)
                          ? lo
                          : simplify(binary(BinaryOp::Sub, binary(BinaryOp::Add, lo, rg.extent), i32(1)));
            if (threadDependent(lo) || threadDependent(hi)) return Piece{p.buffer, source, {}};
            p.dims.push_back({lo, hi});
        }
        if (p.buffer != r.buffer.get()) p.dims.clear(); // another buffer's indices: its whole storage
        return p;
    }

    /// x < y for every value of the variables in scope.
    bool below(const Expr &x, const Expr &y, const RangeMap &r) const {
        Interval b = boundsOf(simplify(binary(BinaryOp::Sub, y, x)), r);
        return b.lo && *b.lo > 0;
    }
    /// x % m and y % m with x - y a constant that m does not divide (a ring's stage against the previous one).
    static bool otherResidue(const Expr &x, const Expr &y) {
        auto a = as<Binary>(x), b = as<Binary>(y);
        if (!a || !b || a->op != BinaryOp::FloorMod || b->op != BinaryOp::FloorMod) return false;
        auto m = constInt(a->b), n = constInt(b->b);
        auto d = constInt(simplify(binary(BinaryOp::Sub, a->a, b->a)));
        return m && n && *m == *n && *m > 0 && d && *d % *m != 0;
    }

    /// Whether an access of `dims` (closed intervals) misses piece `p` of the same storage; both in the terms of
    /// the iteration being walked (the loops in their first iteration at their mins).
    bool misses(const std::vector<std::pair<Expr, Expr>> &dims, const Piece &p, const RangeMap &r) const {
        if (p.dims.empty() || dims.size() != p.dims.size()) return false;
        for (size_t d = 0; d < dims.size(); ++d) {
            const bool point = structurallyEqual(dims[d].first, dims[d].second),
                       piecePoint = structurallyEqual(p.dims[d].first, p.dims[d].second);
            Expr lo = at(dims[d].first), hi = point ? lo : at(dims[d].second);
            Expr plo = at(p.dims[d].first), phi = piecePoint ? plo : at(p.dims[d].second);
            if (below(hi, plo, r) || below(phi, lo, r)) return true;
            if (point && piecePoint && otherResidue(lo, plo)) return true;
        }
        return false;
    }

    /// An access of `b` (dims empty: all of it) against everything in flight.
    void access(const BufferNode *b, std::vector<std::pair<Expr, Expr>> dims, bool write, const RangeMap &r, const SourceRange &at,
                const Flight &f) {
        const BufferNode *s = storage(b);
        if (s != b) dims.clear();
        auto against = [&](const Group &g) {
            for (auto &[k, p] : g)
                if (p.buffer == s && (write || !p.source) && !misses(dims, p, r)) {
                    auto text = [this](const std::vector<std::pair<Expr, Expr>> &ds) {
                        std::string t;
                        for (auto &[lo, hi] : ds) t += "[" + print(this->at(lo)) + ", " + print(this->at(hi)) + "]";
                        return ds.empty() ? std::string("all of it") : t;
                    };
                    fail(at, "'" + b->name + "' is " + (write ? "written" : "read") + " here (" + text(dims) + ") while a T.async_copy " +
                                 (p.source ? "reads" : "writes") + " " + text(p.dims) + " (no wait retires its group before)");
                }
        };
        for (auto &g : f.groups) against(g);
        against(f.open);
    }

    void issue(const Copy &c, Flight &f, const SourceRange &at) {
        for (auto *r : {&c.src, &c.dst}) {
            Piece p = pieceOf(*r, r == &c.src);
            access(r->buffer.get(), p.dims, r == &c.dst, ranges_, at, f);
        }
        add(f.open, pieceOf(c.dst, false));
        add(f.open, pieceOf(c.src, true));
    }

    /// Every load, store and region of `s` (a statement free of copies and waits) against what is in flight.
    void touch(const Stmt &s, const Flight &f);
    void touch(const Expr &e, const Flight &f) { touch(Evaluate::make(e), f); }

    /// `if`: decided in the first iteration of a loop (its variable is its min there), and a test for the first
    /// iteration (`i == min`, `i != min`) decided in the later ones.
    void branch(const IfThenElse &i, Flight &f) {
        touch(i.cond, f);
        if ((hasAsync(i.then) || hasAsync(i.otherwise)) && threadDependent(i.cond))
            return fail(i.loc, "a copy or wait under a thread-dependent condition");
        std::optional<bool> known;
        if (auto c = constInt(at(i.cond))) known = *c != 0;
        if (auto b = as<Binary>(i.cond); b && (b->op == BinaryOp::EQ || b->op == BinaryOp::NE))
            for (auto [v, other] : {std::pair{b->a, b->b}, std::pair{b->b, b->a}})
                if (auto var = as<VarNode>(v); var && later_.count(var) && provablyEqual(other, later_[var]))
                    known = b->op == BinaryOp::NE;
        if (known) return run(*known ? i.then : i.otherwise, f);
        Flight a = f;
        run(i.then, a);
        run(i.otherwise, f);
        f = join(a, f);
    }

    /// A loop: its first iteration from the state before it, its variable its min there; then every later one
    /// from the join of the states the iterations before may leave (a fixed point), written in the variable of
    /// the iteration they reach (the previous iteration's `i` is `i - 1`); the inner loops' variables forgotten.
    void loop(const For &l, Flight &f) {
        touch(Evaluate::make(binary(BinaryOp::Add, l.min, l.extent)), f);
        if (hasAsync(l.body) && (threadDependent(l.min) || threadDependent(l.extent) || l.forKind == ForKind::Pipelined))
            return fail(l.loc, "a copy or wait in a T.Pipelined or thread-dependent loop");
        if (walkEach(l, f)) return;
        const VarNode *v = l.var.get();
        RangeMap saved = ranges_;
        addLoopRange(ranges_, l);
        std::set<const VarNode *> inner = syncs::loopVars(l.body);
        first_[v] = at(l.min);
        Flight x = f;
        run(l.body, x);
        first_.erase(v);
        forget(x, inner);
        shift(x, l.var);
        later_[v] = l.min;
        if (auto it = ranges_.find(v); it != ranges_.end() && it->second.lo) it->second.lo = *it->second.lo + 1; // not the first
        auto trips = constInt(at(l.extent));
        if (!trips || *trips > 1) iterate(l.body, x, inner, l.var);
        later_.erase(v);
        forget(x, {v});
        ranges_ = saved;
        f = join(f, x);
    }

    /// A loop of a few iterations, their number and first value known where the walk meets it: each iteration
    /// walked with its variable at its value, so that every test of it is decided (a copy issued ahead for the
    /// next iteration except in the last one, a stage chosen by the iteration's parity) and the pieces it
    /// leaves in flight are named by that value. False (nothing walked) for other loops.
    bool walkEach(const For &l, Flight &f) {
        auto lo = constInt(at(l.min)), n = constInt(at(l.extent));
        if (!lo || !n || *n < 1 || *n > kMaxExactTrips) return false;
        const VarNode *v = l.var.get();
        RangeMap saved = ranges_;
        std::set<const VarNode *> inner = syncs::loopVars(l.body);
        for (int64_t k = *lo; k < *lo + *n && why.empty(); ++k) {
            ranges_[v] = Interval::point(k);
            first_[v] = intImm(k, l.var->dtype);
            run(l.body, f);
            forget(f, inner);
            substituteIn(f, {{v, first_[v]}});
        }
        first_.erase(v);
        ranges_ = saved;
        return true;
    }

    void iterate(const Stmt &body, Flight &x, const std::set<const VarNode *> &inner, const Var &v) {
        for (int trip = 0; why.empty(); ++trip) {
            Flight y = x;
            run(body, y);
            forget(y, inner);
            if (v) shift(y, v);
            Flight z = join(x, y);
            if (z == x) return;
            x = std::move(z);
            if (trip > 2 * (int)kMaxGroups) return fail(body->loc, "the groups in flight do not settle across iterations");
        }
    }

    /// `e` with the variables of loops walked at one iteration replaced by their values there.
    Expr at(const Expr &e) const { return first_.empty() ? e : simplify(substitute(e, first_)); }

    /// Pieces named by variables that change (`vars`) stand for their whole buffers from now on.
    static void forget(Flight &f, const std::set<const VarNode *> &vars) {
        rewrite(f, [&](Piece &p) {
            for (auto &[lo, hi] : p.dims)
                for (auto *v : vars)
                    if (uses(lo, v) || uses(hi, v)) return p.dims.clear();
        });
    }
    /// The pieces in the next iteration's terms: loop variable v was v - 1 when they were issued.
    static void shift(Flight &f, const Var &v) { substituteIn(f, {{v.get(), binary(BinaryOp::Sub, v, i32(1))}}); }
    /// The pieces with the variables of `m` replaced.
    static void substituteIn(Flight &f, const VarMap &m) {
        rewrite(f, [&](Piece &p) {
            for (auto &[lo, hi] : p.dims) lo = simplify(substitute(lo, m)), hi = simplify(substitute(hi, m));
        });
    }
    template <class F> static void rewrite(Flight &f, F fix) {
        auto each = [&](Group &g) {
            Group out;
            for (auto [k, p] : g) {
                fix(p);
                add(out, p);
            }
            g = std::move(out);
        };
        for (auto &g : f.groups) each(g);
        each(f.open);
    }
};

/// The accesses of a statement, each checked with the ranges of the loops around it inside the statement.
void Proof::touch(const Stmt &s, const Flight &f) {
    if (f.groups.empty() && f.open.empty()) return;
    struct Walk : IRVisitor {
        using IRVisitor::visit;
        Proof &p;
        const Flight &f;
        RangeMap r;
        Walk(Proof &p, const Flight &f) : p(p), f(f), r(p.ranges_) {}
        void region(const Region &g, bool write, const SourceRange &at) {
            Piece pc = p.pieceOf(g, false);
            p.access(g.buffer.get(), pc.dims, write, r, at, f);
            IRVisitor::visitRegion(g);
        }
        void point(const Buffer &b, const std::vector<Expr> &idx, bool write, const SourceRange &at) {
            std::vector<std::pair<Expr, Expr>> dims;
            for (auto &e : idx) dims.push_back({e, e});
            p.access(b.get(), dims, write, r, at, f);
        }
        void visit(const For &op) override {
            RangeMap saved = r;
            addLoopRange(r, op);
            IRVisitor::visit(op);
            r = saved;
        }
        void visit(const Load &op) override { point(op.buffer, op.indices, false, op.loc), IRVisitor::visit(op); }
        void visit(const Store &op) override { point(op.buffer, op.indices, true, op.loc), IRVisitor::visit(op); }
        void visit(const Copy &op) override { region(op.src, false, op.loc), region(op.dst, true, op.loc); }
        void visit(const Fill &op) override { region(op.dst, true, op.loc), visit(op.value); }
        void visit(const Gemm &op) override { region(op.a, false, op.loc), region(op.b, false, op.loc), region(op.c, true, op.loc); }
        void visit(const Reduce &op) override {
            p.access(op.src.get(), {}, false, r, op.loc, f);
            p.access(op.dst.get(), {}, true, r, op.loc, f);
        }
        void visit(const AtomicAdd &op) override {
            region(op.dst, true, op.loc);
            if (op.src) region(*op.src, false, op.loc);
            if (op.value) visit(op.value);
        }
        void visit(const Call &op) override {
            // an address handed to a call: the call may touch any of the buffer
            for (auto &a : op.args)
                if (auto l = addressedLoad(a)) {
                    p.access(l->buffer.get(), {}, true, r, op.loc, f);
                    for (auto &i : l->indices) visit(i);
                } else {
                    visit(a);
                }
        }
    } w(*this, f);
    w.visit(s);
}

// ---------------------------------------------------------------------------------------------------------

} // namespace

AsyncCopyProof proveAsyncCopies(const Kernel &k, AsyncCopyProof out) {
    Proof proof(k);
    proof.why = out.why, proof.whyAt = out.whyAt;
    Flight f;
    proof.run(k.body, f);
    out.why = proof.why, out.whyAt = proof.whyAt;
    out.landings = std::move(proof.landings);
    out.openAtExit = !f.open.empty();
    out.pendingAtExit = out.openAtExit;
    for (auto &g : f.groups) out.pendingAtExit |= !g.empty();
    return out;
}

} // namespace tilec::passes
