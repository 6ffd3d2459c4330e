/// \file
/// The parser on correct input: every example file, all of Python 3's syntax, the tree's shape and ranges
/// (checked through ast::dump), literals, and parseExpression.
#include "ParseTestUtil.h"
#include "tilec/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tilec;

namespace {

using test::Parsed;
using test::parse;

/// The dump of a program that must parse.
std::string dumpOf(const std::string &text) {
    Parsed p = parse(text);
    EXPECT_TRUE(p.module) << p.diags;
    return p.module ? ast::dump(*p.module) : "";
}

/// The first statement of a program that must parse.
ast::StmtP first(const std::string &text) {
    Parsed p = parse(text);
    EXPECT_TRUE(p.module && !p.module->body.empty()) << p.diags;
    return p.module && !p.module->body.empty() ? p.module->body[0] : nullptr;
}

/// The value of `x = <expr>`.
ast::ExprP value(const std::string &expr) {
    ast::StmtP s = first("x = " + expr + "\n");
    return s ? s->value : nullptr;
}

std::string readFile(const std::filesystem::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

TEST(Parse, EveryExample) {
    int n = 0;
    for (const auto &entry : std::filesystem::directory_iterator(TILEC_SOURCE_DIR "/examples")) {
        if (entry.path().extension() != ".tile") continue;
        Parsed p = parse(readFile(entry.path()), entry.path().filename().string());
        EXPECT_TRUE(p.module) << entry.path() << ":\n" << p.diags;
        EXPECT_EQ(p.diags, "");
        ++n;
    }
    EXPECT_GE(n, 6);
}

TEST(Parse, SmallProgramDump) {
    EXPECT_EQ(dumpOf("import tilelang.language as T\n"
                     "def f(a, b=2):\n"
                     "    return a + b * 3\n"),
              "Module\n"
              "  Import @1:1-1:30\n"
              "    alias tilelang.language as T @1:8-1:30\n"
              "  FunctionDef f @2:1-3:21\n"
              "    param a @2:7-2:8\n"
              "    param b @2:10-2:13\n"
              "      default: Int 2 @2:12-2:13\n"
              "    body:\n"
              "      Return @3:5-3:21\n"
              "        value: BinOp + @3:12-3:21\n"
              "          Name 'a' @3:12-3:13\n"
              "          BinOp * @3:16-3:21\n"
              "            Name 'b' @3:16-3:17\n"
              "            Int 3 @3:20-3:21\n");
}

TEST(Parse, KernelShapedCode) {
    EXPECT_EQ(dumpOf("with T.Kernel(8, threads=128) as (bx, by):\n"
                     "    T.copy(A[by * 128, 0:64], S)\n"),
              "Module\n"
              "  With @1:1-2:33\n"
              "    item: Call @1:6-1:30\n"
              "      func: Attribute .Kernel @1:6-1:14\n"
              "        Name 'T' @1:6-1:7\n"
              "      arg: Int 8 @1:15-1:16\n"
              "      keyword threads: Int 128 @1:26-1:29\n"
              "      as: Tuple (parenthesized) @1:34-1:42\n"
              "        Name 'bx' @1:35-1:37\n"
              "        Name 'by' @1:39-1:41\n"
              "    body:\n"
              "      Expr @2:5-2:33\n"
              "        value: Call @2:5-2:33\n"
              "          func: Attribute .copy @2:5-2:11\n"
              "            Name 'T' @2:5-2:6\n"
              "          arg: Subscript @2:12-2:29\n"
              "            value: Name 'A' @2:12-2:13\n"
              "            index: Tuple @2:14-2:28\n"
              "              BinOp * @2:14-2:22\n"
              "                Name 'by' @2:14-2:16\n"
              "                Int 128 @2:19-2:22\n"
              "              Slice @2:24-2:28\n"
              "                lower: Int 0 @2:24-2:25\n"
              "                upper: Int 64 @2:26-2:28\n"
              "          arg: Name 'S' @2:31-2:32\n");
}

TEST(Parse, ElifChainNestsInOrelse) {
    ast::StmtP s = first("if a:\n    x = 1\nelif b:\n    x = 2\nelif c:\n    x = 3\nelse:\n    x = 4\n");
    ASSERT_TRUE(s);
    ASSERT_EQ(s->kind, ast::StmtKind::If);
    ASSERT_EQ(s->orelse.size(), 1u);
    const ast::Stmt &e1 = *s->orelse[0];
    EXPECT_EQ(e1.kind, ast::StmtKind::If);
    EXPECT_EQ(e1.range.line, 3);
    ASSERT_EQ(e1.orelse.size(), 1u);
    const ast::Stmt &e2 = *e1.orelse[0];
    EXPECT_EQ(e2.kind, ast::StmtKind::If);
    ASSERT_EQ(e2.orelse.size(), 1u);
    EXPECT_EQ(e2.orelse[0]->kind, ast::StmtKind::Assign);
    EXPECT_EQ(e2.orelse[0]->range.line, 8);
}

TEST(Parse, AugmentedAssignments) {
    const char *ops[] = {"+=", "-=", "*=", "/=", "//=", "%=", "**=", "<<=", ">>=", "&=", "|=", "^=", "@="};
    ast::BinOpKind kinds[] = {ast::BinOpKind::Add,    ast::BinOpKind::Sub,    ast::BinOpKind::Mul,    ast::BinOpKind::Div,
                              ast::BinOpKind::FloorDiv, ast::BinOpKind::Mod,  ast::BinOpKind::Pow,    ast::BinOpKind::LShift,
                              ast::BinOpKind::RShift, ast::BinOpKind::BitAnd, ast::BinOpKind::BitOr, ast::BinOpKind::BitXor,
                              ast::BinOpKind::MatMul};
    for (size_t i = 0; i < std::size(ops); ++i) {
        ast::StmtP s = first(std::string("acc[i, j] ") + ops[i] + " 2\n");
        ASSERT_TRUE(s);
        EXPECT_EQ(s->kind, ast::StmtKind::AugAssign) << ops[i];
        EXPECT_EQ(s->augOp, kinds[i]) << ops[i];
        EXPECT_EQ(std::string(ast::toString(s->augOp)) + "=", ops[i]);
    }
}

TEST(Parse, Precedence) {
    EXPECT_EQ(dumpOf("-x ** -y * z\n"),
              "Module\n"
              "  Expr @1:1-1:13\n"
              "    value: BinOp * @1:1-1:13\n"
              "      UnaryOp - @1:1-1:9\n"
              "        BinOp ** @1:2-1:9\n"
              "          Name 'x' @1:2-1:3\n"
              "          UnaryOp - @1:7-1:9\n"
              "            Name 'y' @1:8-1:9\n"
              "      Name 'z' @1:12-1:13\n");
    EXPECT_EQ(dumpOf("not a < b < c and d or e\n"),
              "Module\n"
              "  Expr @1:1-1:25\n"
              "    value: BoolOp or @1:1-1:25\n"
              "      BoolOp and @1:1-1:20\n"
              "        UnaryOp not @1:1-1:14\n"
              "          Compare < < @1:5-1:14\n"
              "            Name 'a' @1:5-1:6\n"
              "            Name 'b' @1:9-1:10\n"
              "            Name 'c' @1:13-1:14\n"
              "        Name 'd' @1:19-1:20\n"
              "      Name 'e' @1:24-1:25\n");
    ast::ExprP e = value("a | b ^ c & d << 1 + 2 * 3");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->binOp, ast::BinOpKind::BitOr);
    EXPECT_EQ(e->b->binOp, ast::BinOpKind::BitXor);
    EXPECT_EQ(e->b->b->binOp, ast::BinOpKind::BitAnd);
    EXPECT_EQ(e->b->b->b->binOp, ast::BinOpKind::LShift);
    EXPECT_EQ(e->b->b->b->b->binOp, ast::BinOpKind::Add);
    EXPECT_EQ(e->b->b->b->b->b->binOp, ast::BinOpKind::Mul);
    ast::ExprP cmp = value("a not in b is not c != d");
    ASSERT_TRUE(cmp);
    ASSERT_EQ(cmp->cmpOps.size(), 3u);
    EXPECT_EQ(cmp->cmpOps[0], ast::CmpOpKind::NotIn);
    EXPECT_EQ(cmp->cmpOps[1], ast::CmpOpKind::IsNot);
    EXPECT_EQ(cmp->cmpOps[2], ast::CmpOpKind::NotEq);
    EXPECT_EQ(cmp->elts.size(), 4u);
    // A parenthesized comparison is an operand, not part of the chain.
    ast::ExprP paren = value("(a < b) < c");
    ASSERT_TRUE(paren);
    EXPECT_EQ(paren->cmpOps.size(), 1u);
    EXPECT_TRUE(paren->elts[0]->parenthesized);
}

TEST(Parse, Parentheses) {
    ast::ExprP e = value("(a + b)");
    ASSERT_TRUE(e);
    EXPECT_TRUE(e->parenthesized);
    EXPECT_EQ(e->range.col, 6); // the inner expression, as in Python
    ast::ExprP t = value("(1, 2)");
    EXPECT_TRUE(t->parenthesized);
    EXPECT_EQ(t->kind, ast::ExprKind::Tuple);
    EXPECT_EQ(t->range.col, 5);
    ast::ExprP u = value("1, 2");
    EXPECT_EQ(u->kind, ast::ExprKind::Tuple);
    EXPECT_FALSE(u->parenthesized);
    EXPECT_EQ(value("()")->kind, ast::ExprKind::Tuple);
    EXPECT_EQ(value("(1,)")->elts.size(), 1u);
}

TEST(Parse, Literals) {
    EXPECT_EQ(value("0x_ff")->intValue, 255);
    EXPECT_EQ(value("0o17")->intValue, 15);
    EXPECT_EQ(value("0b1010")->intValue, 10);
    EXPECT_EQ(value("1_000_000")->intValue, 1000000);
    EXPECT_EQ(value("1 << 20")->b->intValue, 20);
    EXPECT_EQ(value("9223372036854775807")->intValue, INT64_MAX);
    EXPECT_EQ(value("00")->intValue, 0);
    EXPECT_DOUBLE_EQ(value("1e-6")->floatValue, 1e-6);
    EXPECT_DOUBLE_EQ(value(".5")->floatValue, 0.5);
    EXPECT_DOUBLE_EQ(value("5.")->floatValue, 5.0);
    EXPECT_DOUBLE_EQ(value("1_0.2_5e1_0")->floatValue, 10.25e10);
    EXPECT_EQ(value("3j")->kind, ast::ExprKind::Unsupported);
    EXPECT_EQ(value("3j")->str, "complex literal");
    EXPECT_EQ(value("True")->boolValue, true);
    EXPECT_EQ(value("None")->kind, ast::ExprKind::None);
    EXPECT_EQ(value("...")->kind, ast::ExprKind::Ellipsis);
}

TEST(Parse, Strings) {
    EXPECT_EQ(value(R"("float16")")->str, "float16");
    EXPECT_EQ(value(R"('a' "b" '''c''')")->str, "abc");
    EXPECT_EQ(value(R"("tab\there\n\\ \x41\101 \u00e9 \U0001F600 \'")")->str, "tab\there\n\\ AA \xC3\xA9 \xF0\x9F\x98\x80 '");
    EXPECT_EQ(value(R"(r'\n\d')")->str, "\\n\\d");
    EXPECT_EQ(value("'''line1\nline2'''")->str, "line1\nline2");
    EXPECT_EQ(value("'a\\\nb'")->str, "ab");
    EXPECT_EQ(value(R"("unknown \q escape")")->str, "unknown \\q escape");
    ast::ExprP f = value(R"('a' f"{x!r:>{w}}" 'y')");
    ASSERT_EQ(f->kind, ast::ExprKind::JoinedStr);
    ASSERT_EQ(f->elts.size(), 3u);
    EXPECT_EQ(f->elts[0]->str, "a");
    EXPECT_EQ(f->elts[1]->kind, ast::ExprKind::FormattedValue);
    EXPECT_EQ(f->elts[1]->str, "r");
    EXPECT_EQ(f->elts[1]->a->str, "x");
    EXPECT_EQ(f->elts[1]->a->range.col, 12); // the field's expression at its place in the file (after "x = ")
    ASSERT_TRUE(f->elts[1]->b);
    EXPECT_EQ(f->elts[1]->b->elts[0]->str, ">");
    EXPECT_EQ(f->elts[1]->b->elts[1]->a->str, "w");
    EXPECT_EQ(f->elts[2]->str, "y");
    EXPECT_EQ(value("rb'x' b'y'")->str, "bytes literal");
    EXPECT_EQ(value("Rf'{x}'")->kind, ast::ExprKind::JoinedStr);
    // Python 3.12: the f-string's own quotes inside a field.
    ast::ExprP q = value(R"(f"{d["k"]}")");
    ASSERT_EQ(q->kind, ast::ExprKind::JoinedStr);
    EXPECT_EQ(q->elts[0]->a->b->str, "k");
    EXPECT_EQ(value(R"("\N{EM DASH}")")->str, "\\N{...} escape");
}

TEST(Parse, ByteColumns) {
    // Columns count bytes: "é" is two.
    Parsed p = parse("s = \"é\"; y = 1\n");
    ASSERT_TRUE(p.module);
    ASSERT_EQ(p.module->body.size(), 2u);
    EXPECT_EQ(p.module->body[0]->value->range.col, 5);
    EXPECT_EQ(p.module->body[0]->value->range.endCol, 9);
    EXPECT_EQ(p.module->body[1]->range.col, 11);
    // A byte-order mark is not part of the first line's text columns' count of tokens.
    Parsed bom = parse("\xEF\xBB\xBFx = 1\n");
    ASSERT_TRUE(bom.module) << bom.diags;
    EXPECT_EQ(bom.module->body[0]->range.col, 4);
}

TEST(Parse, UnsupportedConstructs) {
    auto kindOf = [](const std::string &src) {
        ast::StmtP s = first(src);
        if (!s) return std::string("?");
        if (s->kind == ast::StmtKind::Unsupported) return s->name;
        if (s->value && s->value->kind == ast::ExprKind::Unsupported) return s->value->str;
        return std::string("supported");
    };
    EXPECT_EQ(kindOf("x = lambda a: a\n"), "supported");
    EXPECT_EQ(kindOf("x = [i for i in y]\n"), "supported");
    EXPECT_EQ(kindOf("x = {i: 1 async for i in y}\n"), "asynchronous comprehension");
    EXPECT_EQ(kindOf("x = f'{y}'\n"), "supported");
    EXPECT_EQ(kindOf("class A:\n    pass\n"), "supported");
    EXPECT_EQ(kindOf("try:\n    pass\nexcept E as e:\n    pass\n"), "supported");
    EXPECT_EQ(kindOf("raise E from e\n"), "supported");
    EXPECT_EQ(kindOf("del a, b[1]\n"), "del");
    EXPECT_EQ(kindOf("global g\n"), "supported");
    EXPECT_EQ(kindOf("async def f():\n    await g()\n"), "async def");
    EXPECT_EQ(kindOf("x = (y := 3)\n"), "walrus");
    EXPECT_EQ(kindOf("x = 1j\n"), "complex literal");
    EXPECT_EQ(kindOf("x = b'1'\n"), "bytes literal");
    EXPECT_EQ(kindOf("x = {1, 2}\n"), "supported");
    EXPECT_EQ(value("{1, 2}")->kind, ast::ExprKind::Set);
}

TEST(Parse, CallsAndParameters) {
    ast::ExprP c = value("f(1, *a, k=2, **kw)");
    ASSERT_TRUE(c);
    ASSERT_EQ(c->elts.size(), 2u);
    EXPECT_EQ(c->elts[1]->kind, ast::ExprKind::Starred);
    ASSERT_EQ(c->keywords.size(), 2u);
    EXPECT_EQ(c->keywords[0].name, "k");
    EXPECT_EQ(c->keywords[1].name, "");
    ast::StmtP f = first("@T.prim_func\n@dec(1)\ndef f(a, b: int = 1, /, c=2, *args, d, e=3, **kw) -> None:\n    pass\n");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->decorators.size(), 2u);
    ASSERT_EQ(f->params.size(), 7u);
    EXPECT_EQ(f->params[1].annotation->str, "int");
    EXPECT_EQ(f->params[3].kind, ast::Param::VarArgs);
    EXPECT_EQ(f->params[4].kind, ast::Param::KwOnly);
    EXPECT_EQ(f->params[5].kind, ast::Param::KwOnly);
    EXPECT_EQ(f->params[6].kind, ast::Param::VarKw);
    EXPECT_TRUE(f->returns);
    ast::StmtP g = first("def g(*, a):\n    pass\n");
    ASSERT_EQ(g->params.size(), 1u);
    EXPECT_EQ(g->params[0].kind, ast::Param::KwOnly);
}

TEST(Parse, ImportsAndAssignments) {
    ast::StmtP i = first("from ..pkg.mod import (a, b as c,)\n");
    EXPECT_EQ(i->kind, ast::StmtKind::ImportFrom);
    EXPECT_EQ(i->name, "..pkg.mod");
    ASSERT_EQ(i->names.size(), 2u);
    EXPECT_EQ(i->names[1].asName, "c");
    EXPECT_EQ(first("from . import *\n")->names[0].name, "*");
    ast::StmtP a = first("a = b = 1, 2\n");
    EXPECT_EQ(a->targets.size(), 2u);
    EXPECT_EQ(a->value->kind, ast::ExprKind::Tuple);
    ast::StmtP ann = first("x: int = 3\n");
    EXPECT_EQ(ann->kind, ast::StmtKind::AnnAssign);
    EXPECT_EQ(ann->annotation->str, "int");
    ast::StmtP un = first("a, *rest = y\n");
    EXPECT_EQ(un->targets[0]->elts[1]->kind, ast::ExprKind::Starred);
}

TEST(Parse, LineStructure) {
    Parsed p = parse("x = [\n    1,  # one\n\n    2,\n]\ny = 1 + \\\n    2\nif x: pass\nz = 1; w = 2;\n"
                     "if y:\n\tq = 1\n\tr = 2\n# trailing comment without newline");
    ASSERT_TRUE(p.module) << p.diags;
    EXPECT_EQ(p.module->body.size(), 6u);
    EXPECT_EQ(p.module->body[0]->value->elts.size(), 2u);
    Parsed noNewline = parse("x = 1");
    ASSERT_TRUE(noNewline.module);
    EXPECT_EQ(noNewline.module->body.size(), 1u);
    Parsed crlf = parse("if x:\r\n    y = 1\r\n");
    ASSERT_TRUE(crlf.module) << crlf.diags;
    Parsed empty = parse("");
    ASSERT_TRUE(empty.module);
    EXPECT_TRUE(empty.module->body.empty());
}

TEST(Parse, AllOfPythonSyntax) {
    const char *src = R"PY(#!/usr/bin/env python3
"""Docstring."""
from __future__ import annotations
import os, sys as system
from . import x
from ...pkg.mod import (a, b as c,)
@decorator
@decorator.attr(1, k=2)
@(lambda f: f)
def f(a, b: int = 1, /, c=2, *args, d, e: str = "x", **kwargs) -> None:
    global g
    y = lambda a, *b, c=1, **d: a
    def inner():
        nonlocal y
        y += 1
    return y
async def coro(x):
    await x
    async with a as b, c:
        pass
    async for i in x:
        pass
    return [i async for i in x]
class C(Base, metaclass=Meta):
    attr: int = 3
    def method(self):
        return super().method()
x = 1; y = 2;
(a, b), c = (1, 2), 3
[a, *rest] = range(10)
obj[1:2, ::3, ...] = 2
n = 0x_ff + 0o17 + 0b1010 + 1_000_000 + 1.5 + .5 + 5. + 1e-6 + 3.14j
s = 'a' "b" '''c''' """d""" r'\n' u'uni'
fs = f"hello {name!r:>10}" F'{x}' rf'{y}\n'
d = {'a': 1, **other}
st = {1, 2, *more}
comp = [x * 2 for x in range(10) if x % 2 if x > 3 for y in z]
gen = (x for x in y)
cond = a if b else c
chain = 1 < x <= 10 != y is not None
member = x not in y and y in z or not w
if (m := re.match(p, s)) is not None: pass
call = f(1, *args, key=2, **kw)
mm = a @ b
bits = ~a & b | c ^ d << 2 >> 1
while True:
    break
else:
    pass
for i, (j, k) in enumerate(x): continue
try:
    pass
except (TypeError, KeyError) as e:
    raise RuntimeError("x") from e
except:
    raise
else:
    pass
finally:
    pass
with (open(f) as fh, open(g) as gh,):
    pass
with (a, b):
    pass
del a, b[1], c.d
assert x, "message"
def gen():
    yield
    x = yield 2
    yield from other()
if __name__ == "__main__":
    import argparse
    print(f"{args.m}", sep='')
)PY";
    Parsed p = parse(src);
    EXPECT_TRUE(p.module) << p.diags;
}

TEST(Parse, DeepButLegalNesting) {
    std::string src = "x = " + std::string(199, '(') + "1" + std::string(199, ')') + "\n";
    Parsed p = parse(src);
    EXPECT_TRUE(p.module) << p.diags;
    std::string blocks;
    for (int i = 0; i < 99; ++i) blocks += std::string(size_t(i), ' ') + "if x:\n";
    blocks += std::string(99, ' ') + "pass\n";
    Parsed q = parse(blocks);
    EXPECT_TRUE(q.module) << q.diags;
}

TEST(ParseExpression, Values) {
    auto expr = [](const std::string &text, std::string *diags = nullptr) {
        SourceManager sm;
        int f = sm.add("<-D>", text);
        std::ostringstream out;
        DiagnosticEngine d(sm, out);
        ast::ExprP e = parseExpression(f, d);
        if (diags) *diags = out.str();
        return e;
    };
    EXPECT_EQ(expr("2048")->intValue, 2048);
    EXPECT_EQ(expr("  -1.5 ")->kind, ast::ExprKind::UnaryOp);
    EXPECT_EQ(expr("1, 2")->kind, ast::ExprKind::Tuple);
    EXPECT_EQ(expr("'float16'")->str, "float16");
    ast::ExprP call = expr("matmul(1024, 1024,\n 1024, block_M=64)");
    ASSERT_TRUE(call);
    EXPECT_EQ(call->kind, ast::ExprKind::Call);
    EXPECT_EQ(call->keywords.size(), 1u);
    std::string diags;
    EXPECT_FALSE(expr("1 2", &diags));
    EXPECT_EQ(diags.substr(0, diags.find('\n')), "<-D>:1:3: error: invalid syntax: unexpected '2'");
    EXPECT_FALSE(expr("", &diags));
    EXPECT_NE(diags.find("error: expected an expression"), std::string::npos) << diags;
    EXPECT_FALSE(expr("x = 1", &diags));
    EXPECT_FALSE(expr("f(", &diags));
    EXPECT_NE(diags.find("'(' was never closed"), std::string::npos) << diags;
}

TEST(ParseBench, GeneratedFile) {
    // Not a timed test: prints the speed (the front-end benchmark of the issue reads it).
    std::string unit = readFile(TILEC_SOURCE_DIR "/examples/flash_attn.tile");
    std::string src;
    while (std::count(src.begin(), src.end(), '\n') < 10000) src += unit + "\n";
    int lines = (int)std::count(src.begin(), src.end(), '\n');
    parse(src); // warm the prediction caches
    auto t0 = std::chrono::steady_clock::now();
    std::clock_t c0 = std::clock();
    Parsed p = parse(src);
    std::clock_t c1 = std::clock();
    auto t1 = std::chrono::steady_clock::now();
    ASSERT_TRUE(p.module) << p.diags.substr(0, 500);
    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    double cpu = double(c1 - c0) * 1000.0 / CLOCKS_PER_SEC;
    std::printf("[ bench    ] parsed %d lines in %.1f ms (%.1f ms CPU): %.2f ms CPU per 1000 lines\n", lines, ms, cpu,
                cpu * 1000.0 / lines);
}
