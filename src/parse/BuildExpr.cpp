/// \file
/// Expressions of the parse tree to ast::Expr: operator precedence is already in the tree's shape; here
/// chains are flattened (`a < b < c`, `a and b and c`), parentheses recorded, literals decoded, and the
/// constructs evaluation does not support become `Unsupported` nodes naming them.
#include "parse/ASTBuilder.h"

#include <unordered_set>

namespace tilec::parse {

using antlr4::ParserRuleContext;
using antlr4::Token;
using antlr4::tree::ParseTree;
using ast::BinOpKind;
using ast::CmpOpKind;
using ast::ExprKind;

namespace {

BinOpKind binOpOf(size_t type) {
    switch (type) {
    case TP::STAR: return BinOpKind::Mul;
    case TP::AT: return BinOpKind::MatMul;
    case TP::DIV: return BinOpKind::Div;
    case TP::MOD: return BinOpKind::Mod;
    case TP::IDIV: return BinOpKind::FloorDiv;
    case TP::ADD: return BinOpKind::Add;
    case TP::MINUS: return BinOpKind::Sub;
    case TP::LSHIFT: return BinOpKind::LShift;
    case TP::RSHIFT: return BinOpKind::RShift;
    case TP::AND_OP: return BinOpKind::BitAnd;
    case TP::XOR: return BinOpKind::BitXor;
    default: return BinOpKind::BitOr;
    }
}

} // namespace

// ---------------------------------------------------------------- positions, errors, nesting

SourceRange Builder::range(ParserRuleContext *c) const {
    Token *start = c->getStart(), *stop = c->getStop();
    if (!stop || stop->getTokenIndex() < start->getTokenIndex()) return src_.tokenRange(start);
    // A block ends in a DEDENT or NEWLINE, which sit after the last real text: end at that text instead.
    size_t i = stop->getTokenIndex();
    while (i > start->getTokenIndex()) {
        size_t ty = stop->getType();
        if (ty != TP::DEDENT && ty != TP::NEWLINE && ty != TP::INDENT) break;
        stop = tokens_.get(--i);
    }
    return src_.range(src_.tokenBegin(start), src_.tokenEnd(stop));
}

void Builder::error(const SourceRange &r, std::string msg) {
    size_t offset = src_.lineStart(r.line) + size_t(r.col - 1);
    errs_.add(SyntaxError::Build, offset, r, std::move(msg));
}

Builder::Nest::Nest(Builder &b, ParserRuleContext *c) : b_(b) {
    if (++b.depth_ > kMaxExprDepth || stackExhausted(b.stackBase_)) {
        --b.depth_;
        SourceRange r = b.src_.tokenRange(c->getStart());
        throw TooDeep{r, b.src_.tokenBegin(c->getStart())};
    }
}

MExpr Builder::unsupported(const SourceRange &r, const char *what) {
    auto e = ast::Expr::make(ExprKind::Unsupported, r);
    e->str = what;
    return e;
}

// ---------------------------------------------------------------- tests and boolean operators

MExpr Builder::namedexpr(TP::Namedexpr_testContext *c) {
    auto *lhs = static_cast<TP::TestContext *>(c->children[0]);
    if (c->children.size() == 1) return test(lhs);
    MExpr target = test(lhs);
    if (target->kind != ExprKind::Name || target->parenthesized)
        error(target->range, "cannot use assignment expressions with this target (only a name)");
    return unsupported(range(c), "walrus");
}

MExpr Builder::test(TP::TestContext *c) {
    auto &ch = c->children;
    auto *first = ruleAs<TP::Or_testContext>(ch[0]);
    if (!first) {
        auto *l = c->lambdef();
        return lambda(l, l->lambda_params(), test(l->test()));
    }
    if (ch.size() == 1) return orTest(first);
    Nest nest(*this, c);
    auto e = ast::Expr::make(ExprKind::IfExp, range(c));
    e->a = orTest(first);
    e->b = orTest(static_cast<TP::Or_testContext *>(ch[2]));
    e->c = test(static_cast<TP::TestContext *>(ch[4]));
    return e;
}

MExpr Builder::orTest(TP::Or_testContext *c) {
    auto &ch = c->children;
    if (ch.size() == 1) return expr(static_cast<TP::ExprContext *>(ch[0]));
    Nest nest(*this, c);
    if (terminalType(ch[0]) == TP::NOT) {
        auto e = ast::Expr::make(ExprKind::UnaryOp, range(c));
        e->unaryOp = ast::UnaryOpKind::Not;
        e->a = orTest(static_cast<TP::Or_testContext *>(ch[1]));
        return e;
    }
    if (size_t op = terminalType(ch[1])) return boolOp(c, op);
    return comparison(c);
}

/// `a and b and c` parses as ((a and b) and c): one BoolOp with the operands in order.
MExpr Builder::boolOp(TP::Or_testContext *c, size_t op) {
    std::vector<TP::Or_testContext *> operands;
    TP::Or_testContext *left = c;
    while (left->children.size() == 3 && terminalType(left->children[1]) == op) {
        operands.push_back(static_cast<TP::Or_testContext *>(left->children[2]));
        left = static_cast<TP::Or_testContext *>(left->children[0]);
    }
    operands.push_back(left);
    auto e = ast::Expr::make(ExprKind::BoolOp, range(c));
    e->isAnd = op == TP::AND;
    for (size_t i = operands.size(); i-- > 0;) e->elts.push_back(orTest(operands[i]));
    return e;
}

/// `a < b <= c` parses as ((a < b) <= c): one Compare with the operands and operators in order.
MExpr Builder::comparison(TP::Or_testContext *c) {
    std::vector<TP::Or_testContext *> operands;
    std::vector<TP::Comp_opContext *> ops;
    TP::Or_testContext *left = c;
    while (left->children.size() == 3) {
        auto *op = ruleAs<TP::Comp_opContext>(left->children[1]);
        if (!op) break;
        ops.push_back(op);
        operands.push_back(static_cast<TP::Or_testContext *>(left->children[2]));
        left = static_cast<TP::Or_testContext *>(left->children[0]);
    }
    operands.push_back(left);
    auto e = ast::Expr::make(ExprKind::Compare, range(c));
    for (size_t i = operands.size(); i-- > 0;) {
        MExpr x = orTest(operands[i]);
        // The grammar lets `not` through as an operand (`a == not b`); Python does not.
        if (x->kind == ExprKind::UnaryOp && x->unaryOp == ast::UnaryOpKind::Not && !x->parenthesized)
            error(x->range, "invalid syntax: 'not' in a comparison needs parentheses");
        e->elts.push_back(x);
    }
    for (size_t i = ops.size(); i-- > 0;) {
        auto &oc = ops[i]->children;
        size_t t0 = terminalType(oc[0]);
        CmpOpKind k = CmpOpKind::Eq;
        switch (t0) {
        case TP::LT: k = CmpOpKind::Lt; break;
        case TP::GT: k = CmpOpKind::Gt; break;
        case TP::GE: k = CmpOpKind::GtE; break;
        case TP::LE: k = CmpOpKind::LtE; break;
        case TP::NE: k = CmpOpKind::NotEq; break;
        case TP::IN: k = CmpOpKind::In; break;
        case TP::NOT: k = CmpOpKind::NotIn; break;
        case TP::IS: k = oc.size() == 2 ? CmpOpKind::IsNot : CmpOpKind::Is; break;
        default: break;
        }
        e->cmpOps.push_back(k);
    }
    return e;
}

// ---------------------------------------------------------------- the expr rule

MExpr Builder::expr(TP::ExprContext *c) {
    auto &ch = c->children;
    if (Token *first = terminal(ch[0])) {
        switch (first->getType()) {
        case TP::NAME: {
            auto e = ast::Expr::make(ExprKind::Name, range(first));
            e->str = std::string(text(first));
            return e;
        }
        case TP::INTEGER: case TP::FLOAT_NUMBER: case TP::IMAG_NUMBER: return number(first);
        case TP::STRING: return strings(c);
        case TP::ELLIPSIS: return ast::Expr::make(ExprKind::Ellipsis, range(first));
        case TP::NONE: return ast::Expr::make(ExprKind::None, range(first));
        case TP::TRUE: case TP::FALSE: {
            auto e = ast::Expr::make(ExprKind::Bool, range(first));
            e->boolValue = first->getType() == TP::TRUE;
            return e;
        }
        default: break;
        }
        Nest nest(*this, c);
        switch (first->getType()) {
        case TP::OPEN_PAREN:
            if (auto *y = ruleAs<TP::Yield_exprContext>(ch[1])) {
                MExpr e = yieldExpr(y);
                e->range = range(c);
                e->parenthesized = true;
                return e;
            }
            return bracketed(c, ExprKind::Tuple);
        case TP::OPEN_BRACK: return bracketed(c, ExprKind::List);
        case TP::OPEN_BRACE: return braces(c);
        case TP::AWAIT: return unsupported(range(c), "await");
        default: {
            auto e = ast::Expr::make(ExprKind::UnaryOp, range(c));
            size_t t = first->getType();
            e->unaryOp = t == TP::MINUS ? ast::UnaryOpKind::Neg : t == TP::ADD ? ast::UnaryOpKind::Pos : ast::UnaryOpKind::Invert;
            e->a = expr(static_cast<TP::ExprContext *>(ch[1]));
            return e;
        }
        }
    }
    // A suffix alternative: `e.name`, `e(args)`, `e[subscripts]` or a binary operator.
    Nest nest(*this, c);
    auto *lhs = static_cast<TP::ExprContext *>(ch[0]);
    size_t op = terminalType(ch[1]);
    SourceRange r = range(c);
    switch (op) {
    case TP::DOT: {
        auto e = ast::Expr::make(ExprKind::Attribute, r);
        e->a = expr(lhs);
        e->str = std::string(text(terminal(ch[2])));
        return e;
    }
    case TP::OPEN_PAREN: return arguments(expr(lhs), ruleAs<TP::ArglistContext>(ch[2]), r);
    case TP::OPEN_BRACK: {
        auto e = ast::Expr::make(ExprKind::Subscript, r);
        e->a = expr(lhs);
        e->b = subscripts(static_cast<TP::SubscriptlistContext *>(ch[2]));
        return e;
    }
    default: {
        auto e = ast::Expr::make(ExprKind::BinOp, r);
        e->binOp = op == TP::POWER ? BinOpKind::Pow : binOpOf(op);
        e->a = expr(lhs);
        e->b = expr(static_cast<TP::ExprContext *>(ch[2]));
        return e;
    }
    }
}

MExpr Builder::starExpr(TP::Star_exprContext *c) {
    auto e = ast::Expr::make(ExprKind::Starred, range(c));
    e->a = expr(static_cast<TP::ExprContext *>(c->children[1]));
    return e;
}

// ---------------------------------------------------------------- primaries

MExpr Builder::number(Token *t) {
    std::string_view s = text(t);
    SourceRange r = range(t);
    if (t->getType() == TP::IMAG_NUMBER) return unsupported(r, "complex literal");
    if (t->getType() == TP::FLOAT_NUMBER) {
        auto e = ast::Expr::make(ExprKind::Float, r);
        e->floatValue = parseFloat(s);
        return e;
    }
    auto e = ast::Expr::make(ExprKind::Int, r);
    std::string err;
    if (!parseInteger(s, e->intValue, err)) error(r, err);
    return e;
}

/// Adjacent string literals concatenate; with an f-string among them they make one JoinedStr (FStrings.cpp).
/// Bytes are not evaluated.
MExpr Builder::strings(ParserRuleContext *c) {
    SourceRange r = range(c);
    std::string value;
    std::vector<ast::ExprP> parts;
    bool anyFormat = false, anyBytes = false, anyText = false, anyNamed = false;
    for (ParseTree *p : c->children) {
        Token *t = terminal(p);
        StringToken st = splitString(text(t));
        (st.bytes ? anyBytes : anyText) = true;
        if (st.format) {
            anyFormat = true;
            fstringParts(t, st.bodyBegin, st.bodyEnd, st.raw, parts, value);
            continue;
        }
        StringPiece piece;
        std::string err;
        size_t pos = 0;
        if (!decodeString(text(t), piece, err, pos)) {
            size_t at = src_.tokenBegin(t) + pos;
            error(src_.range(at, at + 2), err);
        }
        anyNamed |= piece.namedEscape;
        value += piece.value;
    }
    if (anyBytes && anyText) error(r, "cannot mix bytes and nonbytes literals");
    if (anyBytes) return unsupported(r, "bytes literal");
    if (anyNamed) return unsupported(r, "\\N{...} escape");
    if (!anyFormat) {
        auto e = ast::Expr::make(ExprKind::Str, r);
        e->str = std::move(value);
        return e;
    }
    auto e = ast::Expr::make(ExprKind::JoinedStr, r);
    e->elts = std::move(parts);
    if (!value.empty()) {
        auto s = ast::Expr::make(ExprKind::Str, r);
        s->str = std::move(value);
        e->elts.push_back(s);
    }
    return e;
}

/// `( ... )` or `[ ... ]`: a tuple/list display, a comprehension, or one parenthesized expression.
MExpr Builder::bracketed(TP::ExprContext *c, ExprKind kind) {
    SourceRange r = range(c);
    auto *list = ruleAs<TP::Testlist_compContext>(c->children[1]);
    bool tuple = kind == ExprKind::Tuple;
    if (!list) {
        auto e = ast::Expr::make(kind, r);
        e->parenthesized = tuple;
        return e;
    }
    if (auto *cf = list->comp_for()) {
        ParseTree *first = list->children[0];
        MExpr elt = ruleAs<TP::Namedexpr_testContext>(first) ? namedexpr(ruleAs<TP::Namedexpr_testContext>(first))
                                                            : starExpr(ruleAs<TP::Star_exprContext>(first));
        return comprehension(tuple ? ExprKind::GeneratorExp : ExprKind::ListComp, r, elt, nullptr, cf);
    }
    std::vector<MExpr> items;
    bool comma = false;
    for (ParseTree *ch : list->children) {
        if (auto *n = ruleAs<TP::Namedexpr_testContext>(ch)) items.push_back(namedexpr(n));
        else if (auto *s = ruleAs<TP::Star_exprContext>(ch)) items.push_back(starExpr(s));
        else comma = true;
    }
    if (tuple && items.size() == 1 && !comma) {
        MExpr e = items[0];
        if (e->kind == ExprKind::Starred) error(e->range, "cannot use starred expression here");
        e->parenthesized = true;
        return e;
    }
    auto e = ast::Expr::make(kind, r);
    e->parenthesized = tuple;
    e->elts.assign(items.begin(), items.end());
    return e;
}

/// `{ ... }`: a dict or set display, or a comprehension.
MExpr Builder::braces(TP::ExprContext *c) {
    SourceRange r = range(c);
    auto *m = ruleAs<TP::DictorsetmakerContext>(c->children[1]);
    if (!m) return ast::Expr::make(ExprKind::Dict, r);
    auto items = m->dict_item();
    auto isDictItem = [](TP::Dict_itemContext *d) { return d->COLON() || d->POWER(); };
    bool dict = isDictItem(items[0]);
    if (auto *cf = m->comp_for()) {
        auto *d = items[0];
        if (d->POWER()) {
            error(range(d), "dict unpacking cannot be used in dict comprehension");
            return unsupported(r, "dict comprehension");
        }
        if (d->WALRUS()) return unsupported(r, "walrus");
        if (dict) return comprehension(ExprKind::DictComp, r, test(d->test(0)), test(d->test(1)), cf);
        MExpr elt = d->star_expr() ? starExpr(d->star_expr()) : test(d->test(0));
        return comprehension(ExprKind::SetComp, r, elt, nullptr, cf);
    }
    auto e = ast::Expr::make(dict ? ExprKind::Dict : ExprKind::Set, r);
    for (auto *d : items) {
        if (isDictItem(d) != dict) {
            error(range(d), dict ? "expected 'key: value' in a dict literal" : "expected a set element, not 'key: value'");
            continue;
        }
        if (d->POWER()) {
            e->elts.push_back(nullptr);
            e->values.push_back(expr(d->expr()));
        } else if (d->COLON()) {
            e->elts.push_back(test(d->test(0)));
            e->values.push_back(test(d->test(1)));
        } else if (d->WALRUS()) {
            e->elts.push_back(unsupported(range(d), "walrus"));
        } else if (d->star_expr()) {
            e->elts.push_back(starExpr(d->star_expr()));
        } else {
            e->elts.push_back(test(d->test(0)));
        }
    }
    return e;
}

MExpr Builder::subscripts(TP::SubscriptlistContext *c) {
    auto subs = c->subscript();
    if (subs.size() == 1 && c->children.size() == 1) return subscript(subs[0]);
    auto e = ast::Expr::make(ExprKind::Tuple, range(c));
    for (auto *s : subs) e->elts.push_back(subscript(s));
    return e;
}

MExpr Builder::subscript(TP::SubscriptContext *c) {
    if (auto *s = c->star_expr()) return starExpr(s);
    if (c->WALRUS()) return unsupported(range(c), "walrus");
    auto *tail = c->slice_tail();
    TP::TestContext *lower = c->test().empty() ? nullptr : c->test(0);
    if (!tail) return test(lower);
    auto e = ast::Expr::make(ExprKind::Slice, range(c));
    if (lower) e->a = test(lower);
    int colons = 0;
    for (ParseTree *ch : tail->children) {
        if (terminalType(ch) == TP::COLON) ++colons;
        else if (auto *t = ruleAs<TP::TestContext>(ch)) (colons == 1 ? e->b : e->c) = test(t);
    }
    return e;
}

// ---------------------------------------------------------------- calls

MExpr Builder::arguments(MExpr callee, TP::ArglistContext *c, const SourceRange &r) {
    auto call = ast::Expr::make(ExprKind::Call, r);
    call->a = callee;
    if (!c) return call;
    auto args = c->argument();
    bool sawKeyword = false, sawKwUnpack = false;
    std::unordered_set<std::string> seen;
    for (auto *a : args) {
        SourceRange ar = range(a);
        size_t first = terminalType(a->children[0]);
        if (first == TP::POWER) {
            call->keywords.push_back({"", test(a->test(0)), ar});
            sawKwUnpack = true;
            continue;
        }
        if (first == TP::STAR) {
            if (sawKwUnpack) error(ar, "iterable argument unpacking follows keyword argument unpacking");
            auto s = ast::Expr::make(ExprKind::Starred, ar);
            s->a = test(a->test(0));
            call->elts.push_back(s);
            continue;
        }
        if (a->ASSIGN()) {
            MExpr name = test(a->test(0));
            if (name->kind != ExprKind::Name || name->parenthesized) {
                error(name->range, "expression cannot contain assignment, perhaps you meant \"==\"?");
                continue;
            }
            if (!seen.insert(name->str).second) error(ar, "keyword argument repeated: " + name->str);
            call->keywords.push_back({name->str, test(a->test(1)), ar});
            sawKeyword = true;
            continue;
        }
        MExpr v;
        if (a->comp_for()) {
            if (args.size() > 1) error(ar, "generator expression must be parenthesized");
            v = comprehension(ExprKind::GeneratorExp, ar, test(a->test(0)), nullptr, a->comp_for());
        } else if (a->WALRUS()) {
            v = unsupported(ar, "walrus");
        } else {
            v = test(a->test(0));
        }
        if (sawKwUnpack) error(ar, "positional argument follows keyword argument unpacking");
        else if (sawKeyword) error(ar, "positional argument follows keyword argument");
        call->elts.push_back(v);
    }
    return call;
}

// ---------------------------------------------------------------- lists and yield

MExpr Builder::commaList(ParserRuleContext *c) {
    std::vector<MExpr> items;
    bool comma = false;
    for (ParseTree *ch : c->children) {
        if (auto *t = ruleAs<TP::TestContext>(ch)) items.push_back(test(t));
        else if (auto *n = ruleAs<TP::Namedexpr_testContext>(ch)) items.push_back(namedexpr(n));
        else if (auto *s = ruleAs<TP::Star_exprContext>(ch)) items.push_back(starExpr(s));
        else if (auto *x = ruleAs<TP::ExprContext>(ch)) items.push_back(expr(x));
        else if (terminalType(ch) == TP::COMMA) comma = true;
    }
    if (items.size() == 1 && !comma) return items[0];
    auto e = ast::Expr::make(ExprKind::Tuple, range(c));
    e->elts.assign(items.begin(), items.end());
    return e;
}

MExpr Builder::yieldExpr(TP::Yield_exprContext *c) {
    if (funcDepth == 0) error(range(c), "'yield' outside function");
    return unsupported(range(c), "yield");
}

// ---------------------------------------------------------------- assignment targets

void Builder::checkTarget(const ast::Expr &e, TargetUse use, bool nested) {
    const char *verb = use == TargetUse::Del ? "delete" : "assign to";
    auto fail = [&](const std::string &what) {
        if (use == TargetUse::AugAssign)
            error(e.range, "'" + what + "' is an illegal expression for augmented assignment");
        else
            error(e.range, std::string("cannot ") + verb + " " + what);
    };
    switch (e.kind) {
    case ExprKind::Name: case ExprKind::Attribute: case ExprKind::Subscript:
        return;
    case ExprKind::Tuple: case ExprKind::List: {
        if (use == TargetUse::AugAssign) return fail(e.kind == ExprKind::Tuple ? "tuple" : "list");
        if (use == TargetUse::AnnAssign) {
            error(e.range, std::string("only single target (not ") + (e.kind == ExprKind::Tuple ? "tuple" : "list") +
                               ") can be annotated");
            return;
        }
        if (e.kind == ExprKind::Tuple && e.elts.empty() && use == TargetUse::Del) return;
        int stars = 0;
        for (const ast::ExprP &x : e.elts) {
            if (x->kind == ExprKind::Starred) ++stars;
            checkTarget(*x, use, true);
        }
        if (stars > 1) error(e.range, "multiple starred expressions in assignment");
        return;
    }
    case ExprKind::Starred:
        if (!nested || use == TargetUse::Del) {
            error(e.range, use == TargetUse::Del ? "cannot delete starred" : "starred assignment target must be in a list or tuple");
            return;
        }
        checkTarget(*e.a, use, true);
        return;
    case ExprKind::Int: case ExprKind::Float: case ExprKind::Str: case ExprKind::Dict: case ExprKind::Set:
        return fail(e.kind == ExprKind::Dict ? "dict literal" : e.kind == ExprKind::Set ? "set display" : "literal");
    case ExprKind::Bool: return fail(e.boolValue ? "True" : "False");
    case ExprKind::None: return fail("None");
    case ExprKind::Ellipsis: return fail("ellipsis");
    case ExprKind::Call: return fail("function call");
    case ExprKind::Compare: return fail("comparison");
    case ExprKind::IfExp: return fail("conditional expression");
    case ExprKind::Slice: return fail("slice");
    case ExprKind::Unsupported: return fail(e.str);
    case ExprKind::Lambda: return fail("lambda");
    case ExprKind::ListComp: return fail("list comprehension");
    case ExprKind::SetComp: return fail("set comprehension");
    case ExprKind::DictComp: return fail("dict comprehension");
    case ExprKind::GeneratorExp: return fail("generator expression");
    default: return fail("expression");
    }
}

} // namespace tilec::parse
