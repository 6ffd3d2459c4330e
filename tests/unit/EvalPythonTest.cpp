/// \file
/// The Python subset of compile-time evaluation: each test is a small program whose `assert`s state what
/// Python computes; a failing assert (or any other error) fails the test with the diagnostics.
#include "EvalTestUtil.h"

#include <gtest/gtest.h>

using tilec::evaltest::EvalRun;

namespace {

/// Runs `src` and expects no error (the "exports no kernel" warning is expected: these files have none).
void expectPython(const std::string &src) {
    EvalRun r;
    r.run(src);
    EXPECT_TRUE(r.parsed) << r.diags();
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
}

TEST(EvalPython, IntegerArithmetic) {
    expectPython("assert 7 // 2 == 3 and 7 // -2 == -4 and -7 // 2 == -4\n"
                 "assert 7 % -2 == -1 and -7 % 3 == 2 and 7 % 3 == 1\n"
                 "assert 2 ** 10 == 1024 and 2 ** 0 == 1 and 2 ** -1 == 0.5\n"
                 "assert 1 / 2 == 0.5 and 4 / 2 == 2.0\n"
                 "assert 1 << 20 == 1048576 and -8 >> 1 == -4 and 6 & 3 == 2 and 6 | 3 == 7 and 6 ^ 3 == 5\n"
                 "assert ~5 == -6 and -(-3) == 3 and +4 == 4\n"
                 "assert 0x10 == 16 and 9223372036854775807 - 1 == 9223372036854775806\n"
                 "assert True + True == 2 and (True & False) is False\n");
}

TEST(EvalPython, FloatArithmetic) {
    expectPython("assert 7.5 // 2 == 3.0 and -7.5 // 2 == -4.0 and 7.5 % -2 == -0.5\n"
                 "assert (1.0 / 64) ** 0.5 == 0.125\n"
                 "assert 1e-6 < .5 and 2.0 * 3 == 6\n"
                 "assert str(1e-6) == '1e-06' and str(2.0) == '2.0' and str(1e16) == '1e+16' and str(0.1) == '0.1'\n"
                 "assert int(3.9) == 3 and int(-3.9) == -3 and float('1.5') == 1.5 and int('42') == 42\n"
                 "assert round(2.5) == 2 and round(3.5) == 4 and round(1.25, 1) == 1.2\n");
}

TEST(EvalPython, StringsTuplesLists) {
    expectPython("s = 'ab' + 'c'\n"
                 "assert s == 'abc' and s * 2 == 'abcabc' and 'b' in s and s[-1] == 'c' and s[1:] == 'bc'\n"
                 "t = (1, 2, 3)\n"
                 "assert t[0] == 1 and t[-1] == 3 and t[::-1] == (3, 2, 1) and t[1:] == (2, 3) and len(t) == 3\n"
                 "assert (1, 2) < (1, 3) and (1, 2) < (1, 2, 0) and [1] + [2] == [1, 2] and (0,) * 3 == (0, 0, 0)\n"
                 "l = [3, 1, 2]\n"
                 "l.append(4)\n"
                 "l.extend((5, 6))\n"
                 "assert l.pop() == 6 and l == [3, 1, 2, 4, 5] and l.index(2) == 2 and sorted(l) == [1, 2, 3, 4, 5]\n"
                 "m = l\n"
                 "m += [7]\n"
                 "assert l[-1] == 7\n"
                 "l[0] = 9\n"
                 "assert m[0] == 9 and 9 in l and 8 not in l\n");
}

TEST(EvalPython, Dicts) {
    expectPython("d = {'a': 1, 'b': 2}\n"
                 "d['c'] = 3\n"
                 "d['a'] += 10\n"
                 "assert d['a'] == 11 and d.get('z') is None and d.get('z', 5) == 5 and len(d) == 3\n"
                 "assert list(d.keys()) == ['a', 'b', 'c'] and list(d.values()) == [11, 2, 3]\n"
                 "assert [k for k in ()] if False else True\n"
                 "total = 0\n"
                 "for k, v in d.items():\n"
                 "    total += v\n"
                 "assert total == 16 and 'b' in d and dict(x=1) == {'x': 1}\n");
}

TEST(EvalPython, Unpacking) {
    expectPython("a, (b, c) = 1, (2, 3)\n"
                 "a, b = b, a\n"
                 "assert (a, b, c) == (2, 1, 3)\n"
                 "first, *rest = [1, 2, 3, 4]\n"
                 "*init, last = 'xyz'\n"
                 "assert first == 1 and rest == [2, 3, 4] and init == ['x', 'y'] and last == 'z'\n"
                 "[p, q] = range(2)\n"
                 "assert p == 0 and q == 1\n");
}

TEST(EvalPython, LoopsWithBreakContinueElse) {
    expectPython("s = 0\n"
                 "for i in range(10):\n"
                 "    if i == 7:\n"
                 "        break\n"
                 "    if i % 2:\n"
                 "        continue\n"
                 "    s += i\n"
                 "else:\n"
                 "    s = -1\n"
                 "assert s == 12\n"
                 "for i in range(3):\n"
                 "    pass\n"
                 "else:\n"
                 "    s = 99\n"
                 "assert s == 99 and i == 2\n"
                 "n = 0\n"
                 "while n < 5:\n"
                 "    n += 1\n"
                 "    if n == 10:\n"
                 "        break\n"
                 "else:\n"
                 "    n = 100\n"
                 "assert n == 100\n"
                 "r = []\n"
                 "for i in range(10, 0, -3):\n"
                 "    r.append(i)\n"
                 "assert r == [10, 7, 4, 1] and list(range(0)) == []\n"
                 "for i, (a, b) in enumerate(zip('ab', [1, 2])):\n"
                 "    r.append((i, a, b))\n"
                 "assert r[-1] == (1, 'b', 2)\n");
}

TEST(EvalPython, FunctionsDefaultsKeywordsVarargs) {
    expectPython("def f(p, q=2, *args, k=5, **kw):\n"
                 "    return p + q + len(args) + k + len(kw)\n"
                 "assert f(1) == 8 and f(1, 2, 3, 4, k=0, z=1) == 6 and f(q=1, p=1) == 7\n"
                 "def g(a, b):\n"
                 "    return a - b\n"
                 "args = (5, 3)\n"
                 "assert g(*args) == 2 and g(**{'b': 1, 'a': 4}) == 3 and g(b=1, *[9]) == 8\n"
                 "def h(x, *, y):\n"
                 "    return x * y\n"
                 "assert h(2, y=3) == 6\n"
                 "def nothing():\n"
                 "    pass\n"
                 "assert nothing() is None\n"
                 "def defaults(x=[]):\n"
                 "    x.append(1)\n"
                 "    return len(x)\n"
                 "defaults()\n"
                 "assert defaults() == 2\n");
}

TEST(EvalPython, ClosuresAndRecursion) {
    expectPython("def mk(n):\n"
                 "    def g(m):\n"
                 "        return n * m\n"
                 "    return g\n"
                 "assert mk(3)(4) == 12\n"
                 "def fact(n):\n"
                 "    return 1 if n <= 1 else n * fact(n - 1)\n"
                 "assert fact(20) == 2432902008176640000\n"
                 "def later():\n"
                 "    return defined_after\n"
                 "defined_after = 5\n"
                 "assert later() == 5\n");
}

TEST(EvalPython, BooleansAndComparisons) {
    expectPython("assert (0 or 'x') == 'x' and (1 and 0) == 0 and (None or 0) == 0 and (2 and 3) == 3\n"
                 "assert 1 < 2 < 3 and not (1 < 3 < 2) and 1 == 1.0 and 'a' != 'b'\n"
                 "assert None is None and 1 is not None and [] == [] and not []\n"
                 "assert (1 if True else 2) == 1 and (1 if 0 else 2) == 2\n"
                 "assert isinstance(True, int) and not isinstance(1.0, int) and isinstance((), (list, tuple))\n"
                 "assert any([0, 1]) and not all([0, 1]) and all([])\n");
}

TEST(EvalPython, Builtins) {
    expectPython("assert max(1, 5, 3) == 5 and min([4, 2]) == 2 and max([], default=7) == 7\n"
                 "assert sum(range(5)) == 10 and abs(-3) == 3 and abs(-2.5) == 2.5 and pow(2, 10, 1000) == 24\n"
                 "assert divmod(-7, 2) == (-4, 1) and tuple([1, 2]) == (1, 2) and list('ab') == ['a', 'b']\n"
                 "assert len(range(0, 10, 3)) == 4 and range(10)[-1] == 9 and 3 in range(0, 10, 3)\n"
                 "assert str(12) == '12' and bool(0) is False and reversed([1, 2]) == [2, 1]\n"
                 "assert '-'.join(['a', 'b']) == 'a-b' and 'Ab'.upper() == 'AB' and 'abc'.startswith('ab')\n"
                 "print('ignored', 1)\n");
}

TEST(EvalPython, ImportsAndMainGuard) {
    expectPython("import tilelang\n"
                 "import tilelang.language as T\n"
                 "from tilelang import language as L\n"
                 "import tilelang as tl\n"
                 "from tilelang import jit\n"
                 "import torch\n"
                 "import torch.nn.functional as F\n"
                 "from itertools import product\n"
                 "import argparse, typing\n"
                 "assert T is L and tl.language is T and tilelang.language is T\n"
                 "assert T.float16 == 'float16' and T.float32.bits == 32 and T.float8_e4m3fn == T.float8_e4m3\n"
                 "@jit\n"
                 "def f(x):\n"
                 "    return x + 1\n"
                 "@tilelang.jit(out_idx=[-1])\n"
                 "def g(x):\n"
                 "    return x + 2\n"
                 "assert f(1) == 2 and g(1) == 3\n"
                 "dt = torch.float16\n"
                 "w = F.relu(dt) + 1\n"
                 "assert __name__ == '__tilec__'\n"
                 "if __name__ == '__main__':\n"
                 "    parser = argparse.ArgumentParser()\n"
                 "    this_is_never_evaluated()\n");
}

TEST(EvalPython, UncalledFunctionsAreNotEvaluated) {
    expectPython("def broken():\n"
                 "    return [x for x in undefined_name]\n");
}

TEST(EvalPython, DefinesOverrideModuleConstants) {
    EvalRun r;
    r.define("M", "2048");
    r.define("dtype", "\"bfloat16\"");
    r.run("M = 4096\n"
          "dtype = 'float16'\n"
          "if True:\n"
          "    M = int('bad')\n" // the override replaces the right-hand side: it is not evaluated
          "assert M == 2048 and dtype == 'bfloat16'\n");
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
}

TEST(EvalPython, StepBudgetStopsEvaluation) {
    EvalRun r;
    r.opts.stepBudget = 1000;
    r.run("x = 1\n"
          "while True:\n"
          "    pass\n"
          "y = undefined\n");
    EXPECT_FALSE(r.program);
    EXPECT_EQ(r.diag.errorCount(), 1) << r.diags();
    EXPECT_NE(r.diags().find("t.tile:2:1: error: evaluation exceeds its step budget of 1000 steps (an infinite loop?)"),
              std::string::npos)
        << r.diags();
}

TEST(EvalPython, RecursionLimit) {
    EvalRun r;
    r.opts.recursionLimit = 50;
    r.run("def f(n):\n"
          "    return f(n + 1) + 1\n"
          "x = f(0)\n"
          "y = x + 1\n");
    EXPECT_EQ(r.diag.errorCount(), 1) << r.diags();
    EXPECT_NE(r.diags().find("recursion is too deep"), std::string::npos) << r.diags();
}

TEST(EvalPython, DeepObjectGraphsAndCyclesAreFreedSafely) {
    // A million nested lists would overflow the stack if freed by recursive destructors; cycles would leak.
    EvalRun r;
    r.run("x = []\n"
          "for i in range(1000000):\n"
          "    x = [x]\n"
          "x = None\n"
          "def wrap(v):\n"
          "    def g():\n"
          "        return v\n"
          "    return g\n"
          "y = None\n"
          "for i in range(100000):\n"
          "    y = wrap(y)\n"
          "l = [1]\n"
          "l.append(l)\n"
          "d = {}\n"
          "d['self'] = d\n"
          "assert str(l) == '[1, [...]]' and repr(d) == \"{'self': {...}}\" and f'{[d]}' == \"[{'self': {...}}]\"\n");
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
}

TEST(EvalPython, LinearWorkIsChargedAgainstTheBudget) {
    for (const char *src : {"big = [0] * 1000000\nwhile True:\n    if 5 in big:\n        pass\n",
                            "d = {}\nfor i in range(100000):\n    d[i] = i\n",
                            "while True:\n    x = undefined\n"}) {
        EvalRun r;
        r.opts.stepBudget = 500'000;
        r.run(src);
        EXPECT_NE(r.diags().find("exceeds its step budget"), std::string::npos) << src << r.diags();
    }
}

TEST(EvalPython, DeepNestingIsAnErrorNotACrash) {
    std::string src = "x = ";
    for (int i = 0; i < 3000; ++i) src += "(1 + ";
    src += "1";
    for (int i = 0; i < 3000; ++i) src += ")";
    EvalRun r;
    r.run(src + "\n");
    // Either the parser or the evaluator refuses; neither may crash.
    EXPECT_FALSE(r.program && r.diag.errorCount() == 0 && r.diags().find("error") != std::string::npos);
}

} // namespace
