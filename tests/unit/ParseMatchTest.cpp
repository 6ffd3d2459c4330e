/// \file
/// The match statement (PEP 634): `match` and `case` are soft keywords (names everywhere but at the start of a
/// match statement and of its case blocks), every pattern form's tree, and what Python refuses before running.
#include "ParseTestUtil.h"

#include <gtest/gtest.h>

using namespace tilec;

namespace {

using test::Parsed;

Parsed parse(const std::string &text) { return test::parse(text, "t.py"); }

/// The case blocks of the program's first statement, a match statement.
std::vector<std::shared_ptr<ast::Stmt>> cases(const std::string &text) {
    Parsed p = parse(text);
    EXPECT_TRUE(p.module && !p.module->body.empty()) << p.diags;
    if (!p.module || p.module->body.empty()) return {};
    EXPECT_EQ(p.module->body[0]->kind, ast::StmtKind::Match);
    return p.module->body[0]->handlers;
}

} // namespace

TEST(ParseMatch, MatchAndCaseStayNames) {
    // Names, calls, subscripts, annotations: none of these lines is a match statement (none ends with ':').
    Parsed p = parse("match = 3\ncase = match + 1\nmatch(case)\nmatch[0]: int = 1\nmatch.x = case\n"
                     "def match(case):\n    return case\nclass case:\n    match = 1\n"
                     "for match in range(3):\n    case = match\n");
    ASSERT_TRUE(p.module) << p.diags;
    EXPECT_EQ(p.diags, "");
    EXPECT_EQ(p.module->body[0]->kind, ast::StmtKind::Assign);
    EXPECT_EQ(p.module->body[2]->kind, ast::StmtKind::Expr);
    EXPECT_EQ(p.module->body[3]->kind, ast::StmtKind::AnnAssign);
    EXPECT_EQ(p.module->body[5]->kind, ast::StmtKind::FunctionDef);
}

TEST(ParseMatch, NamesInsideAMatch) {
    // `match` as a subject, a nested match, `case` as a name in a case's body.
    auto cs = cases("match match:\n    case case:\n        match case:\n            case 1: case = 2\n");
    ASSERT_EQ(cs.size(), 1u);
    EXPECT_EQ(cs[0]->pattern->kind, ast::PatternKind::Capture);
    EXPECT_EQ(cs[0]->pattern->name, "case");
    ASSERT_EQ(cs[0]->body.size(), 1u);
    EXPECT_EQ(cs[0]->body[0]->kind, ast::StmtKind::Match);
    EXPECT_EQ(cs[0]->body[0]->handlers[0]->body[0]->kind, ast::StmtKind::Assign);
}

TEST(ParseMatch, EveryPatternForm) {
    auto cs = cases("match x:\n"
                    "    case 1 | -2 | 'a' | None | True:\n        pass\n"
                    "    case [a, *rest, b] if a > b:\n        pass\n"
                    "    case (p, q):\n        pass\n"
                    "    case (p) if p:\n        pass\n"
                    "    case {'k': v, **others}:\n        pass\n"
                    "    case Point(0, y=yy) as pt:\n        pass\n"
                    "    case mod.CONST:\n        pass\n"
                    "    case p, *_:\n        pass\n"
                    "    case _:\n        pass\n");
    ASSERT_EQ(cs.size(), 9u);
    using K = ast::PatternKind;
    EXPECT_EQ(cs[0]->pattern->kind, K::Or);
    EXPECT_EQ(cs[0]->pattern->elts.size(), 5u);
    EXPECT_EQ(cs[1]->pattern->kind, K::Sequence);
    EXPECT_EQ(cs[1]->pattern->elts[1]->kind, K::Star);
    EXPECT_EQ(cs[1]->pattern->elts[1]->name, "rest");
    EXPECT_TRUE(cs[1]->value); // the guard
    EXPECT_EQ(cs[2]->pattern->kind, K::Sequence);
    EXPECT_EQ(cs[3]->pattern->kind, K::Capture); // a group, not a tuple
    EXPECT_EQ(cs[4]->pattern->kind, K::Mapping);
    EXPECT_EQ(cs[4]->pattern->name, "others");
    EXPECT_EQ(cs[4]->pattern->keys.size(), 1u);
    EXPECT_EQ(cs[5]->pattern->kind, K::As);
    EXPECT_EQ(cs[5]->pattern->elts[0]->kind, K::Class);
    EXPECT_EQ(cs[5]->pattern->elts[0]->kwdNames, std::vector<std::string>{"y"});
    EXPECT_EQ(cs[6]->pattern->kind, K::Value);
    EXPECT_EQ(cs[7]->pattern->kind, K::Sequence);
    EXPECT_EQ(cs[7]->pattern->elts[1]->name, ""); // `*_`
    EXPECT_EQ(cs[8]->pattern->kind, K::Wildcard);
}

TEST(ParseMatch, RefusedAsPythonRefuses) {
    struct Case {
        const char *text, *error;
    } bad[] = {
        {"match x:\n    case y:\n        pass\n    case 1:\n        pass\n", "name capture 'y' makes remaining patterns unreachable"},
        {"match x:\n    case _:\n        pass\n    case 1:\n        pass\n", "wildcard makes remaining patterns unreachable"},
        {"match x:\n    case [a, a]:\n        pass\n", "multiple assignments to name 'a' in pattern"},
        {"match x:\n    case [a] | b:\n        pass\n", "alternative patterns bind different names"},
        {"match x:\n    case C(x=1, 2):\n        pass\n", "positional patterns follow keyword patterns"},
        {"match x:\n    case *a:\n        pass\n", "can't use starred name here"},
        {"match x:\n    case [*a, *b]:\n        pass\n", "multiple starred names in sequence pattern"},
        {"match x:\n    case a | 1:\n        pass\n", "name capture 'a' makes remaining patterns unreachable"},
        {"match x:\n    case (_ as w) | 1:\n        pass\n", "wildcard makes remaining patterns unreachable"},
        {"match x:\n    case {**r, 1: a}:\n        pass\n", "double star pattern must be last in a mapping pattern"},
    };
    for (auto &b : bad) {
        Parsed p = parse(b.text);
        EXPECT_FALSE(p.module) << b.text;
        EXPECT_NE(p.diags.find(b.error), std::string::npos) << b.text << "\n" << p.diags;
    }
}
