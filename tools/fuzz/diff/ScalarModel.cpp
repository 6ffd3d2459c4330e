/// \file
/// The scalar block of the front-end oracle: its text in the surface forms it draws, and the generator's own
/// run of it, with Python's meaning (Scalar.h).
#include "Scalar.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace tilec::difffuzz {

namespace {

std::string num(int64_t v) { return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v); }

/// A Python float literal of v (quarters and the like print exactly).
std::string flt(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return v < 0 ? "(" + s + ")" : s;
}

const char *dtypeOf(bool isInt) { return isInt ? "\"int32\"" : "\"float32\""; }

struct Printer {
    const ScalarBlock &b;
    const ScalarContext &c;
    std::string &defs;
    bool inHelper = false, fadd = false;

    std::string constant(const SExpr &e) {
        if (e.isInt) {
            auto v = (int64_t)e.c;
            // Python's floor division and modulo, folded while tracing: (3v + 2) // 3 == v, (7v - 3) % 7 == 4.
            if (e.form == 1) return "(" + num(3 * v + 2) + " // 3)";
            if (e.form == 2) return "(" + num(7 * v - 3) + " % 7 + " + num(v - 4) + ")";
            return num(v);
        }
        if (e.form == 1) return "(" + flt(2 * e.c) + " * 0.5)";
        if (e.form == 2) return "(" + flt(e.c + 1) + " - 1.0)";
        return flt(e.c);
    }
    std::string var(int id, int form) const {
        std::string x = "x" + std::to_string(id);
        return form == 0 && b.varAlloc[id] != 2 ? x : x + "[0]";
    }
    std::string index(int id) const {
        if (id == -1) return "bx";
        if (id == -2) return "by";
        if (id == -3) return "tx";
        return "q" + std::to_string(id);
    }
    std::string expr(const SExpr &e) {
        auto k = [&](size_t i) { return expr(*e.kids[i]); };
        switch (e.kind) {
        case SExpr::Const: return constant(e);
        case SExpr::Var: return var(e.id, e.form);
        case SExpr::Temp: return "t" + std::to_string(e.id);
        case SExpr::Index: return index(e.id);
        case SExpr::Input: return "A[by, (" + k(0) + " + " + std::to_string((int64_t)e.c) + ") % " + std::to_string(std::max<int64_t>(c.colsA, 1)) + "]";
        case SExpr::Cast: return "T.cast(" + k(0) + ", \"float32\")";
        case SExpr::Abs: return "T.abs(" + k(0) + ")";
        case SExpr::Not: return "(not " + k(0) + ")";
        case SExpr::Chain: {
            auto sp = e.op.find(' ');
            return "(" + k(0) + " " + e.op.substr(0, sp) + " " + k(1) + " " + e.op.substr(sp + 1) + " " + k(2) + ")";
        }
        case SExpr::Narrow: {
            std::string n = "T.cast(" + k(0) + (e.id ? ", \"float16\")" : ", \"bfloat16\")");
            return e.form ? "(" + flt(e.c) + " " + e.op + " " + n + ")" : "(" + n + " " + e.op + " " + flt(e.c) + ")";
        }
        case SExpr::Select:
            if (e.form == 1) return "T.if_then_else(" + k(0) + ", " + k(1) + ", " + k(2) + ")";
            return "(" + k(1) + " if " + k(0) + " else " + k(2) + ")";
        case SExpr::Bin:
            if (e.op == "max" || e.op == "min") return "T." + e.op + "(" + k(0) + ", " + k(1) + ")";
            if (e.op == "+" && e.form == 1) return fadd = true, "fadd(" + k(0) + ", " + k(1) + ")";
            if (e.op == "*" && e.kids[1]->kind == SExpr::Const)
                return "(" + k(0) + " * " + (e.isInt ? num((int64_t)e.kids[1]->c) : flt(e.kids[1]->c)) + ")";
            return "(" + k(0) + " " + e.op + " " + k(1) + ")";
        }
        return "0";
    }
    /// A value bound to a plain name: never a bare kernel variable (`t = x` makes t another name for x, as
    /// TileLang has it; the model's names hold values), so variables read there as x[0].
    std::string value(const SExpr &e) {
        if (e.kind == SExpr::Var) return var(e.id, 1);
        if (e.kind == SExpr::Select && e.form == 0)
            return "(" + value(*e.kids[1]) + " if " + expr(*e.kids[0]) + " else " + value(*e.kids[2]) + ")";
        if (e.kind == SExpr::Select)
            return "T.if_then_else(" + expr(*e.kids[0]) + ", " + value(*e.kids[1]) + ", " + value(*e.kids[2]) + ")";
        return expr(e);
    }
    static bool reads(const SExpr &e, SExpr::Kind kind, int id) {
        if (e.kind == kind && e.id == id) return true;
        for (auto &x : e.kids)
            if (reads(*x, kind, id)) return true;
        return false;
    }

    void line(std::string &out, int ind, const std::string &s) { out += std::string(4 * ind, ' ') + s + "\n"; }
    void stmts(std::string &out, int ind, const std::vector<SStmt> &v) {
        if (v.empty()) line(out, ind, "pass");
        for (size_t i = 0; i < v.size(); ++i) {
            const SStmt &s = v[i];
            // Two names assigned as one tuple, where the second value does not read the first name.
            if (s.kind == SStmt::Let && s.form == 1 && i + 1 < v.size() && v[i + 1].kind == SStmt::Let &&
                v[i + 1].id != s.id && !reads(*v[i + 1].e, SExpr::Temp, s.id)) {
                line(out, ind, "t" + std::to_string(s.id) + ", t" + std::to_string(v[i + 1].id) + " = " + value(*s.e) +
                                   ", " + value(*v[i + 1].e));
                ++i;
                continue;
            }
            stmt(out, ind, s);
        }
    }
    void stmt(std::string &out, int ind, const SStmt &s) {
        switch (s.kind) {
        case SStmt::Assign: {
            const SExpr &e = *s.e;
            bool bare = s.form == 0 && !inHelper && b.varAlloc[s.id] != 2;
            std::string target = var(s.id, bare || (s.form == 2 && !inHelper) ? 0 : 1);
            if (s.form == 2 && e.kind == SExpr::Bin && (e.op == "+" || e.op == "-") && e.kids[0]->kind == SExpr::Var &&
                e.kids[0]->id == s.id)
                return line(out, ind, target + " " + e.op + "= " + expr(*e.kids[1]));
            return line(out, ind, var(s.id, bare ? 0 : 1) + " = " + expr(e));
        }
        case SStmt::Let: return line(out, ind, "t" + std::to_string(s.id) + " = " + value(*s.e));
        case SStmt::Swap: {
            std::string a = "t" + std::to_string(s.id), b = "t" + std::to_string(s.id2);
            return line(out, ind, a + ", " + b + " = " + b + ", " + a);
        }
        case SStmt::If:
            line(out, ind, "if " + expr(*s.e) + ":");
            stmts(out, ind + 1, s.body);
            if (!s.orelse.empty()) line(out, ind, "else:"), stmts(out, ind + 1, s.orelse);
            return;
        case SStmt::Loop: {
            static const char *kinds[] = {"T.serial", "range", "T.unroll"};
            std::string bounds = std::to_string(s.n);
            if (s.reverse) bounds = std::to_string(s.start + s.n - 1) + ", " + std::to_string(s.start - 1) + ", -1";
            else if (s.start) bounds = std::to_string(s.start) + ", " + std::to_string(s.start + s.n);
            line(out, ind, "for q" + std::to_string(s.id) + " in " + kinds[s.form] + "(" + bounds + "):");
            return stmts(out, ind + 1, s.body);
        }
        case SStmt::Call: {
            std::string params;
            for (size_t i = 0; i < b.varInt.size(); ++i) params += "x" + std::to_string(i) + ", ";
            params += "bx, by, tx, A";
            for (int64_t d = 0; d < s.n; ++d) params += ", q" + std::to_string(d);
            std::string name = "h" + std::to_string(s.id), def;
            if (s.form == 0) def += "@T.macro\n";
            def += "def " + name + "(" + params + "):\n";
            bool was = inHelper;
            inHelper = true;
            stmts(def, 1, s.body);
            inHelper = was;
            defs += def + "\n\n";
            return line(out, ind, name + "(" + params + ")");
        }
        }
    }
};

/// x (a float32 value) to the nearest value of `frac` fraction bits, ties to even; the smallest normal
/// exponent minExp and the largest finite value maxv as float16's or bfloat16's (past it: infinity).
double toNarrow(double x, int frac, int minExp, double maxv) {
    if (x == 0 || std::isnan(x) || std::isinf(x)) return x;
    const double step = std::ldexp(1.0, std::max(std::ilogb(x), minExp) - frac);
    const double r = std::nearbyint(x / step) * step;
    return std::fabs(r) > maxv ? std::copysign(INFINITY, x) : r;
}

/// The generator's own run of the block for one thread: Python's meaning, values exact (in double), with a
/// flag for a value float32 or int32 would not hold exactly.
struct Machine {
    const ScalarBlock &b;
    const ScalarContext &c;
    int64_t bx = 0, by = 0, tx = 0;
    std::vector<double> vars;
    std::map<int, double> temps;
    std::vector<double> loops;
    bool exact = true;

    double check(bool isInt, double v) {
        if (isInt ? std::fabs(v) >= 2147483648.0 : (double)(float)v != v) exact = false;
        return v;
    }
    static bool compare(const std::string &op, double x, double y) {
        if (op == "<") return x < y;
        if (op == "<=") return x <= y;
        if (op == ">") return x > y;
        if (op == ">=") return x >= y;
        if (op == "==") return x == y;
        return x != y;
    }
    double eval(const SExpr &e) {
        auto k = [&](size_t i) { return eval(*e.kids[i]); };
        switch (e.kind) {
        case SExpr::Const: return e.c;
        case SExpr::Var: return vars.at((size_t)e.id);
        case SExpr::Temp: {
            auto it = temps.find(e.id);
            if (it == temps.end()) return exact = false, 0; // not a program tilec may accept
            return it->second;
        }
        case SExpr::Index:
            if (e.id < 0) return (double)(e.id == -1 ? bx : e.id == -2 ? by : tx);
            if ((size_t)e.id >= loops.size()) return exact = false, 0;
            return loops[(size_t)e.id];
        case SExpr::Input: {
            const int64_t m = std::max<int64_t>(c.colsA, 1); // the modulus the text has (A may have no columns)
            int64_t col = ((int64_t)k(0) + (int64_t)e.c) % m;
            if (col < 0) col += m;
            return by < c.rowsA && col < c.colsA ? c.a(by * c.colsA + col) : 0.0; // outside A: 0
        }
        case SExpr::Cast: return check(false, k(0));
        case SExpr::Abs: return std::fabs(k(0));
        case SExpr::Not: return k(0) == 0;
        case SExpr::Chain: {
            auto sp = e.op.find(' ');
            double a = k(0), b = k(1), c2 = k(2);
            return compare(e.op.substr(0, sp), a, b) && compare(e.op.substr(sp + 1), b, c2);
        }
        case SExpr::Narrow: { // TVM's typing: the 16-bit value widened, a float32 constant, float32 math
            double x = (double)(float)k(0);
            double n = e.id ? toNarrow(x, 10, -14, 65504.0) : toNarrow(x, 7, -126, 3.3895313892515355e38);
            double c32 = (double)(float)e.c, a = e.form ? c32 : n, b2 = e.form ? n : c32;
            return (double)(float)(e.op == "+" ? a + b2 : e.op == "-" ? a - b2 : a * b2);
        }
        case SExpr::Select: {
            double cond = k(0), t = k(1), f = k(2);
            return cond != 0 ? t : f;
        }
        case SExpr::Bin: {
            double x = k(0), y = k(1);
            const std::string &op = e.op;
            if (op == "and") return x != 0 && y != 0;
            if (op == "or") return x != 0 || y != 0;
            if (e.isBool) return compare(op, x, y);
            const auto ix = (int64_t)x, iy = (int64_t)y;
            if (op == "&") return (double)(ix & iy);
            if (op == "|") return (double)(ix | iy);
            if (op == "^") return (double)(ix ^ iy);
            if (op == "<<") return check(true, x * std::ldexp(1.0, (int)iy));
            if (op == ">>") return std::floor(x / std::ldexp(1.0, (int)iy)); // arithmetic: Python's, int32's
            if (op == "max") return std::fmax(x, y);
            if (op == "min") return std::fmin(x, y);
            if (op == "//") return std::floor(x / y);            // Python's floor division
            if (op == "%") return x - std::floor(x / y) * y;     // and modulo, with the divisor's sign
            return check(e.isInt, op == "+" ? x + y : op == "-" ? x - y : x * y);
        }
        }
        return 0;
    }
    void run(const std::vector<SStmt> &v) {
        for (auto &s : v) exec(s);
    }
    void exec(const SStmt &s) {
        switch (s.kind) {
        case SStmt::Assign: vars.at((size_t)s.id) = check(b.varInt[(size_t)s.id], eval(*s.e)); return;
        case SStmt::Let: temps[s.id] = eval(*s.e); return;
        case SStmt::If: return run(eval(*s.e) != 0 ? s.body : s.orelse);
        case SStmt::Loop:
            if (loops.size() <= (size_t)s.id) loops.resize((size_t)s.id + 1);
            for (int64_t i = 0; i < s.n; ++i) loops[(size_t)s.id] = (double)(s.reverse ? s.start + s.n - 1 - i : s.start + i), run(s.body);
            return;
        case SStmt::Swap: std::swap(temps[s.id], temps[s.id2]); return;
        case SStmt::Call: { // a Python function: its own names, the outer ones unseen
            auto saved = std::move(temps);
            temps.clear();
            run(s.body);
            temps = std::move(saved);
            return;
        }
        }
    }
};

} // namespace

void printScalars(const ScalarBlock &b, const ScalarContext &c, int indent, std::string &defs, std::string &body) {
    Printer p{b, c, defs};
    for (size_t i = 0; i < b.varInt.size(); ++i) {
        std::string x = "x" + std::to_string(i), dt = dtypeOf(b.varInt[i]);
        std::string v = b.varInt[i] ? num((int64_t)b.init[i]) : flt(b.init[i]);
        if (b.varAlloc[i] == 1) p.line(body, indent, x + " = T.alloc_var(" + dt + ", init=" + v + ")");
        else if (b.varAlloc[i] == 2) p.line(body, indent, x + " = T.alloc_local((1,), " + dt + ")"), p.line(body, indent, x + "[0] = " + v);
        else p.line(body, indent, x + " = T.alloc_var(" + dt + ")"), p.line(body, indent, x + " = " + v);
    }
    p.stmts(body, indent, b.stmts);
    const std::string nv = std::to_string(b.varInt.size());
    for (size_t i = 0; i < b.varInt.size(); ++i) {
        std::string x = p.var((int)i, 0);
        if (b.varInt[i]) x = "T.cast(" + x + ", \"float32\")";
        p.line(body, indent, "S[((by * " + std::to_string(c.gx) + " + bx) * " + std::to_string(c.threads) + " + tx) * " +
                                 nv + " + " + std::to_string(i) + "] = " + x);
    }
    if (p.fadd) defs = "def fadd(x, y):\n    return x + y\n\n\n" + defs;
}

int64_t scalarOutputs(const ScalarBlock &b, const ScalarContext &c) {
    return (int64_t)c.gx * c.gy * c.threads * (int64_t)b.varInt.size();
}

std::vector<double> runScalars(const ScalarBlock &b, const ScalarContext &c) {
    std::vector<double> s((size_t)scalarOutputs(b, c), std::nan(""));
    const size_t nv = b.varInt.size();
    for (int64_t by = 0; by < c.gy; ++by)
        for (int64_t bx = 0; bx < c.gx; ++bx)
            for (int64_t tx = 0; tx < c.threads; ++tx) {
                Machine m{b, c, bx, by, tx, b.init, {}, {}, true};
                m.run(b.stmts);
                for (size_t i = 0; i < nv; ++i) m.check(false, m.vars[i]); // S is float32
                if (m.exact)
                    for (size_t i = 0; i < nv; ++i) s[(size_t)(((by * c.gx + bx) * c.threads + tx) * (int64_t)nv) + i] = m.vars[i];
            }
    return s;
}

} // namespace tilec::difffuzz
