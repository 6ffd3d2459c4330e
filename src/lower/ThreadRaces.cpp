/// \file
/// Races among the threads of per-thread code: located errors (src/lower/ThreadRaces.h).
#include "ThreadRaces.h"

#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// Bound of the enumeration of one access (threads times loop iterations): past it, not provably racing.
constexpr int64_t kMaxPoints = 1 << 21;
/// Grids of at most this many blocks are enumerated whole.
constexpr int64_t kAllBlocks = 64;
/// Past it, each block index tries its first and last kEdgeBlocks values (the first blocks meet small moduli
/// like (tx + by) % 16 at every residue; the last ones hold partial tiles and indices that reach the end) and
/// the values around each constant that a condition around the access compares with.
constexpr int64_t kEdgeBlocks = 8;

using Values = std::map<const VarNode *, int64_t>;

/// A condition around an access (false in an else branch); `thread`: it depends on the thread index; `soft`: a
/// condition inside the access's expression (Select, a global store's bounds), taken where it is not known.
struct Guard {
    Expr cond;
    bool negate, thread, soft = false;
};

/// The control around an access: its conditions and its loops (a uniform loop's iterations are in order).
struct Context {
    std::vector<Guard> guards;
    std::vector<const For *> loops;
};

/// A plain load or store of a shared buffer, with the control around it inside the code collected.
struct Access {
    const BufferNode *buffer;
    const std::vector<Expr> *indices;
    bool store;
    SourceRange loc;
    Context ctx;
};

bool shared(const Buffer &b) { return b && b->scope == Scope::Shared; }

/// A load of a shared buffer and the conditions in its expression under which it runs: `c ? t : f`
/// (T.if_then_else) reads only the arm it takes, so a thread that does not take an arm does not read there.
struct LoadSite {
    const Load *load;
    std::vector<Guard> guards;
};

/// The loads of shared buffers in an expression; `uniform` tells which of their conditions do not depend on the
/// thread.
struct SharedLoads : IRVisitor {
    using IRVisitor::visit;
    explicit SharedLoads(const std::function<bool(const Expr &)> &u) : uniform(u) {}
    const std::function<bool(const Expr &)> &uniform;
    std::vector<LoadSite> loads;
    std::vector<Guard> guards;
    void visit(const Load &op) override {
        if (shared(op.buffer)) loads.push_back({&op, guards});
        IRVisitor::visit(op);
    }
    void visit(const Select &op) override {
        visit(op.cond);
        for (bool negate : {false, true}) {
            guards.push_back({op.cond, negate, !uniform(op.cond), true});
            visit(negate ? op.f : op.t);
            guards.pop_back();
        }
    }
};

/// The conditions under which a store to a global tensor runs at all: each index inside its extent (the
/// contract's guard drops a store outside the tensor, and with it the loads of its value). None for a dimension
/// whose extent is not a constant.
std::vector<Guard> inBounds(const Store &st, const std::function<bool(const Expr &)> &uniform) {
    std::vector<Guard> out;
    if (st.buffer->scope != Scope::Global || st.indices.size() != st.buffer->shape.size()) return out;
    for (size_t d = 0; d < st.indices.size(); ++d) {
        const Expr &x = st.indices[d];
        if (!constInt(st.buffer->shape[d]) || !x->dtype.isInt()) continue;
        Expr inside = binary(BinaryOp::And, binary(BinaryOp::GE, x, intImm(0, x->dtype)),
                             binary(BinaryOp::LT, x, cast(x->dtype, st.buffer->shape[d])));
        out.push_back({inside, false, !uniform(x), true});
    }
    return out;
}

/// A variable and the values it takes: lo, lo + 1, ..., lo + n - 1, or those of `list` when it has any.
struct Range {
    const VarNode *var;
    int64_t lo, n;
    std::vector<int64_t> list = {};
};

/// Runs `fn` at every assignment of the ranges' variables and then of the loops' (set in `vals`); false when a
/// loop's bounds are not constant or `fn` says stop.
bool eachPoint(std::vector<Range> ranges, const std::vector<const For *> &loops, Values &vals, const std::function<bool()> &fn) {
    for (const For *f : loops) {
        auto lo = constInt(f->min), n = constInt(f->extent);
        if (!lo || !n) return false;
        ranges.push_back({f->var.get(), *lo, *n});
    }
    std::function<bool(size_t)> from = [&](size_t i) {
        if (i == ranges.size()) return fn();
        const Range &g = ranges[i];
        for (int64_t k = 0; k < (g.list.empty() ? g.n : (int64_t)g.list.size()); ++k) {
            vals[g.var] = g.list.empty() ? g.lo + k : g.list[(size_t)k];
            if (!from(i + 1)) return false;
        }
        vals.erase(ranges[i].var);
        return true;
    };
    return from(0);
}

enum class Taken { Yes, No, Unknown };

/// A condition over float values at `vals` (`-1.0 + T.cast(tx, "float32") <= 0.0` of a T.if_then_else), in double:
/// nullopt where it reads memory or a comparison lies too close to call for float32 arithmetic.
std::optional<int64_t> evalFloatCond(const Expr &e, const Values &vals) {
    std::function<std::optional<double>(const Expr &, int)> num = [&](const Expr &x, int depth) -> std::optional<double> {
        if (!x || depth > 64) return std::nullopt;
        if (x->dtype.isInt() || x->dtype.isBool())
            if (auto i = evalInt(x, vals)) return (double)*i;
        if (auto f = as<FloatImm>(x)) return f->value;
        if (auto c = as<Cast>(x)) return num(c->value, depth + 1);
        if (auto u = as<Unary>(x); u && u->op != UnaryOp::BitNot) {
            auto a = num(u->a, depth + 1);
            if (!a) return std::nullopt;
            return u->op == UnaryOp::Not ? double(*a == 0) : -*a;
        }
        auto b = as<Binary>(x);
        if (!b) return std::nullopt;
        auto p = num(b->a, depth + 1), q = num(b->b, depth + 1);
        if (!p || !q) return std::nullopt;
        double u = *p, v = *q;
        if (isComparison(b->op) && u != v && std::fabs(u - v) <= 1e-5 * std::max({1.0, std::fabs(u), std::fabs(v)}))
            return std::nullopt; // float32 rounding could decide it either way
        switch (b->op) {
        case BinaryOp::Add: return u + v;
        case BinaryOp::Sub: return u - v;
        case BinaryOp::Mul: return u * v;
        case BinaryOp::Min: return std::min(u, v);
        case BinaryOp::Max: return std::max(u, v);
        case BinaryOp::And: return double(u != 0 && v != 0);
        case BinaryOp::Or: return double(u != 0 || v != 0);
        case BinaryOp::EQ: return double(u == v);
        case BinaryOp::NE: return double(u != v);
        case BinaryOp::LT: return double(u < v);
        case BinaryOp::LE: return double(u <= v);
        case BinaryOp::GT: return double(u > v);
        case BinaryOp::GE: return double(u >= v);
        default: return std::nullopt;
        }
    };
    auto r = num(e, 0);
    return r ? std::optional<int64_t>(*r != 0) : std::nullopt;
}

/// Whether the conditions hold at `vals`. A uniform condition not known (it reads memory) counts as taken:
/// all threads take it together, and the race is there whenever they do; so does a soft one (the access may
/// run).
Taken taken(const std::vector<Guard> &guards, const Values &vals) {
    for (auto &g : guards) {
        auto c = evalInt(g.cond, vals);
        if (!c && g.soft) c = evalFloatCond(g.cond, vals);
        if (!c && g.thread && !g.soft) return Taken::Unknown;
        if (c && (*c != 0) == g.negate) return Taken::No;
    }
    return Taken::Yes;
}

/// The row-major element of `indices` in `b` at `vals`: -1 outside the buffer, nullopt when not known.
std::optional<int64_t> element(const BufferNode &b, const std::vector<Expr> &indices, const Values &vals) {
    if (indices.size() != b.shape.size()) return std::nullopt;
    int64_t e = 0;
    bool inside = true;
    for (size_t d = 0; d < indices.size(); ++d) {
        auto n = constInt(b.shape[d]);
        auto x = evalInt(indices[d], vals);
        if (!n || !x) return std::nullopt;
        inside &= *x >= 0 && *x < *n;
        if (inside) e = e * *n + *x;
    }
    return inside ? e : -1;
}

std::string elementName(const BufferNode &b, int64_t e) {
    std::vector<int64_t> ix(b.shape.size());
    for (size_t d = b.shape.size(); d-- > 0;) {
        int64_t n = *constInt(b.shape[d]);
        ix[d] = e % n;
        e /= n;
    }
    std::string s = "'" + b.name + "[";
    for (size_t d = 0; d < ix.size(); ++d) s += (d ? ", " : "") + std::to_string(ix[d]);
    return s + "]'";
}

/// Whether `s` holds a barrier or a wait (a named barrier that threads of both branches arrive at orders them).
bool hasBarrier(const IfThenElse &s) {
    struct Find : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const Call &op) override {
            const lib::Info *f = lib::find(op.name);
            found |= (f && (f->effects & lib::kBarrier)) || op.name.rfind("extern:", 0) == 0;
            IRVisitor::visit(op);
        }
    } f;
    f.visit(s.then);
    f.visit(s.otherwise);
    return f.found;
}

/// Which thread touches an element, and where.
struct Hit {
    int64_t thread;
    const Access *access;
};
/// An element of a buffer: the buffer's ordinal (Checker::ordinal: the order the program first touches buffers
/// in, so that the first race reported is the same from run to run, not the one at the lowest address) and
/// the element's offset.
using ElementKey = std::pair<int64_t, int64_t>;

class Checker {
  public:
    Checker(const Kernel &k, const std::function<bool(const Expr &)> &uniform, DiagnosticEngine &diag)
        : k_(k), uniform_(uniform), diag_(diag) {}

    void walk(const Stmt &s, Context &ctx) {
        if (!s) return;
        if (auto q = as<Seq>(s)) {
            for (auto &c : q->stmts) walk(c, ctx);
        } else if (auto r = as<WarpRoles>(s)) {
            walk(r->consumer, ctx);
        } else if (auto f = as<For>(s)) {
            if (f->forKind == ForKind::Parallel || f->forKind == ForKind::Vectorized) return; // checkNest's
            if (!uniform_(f->min) || !uniform_(f->extent)) return; // iterations per thread: not enumerated
            ctx.loops.push_back(f);
            walk(f->body, ctx);
            ctx.loops.pop_back();
        } else if (auto w = as<While>(s)) {
            if (uniform_(w->cond)) walk(w->body, ctx);
        } else if (auto i = as<IfThenElse>(s)) {
            bool thread = !uniform_(i->cond);
            if (thread) checkBranches(*i, ctx);
            for (bool negate : {false, true}) {
                ctx.guards.push_back({i->cond, negate, thread});
                walk(negate ? i->otherwise : i->then, ctx);
                ctx.guards.pop_back();
            }
        } else if (auto st = as<Store>(s); st && shared(st->buffer)) {
            checkStore(*st, ctx);
        }
    }

  private:
    const Kernel &k_;
    const std::function<bool(const Expr &)> &uniform_;
    DiagnosticEngine &diag_;
    std::map<const BufferNode *, int64_t> ordinals_;
    int64_t ordinal(const BufferNode *b) { return ordinals_.try_emplace(b, (int64_t)ordinals_.size()).first->second; }

    /// The block indices' values to enumerate for an access under `guards` (a race may show in some blocks
    /// only): every block of a grid of at most kAllBlocks; else per index its first and last kEdgeBlocks values
    /// and c - 1, c, c + 1 for each integer constant c of the guards (`if by == 37:`). A dimension whose
    /// extent is not a constant tries its first kEdgeBlocks.
    std::vector<Range> blocks(const std::vector<Guard> &guards) const {
        std::vector<Range> out;
        int64_t total = 1;
        for (size_t d = 0; d < k_.blockIdx.size(); ++d)
            if (k_.blockIdx[d]) {
                auto n = constInt(k_.grid[d]);
                out.push_back({k_.blockIdx[d].get(), 0, n && *n > 0 ? *n : 1});
                total = n ? total * std::max<int64_t>(*n, 1) : kAllBlocks + 1;
                if (!n) out.back().n = kEdgeBlocks;
                total = std::min(total, kAllBlocks + 1);
            }
        if (total <= kAllBlocks) return out;
        struct Constants : IRVisitor {
            using IRVisitor::visit;
            std::set<int64_t> c;
            void visit(const IntImm &op) override { c.insert(op.value); }
        } consts;
        for (const Guard &g : guards) consts.visit(g.cond);
        for (Range &r : out) {
            if (r.n <= 2 * kEdgeBlocks) continue;
            std::set<int64_t> v;
            for (int64_t i = 0; i < kEdgeBlocks; ++i) v.insert(i), v.insert(r.n - 1 - i);
            for (int64_t c : consts.c)
                for (int64_t x : {c - 1, c, c + 1})
                    if (x >= 0 && x < r.n) v.insert(x);
            r.list.assign(v.begin(), v.end());
        }
        return out;
    }

    /// Whether `value` differs between threads `a` and `b` at `vals`: it is not the same expression in both once
    /// the thread index and the loops' and blocks' values are put in (threads storing one value to one element,
    /// as TileKernels' topk_gate stores a reducer's result from every thread, are not racing; where equal
    /// expressions still give different values, say a fragment's element, the race is not provable).
    bool differ(const Expr &value, const Values &vals, int64_t a, int64_t b) const {
        if (uniform_(value)) return false;
        const VarNode *tx = k_.threadIdx.get();
        auto at = [&](int64_t t) {
            VarMap m{{tx, intImm(t, tx->dtype)}};
            for (auto &[v, x] : vals)
                if (v != tx) m[v] = intImm(x, v->dtype);
            return simplify(substitute(value, m));
        };
        return !provablyEqual(at(a), at(b));
    }

    /// Runs `fn(thread)` for every thread that takes `guards` at `vals`; false when that is not known, the
    /// enumeration is too long, or `fn` says stop.
    bool eachThread(const std::vector<Guard> &guards, Values &vals, int64_t &budget, const std::function<bool(int64_t)> &fn) {
        const VarNode *tx = k_.threadIdx.get();
        for (int64_t t = 0; t < k_.threads; ++t) {
            vals[tx] = t;
            Taken g = taken(guards, vals);
            if (g == Taken::Unknown || --budget < 0) return false;
            if (g == Taken::Yes && !fn(t)) return false;
        }
        return true;
    }

    void checkStore(const Store &st, const Context &ctx) {
        if (!k_.threadIdx) return;
        Values vals;
        int64_t budget = kMaxPoints;
        SharedLoads reads(uniform_);
        for (auto &i : st.indices) reads.visit(i);
        reads.visit(st.value);
        (void)eachPoint(blocks(ctx.guards), ctx.loops, vals, [&] {
            std::map<int64_t, std::pair<int64_t, int64_t>> storers; // element -> two of the threads storing it
            bool known = eachThread(ctx.guards, vals, budget, [&](int64_t t) {
                auto e = element(*st.buffer, st.indices, vals);
                if (e && *e >= 0) {
                    auto &s = storers.try_emplace(*e, t, -1).first->second;
                    if (s.first != t && s.second < 0) s.second = t;
                }
                return e.has_value();
            });
            if (!known) return false;
            for (const LoadSite &site : reads.loads) {
                const Load *l = site.load;
                if (l->buffer != st.buffer) continue;
                bool raced = false;
                known = eachThread(ctx.guards, vals, budget, [&](int64_t t) {
                    if (taken(site.guards, vals) != Taken::Yes) return true; // this thread does not read there
                    auto e = element(*st.buffer, l->indices, vals);
                    auto it = e ? storers.find(*e) : storers.end();
                    int64_t other = it == storers.end() ? -1 : it->second.first != t ? it->second.first : it->second.second;
                    if (other >= 0) {
                        diag_.error(st.loc, "thread " + std::to_string(other) + " stores " + elementName(*st.buffer, *e) +
                                                " in this statement while thread " + std::to_string(t) +
                                                " reads it, in no order between the threads (store from one thread, give "
                                                "each thread its own element, or use T.atomic_add)");
                        diag_.note(l->loc, "thread " + std::to_string(t) + " reads " + elementName(*st.buffer, *e) + " here");
                        raced = true;
                    }
                    return e.has_value() && !raced;
                });
                if (raced || !known) return false;
            }
            for (auto &[e, s] : storers)
                if (s.second >= 0 && differ(st.value, vals, s.first, s.second)) {
                    diag_.error(st.loc, "threads " + std::to_string(s.first) + " and " + std::to_string(s.second) +
                                            " both store " + elementName(*st.buffer, e) +
                                            " in this statement, in no order between them (store from one thread, or "
                                            "give each thread its own element)");
                    diag_.note(st.indices.empty() || !st.indices[0]->loc.valid() ? st.loc : st.indices[0]->loc,
                               "the index takes the same value in both threads here");
                    return false;
                }
            return true;
        });
    }

    /// The plain shared-memory accesses in `s` (with the control around them inside `s`).
    void collect(const Stmt &s, Context &ctx, std::vector<Access> &out) {
        if (!s) return;
        auto loads = [&](const Expr &e, const std::vector<Guard> &outer = {}) {
            SharedLoads l(uniform_);
            l.guards = outer;
            l.visit(e);
            for (const LoadSite &x : l.loads) {
                Context c = ctx;
                c.guards.insert(c.guards.end(), x.guards.begin(), x.guards.end());
                out.push_back({x.load->buffer.get(), &x.load->indices, false, x.load->loc, c});
            }
        };
        if (auto q = as<Seq>(s)) {
            for (auto &c : q->stmts) collect(c, ctx, out);
        } else if (auto f = as<For>(s); f && f->forKind != ForKind::Parallel && f->forKind != ForKind::Vectorized) {
            ctx.loops.push_back(f);
            collect(f->body, ctx, out);
            ctx.loops.pop_back();
        } else if (auto i = as<IfThenElse>(s)) {
            loads(i->cond);
            for (bool negate : {false, true}) {
                ctx.guards.push_back({i->cond, negate, !uniform_(i->cond)});
                collect(negate ? i->otherwise : i->then, ctx, out);
                ctx.guards.pop_back();
            }
        } else if (auto st = as<Store>(s)) {
            for (auto &x : st->indices) loads(x);
            loads(st->value, inBounds(*st, uniform_));
            if (shared(st->buffer)) out.push_back({st->buffer.get(), &st->indices, true, st->loc, ctx});
        } else if (auto e = as<Evaluate>(s)) {
            loads(e->value);
        }
    }

    /// Where each side's threads touch shared elements at `vals` (the loops around the if); false when not known.
    bool touched(const std::vector<Access> &side, const Context &outer, Values &vals, int64_t &budget,
                 std::map<ElementKey, Hit> &stores, std::map<ElementKey, Hit> &reads) {
        for (const Access &a : side) {
            std::vector<Guard> guards = outer.guards;
            guards.insert(guards.end(), a.ctx.guards.begin(), a.ctx.guards.end());
            bool known = eachPoint({}, a.ctx.loops, vals, [&] {
                return eachThread(guards, vals, budget, [&](int64_t t) {
                    auto e = element(*a.buffer, *a.indices, vals);
                    if (e && *e >= 0) (a.store ? stores : reads).try_emplace({ordinal(a.buffer), *e}, Hit{t, &a});
                    return e.has_value();
                });
            });
            if (!known) return false;
        }
        return true;
    }

    /// Threads in one branch of the thread-dependent `i` storing an element that threads in the other branch
    /// read or store: the branches run at once, and no barrier can order them.
    void checkBranches(const IfThenElse &i, const Context &outer) {
        if (!k_.threadIdx || !i.otherwise || hasBarrier(i)) return;
        std::vector<Access> sides[2];
        for (int s = 0; s < 2; ++s) {
            Context ctx{{{i.cond, s == 1, true}}, {}};
            collect(s ? i.otherwise : i.then, ctx, sides[s]);
        }
        Values vals;
        int64_t budget = kMaxPoints;
        std::vector<Guard> guards = outer.guards;
        for (int s = 0; s < 2; ++s)
            for (const Access &a : sides[s]) guards.insert(guards.end(), a.ctx.guards.begin(), a.ctx.guards.end());
        (void)eachPoint(blocks(guards), outer.loops, vals, [&] {
            std::map<ElementKey, Hit> stores[2], reads[2];
            for (int s = 0; s < 2; ++s)
                if (!touched(sides[s], outer, vals, budget, stores[s], reads[s])) return false;
            for (int s = 0; s < 2; ++s)
                for (auto &[key, hit] : stores[s]) {
                    auto r = reads[1 - s].find(key), w = stores[1 - s].find(key);
                    if (r == reads[1 - s].end() && w == stores[1 - s].end()) continue;
                    const Hit &o = r != reads[1 - s].end() ? r->second : w->second; // a read first
                    std::string what = elementName(*hit.access->buffer, key.second);
                    diag_.error(hit.access->loc, "thread " + std::to_string(hit.thread) + " stores " + what +
                                                     " here, in one branch of a condition on the thread index, and thread " +
                                                     std::to_string(o.thread) + (o.access->store ? " stores" : " reads") +
                                                     " it in the other branch: the branches run at once, and no barrier "
                                                     "can order them");
                    diag_.note(o.access->loc, "thread " + std::to_string(o.thread) + (o.access->store ? " stores " : " reads ") +
                                                  what + " here");
                    diag_.note(i.loc, "the condition depends on the thread index here");
                    return false;
                }
            return true;
        });
    }
};

} // namespace

void checkThreadRaces(const Kernel &k, const std::function<bool(const Expr &)> &uniform, DiagnosticEngine &diag) {
    Checker c(k, uniform, diag);
    Context ctx;
    c.walk(k.body, ctx);
}

} // namespace tilec::passes
