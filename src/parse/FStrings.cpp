/// \file
/// f-strings (Python 3.12, PEP 701): splitting a string token into literal text and `{expr=!conv:spec}`
/// replacement fields, each expression parsed by the grammar's own expression rule over its part of the
/// file, so its nodes and errors carry the file's positions. Also where such a string ends, for the lexer:
/// a replacement field may hold any string, its own quotes included.
///
/// The scan knows only what delimits a field: brackets, nested strings, comments, and `!`, `:`, `=` and `}`
/// outside brackets. Everything else is the parser's (syntax errors) or the interpreter's (evaluation).
#include "parse/ASTBuilder.h"

#include <cstring>

namespace tilec::parse {

using ast::ExprKind;
using antlr4::Token;

namespace {

constexpr size_t npos = std::string_view::npos;
/// Deepest nesting of strings and replacement fields the scan follows, and of f-strings in the fields of
/// f-strings (each level is a parse of its own). CPython's tokenizer stops at 150 levels.
constexpr int kMaxFStringDepth = 64;
constexpr const char *kTooDeep = "f-string: expressions nested too deeply";

bool isIdent(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || (unsigned char)c >= 0x80; }
bool isPrefix(std::string_view p) {
    if (p.size() > 2) return false;
    for (char c : p)
        if (!std::strchr("rRbBuUfF", c)) return false;
    return true;
}

/// Scans strings and replacement fields. `end` bounds the text (the token's body, or the file).
struct Scanner {
    Scanner(std::string_view text, size_t end) : text(text), end(end) {}
    std::string_view text;
    size_t end;
    int depth = 0;
    std::string err;
    size_t errAt = 0;

    bool fail(size_t at, std::string msg) {
        if (err.empty()) err = std::move(msg), errAt = at;
        return false;
    }

    /// The string starting at `at` (prefix or quote): the offset past its closing quotes, or npos.
    size_t string(size_t at) {
        if (depth >= kMaxFStringDepth) {
            fail(at, kTooDeep);
            return npos;
        }
        ++depth;
        size_t e = stringBody(at);
        --depth;
        return e;
    }

    /// The field whose '{' is at `open`, inside a string quoted by `n` times `quote` (0: not known).
    bool field(size_t open, FStringField &f, char quote, size_t n) {
        if (depth >= kMaxFStringDepth) return fail(open, kTooDeep);
        ++depth;
        bool ok = fieldBody(open, f, quote, n);
        --depth;
        return ok;
    }

    size_t stringBody(size_t at) {
        size_t q = at;
        while (q < end && text[q] != '\'' && text[q] != '"') ++q;
        if (q >= end || !isPrefix(text.substr(at, q - at))) return npos;
        bool raw = false, format = false;
        for (size_t i = at; i < q; ++i) raw |= (text[i] | 0x20) == 'r', format |= (text[i] | 0x20) == 'f';
        char quote = text[q];
        size_t n = q + 2 < end && text[q + 1] == quote && text[q + 2] == quote ? 3 : 1;
        auto closes = [&](size_t i) { return i + n <= end && text.substr(i, n) == std::string(n, quote); };
        for (size_t i = q + n; i < end;) {
            char c = text[i];
            if (closes(i)) return i + n;
            if (c == '\n' && n == 1) break;
            if (c == '\\') {
                i += format && !raw && i + 2 < end && text[i + 1] == 'N' && text[i + 2] == '{' ? namedEscapeEnd(i) - i : 2;
            } else if (format && c == '{' && i + 1 < end && text[i + 1] == '{') {
                i += 2;
            } else if (format && c == '{') {
                FStringField f;
                if (!field(i, f, quote, n)) break;
                i = f.close + 1;
            } else {
                ++i;
            }
        }
        return npos;
    }

    size_t namedEscapeEnd(size_t i) const {
        size_t c = text.find('}', i);
        return c == npos || c >= end ? end : c + 1;
    }

    bool fieldBody(size_t open, FStringField &f, char quote, size_t n) {
        f.open = open;
        std::vector<char> brackets;
        size_t i = open + 1;
        auto closesOuter = [&](size_t at) { return quote && at + n <= end && text.substr(at, n) == std::string(n, quote); };
        // The expression, up to '!', ':', '=' or '}' outside brackets.
        for (; i < end; ++i) {
            char c = text[i];
            if (brackets.empty() && (c == '}' || c == ':' || (c == '!' && (i + 1 >= end || text[i + 1] != '=')))) break;
            if (brackets.empty() && c == '=' && (i + 1 >= end || text[i + 1] != '=') && !std::strchr("=!<>:", text[i - 1])) {
                f.exprEnd = i;
                ++i;
                while (i < end && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
                f.debugEnd = i;
                if (i < end && text[i] != '}' && text[i] != '!' && text[i] != ':')
                    return fail(i, "f-string: expecting '!', ':' or '}' after '='");
                break;
            }
            if (c == '(' || c == '[' || c == '{') {
                brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
            } else if (c == ')' || c == ']' || c == '}') {
                if (brackets.empty() || c != brackets.back()) return fail(i, std::string("f-string: unmatched '") + c + "'");
                brackets.pop_back();
            } else if (c == '#') {
                while (i < end && text[i] != '\n') ++i;
                if (i >= end) break;
            } else if (c == '\'' || c == '"' || (isIdent(c) && !isIdent(text[i - 1]))) {
                size_t w = i;
                while (w < end && isIdent(text[w])) ++w;
                if (w < end && (text[w] == '\'' || text[w] == '"') && isPrefix(text.substr(i, w - i))) {
                    size_t e = string(i);
                    if (e == npos) return fail(w, err.empty() ? "unterminated string literal in f-string" : err);
                    i = e - 1;
                } else {
                    i = w - 1;
                }
            }
        }
        if (f.debugEnd == npos) f.exprEnd = i;
        if (i < end && text[i] == '!') {
            f.bang = i;
            while (i < end && text[i] != ':' && text[i] != '}' && !closesOuter(i)) ++i;
        }
        if (i < end && text[i] == ':') {
            f.colon = i;
            // The spec: text and nested fields up to the '}'.
            for (++i; i < end && text[i] != '}' && !closesOuter(i); ++i) {
                if (text[i] != '{') continue;
                FStringField inner;
                if (!field(i, inner, quote, n)) return false;
                i = inner.close;
            }
        }
        if (i >= end || text[i] != '}') return fail(open, "f-string: expecting '}'");
        f.close = i;
        return true;
    }
};

/// The number of code points in bytes [0, n) of `s` (UTF-8).
size_t codePoints(std::string_view s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n\f") == npos; }

} // namespace

size_t stringEnd(std::string_view text, size_t at, std::string *tooDeep) {
    Scanner s(text, text.size());
    size_t end = s.string(at);
    if (tooDeep && end == npos && s.err == kTooDeep) *tooDeep = s.err;
    return end;
}

/// The parts of one f-string token (or of a format spec inside it: tok[b, e)) appended to `parts`; literal
/// text collects in `pending` so that neighbouring text makes one Str.
void Builder::fstringParts(Token *t, size_t b, size_t e, bool raw, std::vector<ast::ExprP> &parts,
                           std::string &pending) {
    std::string_view tok = text(t);
    size_t tokBegin = src_.tokenBegin(t);
    auto at = [&](size_t i, size_t j) { return src_.range(tokBegin + i, tokBegin + j); };
    auto literal = [&](size_t from, size_t to) {
        StringPiece piece;
        std::string err;
        size_t pos = 0;
        if (!decodeBody(tok, from, to, raw, piece, err, pos)) error(at(pos, pos + 2), err);
        if (piece.namedEscape) error(at(from, to), "\\N{...} escape is not supported");
        pending += piece.value;
    };
    auto flush = [&](size_t i) {
        if (pending.empty()) return;
        auto s = ast::Expr::make(ExprKind::Str, at(b, i));
        s->str = std::move(pending);
        pending.clear();
        parts.push_back(s);
    };
    size_t from = b;
    for (size_t i = b; i < e;) {
        char c = tok[i];
        if (c == '\\' && !raw) {
            size_t named = i + 2 < e && tok[i + 1] == 'N' && tok[i + 2] == '{' ? tok.find('}', i) : npos;
            i += named < e ? named + 1 - i : i + 1 < e && (tok[i + 1] == '{' || tok[i + 1] == '}') ? 1 : 2;
            continue;
        }
        if ((c == '{' || c == '}') && i + 1 < e && tok[i + 1] == c) { // `{{` and `}}` are one brace
            literal(from, i + 1);
            from = i += 2;
            continue;
        }
        if (c == '}') {
            error(at(i, i + 1), "f-string: single '}' is not allowed");
            return;
        }
        if (c != '{') {
            ++i;
            continue;
        }
        literal(from, i);
        Scanner s(tok, e);
        FStringField f;
        if (!s.field(i, f, 0, 0)) {
            error(at(s.errAt, s.errAt + 1), s.err);
            return;
        }
        if (f.debugEnd != npos) pending += tok.substr(f.open + 1, f.debugEnd - f.open - 1);
        flush(i);
        parts.push_back(field(t, f, raw));
        from = i = f.close + 1;
    }
    literal(from, e);
}

/// One replacement field: its expression parsed over its part of the file, its conversion, its spec.
MExpr Builder::field(Token *t, const FStringField &f, bool raw) {
    std::string_view tok = text(t);
    size_t tokBegin = src_.tokenBegin(t);
    auto v = ast::Expr::make(ExprKind::FormattedValue, src_.range(tokBegin + f.open, tokBegin + f.close + 1));
    if (blank(tok.substr(f.open + 1, f.exprEnd - f.open - 1))) {
        error(src_.range(tokBegin + f.exprEnd, tokBegin + f.exprEnd + 1),
              std::string("f-string: valid expression required before '") + tok[f.exprEnd] + "'");
        return v;
    }
    if (fstringDepth >= kMaxFStringDepth) {
        error(v->range, kTooDeep);
        return v;
    }
    size_t cp = t->getStartIndex();
    v->a = parseFieldExpression(src_, errs_, cp + codePoints(tok, f.open + 1), cp + codePoints(tok, f.exprEnd),
                                fstringDepth + 1, stackBase_);
    if (!v->a) v->a = unsupported(v->range, "f-string expression");
    if (f.bang != npos) {
        size_t convEnd = f.colon != npos ? f.colon : f.close;
        std::string_view conv = tok.substr(f.bang + 1, convEnd - f.bang - 1);
        if (conv != "s" && conv != "r" && conv != "a")
            error(src_.range(tokBegin + f.bang, tokBegin + convEnd),
                  conv.empty() ? "f-string: missing conversion character"
                               : "f-string: invalid conversion character '" + std::string(conv) +
                                     "': expected 's', 'r', or 'a'");
        v->str = std::string(conv);
    } else if (f.debugEnd != npos && f.colon == npos) {
        v->str = "r"; // `{x=}` shows repr(x) unless a conversion or a spec says otherwise
    }
    if (f.colon != npos) {
        auto spec = ast::Expr::make(ExprKind::JoinedStr, src_.range(tokBegin + f.colon + 1, tokBegin + f.close));
        std::string pending;
        fstringParts(t, f.colon + 1, f.close, raw, spec->elts, pending);
        if (!pending.empty()) {
            auto s = ast::Expr::make(ExprKind::Str, spec->range);
            s->str = std::move(pending);
            spec->elts.push_back(s);
        }
        v->b = spec;
    }
    return v;
}

} // namespace tilec::parse
