/// \file
/// The spliced-expression oracle (LoopHeaders.h): a tokenizer and a precedence-climbing parser of C
/// expressions, and the check of every `for` header of generated CUDA.
#include "LoopHeaders.h"

#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace tilec::difffuzz {

namespace {

/// C's tokens of `s` (comments are removed before); string and character literals are one token each.
/// Character classes are tested without the locale and operators only where their first character is: the
/// oracle reads every generated file whole (~140 KB with the device library), twice per program.
std::vector<std::string> tokens(const std::string &s) {
    static const std::vector<std::string> ops{"<<=", ">>=", "...", "::", "->", "++", "--", "<<", ">>", "<=", ">=",
                                              "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "^=", "|="};
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    auto wordChar = [&](char c) { return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    std::vector<std::string> t;
    t.reserve(s.size() / 4);
    const size_t n = s.size();
    size_t i = 0;
    auto word = [&](size_t j) { return j < n && wordChar(s[j]); };
    while (i < n) {
        char c = s[i];
        size_t j = i + 1;
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
            ++i;
            continue;
        }
        if (digit(c) || (c == '.' && j < n && digit(s[j]))) {
            const bool hex = c == '0' && j < n && (s[j] == 'x' || s[j] == 'X');
            while (word(j) || (j < n && s[j] == '.') ||
                   (j < n && (s[j] == '+' || s[j] == '-') && !hex && (s[j - 1] == 'e' || s[j - 1] == 'E')))
                ++j;
        } else if (wordChar(c)) {
            while (word(j)) ++j;
        } else if (c == '"' || c == '\'') {
            while (j < n && s[j] != c) j += s[j] == '\\' ? 2 : 1;
            j = std::min(j + 1, n);
        } else {
            for (auto &o : ops)
                if (o[0] == c && s.compare(i, o.size(), o) == 0) {
                    j = i + o.size();
                    break;
                }
        }
        t.emplace_back(s, i, j - i);
        i = j;
    }
    return t;
}

struct Node {
    std::string op; ///< "" for a leaf; binary and assignment operators as written; "?:", "u-", "post++", "cast", "call", "[]", "."
    std::string leaf;
    std::vector<Node> kids;
    std::string text() const {
        if (op.empty()) return leaf;
        if (op == "?:") return "(" + kids[0].text() + " ? " + kids[1].text() + " : " + kids[2].text() + ")";
        if (op.rfind("u", 0) == 0) return "(" + op.substr(1) + kids[0].text() + ")";
        if (op.rfind("post", 0) == 0) return "(" + kids[0].text() + op.substr(4) + ")";
        if (op == "cast") return "((" + leaf + ")" + kids[0].text() + ")";
        if (op == "call" || op == "[]") {
            std::string s = kids[0].text() + (op == "call" ? "(" : "[");
            for (size_t k = 1; k < kids.size(); ++k) s += (k > 1 ? ", " : "") + kids[k].text();
            return s + (op == "call" ? ")" : "]");
        }
        if (op == "." || op == "->") return kids[0].text() + op + leaf;
        return "(" + kids[0].text() + " " + op + " " + kids[1].text() + ")";
    }
};

bool isTypeName(const std::string &w) {
    static const std::set<std::string> types{"int", "unsigned", "signed", "long", "short", "char", "float", "double",
                                             "bool", "half", "__half", "nv_bfloat16", "__nv_bfloat16", "const", "void"};
    return types.count(w) || (w.size() > 2 && w.compare(w.size() - 2, 2, "_t") == 0);
}

/// Precedence climbing with C's table (15 unary ... 1 comma).
class Parser {
  public:
    explicit Parser(std::vector<std::string> t) : t_(std::move(t)) {}
    /// The whole token list as one expression (comma allowed where `comma`), or false.
    bool whole(Node &n, bool comma) {
        n = expr(comma ? 1 : 2);
        return !bad_ && i_ == t_.size();
    }

  private:
    std::vector<std::string> t_;
    size_t i_ = 0;
    bool bad_ = false;

    const std::string &peek(size_t k = 0) const {
        static const std::string end;
        return i_ + k < t_.size() ? t_[i_ + k] : end;
    }
    bool take(const std::string &s) {
        if (peek() != s) return false;
        ++i_;
        return true;
    }
    static int binaryPrec(const std::string &op) {
        static const std::map<std::string, int> p{{"*", 13}, {"/", 13}, {"%", 13}, {"+", 12}, {"-", 12}, {"<<", 11},
                                                  {">>", 11}, {"<", 10}, {"<=", 10}, {">", 10}, {">=", 10}, {"==", 9},
                                                  {"!=", 9}, {"&", 8}, {"^", 7}, {"|", 6}, {"&&", 5}, {"||", 4}};
        auto it = p.find(op);
        return it == p.end() ? 0 : it->second;
    }
    static bool isAssign(const std::string &op) {
        static const std::set<std::string> a{"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|="};
        return a.count(op) > 0;
    }

    Node expr(int minPrec) {
        Node lhs = unary();
        while (!bad_) {
            const std::string op = peek();
            if (op == "?" && minPrec <= 3) {
                ++i_;
                Node mid = expr(1);
                if (!take(":")) return bad_ = true, lhs;
                lhs = Node{"?:", "", {lhs, mid, expr(2)}};
            } else if (isAssign(op) && minPrec <= 2) {
                ++i_;
                lhs = Node{op, "", {lhs, expr(2)}};
            } else if (op == "," && minPrec <= 1) {
                ++i_;
                lhs = Node{op, "", {lhs, expr(2)}};
            } else if (int p = binaryPrec(op); p && p >= minPrec) {
                ++i_;
                lhs = Node{op, "", {lhs, expr(p + 1)}};
            } else {
                break;
            }
        }
        return lhs;
    }

    /// `( TYPE )` at the cursor: its length in tokens, or 0.
    size_t castAhead() const {
        if (peek() != "(" || !isTypeName(peek(1))) return 0;
        size_t k = 2;
        while (isTypeName(peek(k)) || peek(k) == "*") ++k;
        return peek(k) == ")" ? k + 1 : 0;
    }

    Node unary() {
        static const std::set<std::string> prefix{"-", "+", "!", "~", "*", "&", "++", "--", "sizeof"};
        if (prefix.count(peek())) {
            std::string op = t_[i_++];
            return Node{"u" + op, "", {unary()}};
        }
        if (size_t k = castAhead()) {
            std::string type;
            for (size_t j = 1; j + 1 < k; ++j) type += (j > 1 ? " " : "") + t_[i_ + j];
            i_ += k;
            return Node{"cast", type, {unary()}};
        }
        return postfix(primary());
    }

    /// After a name, `< ... >` is a template argument list where it closes before a `(` or `::` and holds
    /// only names, numbers, `::`, `,` and `*` (a comparison chain such as `s < bx < 2 ? ...` is not one).
    size_t templateAhead() const {
        if (peek() != "<") return 0;
        for (size_t k = 1; i_ + k < t_.size(); ++k) {
            const std::string &w = peek(k);
            if (w == ">") return peek(k + 1) == "(" || peek(k + 1) == "::" ? k + 1 : 0;
            if (!(std::isalnum((unsigned char)w[0]) || w[0] == '_' || w == "::" || w == "," || w == "*")) return 0;
        }
        return 0;
    }

    Node primary() {
        const std::string w = peek();
        if (w.empty()) return bad_ = true, Node{};
        if (take("(")) {
            Node n = expr(1);
            if (!take(")")) bad_ = true;
            return n;
        }
        if (!(std::isalnum((unsigned char)w[0]) || w[0] == '_' || w[0] == '"' || w[0] == '\'' || w[0] == '.')) return bad_ = true, Node{};
        ++i_;
        Node n{"", w, {}};
        for (;;) {
            if (peek() == "::" && !peek(1).empty() && (std::isalpha((unsigned char)peek(1)[0]) || peek(1)[0] == '_')) {
                n.leaf += "::" + peek(1);
                i_ += 2;
            } else if (size_t k = templateAhead()) {
                for (size_t j = 0; j < k; ++j) n.leaf += t_[i_ + j];
                i_ += k;
            } else {
                return n;
            }
        }
    }

    Node postfix(Node n) {
        for (;;) {
            if (take("(") || (peek() == "[" && ++i_)) {
                const bool call = t_[i_ - 1] == "(";
                Node c{call ? "call" : "[]", "", {n}};
                const std::string close = call ? ")" : "]";
                if (!take(close)) {
                    do c.kids.push_back(expr(call ? 2 : 1));
                    while (!bad_ && take(","));
                    if (!take(close)) return bad_ = true, n;
                }
                n = c;
            } else if (peek() == "." || peek() == "->") {
                std::string op = t_[i_++];
                if (peek().empty()) return bad_ = true, n;
                n = Node{op, t_[i_++], {n}};
            } else if (peek() == "++" || peek() == "--") {
                n = Node{"post" + t_[i_++], "", {n}};
            } else {
                return n;
            }
        }
    }
};

/// `text` without its // and /* */ comments (string literals kept).
std::string withoutComments(const std::string &s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '"' || s[i] == '\'') {
            size_t j = i + 1;
            while (j < s.size() && s[j] != s[i] && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
            out.append(s, i, std::min(j + 1, s.size()) - i);
            i = j;
        } else if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '/') {
            while (i < s.size() && s[i] != '\n') ++i;
            out += '\n';
        } else if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
            size_t e = s.find("*/", i + 2);
            i = e == std::string::npos ? s.size() : e + 1;
            out += ' ';
        } else {
            out += s[i];
        }
    }
    return out;
}

/// The three clauses of the header whose `(` is at `open`, split at its top-level `;` (none for a range for).
std::vector<std::vector<std::string>> clauses(const std::vector<std::string> &t, size_t open, size_t &close) {
    std::vector<std::vector<std::string>> c(1);
    int depth = 0;
    for (close = open; close < t.size(); ++close) {
        const std::string &w = t[close];
        if (w == "(" || w == "[" || w == "{") ++depth;
        if (w == ")" || w == "]" || w == "}") --depth;
        if (depth == 0) break;
        if (close == open) continue;
        if (depth == 1 && w == ";") c.emplace_back();
        else c.back().push_back(w);
    }
    return c;
}

std::string join(const std::vector<std::string> &t) {
    std::string s;
    for (auto &w : t) s += (s.empty() ? "" : " ") + w;
    return s;
}

/// `t` split at its top-level commas.
std::vector<std::vector<std::string>> splitCommas(const std::vector<std::string> &t) {
    std::vector<std::vector<std::string>> parts(1);
    int depth = 0;
    for (auto &w : t) {
        depth += (w == "(" || w == "[" || w == "{") - (w == ")" || w == "]" || w == "}");
        if (depth == 0 && w == ",") parts.emplace_back();
        else parts.back().push_back(w);
    }
    return parts;
}

bool isUpdate(const Node &n, const std::set<std::string> &vars) {
    static const std::set<std::string> ops{"u++", "u--", "post++", "post--", "=", "+=", "-=", "*=", "/=", "%=",
                                           "<<=", ">>=", "&=", "^=", "|="};
    if (n.op == ",") return isUpdate(n.kids[0], vars) && isUpdate(n.kids[1], vars);
    return ops.count(n.op) && n.kids[0].op.empty() && vars.count(n.kids[0].leaf);
}

/// Why the header `for (init; cond; step)` does not parse as its splices mean ("" when it does): each
/// declarator's start one expression, the condition a comparison of a declared variable, the step updates.
std::string checkHeader(const std::vector<std::vector<std::string>> &c) {
    std::set<std::string> vars;
    Node n;
    for (auto &d : splitCommas(c[0])) {
        size_t k = 1;
        while (k < d.size() && d[k] != "=") ++k;
        if (k >= d.size()) continue;
        vars.insert(d[k - 1]);
        std::vector<std::string> init(d.begin() + (long)k + 1, d.end());
        if (!Parser(init).whole(n, false)) return "the start '" + join(init) + "' of '" + d[k - 1] + "' is not one expression";
    }
    if (vars.empty() || c[1].empty()) return "";
    if (!Parser(c[1]).whole(n, true)) return "its condition does not parse";
    static const std::set<std::string> cmp{"<", "<=", ">", ">=", "!="};
    if (!cmp.count(n.op) || !n.kids[0].op.empty() || !vars.count(n.kids[0].leaf))
        return "its condition parses as " + n.text() + ", not as a comparison of the loop's variable";
    if (c[2].empty()) return "";
    if (!Parser(c[2]).whole(n, true) || !isUpdate(n, vars)) return "its step parses as " + n.text();
    return "";
}

} // namespace

namespace {

/// An integer literal's value (its L / LL / U suffixes dropped), or nullopt.
std::optional<int64_t> literal(const std::string &w) {
    size_t end = w.find_first_not_of("0123456789");
    if (end == 0 || w.find_first_not_of("uUlL", end) != std::string::npos) return std::nullopt;
    return std::stoll(w.substr(0, end));
}

/// C's value of `n` in int64_t arithmetic (casts are to 64-bit integers in the host checks), or nullopt.
std::optional<int64_t> evaluate(const Node &n, const std::map<std::string, int64_t> &vars) {
    if (n.op.empty()) {
        if (auto v = literal(n.leaf)) return v;
        auto it = vars.find(n.leaf);
        return it == vars.end() ? std::nullopt : std::optional<int64_t>(it->second);
    }
    std::vector<int64_t> k;
    const size_t first = n.op == "call" ? 1 : 0;
    if (n.op == "?:") {
        auto c = evaluate(n.kids[0], vars);
        return c ? evaluate(n.kids[*c ? 1 : 2], vars) : std::nullopt;
    }
    for (size_t i = first; i < n.kids.size(); ++i) {
        auto v = evaluate(n.kids[i], vars);
        if (!v) return std::nullopt;
        k.push_back(*v);
    }
    const std::string &o = n.op;
    if (o == "cast" || o == "u+") return k[0];
    if (o == "u-") return -k[0];
    if (o == "u!") return !k[0];
    if (o == "call" && k.size() == 2 && k[1] != 0 && n.kids[0].leaf.rfind("tilec_floor", 0) == 0) {
        const int64_t q = k[0] / k[1], r = k[0] % k[1];
        const bool adjust = r != 0 && ((r < 0) != (k[1] < 0));
        if (n.kids[0].leaf == "tilec_floordiv64") return adjust ? q - 1 : q;
        if (n.kids[0].leaf == "tilec_floormod64") return adjust ? r + k[1] : r;
    }
    if (k.size() != 2 || n.op == "call") return std::nullopt;
    const int64_t a = k[0], b = k[1];
    if ((o == "/" || o == "%") && b == 0) return std::nullopt;
    static const std::map<std::string, int64_t (*)(int64_t, int64_t)> ops{
        {"+", [](int64_t x, int64_t y) { return x + y; }},   {"-", [](int64_t x, int64_t y) { return x - y; }},
        {"*", [](int64_t x, int64_t y) { return x * y; }},   {"/", [](int64_t x, int64_t y) { return x / y; }},
        {"%", [](int64_t x, int64_t y) { return x % y; }},   {"<", [](int64_t x, int64_t y) { return (int64_t)(x < y); }},
        {"<=", [](int64_t x, int64_t y) { return (int64_t)(x <= y); }}, {">", [](int64_t x, int64_t y) { return (int64_t)(x > y); }},
        {">=", [](int64_t x, int64_t y) { return (int64_t)(x >= y); }}, {"==", [](int64_t x, int64_t y) { return (int64_t)(x == y); }},
        {"!=", [](int64_t x, int64_t y) { return (int64_t)(x != y); }}, {"&&", [](int64_t x, int64_t y) { return (int64_t)(x && y); }},
        {"||", [](int64_t x, int64_t y) { return (int64_t)(x || y); }}};
    auto it = ops.find(o);
    return it == ops.end() ? std::nullopt : std::optional<int64_t>(it->second(a, b));
}

} // namespace

std::optional<int64_t> evaluateC(const std::string &expr, const std::map<std::string, int64_t> &vars) {
    Node n;
    return Parser(tokens(expr)).whole(n, false) ? evaluate(n, vars) : std::nullopt;
}

std::optional<std::vector<std::string>> callArguments(const std::string &expr, const std::string &fn) {
    Node n;
    if (!Parser(tokens(expr)).whole(n, false) || n.op != "call" || n.kids[0].leaf != fn) return std::nullopt;
    std::vector<std::string> args;
    for (size_t i = 1; i < n.kids.size(); ++i) args.push_back(n.kids[i].text());
    return args;
}

std::string parenthesizeC(const std::string &expr) {
    Node n;
    return Parser(tokens(expr)).whole(n, true) ? n.text() : "";
}

/// An array the condition `cond` reads that the loop body opening at t[open] (`{`) stores an element of
/// (`NAME [ ... ] =` or a compound assignment); "" when none. C evaluates the condition again every trip, so
/// such a loop's bounds change as its body runs; a T.serial's bounds are read once, where it starts.
static std::string rereadBound(const std::vector<std::string> &t, size_t open, const std::vector<std::string> &cond) {
    if (open >= t.size() || t[open] != "{") return "";
    static const std::set<std::string> assign{"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
    std::set<std::string> stored;
    int braces = 0;
    for (size_t i = open; i < t.size(); ++i) {
        braces += (t[i] == "{") - (t[i] == "}");
        if (braces == 0) break;
        if (i + 1 >= t.size() || t[i + 1] != "[" || !(std::isalpha((unsigned char)t[i][0]) || t[i][0] == '_')) continue;
        size_t j = i + 1;
        for (int d = 0; j < t.size(); ++j) {
            d += (t[j] == "[") - (t[j] == "]");
            if (d == 0) break;
        }
        if (j + 1 < t.size() && assign.count(t[j + 1])) stored.insert(t[i]);
    }
    for (size_t i = 0; i + 1 < cond.size(); ++i)
        if (cond[i + 1] == "[" && stored.count(cond[i])) return cond[i];
    return "";
}

std::string checkLoopHeaders(const std::string &cuda) {
    const std::vector<std::string> t = tokens(withoutComments(cuda));
    for (size_t i = 0; i + 1 < t.size(); ++i) {
        if (t[i] != "for" || t[i + 1] != "(") continue;
        size_t close = 0;
        auto c = clauses(t, i + 1, close);
        if (c.size() != 3) continue;
        if (std::string why = checkHeader(c); !why.empty())
            return "'for (" + join(c[0]) + "; " + join(c[1]) + "; " + join(c[2]) + ")': " + why;
        if (std::string a = rereadBound(t, close + 1, c[1]); !a.empty())
            return "'for (" + join(c[0]) + "; " + join(c[1]) + "; " + join(c[2]) + ")': its condition reads " + a +
                   ", which the loop's body stores into: the bounds change as the body runs (they are read once)";
        i = close;
    }
    return "";
}

} // namespace tilec::difffuzz
