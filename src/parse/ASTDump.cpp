/// \file
/// ast::dump, the stable text form of the syntax tree (tests, debugging), and the operator names.
///
/// One node per line: its kind, its own data, `(parenthesized)` where it was, and its range as
/// `@line:col-endLine:endCol`; children follow two spaces deeper, labelled where their role is not obvious.
#include "tilec/AST.h"

#include <charconv>
#include <cstdio>
#include <sstream>

namespace tilec::ast {

const char *toString(BinOpKind k) {
    switch (k) {
    case BinOpKind::Add: return "+";
    case BinOpKind::Sub: return "-";
    case BinOpKind::Mul: return "*";
    case BinOpKind::Div: return "/";
    case BinOpKind::FloorDiv: return "//";
    case BinOpKind::Mod: return "%";
    case BinOpKind::Pow: return "**";
    case BinOpKind::LShift: return "<<";
    case BinOpKind::RShift: return ">>";
    case BinOpKind::BitAnd: return "&";
    case BinOpKind::BitOr: return "|";
    case BinOpKind::BitXor: return "^";
    case BinOpKind::MatMul: return "@";
    }
    return "?";
}

const char *toString(UnaryOpKind k) {
    switch (k) {
    case UnaryOpKind::Neg: return "-";
    case UnaryOpKind::Pos: return "+";
    case UnaryOpKind::Invert: return "~";
    case UnaryOpKind::Not: return "not";
    }
    return "?";
}

const char *toString(CmpOpKind k) {
    switch (k) {
    case CmpOpKind::Eq: return "==";
    case CmpOpKind::NotEq: return "!=";
    case CmpOpKind::Lt: return "<";
    case CmpOpKind::LtE: return "<=";
    case CmpOpKind::Gt: return ">";
    case CmpOpKind::GtE: return ">=";
    case CmpOpKind::Is: return "is";
    case CmpOpKind::IsNot: return "is not";
    case CmpOpKind::In: return "in";
    case CmpOpKind::NotIn: return "not in";
    }
    return "?";
}

namespace {

std::string quoted(const std::string &s) {
    std::string r = "\"";
    for (unsigned char c : s) {
        switch (c) {
        case '"': r += "\\\""; break;
        case '\\': r += "\\\\"; break;
        case '\n': r += "\\n"; break;
        case '\t': r += "\\t"; break;
        case '\r': r += "\\r"; break;
        default:
            if (c < 0x20 || c == 0x7F) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\x%02x", c);
                r += buf;
            } else {
                r += char(c);
            }
        }
    }
    return r + "\"";
}

std::string number(double v) {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, res.ptr);
    if (s.find_first_of(".eni") == std::string::npos) s += ".0"; // Python's look: 2.0, 1e-06, inf
    return s;
}

class Dumper {
  public:
    std::ostringstream out;

    void expr(const Expr *e, int depth, const char *label = nullptr) {
        line(depth, label);
        if (!e) {
            out << "<null>\n";
            return;
        }
        out << head(*e);
        if (e->parenthesized) out << " (parenthesized)";
        at(e->range);
        int d = depth + 1;
        switch (e->kind) {
        case ExprKind::Attribute: case ExprKind::Starred: case ExprKind::UnaryOp:
            expr(e->a.get(), d);
            break;
        case ExprKind::Subscript:
            expr(e->a.get(), d, "value");
            expr(e->b.get(), d, "index");
            break;
        case ExprKind::Slice:
            if (e->a) expr(e->a.get(), d, "lower");
            if (e->b) expr(e->b.get(), d, "upper");
            if (e->c) expr(e->c.get(), d, "step");
            break;
        case ExprKind::BinOp:
            expr(e->a.get(), d);
            expr(e->b.get(), d);
            break;
        case ExprKind::IfExp:
            expr(e->a.get(), d, "body");
            expr(e->b.get(), d, "test");
            expr(e->c.get(), d, "orelse");
            break;
        case ExprKind::Call:
            expr(e->a.get(), d, "func");
            for (const ExprP &x : e->elts) expr(x.get(), d, "arg");
            for (const Keyword &k : e->keywords) {
                std::string l = "keyword " + (k.name.empty() ? std::string("**") : k.name);
                expr(k.value.get(), d, l.c_str());
            }
            break;
        case ExprKind::Dict:
            for (size_t i = 0; i < e->elts.size(); ++i) {
                if (e->elts[i]) expr(e->elts[i].get(), d, "key");
                expr(i < e->values.size() ? e->values[i].get() : nullptr, d, e->elts[i] ? "value" : "**");
            }
            break;
        case ExprKind::Tuple: case ExprKind::List: case ExprKind::Set: case ExprKind::BoolOp: case ExprKind::Compare:
            for (const ExprP &x : e->elts) expr(x.get(), d);
            break;
        case ExprKind::ListComp: case ExprKind::SetComp: case ExprKind::DictComp: case ExprKind::GeneratorExp:
            expr(e->a.get(), d, e->kind == ExprKind::DictComp ? "key" : "elt");
            if (e->b) expr(e->b.get(), d, "value");
            for (const Comprehension &g : e->generators) {
                line(d, nullptr);
                out << "for";
                at(g.range);
                expr(g.target.get(), d + 1, "target");
                expr(g.iter.get(), d + 1, "iter");
                for (const ExprP &c : g.ifs) expr(c.get(), d + 1, "if");
            }
            break;
        case ExprKind::Lambda: stmt(*e->def, d); break;
        case ExprKind::JoinedStr:
            for (const ExprP &x : e->elts) expr(x.get(), d);
            break;
        case ExprKind::FormattedValue:
            expr(e->a.get(), d, "value");
            if (e->b) expr(e->b.get(), d, "format_spec");
            break;
        default: break;
        }
    }

    void stmt(const Stmt &s, int depth) {
        line(depth, nullptr);
        out << head(s);
        at(s.range);
        int d = depth + 1;
        for (const ExprP &x : s.decorators) expr(x.get(), d, "decorator");
        for (const Param &p : s.params) {
            line(d, nullptr);
            const char *kind = p.kind == Param::VarArgs ? "*" : p.kind == Param::VarKw ? "**" : "";
            out << "param " << kind << p.name << (p.kind == Param::KwOnly ? " (keyword-only)" : "");
            at(p.range);
            if (p.annotation) expr(p.annotation.get(), d + 1, "annotation");
            if (p.defaultValue) expr(p.defaultValue.get(), d + 1, "default");
        }
        if (s.returns) expr(s.returns.get(), d, "returns");
        for (const Alias &a : s.names) {
            line(d, nullptr);
            out << "alias " << a.name;
            if (!a.asName.empty()) out << " as " << a.asName;
            at(a.range);
        }
        for (const ExprP &t : s.targets) expr(t.get(), d, "target");
        if (s.annotation) expr(s.annotation.get(), d, "annotation");
        for (const WithItem &w : s.items) {
            expr(w.context.get(), d, "item");
            if (w.target) expr(w.target.get(), d + 1, "as");
        }
        if (s.value) {
            const char *label = s.kind == StmtKind::If || s.kind == StmtKind::While || s.kind == StmtKind::Assert ? "test"
                                : s.kind == StmtKind::For                                                        ? "iter"
                                : s.kind == StmtKind::ClassDef                                                   ? "bases"
                                                                                                                 : "value";
            expr(s.value.get(), d, label);
        }
        if (s.message) expr(s.message.get(), d, "msg");
        if (s.pattern) pattern(*s.pattern, d, "pattern");
        body("body", s.body, d);
        for (const StmtP &h : s.handlers) stmt(*h, d);
        body("orelse", s.orelse, d);
        body("finalbody", s.finalbody, d);
    }

    void pattern(const Pattern &p, int d, const char *label) {
        static const char *const kinds[] = {"Value", "Capture", "Wildcard", "Sequence", "Star", "Mapping", "Class", "Or", "As"};
        line(d, label);
        out << "Pattern" << kinds[int(p.kind)];
        if (!p.name.empty()) out << " '" << p.name << "'";
        at(p.range);
        if (p.value) expr(p.value.get(), d + 1, "value");
        for (size_t i = 0; i < p.keys.size(); ++i) expr(p.keys[i].get(), d + 1, "key");
        for (const PatternP &e : p.elts) pattern(*e, d + 1, nullptr);
        for (size_t i = 0; i < p.kwdNames.size(); ++i) pattern(*p.kwdPatterns[i], d + 1, p.kwdNames[i].c_str());
    }

  private:
    void line(int depth, const char *label) {
        out << std::string(size_t(depth) * 2, ' ');
        if (label) out << label << ": ";
    }
    void at(const SourceRange &r) { out << " @" << r.line << ":" << r.col << "-" << r.endLine << ":" << r.endCol << "\n"; }

    void body(const char *label, const Body &b, int depth) {
        if (b.empty()) return;
        line(depth, nullptr);
        out << label << ":\n";
        for (const StmtP &s : b) stmt(*s, depth + 1);
    }

    static std::string head(const Expr &e) {
        switch (e.kind) {
        case ExprKind::Name: return "Name '" + e.str + "'";
        case ExprKind::Int: return "Int " + std::to_string(e.intValue);
        case ExprKind::Float: return "Float " + number(e.floatValue);
        case ExprKind::Str: return "Str " + quoted(e.str);
        case ExprKind::Bool: return e.boolValue ? "Bool True" : "Bool False";
        case ExprKind::None: return "None";
        case ExprKind::Ellipsis: return "Ellipsis";
        case ExprKind::Tuple: return "Tuple";
        case ExprKind::List: return "List";
        case ExprKind::Dict: return "Dict";
        case ExprKind::Set: return "Set";
        case ExprKind::Attribute: return "Attribute ." + e.str;
        case ExprKind::Subscript: return "Subscript";
        case ExprKind::Slice: return "Slice";
        case ExprKind::Call: return "Call";
        case ExprKind::Starred: return "Starred";
        case ExprKind::BinOp: return std::string("BinOp ") + toString(e.binOp);
        case ExprKind::UnaryOp: return std::string("UnaryOp ") + toString(e.unaryOp);
        case ExprKind::BoolOp: return e.isAnd ? "BoolOp and" : "BoolOp or";
        case ExprKind::Compare: {
            std::string s = "Compare";
            for (CmpOpKind k : e.cmpOps) s += std::string(" ") + toString(k);
            return s;
        }
        case ExprKind::IfExp: return "IfExp";
        case ExprKind::ListComp: return "ListComp";
        case ExprKind::SetComp: return "SetComp";
        case ExprKind::DictComp: return "DictComp";
        case ExprKind::GeneratorExp: return "GeneratorExp";
        case ExprKind::Lambda: return "Lambda";
        case ExprKind::JoinedStr: return "JoinedStr";
        case ExprKind::FormattedValue: return e.str.empty() ? "FormattedValue" : "FormattedValue !" + e.str;
        case ExprKind::Unsupported: return "Unsupported '" + e.str + "'";
        }
        return "?";
    }

    static std::string head(const Stmt &s) {
        switch (s.kind) {
        case StmtKind::Expr: return "Expr";
        case StmtKind::Assign: return "Assign";
        case StmtKind::AugAssign: return std::string("AugAssign ") + toString(s.augOp) + "=";
        case StmtKind::AnnAssign: return "AnnAssign";
        case StmtKind::If: return "If";
        case StmtKind::For: return "For";
        case StmtKind::While: return "While";
        case StmtKind::With: return "With";
        case StmtKind::FunctionDef: return "FunctionDef " + s.name;
        case StmtKind::ClassDef: return "ClassDef " + s.name;
        case StmtKind::Return: return "Return";
        case StmtKind::Pass: return "Pass";
        case StmtKind::Break: return "Break";
        case StmtKind::Continue: return "Continue";
        case StmtKind::Import: return "Import";
        case StmtKind::ImportFrom: return "ImportFrom " + s.name;
        case StmtKind::Assert: return "Assert";
        case StmtKind::Try: return "Try";
        case StmtKind::Raise: return "Raise";
        case StmtKind::ExceptHandler: return "ExceptHandler" + (s.name.empty() ? "" : " as " + s.name);
        case StmtKind::Match: return "Match";
        case StmtKind::MatchCase: return "MatchCase";
        case StmtKind::Global: return "Global";
        case StmtKind::Nonlocal: return "Nonlocal";
        case StmtKind::Unsupported: return "Unsupported '" + s.name + "'";
        }
        return "?";
    }
};

} // namespace

std::string dump(const Module &m) {
    Dumper d;
    d.out << "Module\n";
    for (const StmtP &s : m.body) d.stmt(*s, 1);
    return d.out.str();
}

} // namespace tilec::ast
