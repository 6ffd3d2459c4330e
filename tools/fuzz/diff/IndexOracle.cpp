/// \file
/// The index-width oracle (IndexOracle.h): global accesses of a lowered kernel evaluated exactly and as typed.
#include "IndexOracle.h"

#include "tilec/LibraryCalls.h"

#include <limits>
#include <optional>
#include <random>

namespace tilec::difffuzz {

using namespace ir;

namespace {

using I128 = __int128;

std::string str(I128 v) {
    if (v == 0) return "0";
    bool neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    std::string s;
    for (; u; u /= 10) s.insert(s.begin(), char('0' + int(u % 10)));
    return neg ? "-" + s : s;
}

/// `v` as a value of type `t` holds it: two's complement wrap-around to the type's bits (bool: nonzero).
I128 wrap(I128 v, DType t) {
    if (t.isBool()) return v != 0;
    if (!t.isInt()) return v;
    const int b = t.bits();
    const unsigned __int128 m = b >= 128 ? ~(unsigned __int128)0 : (((unsigned __int128)1 << b) - 1);
    unsigned __int128 u = (unsigned __int128)v & m;
    if (t.isSigned() && (u >> (b - 1)) & 1) return (I128)u - ((I128)1 << b);
    return (I128)u;
}

/// A value computed both ways; `known` false where the oracle cannot say (floats, unmodelled calls).
struct Val {
    I128 exact = 0, typed = 0;
    bool known = true;
    bool fromLoad = false; ///< depends on a value read from memory (a gather index)
    bool huge = false;     ///< the exact value left 128 bits
};

/// Where an access sits: the enclosing loops and conditions, outermost first.
struct Frame {
    const For *loop = nullptr;
    Expr cond;
    bool polarity = true;
};

struct Site {
    Buffer buffer;
    std::vector<Expr> indices;
    std::vector<Frame> frames;
    SourceRange loc;
    const Call *transfer = nullptr; ///< a cp.async tile transfer reading from `buffer` at `indices[0]`
    const Call *tma = nullptr;      ///< a TMA tile transfer of `buffer`'s tensor map: `indices` its coordinates
};

/// The TMA tile transfer a call is (load, multicast load, store), if it is one.
std::optional<passes::lib::Fn> tmaFn(const Call &c) {
    using passes::lib::Fn;
    for (Fn f : {Fn::TmaLoadTile, Fn::TmaLoadTileMulticast, Fn::TmaStoreTile})
        if (passes::lib::is(c, f)) return f;
    return std::nullopt;
}

class Collector {
  public:
    std::vector<Site> sites;
    const std::vector<TensorMap> *maps = nullptr; ///< the kernel's tensor maps (TMA transfers name them)
    void stmt(const Stmt &s) {
        if (!s) return;
        switch (s->kind) {
        case NodeKind::Seq:
            for (auto &x : as<Seq>(s)->stmts) stmt(x);
            return;
        case NodeKind::For: {
            auto *f = as<For>(s);
            expr(f->min), expr(f->extent);
            frames_.push_back({f, nullptr, true});
            stmt(f->body);
            frames_.pop_back();
            return;
        }
        case NodeKind::IfThenElse: {
            auto *i = as<IfThenElse>(s);
            expr(i->cond);
            frames_.push_back({nullptr, i->cond, true});
            stmt(i->then);
            frames_.back().polarity = false;
            stmt(i->otherwise);
            frames_.pop_back();
            return;
        }
        case NodeKind::While: {
            auto *w = as<While>(s);
            expr(w->cond);
            frames_.push_back({nullptr, w->cond, true});
            stmt(w->body);
            frames_.pop_back();
            return;
        }
        case NodeKind::Store: {
            auto *st = as<Store>(s);
            for (auto &i : st->indices) expr(i);
            expr(st->value);
            if (st->buffer->scope == Scope::Global) sites.push_back({st->buffer, st->indices, frames_, s->loc});
            return;
        }
        case NodeKind::Evaluate: return evaluate(*as<Evaluate>(s));
        case NodeKind::WarpRoles: stmt(as<WarpRoles>(s)->producer), stmt(as<WarpRoles>(s)->consumer); return;
        case NodeKind::AtomicAdd: {
            auto *a = as<AtomicAdd>(s);
            region(a->dst);
            if (a->src) region(*a->src);
            expr(a->value);
            return;
        }
        case NodeKind::Copy: region(as<Copy>(s)->src), region(as<Copy>(s)->dst); return;
        case NodeKind::Fill: region(as<Fill>(s)->dst), expr(as<Fill>(s)->value); return;
        default: return; // Gemm, Reduce: on tile buffers
        }
    }

  private:
    std::vector<Frame> frames_;

    void evaluate(const Evaluate &e) {
        auto *c = as<Call>(e.value);
        // A TMA transfer: its coordinates (one per dimension of its map, innermost first) are the site's indices.
        if (auto f = c ? tmaFn(*c) : std::nullopt) {
            auto rank = constInt(passes::lib::arg(*c, *f, "rank")), map = constInt(passes::lib::arg(*c, *f, "map"));
            if (rank && map && *map >= 0 && (size_t)*map < maps->size() && *rank <= 5) {
                static const char *coords[] = {"c0", "c1", "c2", "c3", "c4"};
                std::vector<Expr> cs;
                for (int64_t d = 0; d < *rank; ++d) cs.push_back(passes::lib::arg(*c, *f, coords[d]));
                for (auto &a : c->args) expr(a);
                sites.push_back({(*maps)[(size_t)*map].tensor, cs, frames_, e.loc, nullptr, c});
                return;
            }
        }
        if (c && passes::isTileTransfer(*c)) {
            const passes::lib::Fn fn = passes::lib::is(*c, passes::lib::Fn::CopyG2S) ? passes::lib::Fn::CopyG2S
                                                                                     : passes::lib::Fn::CopyG2SWait;
            const Load *src = passes::addressedLoad(passes::lib::arg(*c, fn, "src"));
            if (src && src->buffer->scope == Scope::Global) {
                for (auto &i : src->indices) expr(i);
                sites.push_back({src->buffer, src->indices, frames_, e.loc, c});
                for (auto &a : c->args)
                    if (a != passes::lib::arg(*c, fn, "src")) expr(a);
                return;
            }
        }
        expr(e.value);
    }
    void region(const Region &r) {
        std::vector<Expr> mins;
        for (auto &x : r.ranges) expr(x.min), expr(x.extent), mins.push_back(x.min);
        if (r.buffer && r.buffer->scope == Scope::Global) sites.push_back({r.buffer, mins, frames_, r.loc});
    }
    void expr(const Expr &e) {
        if (!e) return;
        switch (e->kind) {
        case NodeKind::Binary: expr(as<Binary>(e)->a), expr(as<Binary>(e)->b); return;
        case NodeKind::Unary: expr(as<Unary>(e)->a); return;
        case NodeKind::Select: { // C's `c ? t : f` evaluates one side: each under its condition
            auto *s = as<Select>(e);
            expr(s->cond);
            frames_.push_back({nullptr, s->cond, true});
            expr(s->t);
            frames_.back().polarity = false;
            expr(s->f);
            frames_.pop_back();
            return;
        }
        case NodeKind::Cast: expr(as<Cast>(e)->value); return;
        case NodeKind::Call:
            for (auto &a : as<Call>(e)->args) expr(a);
            return;
        case NodeKind::Load: {
            auto *l = as<Load>(e);
            for (auto &i : l->indices) expr(i);
            if (l->buffer->scope == Scope::Global) sites.push_back({l->buffer, l->indices, frames_, e->loc});
            return;
        }
        default: return;
        }
    }
};

/// One point of a site's domain: every variable's value, and the values loads inside indices read.
class Evaluator {
  public:
    std::map<const VarNode *, I128> vars;
    std::map<const Load *, I128> loads;
    std::mt19937_64 *rng = nullptr;

    Val eval(const Expr &e) {
        Val r;
        switch (e->kind) {
        case NodeKind::IntImm: r.exact = r.typed = as<IntImm>(e)->value; return r;
        case NodeKind::Var: {
            auto it = vars.find(as<VarNode>(e));
            if (it == vars.end()) return unknown();
            r.exact = it->second;
            r.typed = wrap(it->second, e->dtype); // a variable of a type too narrow for its range wraps
            return r;
        }
        case NodeKind::Load: return loaded(*as<Load>(e));
        case NodeKind::Cast: {
            Val v = eval(as<Cast>(e)->value);
            if (!(e->dtype.isInt() || e->dtype.isBool()) || !v.known) return unknown();
            v.typed = wrap(v.typed, e->dtype);
            if (e->dtype.isBool()) v.exact = v.exact != 0;
            return v;
        }
        case NodeKind::Unary: {
            auto *u = as<Unary>(e);
            Val a = eval(u->a);
            if (!a.known) return a;
            auto f = [&](I128 x) { return u->op == UnaryOp::Neg ? -x : u->op == UnaryOp::Not ? (I128)(x == 0) : ~x; };
            a.exact = f(a.exact), a.typed = wrap(f(a.typed), e->dtype);
            return a;
        }
        case NodeKind::Select: {
            auto *s = as<Select>(e);
            Val c = eval(s->cond), t = eval(s->t), f = eval(s->f);
            if (!c.known || !t.known || !f.known) return unknown();
            r.exact = c.exact ? t.exact : f.exact;
            r.typed = c.typed ? t.typed : f.typed;
            r.fromLoad = c.fromLoad || t.fromLoad || f.fromLoad;
            r.huge = c.huge || t.huge || f.huge;
            return r;
        }
        case NodeKind::Binary: return binary(*as<Binary>(e));
        default: return unknown(); // floats, calls
        }
    }

  private:
    static Val unknown() {
        Val v;
        v.known = false;
        return v;
    }
    /// A value read from memory: its type's extremes, small values, or a random one (drawn once per point).
    Val loaded(const Load &l) {
        Val r;
        r.fromLoad = true;
        if (!l.dtype.isInt()) return unknown();
        auto it = loads.find(&l);
        if (it == loads.end()) {
            const int b = l.dtype.bits();
            const I128 lo = l.dtype.isSigned() ? -((I128)1 << (b - 1)) : 0;
            const I128 hi = l.dtype.isSigned() ? ((I128)1 << (b - 1)) - 1 : ((I128)1 << b) - 1;
            const I128 pick[] = {lo, hi, 0, 1, hi / 2, (I128)((*rng)() % (uint64_t)std::min<I128>(hi, (I128)1 << 40))};
            it = loads.emplace(&l, pick[(*rng)() % 6]).first;
        }
        r.exact = r.typed = it->second;
        return r;
    }
    static bool op(BinaryOp o, I128 a, I128 b, I128 &out) {
        switch (o) {
        case BinaryOp::Add: return !__builtin_add_overflow(a, b, &out);
        case BinaryOp::Sub: return !__builtin_sub_overflow(a, b, &out);
        case BinaryOp::Mul: return !__builtin_mul_overflow(a, b, &out);
        case BinaryOp::Div: if (!b) return false; out = a / b; return true;
        case BinaryOp::FloorDiv:
            if (!b) return false;
            out = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
            return true;
        case BinaryOp::FloorMod:
            if (!b) return false;
            out = a % b;
            if (out != 0 && ((out < 0) != (b < 0))) out += b;
            return true;
        case BinaryOp::Min: out = std::min(a, b); return true;
        case BinaryOp::Max: out = std::max(a, b); return true;
        case BinaryOp::And: out = a && b; return true;
        case BinaryOp::Or: out = a || b; return true;
        case BinaryOp::BitAnd: out = a & b; return true;
        case BinaryOp::BitOr: out = a | b; return true;
        case BinaryOp::BitXor: out = a ^ b; return true;
        case BinaryOp::Shl:
            if (b < 0 || b > 64) return false;
            return !__builtin_mul_overflow(a, (I128)1 << (int)b, &out);
        case BinaryOp::Shr: if (b < 0 || b > 126) return false; out = a >> (int)b; return true;
        case BinaryOp::EQ: out = a == b; return true;
        case BinaryOp::NE: out = a != b; return true;
        case BinaryOp::LT: out = a < b; return true;
        case BinaryOp::LE: out = a <= b; return true;
        case BinaryOp::GT: out = a > b; return true;
        case BinaryOp::GE: out = a >= b; return true;
        default: return false; // Pow
        }
    }
    Val binary(const Binary &b) {
        Val x = eval(b.a), y = eval(b.b), r;
        if (!x.known || !y.known || !(b.a->dtype.isInt() || b.a->dtype.isBool())) return unknown();
        r.fromLoad = x.fromLoad || y.fromLoad;
        r.huge = x.huge || y.huge;
        if (!op(b.op, x.exact, y.exact, r.exact)) r.huge = true;
        I128 t = 0;
        if (!op(b.op, x.typed, y.typed, t)) return unknown(); // a division by zero where the program divides by zero
        r.typed = wrap(t, b.dtype);
        return r;
    }
};

struct Var_ {
    const VarNode *var;
    Expr lo, extent; ///< lo == nullptr: [0, fixedHi]
    I128 fixedHi = 0;
};

class Oracle {
  public:
    Oracle(const Kernel &k, const std::map<std::string, int64_t> &dyn, uint64_t seed) : k_(k), rng_(seed) {
        ev_.rng = &rng_;
        for (auto &d : k.dynamicSymbols)
            if (dyn.count(d->name)) fixed_[d.get()] = dyn.at(d->name);
    }
    IndexVerdict run() {
        tensorMaps();
        Collector c;
        c.maps = &k_.tensorMaps;
        c.stmt(k_.body);
        for (auto &s : c.sites) {
            ++v_.accesses;
            site(s);
            if (!v_.ok) break;
        }
        return v_;
    }

  private:
    const Kernel &k_;
    std::mt19937_64 rng_;
    Evaluator ev_;
    std::map<const VarNode *, I128> fixed_;
    IndexVerdict v_;

    void fail(const std::string &what) {
        if (!v_.ok) return;
        v_.ok = false;
        std::string at;
        for (auto &[var, val] : ev_.vars)
            if (!fixed_.count(var)) at += (at.empty() ? "" : ", ") + var->name + "=" + str(val);
        v_.detail = what + " (at " + at + ")";
    }

    /// The variables of a site's domain, outermost first.
    std::vector<Var_> domain(const Site &s) {
        std::vector<Var_> d;
        for (int i = 0; i < 3; ++i)
            if (k_.blockIdx[(size_t)i]) d.push_back({k_.blockIdx[(size_t)i].get(), nullptr, k_.grid[(size_t)i]});
        if (k_.threadIdx) d.push_back({k_.threadIdx.get(), nullptr, nullptr, k_.launchedThreads() - 1});
        for (auto &f : s.frames)
            if (f.loop) d.push_back({f.loop->var.get(), f.loop->min, f.loop->extent});
        return d;
    }

    /// Assigns the domain's variables: corner bit i picks variable i's max (else its min); interior draws
    /// uniformly. False when the point lies in no iteration (an empty loop or grid) or cannot be evaluated.
    bool assign(const std::vector<Var_> &d, uint64_t corner, bool interior) {
        ev_.vars = fixed_;
        ev_.loads.clear();
        for (size_t i = 0; i < d.size(); ++i) {
            I128 lo = 0, hi = d[i].fixedHi;
            if (d[i].lo || d[i].extent) {
                Val e = ev_.eval(d[i].extent);
                if (!e.known || e.fromLoad) return false;
                if (d[i].lo) {
                    Val l = ev_.eval(d[i].lo);
                    if (!l.known || l.fromLoad) return false;
                    lo = l.exact;
                }
                hi = lo + e.exact - 1;
            }
            if (hi < lo) return false;
            I128 v = ((corner >> (i % 64)) & 1) ? hi : lo;
            if (interior) v = lo + (I128)(rng_() % (uint64_t)std::min<I128>(hi - lo + 1, (I128)1 << 62));
            ev_.vars[d[i].var] = v;
        }
        return true;
    }

    void site(const Site &s) {
        auto d = domain(s);
        const size_t n = d.size();
        const bool all = n <= 10;
        const uint64_t corners = all ? (uint64_t)1 << n : 256;
        for (uint64_t c = 0; c < corners + 24 && v_.ok; ++c) {
            bool interior = c >= corners;
            uint64_t bits = all ? c : rng_();
            if (!assign(d, bits, interior)) continue;
            point(s);
        }
    }

    /// Whether the site runs at this point: 1 surely, 0 not, -1 unknown. A condition computed differently in
    /// the emitted types than exactly is a failure.
    int runs(const Site &s) {
        int r = 1;
        for (auto &f : s.frames) {
            if (f.loop) continue;
            Val c = ev_.eval(f.cond);
            if (!c.known || c.fromLoad) {
                r = -1;
                continue;
            }
            if ((c.exact != 0) != (c.typed != 0) || c.huge) {
                fail("a condition over index arithmetic is " + str(c.typed) + " in the emitted types, exactly " + str(c.exact));
                return 0;
            }
            if ((c.typed != 0) != f.polarity) return 0;
        }
        return r;
    }

    /// The elements an index of `b` may reach: dimension `dim`'s extent, or (flat) its storage's: the element
    /// count, or a T.StridedTensor's span (its placement's output shape, Kernel::tensorLayouts).
    I128 elements(const Buffer &b, size_t dim, bool flat) {
        const std::vector<Expr> *shape = &b->shape;
        if (flat)
            for (auto &l : k_.tensorLayouts)
                if (l.tensor == b) shape = &l.shape;
        I128 n = 1;
        for (size_t i = flat ? 0 : dim; i < (flat ? shape->size() : dim + 1); ++i) {
            Val v = ev_.eval((*shape)[i]);
            if (!v.known) return -1;
            n *= v.exact;
        }
        return n;
    }

    std::string where(const Site &s) {
        return s.buffer->name + " at " + std::to_string(s.loc.line) + ":" + std::to_string(s.loc.col);
    }

    /// One index (or transfer argument) computed exactly and as typed: the same value, or a failure.
    bool same(const Site &s, const Val &v, const char *what) {
        if (!v.known) return false;
        if (v.huge || v.exact != v.typed) {
            fail(std::string("index width: ") + what + " of " + where(s) + " is " + str(v.typed) +
                 " in the emitted types, exactly " + (v.huge ? "past 2^127" : str(v.exact)));
            return false;
        }
        return true;
    }

    void point(const Site &s) {
        int r = runs(s);
        if (r == 0) return;
        ++v_.points;
        const bool flat = s.indices.size() == 1;
        bool fromLoad = false;
        std::vector<I128> idx;
        for (size_t i = 0; i < s.indices.size(); ++i) {
            Val v = ev_.eval(s.indices[i]);
            if (!same(s, v, s.tma ? "the TMA coordinate" : "the index")) return;
            fromLoad |= v.fromLoad;
            idx.push_back(v.exact);
        }
        if (r < 0 || fromLoad) return; // may not run, or an index the data chooses
        if (s.transfer) return transfer(s, idx[0]);
        if (s.tma) return tmaCoordinates(s, idx);
        for (size_t i = 0; i < idx.size(); ++i) {
            I128 n = elements(s.buffer, i, flat);
            if (n >= 0 && (idx[i] < 0 || idx[i] >= n))
                return fail("index out of bounds: " + where(s) + " index " + str(idx[i]) + " of " + str(n));
        }
    }

    /// A TMA transfer's coordinates: cp.async.bulk.tensor takes them as 32-bit signed integers (PTX ISA), so
    /// each must fit one exactly (a box partly or wholly outside the tensor is legal: loads fill it with zeros,
    /// stores leave those elements alone).
    void tmaCoordinates(const Site &s, const std::vector<I128> &c) {
        for (size_t d = 0; d < c.size(); ++d)
            if (c[d] < std::numeric_limits<int32_t>::min() || c[d] > std::numeric_limits<int32_t>::max())
                return fail("TMA coordinate: c" + std::to_string(d) + " of a tensor-map transfer of " + where(s) + " is " +
                            str(c[d]) + ", which no 32-bit signed coordinate holds");
    }

    /// The tensor maps the launcher encodes (cuTensorMapEncodeTiled's rules): at most 5 dimensions, each of
    /// 1..2^32 elements (0: an empty tensor, encoded otherwise), byte strides below 2^40 and, where the shape is
    /// static, multiples of 16 (a run-time stride the launcher checks, falling back without TMA), boxes of
    /// 1..256 elements per dimension.
    void tensorMaps() {
        ev_.vars = fixed_;
        for (size_t m = 0; m < k_.tensorMaps.size() && v_.ok; ++m) {
            const TensorMap &tm = k_.tensorMaps[m];
            const Buffer &b = tm.tensor;
            const std::string what = "tensor map " + std::to_string(m) + " of " + b->name;
            if (b->shape.size() > 5 || tm.box.size() != b->shape.size())
                return fail(what + ": " + std::to_string(b->shape.size()) + " dimensions, a box of " + std::to_string(tm.box.size()));
            I128 stride = b->dtype.bytes();
            bool isStatic = true;
            for (size_t i = b->shape.size(); i-- > 0;) {
                const size_t d = b->shape.size() - 1 - i; // the map's dimension, innermost first
                Val n = ev_.eval(b->shape[i]);
                if (!n.known) return;
                if (n.exact == 0) return; // an empty tensor
                if (n.exact < 0 || n.exact > ((I128)1 << 32))
                    return fail(what + ": dimension " + std::to_string(d) + " of " + str(n.exact) + " elements (at most 2^32)");
                if (tm.box[d] < 1 || tm.box[d] > 256)
                    return fail(what + ": a box of " + std::to_string(tm.box[d]) + " in dimension " + std::to_string(d));
                if (d > 0 && (stride >= ((I128)1 << 40) || (isStatic && stride % TensorMap::kAlignment)))
                    return fail(what + ": the stride of dimension " + std::to_string(d) + " is " + str(stride) + " bytes");
                stride *= n.exact;
                isStatic &= constInt(b->shape[i]).has_value(); // the next dimension's stride is static so far
            }
        }
    }

    /// A cp.async tile transfer from global memory: its arguments computed right, every row it reads inside.
    void transfer(const Site &s, I128 base) {
        using passes::lib::Fn;
        const Fn fn = passes::lib::is(*s.transfer, Fn::CopyG2S) ? Fn::CopyG2S : Fn::CopyG2SWait;
        auto arg = [&](const char *name, I128 &out) {
            Val v = ev_.eval(passes::lib::arg(*s.transfer, fn, name));
            if (!same(s, v, name)) return false;
            out = v.exact;
            return true;
        };
        I128 rows, cols, ldg, vr, vc;
        if (!arg("rows", rows) || !arg("cols", cols) || !arg("ldg", ldg) || !arg("validRows", vr) || !arg("validCols", vc)) return;
        constexpr I128 kIntMax = std::numeric_limits<int32_t>::max();
        if (vr > kIntMax || vc > kIntMax)
            return fail("index width: a tile transfer of " + where(s) + " passes " + str(std::max(vr, vc)) + " valid rows/columns to an int");
        vr = std::min(vr, rows), vc = std::min(vc, cols);
        if (vr <= 0 || vc <= 0) return;
        const I128 n = elements(s.buffer, 0, true), last = base + (vr - 1) * ldg + vc - 1;
        if (n >= 0 && (base < 0 || last >= n))
            fail("index out of bounds: a tile transfer of " + where(s) + " reads " + str(base) + ".." + str(last) + " of " + str(n));
    }
};

} // namespace

IndexVerdict checkIndexWidth(const Kernel &k, const std::map<std::string, int64_t> &dyn, uint64_t seed) {
    return Oracle(k, dyn, seed).run();
}

} // namespace tilec::difffuzz
