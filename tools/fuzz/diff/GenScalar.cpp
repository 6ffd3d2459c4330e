/// \file
/// Drawing the scalar block of the front-end oracle, and its smaller variants (Scalar.h).
#include "Gen.h"
#include "Scalar.h"

#include <functional>

namespace tilec::difffuzz {

namespace {

SExprP mk(SExpr::Kind k, bool isInt, std::vector<SExprP> kids = {}) {
    auto e = std::make_shared<SExpr>();
    e->kind = k, e->isInt = isInt, e->kids = std::move(kids);
    return e;
}

SExprP bin(std::string op, SExprP a, SExprP b, int form = 0) {
    bool cmp = op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=" || op == "and" || op == "or";
    const bool isInt = !cmp && a->isInt;
    auto e = mk(SExpr::Bin, isInt, {std::move(a), std::move(b)});
    e->op = std::move(op), e->isBool = cmp, e->form = form;
    return e;
}

struct ScalarGen {
    Rng r;
    const ScalarContext &c;
    ScalarBlock b;
    std::vector<std::pair<int, bool>> temps; ///< visible names t<id> and whether each is int
    int loops = 0;                           ///< loop variables q0.. in scope
    int helpers = 0;
    bool inHelper = false;

    SExprP constant(bool isInt) {
        auto e = mk(SExpr::Const, isInt);
        e->c = isInt ? (double)r.in(-9, 9) : (double)r.in(-8, 8) / 4;
        e->form = (int)r.in(0, 2);
        return e;
    }
    SExprP var(bool isInt, int other = -1) {
        std::vector<int> v;
        for (int i = 0; i < (int)b.varInt.size(); ++i)
            if (b.varInt[i] == isInt && i != other) v.push_back(i);
        if (v.empty()) return nullptr;
        auto e = mk(SExpr::Var, isInt);
        e->id = r.pick(v), e->form = (int)r.in(0, 1);
        return e;
    }
    SExprP temp(bool isInt) {
        std::vector<int> v;
        for (auto &[id, i] : temps)
            if (i == isInt) v.push_back(id);
        if (v.empty()) return nullptr;
        auto e = mk(SExpr::Temp, isInt);
        e->id = r.pick(v);
        return e;
    }
    SExprP index() {
        auto e = mk(SExpr::Index, true);
        e->id = loops > 0 && r.coin(0.5) ? (int)r.in(0, loops - 1) : -(int)r.in(1, 3);
        return e;
    }
    SExprP leaf(bool isInt) {
        for (int tries = 0; tries < 4; ++tries) {
            SExprP e;
            switch (r.in(0, isInt ? 4 : 5)) {
            case 0: e = constant(isInt); break;
            case 1: e = var(isInt); break;
            case 2: e = temp(isInt); break;
            case 3: e = isInt ? index() : mk(SExpr::Cast, false, {index()}); break;
            case 4: e = isInt ? var(isInt) : mk(SExpr::Input, false); break;
            default: e = var(isInt); break;
            }
            if (e && e->kind == SExpr::Input) e->c = (double)r.in(0, 7), e->kids = {index()};
            if (e) return e;
        }
        return constant(isInt);
    }
    SExprP cond(int depth) {
        if (depth > 0 && r.coin(0.25)) return bin(r.coin(0.5) ? "and" : "or", cond(depth - 1), cond(depth - 1));
        static const std::vector<std::string> cmp{"<", "<=", ">", ">=", "==", "!="};
        if (depth > 0 && r.coin(0.1)) {
            auto e = mk(SExpr::Not, false, {cond(depth - 1)});
            e->isBool = true;
            return e;
        }
        if (r.coin(0.15)) { // a < b <= c: Python's chained comparison, b evaluated once
            bool isInt = r.coin(0.5);
            auto e = mk(SExpr::Chain, false, {expr(isInt, 1), expr(isInt, 1), expr(isInt, 1)});
            e->op = r.pick(cmp) + " " + r.pick(cmp), e->isBool = true;
            return e;
        }
        bool isInt = r.coin(0.5);
        return bin(r.pick(cmp), expr(isInt, 1), r.coin(0.5) ? constant(isInt) : expr(isInt, 1));
    }
    SExprP expr(bool isInt, int depth) {
        if (depth <= 0 || r.coin(0.3)) return leaf(isInt);
        switch (r.in(0, 7)) {
        case 0: return bin("+", expr(isInt, depth - 1), expr(isInt, depth - 1), (int)r.in(0, 1));
        case 1: return bin("-", expr(isInt, depth - 1), expr(isInt, depth - 1));
        case 2: {
            auto k = mk(SExpr::Const, isInt);
            k->c = isInt ? (double)r.in(-3, 3) : r.pick(std::vector<double>{0.5, 2.0, -1.0, 0.25, 3.0});
            return bin("*", expr(isInt, depth - 1), k);
        }
        case 3: return bin(r.coin(0.5) ? "max" : "min", expr(isInt, depth - 1), expr(isInt, depth - 1));
        case 4: {
            auto s = mk(SExpr::Select, isInt, {cond(0), expr(isInt, depth - 1), expr(isInt, depth - 1)});
            s->form = (int)r.in(0, 1);
            return s;
        }
        case 5:
            if (isInt) {
                static const std::vector<std::string> ops{"//", "%", "//", "%", "&", "|", "^", "<<", ">>"};
                const std::string &op = r.pick(ops);
                auto k = mk(SExpr::Const, true);
                k->c = op == "<<" || op == ">>" ? (double)r.in(0, 3) : op.size() == 1 && op != "%" ? (double)r.in(-8, 15) : (double)r.in(2, 5);
                return bin(op, expr(true, depth - 1), k);
            }
            return mk(SExpr::Abs, false, {expr(false, depth - 1)});
        case 6: return isInt ? expr(true, depth - 1) : mk(SExpr::Cast, false, {expr(true, depth - 1)});
        default: return leaf(isInt);
        }
    }

    SStmt assign() {
        SStmt s;
        s.kind = SStmt::Assign;
        s.id = (int)r.in(0, (int64_t)b.varInt.size() - 1);
        bool isInt = b.varInt[s.id];
        int64_t k = r.in(0, 9);
        if (k < 3) s.e = var(isInt, s.id);                // x = y: a copy, never an alias
        if (!s.e && k < 5) {                              // x op= e
            auto self = mk(SExpr::Var, isInt);
            self->id = s.id;
            s.e = bin(r.coin(0.7) ? "+" : "-", self, expr(isInt, 1));
        }
        if (!s.e) s.e = expr(isInt, 2);
        // 0: x = e, 1: x[0] = e, 2: augmented where e is x + ... / x - ...; a local (and a helper's parameter)
        // is only ever stored through [0].
        s.form = (int)r.in(0, 2);
        if (s.form == 0 && (b.varAlloc[s.id] == 2 || inHelper)) s.form = 1;
        return s;
    }
    SStmt let() {
        SStmt s;
        s.kind = SStmt::Let;
        bool isInt = r.coin(0.5);
        if (SExprP t = r.coin(0.4) ? temp(isInt) : nullptr) s.id = t->id;
        else s.id = b.temps++;
        s.e = expr(isInt, 2);
        bool known = false;
        for (auto &[id, i] : temps) known |= id == s.id;
        if (!known) temps.push_back({s.id, isInt});
        s.form = (int)r.in(0, 1); // 1: joined with the next name's assignment as a tuple where it can be
        return s;
    }
    std::vector<SStmt> block(int depth, int64_t n) {
        std::vector<SStmt> v;
        for (int64_t i = 0; i < n; ++i) v.push_back(stmt(depth));
        return v;
    }
    /// A nested body: the names it makes are gone after it (a name assigned in one branch, or in a loop's
    /// body from its variable, cannot be used after it).
    std::vector<SStmt> scoped(int depth, int64_t n) {
        auto saved = temps;
        auto v = block(depth, n);
        temps = saved;
        return v;
    }
    SStmt stmt(int depth) {
        int64_t k = r.in(0, 99);
        SStmt s;
        if (k < 12 && !inHelper) { // two names swapped as one tuple
            std::vector<std::pair<int, bool>> v = temps;
            for (size_t i = 0; i < v.size(); ++i)
                for (size_t j = i + 1; j < v.size(); ++j)
                    if (v[i].second == v[j].second) {
                        s.kind = SStmt::Swap, s.id = v[i].first, s.id2 = v[j].first;
                        return s;
                    }
        }
        if (k < 45 || depth >= 2) return r.coin(0.6) ? assign() : let();
        if (k < 65) {
            s.kind = SStmt::If;
            s.form = r.coin(0.2); // 1: a condition over Python constants, decided while tracing
            if (s.form) s.e = bin(r.coin(0.5) ? "<" : "==", constant(true), constant(true));
            else s.e = cond(1);
            s.body = scoped(depth + 1, r.in(1, 3));
            if (r.coin(0.5)) s.orelse = scoped(depth + 1, r.in(1, 2));
            return s;
        }
        if (k < 85) {
            s.kind = SStmt::Loop;
            s.n = r.in(0, 3);
            s.form = (int)r.in(0, 2);
            s.start = r.coin(0.3) ? r.in(1, 3) : 0;
            s.reverse = s.form != 2 && r.coin(0.25);
            s.id = loops++;
            s.body = scoped(depth + 1, r.in(1, 3));
            --loops;
            return s;
        }
        if (inHelper) return assign();
        s.kind = SStmt::Call;
        s.id = helpers++;
        s.form = (int)r.in(0, 1); // 0: @T.macro, 1: a plain Python function
        s.n = loops;              // the loop variables it is given
        auto saved = temps;
        temps.clear();
        inHelper = true;
        s.body = block(depth + 1, r.in(1, 3));
        inHelper = false;
        temps = saved;
        return s;
    }
};

void shrinkList(const std::vector<SStmt> &v, const std::function<void(std::vector<SStmt>)> &emit) {
    for (size_t i = 0; i < v.size(); ++i) {
        auto w = v;
        w.erase(w.begin() + (long)i);
        emit(w);
        if (!v[i].body.empty() && v[i].kind != SStmt::Call) {
            auto f = v;
            f.erase(f.begin() + (long)i);
            f.insert(f.begin() + (long)i, v[i].body.begin(), v[i].body.end());
            emit(f);
        }
        for (std::vector<SStmt> SStmt::*sub : {&SStmt::body, &SStmt::orelse})
            shrinkList(v[i].*sub, [&](std::vector<SStmt> inner) {
                auto g = v;
                g[i].*sub = std::move(inner);
                emit(g);
            });
    }
}

} // namespace

ScalarBlock generateScalars(uint64_t seed, const ScalarContext &c) {
    ScalarGen g{Rng{std::mt19937_64(seed * 0x2545f4914f6cdd1dull + 7)}, c, {}, {}};
    for (int64_t i = g.r.in(1, 4); i > 0; --i) {
        g.b.varInt.push_back(g.r.coin(0.4));
        g.b.varAlloc.push_back((int)g.r.in(0, 2));
        g.b.init.push_back(g.b.varInt.back() ? (double)g.r.in(-5, 5) : (double)g.r.in(-8, 8) / 4);
    }
    g.b.stmts = g.block(0, g.r.in(2, 10));
    return g.b;
}

std::vector<ScalarBlock> shrinkScalars(const ScalarBlock &b) {
    std::vector<ScalarBlock> out;
    shrinkList(b.stmts, [&](std::vector<SStmt> v) {
        ScalarBlock s = b;
        s.stmts = std::move(v);
        out.push_back(std::move(s));
    });
    return out;
}

bool decorateNarrow(ScalarBlock &b, uint64_t seed) {
    Rng r{std::mt19937_64(seed * 0x9e3779b97f4a7c15ull + 0x16b1f)};
    if (!r.coin(0.3)) return false;
    // Python floats that neither float16 nor bfloat16 holds: the scales of attention and chunked kernels.
    static const std::vector<double> cs{0.1, 0.3, 1.0 / 3, 0.08838834764831845, 1.4426950408889634, 0.7071067811865476};
    static const std::vector<std::string> ops{"*", "*", "+", "-"};
    bool any = false;
    std::function<void(std::vector<SStmt> &)> walk = [&](std::vector<SStmt> &v) {
        for (auto &s : v) {
            if (s.kind == SStmt::Assign && !b.varInt[(size_t)s.id] && r.coin(0.5)) {
                auto e = mk(SExpr::Narrow, false, {s.e});
                e->c = r.pick(cs), e->op = r.pick(ops), e->id = (int)r.in(0, 1), e->form = (int)r.in(0, 1);
                s.e = e;
                any = true;
            }
            walk(s.body), walk(s.orelse);
        }
    };
    walk(b.stmts);
    return any;
}

} // namespace tilec::difffuzz
