/// \file
/// The match statement (PEP 634) of the parse tree to ast::Stmt (Match with its MatchCase blocks) and its
/// patterns to ast::Pattern. The grammar's closed_pattern is liberal as the expressions are: here a NAME with
/// a dotted tail becomes a value pattern, a bare NAME a capture (`_` the wildcard), parentheses a group or a
/// tuple, and what Python refuses before running anything is reported (a star outside a sequence, two stars,
/// a keyword pattern before a positional one, a name bound twice, an irrefutable alternative before others).
#include "parse/ASTBuilder.h"

#include <algorithm>
#include <set>

namespace tilec::parse {

using antlr4::ParserRuleContext;
using antlr4::Token;
using antlr4::tree::ParseTree;
using ast::PatternKind;
using MPattern = std::shared_ptr<ast::Pattern>;

namespace {

/// Whether a pattern matches every subject (a capture or the wildcard, maybe grouped or named with `as`).
bool irrefutable(const ast::Pattern &p) {
    if (p.kind == PatternKind::Capture || p.kind == PatternKind::Wildcard) return true;
    if (p.kind == PatternKind::As) return irrefutable(*p.elts[0]);
    if (p.kind == PatternKind::Or)
        for (auto &a : p.elts)
            if (irrefutable(*a)) return true;
    return false;
}

} // namespace

/// `match subject:` and its case blocks.
MStmt Builder::matchStmt(TP::Match_stmtContext *c) {
    auto s = ast::Stmt::make(ast::StmtKind::Match, range(c));
    s->value = commaList(c->match_subject());
    auto cases = c->case_block();
    for (size_t i = 0; i < cases.size(); ++i) {
        TP::Case_blockContext *cb = cases[i];
        auto k = ast::Stmt::make(ast::StmtKind::MatchCase, range(cb));
        MPattern p = patternList(cb->pattern_list(), true);
        std::set<std::string> bound;
        checkBindings(*p, bound);
        // Python refuses a case that matches everything before others ("makes remaining patterns unreachable").
        if (irrefutable(*p) && i + 1 < cases.size() && !cb->namedexpr_test()) unreachable(*p);
        k->pattern = p;
        if (auto *g = cb->namedexpr_test()) k->value = namedexpr(g);
        block(cb->block(), k->body);
        s->handlers.push_back(k);
    }
    return s;
}

/// CPython's error for an irrefutable pattern (a case, or an alternative) that others follow.
void Builder::unreachable(const ast::Pattern &p) {
    const ast::Pattern *q = &p;
    while (q->kind == PatternKind::As || q->kind == PatternKind::Or) {
        if (q->kind == PatternKind::As) q = q->elts[0].get();
        else q = std::find_if(q->elts.begin(), q->elts.end(), [](auto &a) { return irrefutable(*a); })->get();
    }
    error(p.range, q->kind == PatternKind::Wildcard ? "wildcard makes remaining patterns unreachable"
                                                     : "name capture '" + q->name + "' makes remaining patterns unreachable");
}

/// The names a pattern binds, each once (`case x, x:` and alternatives binding different names are errors).
void Builder::checkBindings(const ast::Pattern &p, std::set<std::string> &bound) {
    auto bind = [&](const std::string &n) {
        if (n.empty()) return;
        if (!bound.insert(n).second) error(p.range, "multiple assignments to name '" + n + "' in pattern");
    };
    switch (p.kind) {
    case PatternKind::Capture:
    case PatternKind::Star: bind(p.name); return;
    case PatternKind::As:
        checkBindings(*p.elts[0], bound);
        bind(p.name);
        return;
    case PatternKind::Or: {
        std::set<std::string> first;
        for (size_t i = 0; i < p.elts.size(); ++i) {
            std::set<std::string> mine;
            checkBindings(*p.elts[i], mine);
            if (i == 0) first = mine;
            else if (mine != first) error(p.elts[i]->range, "alternative patterns bind different names");
        }
        for (auto &n : first) bind(n);
        return;
    }
    case PatternKind::Mapping:
        for (auto &e : p.elts) checkBindings(*e, bound);
        bind(p.name);
        return;
    default:
        for (auto &e : p.elts) checkBindings(*e, bound);
        for (auto &e : p.kwdPatterns) checkBindings(*e, bound);
        return;
    }
}

/// A comma list of patterns: one pattern alone (a star is refused there), else a Sequence. `open`: the
/// case's top level or a parenthesized list, where `(p)` is a group; in brackets always a Sequence.
std::shared_ptr<ast::Pattern> Builder::patternList(TP::Pattern_listContext *c, bool open, const SourceRange *outer) {
    std::vector<ast::PatternP> items;
    bool comma = false;
    int stars = 0;
    for (ParseTree *ch : c->children) {
        if (terminalType(ch) == TP::COMMA) {
            comma = true;
            continue;
        }
        auto *it = static_cast<TP::Pattern_itemContext *>(ch);
        if (it->pattern()) {
            items.push_back(pattern(it->pattern()));
            continue;
        }
        auto star = ast::Pattern::make(PatternKind::Star, range(it));
        std::string n(text(it->NAME()));
        star->name = n == "_" ? "" : n;
        if (++stars == 2) error(star->range, "multiple starred names in sequence pattern");
        items.push_back(star);
    }
    if (open && items.size() == 1 && !comma) {
        if (items[0]->kind == PatternKind::Star) error(items[0]->range, "can't use starred name here");
        return std::const_pointer_cast<ast::Pattern>(items[0]);
    }
    auto seq = ast::Pattern::make(PatternKind::Sequence, outer ? *outer : range(c));
    seq->elts = std::move(items);
    return seq;
}

/// `closed | closed ... as name`.
std::shared_ptr<ast::Pattern> Builder::pattern(TP::PatternContext *c) {
    Nest nest(*this, c);
    auto closed = c->closed_pattern();
    MPattern p = closedPattern(closed[0]);
    if (closed.size() > 1) {
        auto alt = ast::Pattern::make(PatternKind::Or, range(c));
        for (size_t i = 0; i < closed.size(); ++i) {
            MPattern a = i ? closedPattern(closed[i]) : p;
            if (irrefutable(*a) && i + 1 < closed.size()) unreachable(*a);
            alt->elts.push_back(a);
        }
        p = alt;
    }
    if (auto *n = c->NAME()) {
        auto as = ast::Pattern::make(PatternKind::As, range(c));
        as->name = std::string(text(n));
        if (as->name == "_") error(range(n), "cannot use '_' as a target");
        as->elts.push_back(p);
        p = as;
    }
    return p;
}

/// A literal (numbers with an optional sign and imaginary part, strings, None/True/False): a Value pattern.
std::shared_ptr<ast::Pattern> Builder::literalPattern(TP::Closed_patternContext *c, Token *first) {
    auto p = ast::Pattern::make(PatternKind::Value, range(c));
    size_t t = first->getType();
    if (t == TP::STRING) {
        p->value = strings(c);
        if (p->value->kind == ast::ExprKind::JoinedStr) error(p->range, "patterns may only match literals and attribute lookups");
    } else if (t == TP::NONE) {
        p->value = ast::Expr::make(ast::ExprKind::None, range(first));
    } else if (t == TP::TRUE || t == TP::FALSE) {
        auto b = ast::Expr::make(ast::ExprKind::Bool, range(first));
        b->boolValue = t == TP::TRUE;
        p->value = b;
    } else {
        bool neg = t == TP::MINUS;
        Token *num = neg ? terminal(c->children[1]) : first;
        MExpr v = number(num);
        if (neg) {
            auto u = ast::Expr::make(ast::ExprKind::UnaryOp, range(c));
            u->unaryOp = ast::UnaryOpKind::Neg;
            u->a = v;
            v = u;
        }
        if (c->op) v = unsupported(range(c), "complex literal");
        p->value = v;
    }
    return p;
}

std::shared_ptr<ast::Pattern> Builder::closedPattern(TP::Closed_patternContext *c) {
    Token *first = terminal(c->children[0]);
    switch (first->getType()) {
    case TP::OPEN_PAREN: {
        auto *l = c->pattern_list();
        if (!l) return ast::Pattern::make(PatternKind::Sequence, range(c));
        SourceRange r = range(c);
        MPattern p = patternList(l, true, &r);
        return p;
    }
    case TP::OPEN_BRACK: {
        auto *l = c->pattern_list();
        if (!l) return ast::Pattern::make(PatternKind::Sequence, range(c));
        SourceRange r = range(c);
        return patternList(l, false, &r);
    }
    case TP::OPEN_BRACE: return mappingPattern(c);
    case TP::NAME: return namePattern(c);
    default: return literalPattern(c, first);
    }
}

/// `name`, `_`, `a.b.c` and the class patterns `a.b(...)`.
std::shared_ptr<ast::Pattern> Builder::namePattern(TP::Closed_patternContext *c) {
    auto names = c->NAME();
    MExpr dotted = ast::Expr::make(ast::ExprKind::Name, range(names[0]));
    dotted->str = std::string(text(names[0]));
    for (size_t i = 1; i < names.size(); ++i) {
        auto a = ast::Expr::make(ast::ExprKind::Attribute, SourceRange::span(dotted->range, range(names[i])));
        a->a = dotted;
        a->str = std::string(text(names[i]));
        dotted = a;
    }
    if (!c->OPEN_PAREN()) {
        if (names.size() > 1) {
            auto p = ast::Pattern::make(PatternKind::Value, range(c));
            p->value = dotted;
            return p;
        }
        auto p = ast::Pattern::make(dotted->str == "_" ? PatternKind::Wildcard : PatternKind::Capture, range(c));
        if (p->kind == PatternKind::Capture) p->name = dotted->str;
        return p;
    }
    auto p = ast::Pattern::make(PatternKind::Class, range(c));
    p->value = dotted;
    for (auto *a : c->pattern_arg()) {
        if (auto *n = a->NAME()) {
            p->kwdNames.push_back(std::string(text(n)));
            p->kwdPatterns.push_back(pattern(a->pattern()));
            continue;
        }
        if (!p->kwdNames.empty()) error(range(a), "positional patterns follow keyword patterns");
        p->elts.push_back(pattern(a->pattern()));
    }
    return p;
}

/// `{key: pattern, ..., **rest}`: keys are literals or dotted names.
std::shared_ptr<ast::Pattern> Builder::mappingPattern(TP::Closed_patternContext *c) {
    auto p = ast::Pattern::make(PatternKind::Mapping, range(c));
    auto items = c->mapping_item();
    for (size_t i = 0; i < items.size(); ++i) {
        auto *m = items[i];
        if (auto *n = m->NAME()) {
            if (i + 1 < items.size()) error(range(m), "double star pattern must be last in a mapping pattern");
            p->name = std::string(text(n));
            if (p->name == "_") error(range(n), "cannot use '_' as a target");
            continue;
        }
        MPattern key = closedPattern(m->closed_pattern());
        if (key->kind != PatternKind::Value) {
            error(key->range, "mapping pattern keys may only match literals and attribute lookups");
            continue;
        }
        p->keys.push_back(key->value);
        p->elts.push_back(pattern(m->pattern()));
    }
    return p;
}

} // namespace tilec::parse
