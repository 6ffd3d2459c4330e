/// \file
/// Building comprehensions (`[x for x in xs if c]`, `{k: v for ...}`, generator expressions) and lambdas.
/// A lambda becomes a FunctionDef named `<lambda>` whose body returns the expression, so that evaluation
/// binds its parameters exactly as for a def.
#include "parse/ASTBuilder.h"

#include <set>

namespace tilec::parse {

using ast::ExprKind;
using ast::StmtKind;

MExpr Builder::comprehension(ExprKind kind, const SourceRange &r, MExpr elt, MExpr value, TP::Comp_forContext *c) {
    auto e = ast::Expr::make(kind, r);
    if (elt && elt->kind == ExprKind::Starred) error(elt->range, "iterable unpacking cannot be used in comprehension");
    e->a = elt;
    e->b = value;
    while (c) {
        if (c->ASYNC()) return unsupported(r, "asynchronous comprehension");
        ast::Comprehension g;
        g.range = range(c);
        MExpr target = commaList(c->exprlist());
        checkTarget(*target, TargetUse::For);
        g.target = target;
        g.iter = orTest(c->or_test());
        TP::Comp_forContext *next = nullptr;
        for (TP::Comp_iterContext *it = c->comp_iter(); it;) {
            if ((next = it->comp_for())) break;
            auto *ci = it->comp_if();
            g.ifs.push_back(testNocond(ci->test_nocond()));
            it = ci->comp_iter();
        }
        e->generators.push_back(std::move(g));
        c = next;
    }
    return e;
}

MExpr Builder::testNocond(TP::Test_nocondContext *c) {
    if (auto *o = c->or_test()) return orTest(o);
    auto *l = c->lambdef_nocond();
    return lambda(l, l->lambda_params(), testNocond(l->test_nocond()));
}

MExpr Builder::lambda(antlr4::ParserRuleContext *c, TP::Lambda_paramsContext *ps, MExpr body) {
    SourceRange r = range(c);
    auto def = ast::Stmt::make(StmtKind::FunctionDef, r);
    def->name = "<lambda>";
    std::set<std::string> names;
    bool sawStar = false, sawDefault = false;
    if (ps) {
        for (auto *p : ps->lambda_param()) {
            SourceRange pr = range(p);
            if (p->DIV()) continue; // positional-only marker: binding is the same for a compile-time call
            ast::Param prm;
            prm.range = pr;
            if (p->NAME()) prm.name = std::string(text(p->NAME()));
            if (p->STAR()) {
                sawStar = true;
                if (prm.name.empty()) continue;
                prm.kind = ast::Param::VarArgs;
            } else if (p->POWER()) {
                prm.kind = ast::Param::VarKw;
            } else if (sawStar) {
                prm.kind = ast::Param::KwOnly;
                if (p->test()) prm.defaultValue = test(p->test());
            } else if (p->test()) {
                prm.defaultValue = test(p->test());
                sawDefault = true;
            } else if (sawDefault) {
                error(pr, "non-default argument follows default argument");
            }
            if (!names.insert(prm.name).second) error(pr, "duplicate argument '" + prm.name + "' in function definition");
            def->params.push_back(std::move(prm));
        }
    }
    auto ret = ast::Stmt::make(StmtKind::Return, body->range);
    ret->value = body;
    def->body.push_back(ret);
    auto e = ast::Expr::make(ExprKind::Lambda, r);
    e->def = def;
    return e;
}

} // namespace tilec::parse
