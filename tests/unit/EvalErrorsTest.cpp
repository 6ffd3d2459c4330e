/// \file
/// Diagnostics of compile-time evaluation: their exact text and position, recovery after an error
/// (one message per mistake, no cascades), and the rules about exports.
#include "EvalTestUtil.h"

#include <gtest/gtest.h>

using tilec::evaltest::EvalRun;

namespace {

/// The "file:line:col: error: message" lines of the diagnostics, one per line.
std::string headlines(const std::string &diags) {
    std::string out;
    std::istringstream in(diags);
    std::string line;
    while (std::getline(in, line))
        if (line.find(": error: ") != std::string::npos || line.find(": warning: ") != std::string::npos ||
            line.find(": note: ") != std::string::npos)
            out += line + "\n";
    return out;
}

std::string errorsOf(const std::string &src) {
    EvalRun r;
    r.run(src);
    return headlines(r.diags());
}

TEST(EvalErrors, UndefinedNameWithSuggestion) {
    EXPECT_EQ(errorsOf("block_M = 1\nx = block_m + 1\n"),
              "t.tile:2:5: error: undefined name 'block_m'\n"
              "t.tile:2:5: note: did you mean 'block_M'?\n");
    EXPECT_EQ(errorsOf("x = qwerty\n"), "t.tile:1:5: error: undefined name 'qwerty'\n");
}

TEST(EvalErrors, NoCascadeAfterAnError) {
    // `x` becomes Poison: the two statements that use it stay silent.
    EXPECT_EQ(errorsOf("x = nothere\ny = x + 1\nz = y * 2\nw = 'a' + 1\n"),
              "t.tile:1:5: error: undefined name 'nothere'\n"
              "t.tile:4:5: error: unsupported operand types for +: 'str' and 'int'\n");
}

TEST(EvalErrors, SameErrorInAnUnrolledLoopOnce) {
    EXPECT_EQ(errorsOf("for i in range(100):\n    x = i + 'a'\n"),
              "t.tile:2:9: error: unsupported operand types for +: 'int' and 'str'\n");
}

TEST(EvalErrors, IntegerOverflowAndDivisionByZero) {
    EXPECT_EQ(errorsOf("a = 2 ** 63\nb = 9223372036854775807 + 1\nc = 1 << 64\nd = 5 // 0\ne = 1.0 % 0\n"),
              "t.tile:1:5: error: integer overflow in compile-time arithmetic\n"
              "t.tile:2:5: error: integer overflow in compile-time arithmetic\n"
              "t.tile:3:5: error: integer overflow in compile-time arithmetic\n"
              "t.tile:4:5: error: division by zero\n"
              "t.tile:5:5: error: division by zero\n");
}

TEST(EvalErrors, ArityAndKeywordsOfUserFunctions) {
    std::string defs = "def mm(M, N, K, block_M=128):\n    return M\n";
    EXPECT_EQ(errorsOf(defs + "mm(1, 2)\n"),
              "t.tile:3:1: error: mm() missing 1 required positional argument: 'K'\n"
              "t.tile:1:1: note: 'mm' is defined here\n");
    EXPECT_EQ(errorsOf(defs + "mm(1)\n"),
              "t.tile:3:1: error: mm() missing 2 required positional arguments: 'N' and 'K'\n"
              "t.tile:1:1: note: 'mm' is defined here\n");
    EXPECT_EQ(errorsOf(defs + "mm(1, 2, 3, 4, 5)\n"),
              "t.tile:3:1: error: mm() takes from 3 to 4 positional arguments but 5 were given\n"
              "t.tile:1:1: note: 'mm' is defined here\n");
    EXPECT_EQ(errorsOf(defs + "mm(1, 2, 3, block_m=64)\n"),
              "t.tile:3:21: error: mm() got an unexpected keyword argument 'block_m'\n"
              "t.tile:3:21: note: did you mean 'block_M'?\n");
    EXPECT_EQ(errorsOf(defs + "mm(1, 2, 3, M=4)\n"),
              "t.tile:3:15: error: mm() got multiple values for argument 'M'\n"
              "t.tile:1:1: note: 'mm' is defined here\n");
}

TEST(EvalErrors, TypeErrors) {
    EXPECT_EQ(errorsOf("x = 1\nx()\n"), "t.tile:2:1: error: 'int' object is not callable\n");
    EXPECT_EQ(errorsOf("x = (1, 2)\nx[0] = 3\n"),
              "t.tile:2:1: error: 'tuple' object does not support item assignment\n");
    EXPECT_EQ(errorsOf("x = [1][3]\n"), "t.tile:1:9: error: list index out of range\n");
    EXPECT_EQ(errorsOf("a, b = 1, 2, 3\n"), "t.tile:1:1: error: too many values to unpack (expected 2)\n");
    EXPECT_EQ(errorsOf("x = 'a' < 1\n"),
              "t.tile:1:5: error: '<' is not supported between instances of 'str' and 'int'\n");
    EXPECT_EQ(errorsOf("x = {}['k']\n"), "t.tile:1:8: error: key 'k' is not in the dict\n");
}

TEST(EvalErrors, UnsupportedConstructsOnlyWhenReached) {
    // Reached from a module-level statement, which is then skipped (in a kernel factory it is an error:
    // EvalCompatTest.cpp).
    EXPECT_EQ(errorsOf("def f():\n    return b'1'\nassert f()\n"),
              "t.tile:2:12: warning: bytes literal is not supported at compile time (the module-level statement is "
              "skipped)\nt.tile:1:1: warning: file exports no kernel\n");
    EXPECT_EQ(errorsOf("if False:\n    x = b'1'\n"), "t.tile:1:1: warning: file exports no kernel\n");
}

TEST(EvalErrors, AssertShowsItsMessage) {
    EXPECT_EQ(errorsOf("M = 100\nassert M % 64 == 0, 'M must be a multiple of 64'\n"),
              "t.tile:2:1: error: assertion failed: M must be a multiple of 64\n");
}

TEST(EvalErrors, OpaqueModuleValues) {
    EXPECT_EQ(errorsOf("import numpy\ndef f():\n    for i in range(numpy.size(3)):\n        pass\nassert f() is None\n"),
              "t.tile:3:20: warning: 'numpy.size(...)' comes from module 'numpy', which tilec does not evaluate (the "
              "module-level statement is skipped)\nt.tile:1:8: note: module 'numpy' is imported here\n"
              "t.tile:1:1: warning: file exports no kernel\n");
}

TEST(EvalErrors, DefineForAnUndefinedName) {
    EvalRun r;
    r.define("NOPE", "1");
    r.run("M = 1\nif M:\n    N = 2\n");
    EXPECT_FALSE(r.program);
    EXPECT_EQ(headlines(r.diags()), "<-D NOPE>:1:1: error: -D NOPE: the file defines no module-level name 'NOPE'\n");
    EvalRun inner;
    inner.define("N", "4");
    inner.run("M = 1\nif M:\n    N = 2\nassert N == 4\n");
    EXPECT_EQ(inner.diag.errorCount(), 0) << inner.diags();
}

TEST(EvalErrors, UnknownTilePrimitive) {
    EXPECT_EQ(errorsOf("import tilelang.language as T\nT.alloc_share((1,), 'float')\n"),
              "t.tile:2:1: error: unknown primitive 'T.alloc_share'\n"
              "t.tile:2:1: note: did you mean 'T.alloc_shared'?\n");
}

const char *kGemm = "import tilelang.language as T\n"
                    "def mm(M):\n"
                    "    @T.prim_func\n"
                    "    def kernel(A: T.Tensor((M, 64), 'float16')):\n"
                    "        with T.Kernel(1, threads=128) as bx:\n"
                    "            A[0, 0] = 1\n"
                    "    return kernel\n";

TEST(EvalErrors, ExportsAndKernelNames) {
    EvalRun r;
    r.run(std::string(kGemm) + "a = mm(64)\nb = mm(128)\na = mm(256)\nnot_kernel = 3\n");
    ASSERT_TRUE(r.program) << r.diags();
    ASSERT_EQ(r.program->kernels.size(), 2u);
    EXPECT_EQ(r.program->kernels[0]->name, "a");
    EXPECT_EQ(r.program->kernels[1]->name, "b");
    EXPECT_EQ(tilec::ir::constInt(r.program->kernels[0]->params[0].buffer->shape[0]), 256); // the last wins
    EXPECT_EQ(r.program->kernels[0]->loc.line, 10);

    EvalRun bad;
    bad.run(std::string(kGemm) + "double = mm(64)\n");
    EXPECT_FALSE(bad.program);
    EXPECT_EQ(headlines(bad.diags()),
              "t.tile:8:1: error: kernel name 'double' is not a valid C identifier (it is a C keyword)\n");

    EvalRun cxx;
    cxx.run(std::string(kGemm) + "template = mm(64)\n");
    EXPECT_EQ(headlines(cxx.diags()),
              "t.tile:8:1: error: kernel name 'template' is not a valid C identifier (it is a C++ keyword)\n");
}

TEST(EvalErrors, ExportAndKernelOptions) {
    EvalRun r;
    r.exportCall("g", "mm(512)");
    r.exportCall("bad", "len((1, 2))");
    r.opts.kernels = {"g", "missing"};
    r.run(std::string(kGemm) + "a = mm(64)\n");
    EXPECT_FALSE(r.program);
    EXPECT_EQ(headlines(r.diags()), "<--export bad>:1:1: error: --export 'bad': 'len((1, 2))' is a int, not a prim_func\n"
                                    "tilec: error: --kernel missing: the file exports no kernel named 'missing' "
                                    "(it exports a, g)\n");

    EvalRun ok;
    ok.exportCall("g", "mm(512)");
    ok.opts.kernels = {"g"};
    ok.run(std::string(kGemm) + "a = mm(64)\n");
    ASSERT_TRUE(ok.program) << ok.diags();
    ASSERT_EQ(ok.program->kernels.size(), 1u);
    EXPECT_EQ(ok.program->kernels[0]->name, "g");
    EXPECT_EQ(tilec::ir::constInt(ok.program->kernels[0]->params[0].buffer->shape[0]), 512);
}

TEST(EvalErrors, NoKernelWarningOnlyWithoutErrors) {
    EXPECT_EQ(errorsOf("x = 1\n"), "t.tile:1:1: warning: file exports no kernel\n");
    EXPECT_EQ(errorsOf("x = y\n"), "t.tile:1:5: error: undefined name 'y'\n");
}

} // namespace
