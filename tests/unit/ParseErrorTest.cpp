/// \file
/// Syntax diagnostics: one check per message (text and line:col), several errors per file without
/// follow-on errors, and inputs that must neither crash nor throw.
#include "tilec/Parser.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

using namespace tilec;

namespace {

struct Result {
    bool ok = false;
    std::string diags;
    int errors = 0;
};

Result parse(const std::string &text) {
    SourceManager sm;
    int f = sm.add("t.tile", text);
    std::ostringstream out;
    DiagnosticEngine d(sm, out);
    d.setErrorLimit(0);
    Result r;
    r.ok = parseModule(f, d).has_value();
    r.diags = out.str();
    r.errors = d.errorCount();
    return r;
}

/// The `file:line:col: error: message` lines of the diagnostics.
std::vector<std::string> errorLines(const std::string &diags) {
    std::vector<std::string> lines;
    std::istringstream in(diags);
    for (std::string l; std::getline(in, l);)
        if (l.rfind("t.tile:", 0) == 0) lines.push_back(l);
    return lines;
}

struct Case {
    const char *name;
    const char *source;
    const char *expected; ///< the first error line
};

const Case kCases[] = {
    {"missing colon after if", "x = 1\nif x > 1\n    y = 2\n", "t.tile:2:9: error: expected ':' after 'if' condition"},
    {"missing colon after def", "def f(x)\n    return x\n", "t.tile:1:9: error: expected ':' after function signature"},
    {"missing colon after for", "for i in range(3)\n    pass\n", "t.tile:1:18: error: expected ':' after the 'for' clause"},
    {"missing colon after while", "while x\n    pass\n", "t.tile:1:8: error: expected ':' after 'while' condition"},
    {"missing colon after else", "if x:\n    pass\nelse\n    pass\n", "t.tile:3:5: error: expected ':' after 'else'"},
    {"missing colon after class", "class A\n    pass\n", "t.tile:1:8: error: expected ':' after class header"},
    {"missing colon after with", "with T.Kernel(1) as bx\n    pass\n", "t.tile:1:23: error: expected ':' after 'with' items"},
    {"unmatched closer", "x = (1 + 2))\n", "t.tile:1:12: error: unmatched ')'"},
    {"never closed", "x = foo(1,\n    2\ny = 3\n", "t.tile:1:8: error: '(' was never closed"},
    {"mismatched closer", "x = [1, 2)\n", "t.tile:1:10: error: closing parenthesis ')' does not match opening parenthesis '['"},
    {"unexpected indent", "x = 1\n    y = 2\n", "t.tile:2:5: error: unexpected indent"},
    {"unexpected indent in body", "def f():\n    x = 1\n        y = 2\n", "t.tile:3:9: error: unexpected indent"},
    {"bad unindent", "if x:\n        y = 1\n    z = 2\n", "t.tile:3:5: error: unindent does not match any outer indentation level"},
    {"missing block", "if x:\ny = 1\n", "t.tile:2:1: error: expected an indented block after 'if' statement on line 1"},
    {"missing block at end", "x = 1\ndef f():\n", "t.tile:2:9: error: expected an indented block after function definition on line 2"},
    {"tabs and spaces", "if x:\n\ty = 1\n        z = 2\n", "t.tile:3:1: error: inconsistent use of tabs and spaces in indentation"},
    {"invalid character", "x = 1\ny = $\n", "t.tile:2:5: error: invalid character '$'"},
    {"invalid unicode character", "x = 1 \xE2\x82\xAC 2\n", "t.tile:1:7: error: invalid character '\xE2\x82\xAC' (U+20AC)"},
    {"non-printable character", "x = 1\x01\n", "t.tile:1:6: error: invalid non-printable character U+0001"},
    {"stray backslash", "x = 1 \\ 2\n", "t.tile:1:7: error: unexpected character after line continuation character"},
    {"unterminated string", "x = 1\ny = \"abc\nz = 2\n", "t.tile:2:5: error: unterminated string literal"},
    {"unterminated triple-quoted string", "x = 1\ny = '''abc\nz = 2\n", "t.tile:2:5: error: unterminated triple-quoted string literal"},
    {"integer too large", "x = 99999999999999999999\n", "t.tile:1:5: error: integer literal is too large"},
    {"integer just too large", "x = 0x8000000000000000\n", "t.tile:1:5: error: integer literal is too large"},
    {"leading zeros", "x = 0777\n", "t.tile:1:5: error: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers"},
    {"invalid UTF-8", "x = 1\ny = \"\xff\"\n", "t.tile:2:6: error: invalid UTF-8 in source (byte 0xff)"},
    {"truncated UTF-8", "x = \"\xC3\"\n", "t.tile:1:6: error: invalid UTF-8 in source (byte 0xc3)"},
    {"missing expression", "x = \n", "t.tile:1:4: error: expected an expression"},
    {"missing operand", "x = 1 +\n", "t.tile:1:8: error: expected an expression"},
    {"missing comma", "foo(a b)\n", "t.tile:1:7: error: invalid syntax: perhaps you forgot a comma?"},
    {"two expressions", "x = 1 2\n", "t.tile:1:7: error: invalid syntax: unexpected '2'"},
    {"assignment in condition", "if x = 1:\n    pass\n", "t.tile:1:6: error: invalid syntax: maybe you meant '==' or ':=' instead of '='?"},
    {"keyword as name", "def class():\n    pass\n", "t.tile:1:5: error: 'class' is a keyword and cannot be used as a name"},
    {"python 2 print", "print \"hello\"\n", "t.tile:1:7: error: missing parentheses in call to 'print'; did you mean print(...)?"},
    {"missing else", "x = a if b\n", "t.tile:1:11: error: expected 'else' after 'if' expression"},
    {"try without except", "try:\n    pass\nx = 1\n", "t.tile:3:1: error: expected 'except' or 'finally' block"},
    {"decorator without def", "@dec\nx = 1\n", "t.tile:2:1: error: expected a function or class definition after decorator"},
    {"stray else", "x = 1\nelse:\n    pass\n", "t.tile:2:1: error: invalid syntax: unexpected 'else'"},
    {"import without name", "import\n", "t.tile:1:7: error: expected a name"},
    {"assign to literal", "1 = x\n", "t.tile:1:1: error: cannot assign to literal"},
    {"assign to call", "f() = 1\n", "t.tile:1:1: error: cannot assign to function call"},
    {"assign to True", "True = 1\n", "t.tile:1:1: error: cannot assign to True"},
    {"augmented tuple", "a, b += 1\n", "t.tile:1:1: error: 'tuple' is an illegal expression for augmented assignment"},
    {"for over a literal", "for 1 in x:\n    pass\n", "t.tile:1:5: error: cannot assign to literal"},
    {"two starred targets", "*a, *b = c\n", "t.tile:1:1: error: multiple starred expressions in assignment"},
    {"positional after keyword", "f(x=1, 2)\n", "t.tile:1:8: error: positional argument follows keyword argument"},
    {"keyword is not a name", "f(a.b=1)\n", "t.tile:1:3: error: expression cannot contain assignment, perhaps you meant \"==\"?"},
    {"repeated keyword", "f(a=1, a=2)\n", "t.tile:1:8: error: keyword argument repeated: a"},
    {"non-default after default", "def f(a=1, b):\n    pass\n", "t.tile:1:12: error: non-default argument follows default argument"},
    {"duplicate parameter", "def f(a, a):\n    pass\n", "t.tile:1:10: error: duplicate argument 'a' in function definition"},
    {"bare star", "def f(a, *):\n    pass\n", "t.tile:1:10: error: named arguments must follow bare *"},
    {"return outside function", "return 1\n", "t.tile:1:1: error: 'return' outside function"},
    {"break outside loop", "if x:\n    break\n", "t.tile:2:5: error: 'break' outside loop"},
    {"bad escape", "x = \"\\x4\"\n", "t.tile:1:6: error: truncated \\xXX escape"},
    {"non-ASCII bytes", "x = b'\xC3\xA9'\n", "t.tile:1:7: error: bytes can only contain ASCII literal characters"},
    {"mixed bytes", "x = b'a' 'b'\n", "t.tile:1:5: error: cannot mix bytes and nonbytes literals"},
};

} // namespace

TEST(ParseError, EachMessage) {
    for (const Case &c : kCases) {
        Result r = parse(c.source);
        EXPECT_FALSE(r.ok) << c.name;
        std::vector<std::string> lines = errorLines(r.diags);
        ASSERT_FALSE(lines.empty()) << c.name << ": no error\n" << r.diags;
        EXPECT_EQ(lines[0], c.expected) << c.name << "\n" << r.diags;
        EXPECT_EQ(lines.size(), 1u) << c.name << ": follow-on errors\n" << r.diags;
    }
}

TEST(ParseError, BinaryInput) {
    Result r = parse(std::string("x = 1\ny = \0\x01\x02\n", 14));
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(errorLines(r.diags), std::vector<std::string>{"t.tile:2:5: error: file looks binary (contains a NUL byte)"});
}

TEST(ParseError, SeveralErrorsInOneFile) {
    Result r = parse("a.b = 1\nc d e f\ng = 2\nif g\n    h = 1\ni j\n");
    std::vector<std::string> lines = errorLines(r.diags);
    ASSERT_EQ(lines.size(), 3u) << r.diags;
    EXPECT_EQ(lines[0], "t.tile:2:3: error: invalid syntax: unexpected 'd'");
    EXPECT_EQ(lines[1], "t.tile:4:5: error: expected ':' after 'if' condition");
    EXPECT_EQ(lines[2], "t.tile:6:3: error: invalid syntax: unexpected 'j'");
}

TEST(ParseError, UnderlineAndSourceLine) {
    Result r = parse("x = 1\nif x > 1\n    y = 2\n");
    EXPECT_EQ(r.diags, "t.tile:2:9: error: expected ':' after 'if' condition\nif x > 1\n        ^\n");
}

TEST(ParseError, DeepNestingIsAnErrorNotACrash) {
    auto check = [](const std::string &src, const char *msg) {
        Result r = parse(src);
        EXPECT_FALSE(r.ok);
        EXPECT_NE(r.diags.find(msg), std::string::npos) << r.diags.substr(0, 300);
    };
    check("x = " + std::string(100000, '(') + "\n", "too many nested parentheses");
    check("x = " + std::string(100000, '[') + "\n", "too many nested parentheses");
    check("x = " + std::string(100000, '-') + "1\n", "expression is too deeply nested");
    std::string nots;
    for (int i = 0; i < 50000; ++i) nots += "not ";
    check("x = " + nots + "1\n", "expression is too deeply nested");
    std::string adds;
    for (int i = 0; i < 50000; ++i) adds += "1+";
    check("x = " + adds + "1\n", "expression is too deeply nested");
    std::string pows;
    for (int i = 0; i < 50000; ++i) pows += "2**";
    check("x = " + pows + "1\n", "expression is too deeply nested");
    std::string lambdas;
    for (int i = 0; i < 20000; ++i) lambdas += "lambda: ";
    check("x = " + lambdas + "1\n", "expression is too deeply nested");
    std::string elifs = "if x:\n    pass\n";
    for (int i = 0; i < 1500; ++i) elifs += "elif x:\n    pass\n";
    check(elifs, "too many 'elif' clauses in one 'if' statement");
    std::string blocks;
    for (int i = 0; i < 150; ++i) blocks += std::string(size_t(i), ' ') + "if x:\n";
    blocks += std::string(150, ' ') + "pass\n";
    check(blocks, "too many levels of indentation");
}

TEST(ParseError, NeverThrowsOnGarbage) {
    std::mt19937 rng(1234);
    const std::string alphabet = "()[]{}:;,.=+-*/%<>!@#$\\'\"\n\t  abcxyz0129_fbr\xff\xc3\xa9";
    for (int i = 0; i < 300; ++i) {
        std::string s;
        size_t n = rng() % 200;
        for (size_t k = 0; k < n; ++k) s += alphabet[rng() % alphabet.size()];
        EXPECT_NO_THROW(parse(s)) << s;
        SourceManager sm;
        int f = sm.add("e", s);
        std::ostringstream out;
        DiagnosticEngine d(sm, out);
        d.setErrorLimit(0);
        EXPECT_NO_THROW(parseExpression(f, d)) << s;
    }
}

TEST(ParseError, ErrorLimitStopsReporting) {
    SourceManager sm;
    int f = sm.add("t.tile", "a b\nc d\ne f\n");
    std::ostringstream out;
    DiagnosticEngine d(sm, out);
    d.setErrorLimit(2);
    EXPECT_THROW(parseModule(f, d), TooManyErrors);
    EXPECT_EQ(d.errorCount(), 2);
}
