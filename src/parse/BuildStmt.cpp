/// \file
/// Statements of the parse tree to ast::Stmt, and the builder's entry points. Statements evaluation does
/// not support (try, raise, del, async ...) become `Unsupported` statements; their bodies are
/// still walked so the errors Python reports before running anything (invalid targets, `return` outside a
/// function) are reported wherever they are.
#include "parse/ASTBuilder.h"

#include <set>

namespace tilec::parse {

using antlr4::ParserRuleContext;
using antlr4::tree::ParseTree;
using ast::ExprKind;
using ast::StmtKind;

namespace {

ast::BinOpKind augOpOf(size_t type) {
    switch (type) {
    case TP::ADD_ASSIGN: return ast::BinOpKind::Add;
    case TP::SUB_ASSIGN: return ast::BinOpKind::Sub;
    case TP::MULT_ASSIGN: return ast::BinOpKind::Mul;
    case TP::AT_ASSIGN: return ast::BinOpKind::MatMul;
    case TP::DIV_ASSIGN: return ast::BinOpKind::Div;
    case TP::MOD_ASSIGN: return ast::BinOpKind::Mod;
    case TP::AND_ASSIGN: return ast::BinOpKind::BitAnd;
    case TP::OR_ASSIGN: return ast::BinOpKind::BitOr;
    case TP::XOR_ASSIGN: return ast::BinOpKind::BitXor;
    case TP::LSHIFT_ASSIGN: return ast::BinOpKind::LShift;
    case TP::RSHIFT_ASSIGN: return ast::BinOpKind::RShift;
    case TP::POWER_ASSIGN: return ast::BinOpKind::Pow;
    default: return ast::BinOpKind::FloorDiv;
    }
}

/// Saves and restores the function/loop context around a nested body.
struct Scope {
    Builder &b;
    int func, loop;
    Scope(Builder &b, int newFunc, int newLoop) : b(b), func(b.funcDepth), loop(b.loopDepth) {
        b.funcDepth = newFunc;
        b.loopDepth = newLoop;
    }
    ~Scope() {
        b.funcDepth = func;
        b.loopDepth = loop;
    }
};

} // namespace

// ---------------------------------------------------------------- blocks

void Builder::stmt(TP::StmtContext *c, ast::Body &out) {
    if (auto *s = ruleAs<TP::Simple_stmtsContext>(c->children[0])) {
        for (ParseTree *x : s->children)
            if (auto *st = ruleAs<TP::Simple_stmtContext>(x)) simpleStmt(st, out);
        return;
    }
    if (MStmt s = compoundStmt(static_cast<TP::Compound_stmtContext *>(c->children[0]), {})) out.push_back(s);
}

void Builder::block(TP::BlockContext *c, ast::Body &out) {
    if (auto *s = ruleAs<TP::Simple_stmtsContext>(c->children[0])) {
        for (ParseTree *x : s->children)
            if (auto *st = ruleAs<TP::Simple_stmtContext>(x)) simpleStmt(st, out);
        return;
    }
    Nest nest(*this, c);
    for (ParseTree *x : c->children)
        if (auto *st = ruleAs<TP::StmtContext>(x)) stmt(st, out);
}

void Builder::loopBody(TP::BlockContext *c, ast::Body &out) {
    ++loopDepth;
    block(c, out);
    --loopDepth;
}

void Builder::functionBody(TP::BlockContext *c, ast::Body &out) {
    Scope scope(*this, funcDepth + 1, 0);
    block(c, out);
}

/// Walks the blocks of an unsupported statement for their errors; the statements are dropped.
void Builder::ignoredBlocks(ParserRuleContext *c) {
    for (ParseTree *ch : c->children) {
        ast::Body scratch;
        if (auto *b = ruleAs<TP::BlockContext>(ch)) block(b, scratch);
        else if (ruleAs<TP::Except_clauseContext>(ch) || ruleAs<TP::Else_clauseContext>(ch) ||
                 ruleAs<TP::Finally_clauseContext>(ch))
            ignoredBlocks(static_cast<ParserRuleContext *>(ch));
    }
}

MStmt Builder::unsupportedStmt(ParserRuleContext *c, const char *what) {
    auto s = ast::Stmt::make(StmtKind::Unsupported, range(c));
    s->name = what;
    return s;
}

/// A class: its bases and keywords are the arguments of a call of its name (`value`); the name is also its
/// target (bound to an error value when the statement is skipped). Its body is not a function's: `return`
/// is an error there and loops outside do not reach in.
MStmt Builder::classStmt(TP::ClassdefContext *c, std::vector<ast::ExprP> decorators) {
    auto s = ast::Stmt::make(StmtKind::ClassDef, range(c));
    s->name = std::string(text(c->NAME()));
    s->decorators = std::move(decorators);
    auto name = ast::Expr::make(ExprKind::Name, range(c->NAME()));
    name->str = s->name;
    s->targets.push_back(name);
    s->value = arguments(name, c->arglist(), range(c->NAME()));
    Scope scope(*this, 0, 0);
    block(c->block(), s->body);
    return s;
}

// ---------------------------------------------------------------- simple statements

void Builder::simpleStmt(TP::Simple_stmtContext *c, ast::Body &out) {
    SourceRange r = range(c);
    auto *first = c->children[0];
    auto *rule = static_cast<ParserRuleContext *>(first);
    switch (rule->getRuleIndex()) {
    case TP::RuleExpr_stmt: out.push_back(exprStmt(static_cast<TP::Expr_stmtContext *>(rule))); return;
    case TP::RulePass_stmt: out.push_back(ast::Stmt::make(StmtKind::Pass, r)); return;
    case TP::RuleBreak_stmt:
    case TP::RuleContinue_stmt: {
        bool brk = rule->getRuleIndex() == TP::RuleBreak_stmt;
        if (loopDepth == 0) error(r, brk ? "'break' outside loop" : "'continue' not properly in loop");
        out.push_back(ast::Stmt::make(brk ? StmtKind::Break : StmtKind::Continue, r));
        return;
    }
    case TP::RuleReturn_stmt: {
        if (funcDepth == 0) error(r, "'return' outside function");
        auto s = ast::Stmt::make(StmtKind::Return, r);
        if (auto *v = c->return_stmt()->testlist_star_expr()) s->value = commaList(v);
        out.push_back(s);
        return;
    }
    case TP::RuleYield_expr: {
        auto s = ast::Stmt::make(StmtKind::Expr, r);
        s->value = yieldExpr(c->yield_expr());
        out.push_back(s);
        return;
    }
    case TP::RuleAssert_stmt: {
        auto s = ast::Stmt::make(StmtKind::Assert, r);
        auto tests = c->assert_stmt()->test();
        s->value = test(tests[0]);
        if (tests.size() > 1) s->message = test(tests[1]);
        out.push_back(s);
        return;
    }
    case TP::RuleImport_name: {
        auto s = ast::Stmt::make(StmtKind::Import, r);
        for (auto *d : c->import_name()->dotted_as_name()) {
            ast::Alias a;
            for (auto *n : d->dotted_name()->NAME()) a.name += (a.name.empty() ? "" : ".") + std::string(text(n));
            if (auto *as = d->NAME()) a.asName = std::string(text(as));
            a.range = range(d);
            s->names.push_back(a);
        }
        out.push_back(s);
        return;
    }
    case TP::RuleImport_from: out.push_back(importFrom(c->import_from())); return;
    case TP::RuleDel_stmt: {
        MExpr targets = commaList(c->del_stmt()->exprlist());
        checkTarget(*targets, TargetUse::Del);
        out.push_back(unsupportedStmt(c, "del"));
        return;
    }
    case TP::RuleRaise_stmt: {
        auto s = ast::Stmt::make(StmtKind::Raise, r);
        auto tests = c->raise_stmt()->test();
        if (!tests.empty()) s->value = test(tests[0]); // `from CAUSE` is not kept: the cause changes no value
        out.push_back(s);
        return;
    }
    case TP::RuleGlobal_stmt:
    case TP::RuleNonlocal_stmt: {
        bool global = rule->getRuleIndex() == TP::RuleGlobal_stmt;
        if (!global && funcDepth == 0) error(r, "nonlocal declaration not allowed at module level");
        auto s = ast::Stmt::make(global ? StmtKind::Global : StmtKind::Nonlocal, r);
        for (ParseTree *ch : rule->children)
            if (auto *t = dynamic_cast<antlr4::tree::TerminalNode *>(ch); t && t->getSymbol()->getType() == TP::NAME)
                s->names.push_back({std::string(text(t)), "", range(t)});
        out.push_back(s);
        return;
    }
    default: break;
    }
    TILEC_ASSERT(false, "unexpected simple statement in the parse tree");
}

MStmt Builder::exprStmt(TP::Expr_stmtContext *c) {
    SourceRange r = range(c);
    // The sides in source order: testlist_star_expr or yield_expr children (the '=' are terminals).
    std::vector<MExpr> sides;
    for (ParseTree *ch : c->children) {
        if (auto *t = ruleAs<TP::Testlist_star_exprContext>(ch)) sides.push_back(commaList(t));
        else if (auto *y = ruleAs<TP::Yield_exprContext>(ch)) sides.push_back(yieldExpr(y));
    }
    auto *second = c->children.size() > 1 ? c->children[1] : nullptr;
    if (auto *ann = second ? ruleAs<TP::AnnassignContext>(second) : nullptr) {
        auto s = ast::Stmt::make(StmtKind::AnnAssign, r);
        checkTarget(*sides[0], TargetUse::AnnAssign);
        s->targets.push_back(sides[0]);
        s->annotation = test(ann->test());
        if (auto *v = ann->testlist_star_expr()) s->value = commaList(v);
        else if (auto *y = ann->yield_expr()) s->value = yieldExpr(y);
        return s;
    }
    if (auto *aug = second ? ruleAs<TP::AugassignContext>(second) : nullptr) {
        auto s = ast::Stmt::make(StmtKind::AugAssign, r);
        checkTarget(*sides[0], TargetUse::AugAssign);
        s->targets.push_back(sides[0]);
        s->augOp = augOpOf(aug->op->getType());
        s->value = sides.back();
        return s;
    }
    if (sides.size() == 1) {
        auto s = ast::Stmt::make(StmtKind::Expr, r);
        if (sides[0]->kind == ExprKind::Starred) error(sides[0]->range, "cannot use starred expression here");
        s->value = sides[0];
        return s;
    }
    auto s = ast::Stmt::make(StmtKind::Assign, r);
    for (size_t i = 0; i + 1 < sides.size(); ++i) {
        checkTarget(*sides[i], TargetUse::Assign);
        s->targets.push_back(sides[i]);
    }
    s->value = sides.back();
    return s;
}

MStmt Builder::importFrom(TP::Import_fromContext *c) {
    auto s = ast::Stmt::make(StmtKind::ImportFrom, range(c));
    for (auto *d : c->import_dots()) s->name += std::string(text(d->getStart()));
    if (auto *dn = c->dotted_name()) {
        std::string mod;
        for (auto *n : dn->NAME()) mod += (mod.empty() ? "" : ".") + std::string(text(n));
        s->name += mod;
    }
    if (c->STAR()) {
        s->names.push_back({"*", "", range(c->STAR())});
        return s;
    }
    for (auto *a : c->import_as_name()) {
        auto names = a->NAME();
        ast::Alias al{std::string(text(names[0])), names.size() > 1 ? std::string(text(names[1])) : "", range(a)};
        s->names.push_back(al);
    }
    return s;
}

// ---------------------------------------------------------------- compound statements

MStmt Builder::compoundStmt(TP::Compound_stmtContext *c, std::vector<ast::ExprP> decorators) {
    auto *inner = static_cast<ParserRuleContext *>(c->children[0]);
    Nest nest(*this, inner);
    switch (inner->getRuleIndex()) {
    case TP::RuleIf_stmt: return ifStmt(c->if_stmt());
    case TP::RuleWhile_stmt: return whileStmt(c->while_stmt());
    case TP::RuleFor_stmt: return forStmt(c->for_stmt());
    case TP::RuleWith_stmt: return withStmt(c->with_stmt());
    case TP::RuleFuncdef: return funcDef(c->funcdef(), std::move(decorators));
    case TP::RuleTry_stmt: return tryStmt(c->try_stmt());
    case TP::RuleClassdef: return classStmt(c->classdef(), {});
    case TP::RuleMatch_stmt: return matchStmt(c->match_stmt());
    case TP::RuleDecorated: {
        auto *d = c->decorated();
        std::vector<ast::ExprP> decos;
        for (auto *x : d->decorator()) decos.push_back(namedexpr(x->namedexpr_test()));
        MStmt s;
        if (auto *f = d->funcdef(); f && !d->ASYNC()) {
            s = funcDef(f, std::move(decos));
        } else if (auto *k = d->classdef()) {
            s = classStmt(k, std::move(decos));
        } else {
            Scope scope(*this, funcDepth + 1, 0);
            ignoredBlocks(d->funcdef());
            s = unsupportedStmt(d, "async def");
            // From `async`, past the decorators, as for the other definitions (Python's ranges).
            s->range = SourceRange::span(range(d->ASYNC()), range(d->funcdef()));
        }
        return s;
    }
    case TP::RuleAsync_stmt: {
        auto *a = c->async_stmt();
        if (auto *f = a->funcdef()) {
            Scope scope(*this, funcDepth + 1, 0);
            ignoredBlocks(f);
            return unsupportedStmt(a, "async def");
        }
        if (auto *w = a->with_stmt()) {
            ignoredBlocks(w);
            return unsupportedStmt(a, "async with");
        }
        ++loopDepth;
        ignoredBlocks(a->for_stmt());
        --loopDepth;
        return unsupportedStmt(a, "async for");
    }
    default: break;
    }
    TILEC_ASSERT(false, "unexpected compound statement in the parse tree");
    return nullptr;
}

/// try / except TYPE as NAME / else / finally.
MStmt Builder::tryStmt(TP::Try_stmtContext *c) {
    auto s = ast::Stmt::make(StmtKind::Try, range(c));
    block(c->block(), s->body);
    for (auto *h : c->except_clause()) {
        auto e = ast::Stmt::make(StmtKind::ExceptHandler, range(h));
        if (h->test()) e->value = test(h->test());
        if (h->NAME()) e->name = std::string(text(h->NAME()));
        block(h->block(), e->body);
        s->handlers.push_back(e);
    }
    if (auto *e = c->else_clause()) block(e->block(), s->orelse);
    if (auto *f = c->finally_clause()) block(f->block(), s->finalbody);
    return s;
}

MStmt Builder::ifStmt(TP::If_stmtContext *c) {
    auto s = ast::Stmt::make(StmtKind::If, range(c));
    s->value = namedexpr(c->namedexpr_test());
    block(c->block(), s->body);
    // elif chains nest: each `elif` is an If alone in the orelse of the one before.
    ast::Body *orelse = &s->orelse;
    int chain = 0;
    for (auto *e : c->elif_clause()) {
        if (++chain > kMaxElifChain)
            throw TooDeep{range(e->ELIF()), src_.tokenBegin(e->getStart()), "too many 'elif' clauses in one 'if' statement"};
        SourceRange r = SourceRange::span(range(e), range(c));
        auto inner = ast::Stmt::make(StmtKind::If, r);
        inner->value = namedexpr(e->namedexpr_test());
        block(e->block(), inner->body);
        orelse->push_back(inner);
        orelse = &inner->orelse;
    }
    if (auto *e = c->else_clause()) block(e->block(), *orelse);
    return s;
}

MStmt Builder::whileStmt(TP::While_stmtContext *c) {
    auto s = ast::Stmt::make(StmtKind::While, range(c));
    s->value = namedexpr(c->namedexpr_test());
    loopBody(c->block(), s->body);
    if (auto *e = c->else_clause()) block(e->block(), s->orelse);
    return s;
}

MStmt Builder::forStmt(TP::For_stmtContext *c) {
    auto s = ast::Stmt::make(StmtKind::For, range(c));
    MExpr target = commaList(c->exprlist());
    checkTarget(*target, TargetUse::For);
    s->targets.push_back(target);
    s->value = commaList(c->testlist_star_expr());
    loopBody(c->block(), s->body);
    if (auto *e = c->else_clause()) block(e->block(), s->orelse);
    return s;
}

MStmt Builder::withStmt(TP::With_stmtContext *c) {
    auto s = ast::Stmt::make(StmtKind::With, range(c));
    for (auto *item : c->with_item()) {
        ast::WithItem w;
        w.context = test(item->test());
        if (auto *t = item->expr()) {
            MExpr target = expr(t);
            checkTarget(*target, TargetUse::With);
            w.target = target;
        }
        s->items.push_back(w);
    }
    block(c->block(), s->body);
    return s;
}

MStmt Builder::funcDef(TP::FuncdefContext *c, std::vector<ast::ExprP> decorators) {
    auto s = ast::Stmt::make(StmtKind::FunctionDef, range(c));
    s->name = std::string(text(c->NAME()));
    s->decorators = std::move(decorators);
    params(c->parameters(), s->params);
    if (auto *ret = c->test()) s->returns = test(ret);
    functionBody(c->block(), s->body);
    return s;
}

/// Parameters in Python's order: positional (with `/` after the positional-only ones), `*args` or a bare
/// `*`, keyword-only, `**kwargs`.
void Builder::params(TP::ParametersContext *c, std::vector<ast::Param> &out) {
    bool sawStar = false, sawSlash = false, sawDefault = false, sawVarKw = false, bareStar = false;
    SourceRange bareStarRange;
    std::set<std::string> names;
    for (auto *p : c->param()) {
        SourceRange r = range(p);
        size_t first = terminalType(p->children[0]);
        if (sawVarKw) error(r, "arguments cannot follow var-keyword argument");
        if (first == TP::DIV) {
            if (sawSlash) error(r, "/ may appear only once");
            else if (sawStar) error(r, "/ must be ahead of *");
            else if (out.empty()) error(r, "at least one argument must precede /");
            sawSlash = true;
            continue;
        }
        ast::Param prm;
        prm.range = r;
        auto tests = p->test();
        size_t ti = 0;
        if (p->COLON()) prm.annotation = test(tests[ti++]);
        if (p->ASSIGN()) prm.defaultValue = test(tests[ti++]);
        if (first == TP::STAR) {
            if (sawStar) error(r, "* argument may appear only once");
            sawStar = true;
            if (!p->NAME()) {
                bareStar = true;
                bareStarRange = r;
                continue;
            }
            prm.kind = ast::Param::VarArgs;
        } else if (first == TP::POWER) {
            prm.kind = ast::Param::VarKw;
            sawVarKw = true;
        } else if (sawStar) {
            prm.kind = ast::Param::KwOnly;
            bareStar = false;
        } else if (prm.defaultValue) {
            sawDefault = true;
        } else if (sawDefault) {
            error(r, "non-default argument follows default argument");
        }
        prm.name = std::string(text(p->NAME()));
        if (!names.insert(prm.name).second)
            error(range(p->NAME()), "duplicate argument '" + prm.name + "' in function definition");
        out.push_back(std::move(prm));
    }
    if (bareStar) error(bareStarRange, "named arguments must follow bare *");
}

// ---------------------------------------------------------------- entry points

namespace {

/// Runs the builder; nesting beyond its limits becomes an error instead of a stack overflow.
template <class F> auto guarded(SyntaxErrors &errs, F &&f) -> decltype(f()) {
    try {
        return f();
    } catch (const TooDeep &d) {
        errs.add(SyntaxError::Fatal, d.offset, d.range, d.message);
        return {};
    }
}

} // namespace

ast::Module buildModule(TP::File_inputContext *ctx, antlr4::TokenStream &tokens, const SourceText &src,
                        SyntaxErrors &errs) {
    ast::Module m;
    m.file = src.file();
    Builder b(tokens, src, errs);
    guarded(errs, [&]() -> int {
        for (auto *s : ctx->stmt()) b.stmt(s, m.body);
        return 0;
    });
    return m;
}

ast::ExprP buildExpression(TP::Eval_inputContext *ctx, antlr4::TokenStream &tokens, const SourceText &src,
                           SyntaxErrors &errs, int fstringDepth, uintptr_t stackBase) {
    Builder b(tokens, src, errs, stackBase);
    b.fstringDepth = fstringDepth;
    return guarded(errs, [&]() -> ast::ExprP {
        MExpr e = b.commaList(ctx->testlist_star_expr());
        if (e->kind == ExprKind::Starred) b.error(e->range, "cannot use starred expression here");
        return e;
    });
}

} // namespace tilec::parse
