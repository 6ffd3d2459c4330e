/// \file
/// TileLang's programs as their users write them (issue 11): comprehensions, lambdas and sets, TileLang's
/// dtype spellings, the math / itertools / tilelang / tvm / torch.cuda stand-ins, @autotune, module-level
/// statements tilec does not evaluate (skipped with a warning), and the front end's fixes found on the way.
#include "EvalTestUtil.h"

#include "tilec/IRPrinter.h"
#include "tilec/IROperator.h"
#include "tilec/passes/Arith.h"

#include <gtest/gtest.h>

using tilec::evaltest::EvalRun;
using namespace tilec;

namespace {

/// Runs `src` and expects no error (the "exports no kernel" warning is expected).
void expectPython(const std::string &src, int sm = 90) {
    EvalRun r;
    if (sm != 90) r.opts.target = *Target::parse("sm_" + std::to_string(sm));
    r.run(src);
    EXPECT_TRUE(r.parsed) << r.diags();
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
}

/// Runs `src`, expecting it to compile, and returns its kernel `name` (null, with a failure, otherwise).
const ir::Kernel *compiledKernel(EvalRun &r, const std::string &src, const std::string &name = "k") {
    r.run(src);
    EXPECT_TRUE(r.program) << r.diags();
    const ir::Kernel *k = r.kernel(name);
    EXPECT_TRUE(k) << r.diags();
    return k;
}

/// A one-kernel program around `body` (8 spaces of indentation, inside `with T.Kernel(4, threads=128) as bx`).
std::string kernel(const std::string &prelude, const std::string &body, const std::string &params = "A: T.Tensor((512,), \"float32\")") {
    return "import tilelang\nimport tilelang.language as T\n" + prelude + "@T.prim_func\ndef k(" + params +
           "):\n    with T.Kernel(4, threads=128) as bx:\n" + body;
}

TEST(EvalCompat, Comprehensions) {
    expectPython("xs = [i * i for i in range(5) if i % 2 == 0]\n"
                 "assert xs == [0, 4, 16]\n"
                 "pairs = [(a, b) for a in range(3) for b in range(a)]\n"
                 "assert pairs == [(1, 0), (2, 0), (2, 1)]\n"
                 "d = {k: v for k, v in zip('ab', (1, 2))}\n"
                 "assert d == {'a': 1, 'b': 2}\n"
                 "assert sum(x for x in range(4)) == 6 and any(x > 2 for x in [1, 3]) and tuple(i for i in 'ab') == ('a', 'b')\n"
                 "configs = [{'block_M': m, 'stages': s} for m in [64, 128] for s in [2, 3]]\n"
                 "assert len(configs) == 4 and configs[3] == {'block_M': 128, 'stages': 3}\n"
                 "i = 'outer'\n"
                 "ys = [i for i in range(2)]\n"
                 "assert i == 'outer'\n"                   // the comprehension's target does not leak
                 "assert [[j for j in range(i)] for i in range(3)] == [[], [0], [0, 1]]\n");
}

TEST(EvalCompat, SetsAndLambdas) {
    expectPython("s = {3, 1, 3}\n"
                 "assert len(s) == 2 and 1 in s and 2 not in s and set([1, 1, 2]) == (1, 2) and len(set()) == 0\n"
                 "assert 90 in {80, 90} and {x % 3 for x in range(7)} == (0, 1, 2)\n"
                 "f = lambda a, b=2: a * b\n"
                 "assert f(3) == 6 and f(3, b=4) == 12 and (lambda: 7)() == 7\n"
                 "key = lambda *xs, **kw: (len(xs), sorted(kw))\n"
                 "assert key(1, 2, z=3) == (2, ['z'])\n"
                 "scale = 3\n"
                 "g = lambda x: x * scale\n"
                 "assert [g(i) for i in range(3)] == [0, 3, 6]\n");
}

TEST(EvalCompat, DTypeSpellingsAndObjects) {
    expectPython("import tilelang.language as T\nimport tvm\nimport torch\n"
                 "assert T.float == T.float32 and T.half == T.float16 and T.double == T.float64 and T.int == T.int32\n"
                 "assert T.long == T.int64 and T.short == T.int16 and T.uint == T.uint32\n"
                 "assert T.dtype('float16').bits == 16 and T.dtype(T.bfloat16).bytes == 2 and T.float8_e4m3fn.bits == 8\n"
                 "assert tvm.DataType('float32').bits == 32 and tvm.DataType(T.int8).bits == 8\n"
                 "assert torch.float16 == T.float16 and torch.bfloat16 == 'bfloat16' and torch.float == T.float32\n");
}

TEST(EvalCompat, CompileTimeHelpers) {
    expectPython("import math, itertools\nimport tilelang\nimport tilelang as tl\nfrom tilelang import cdiv\n"
                 "assert math.log2(1024) == 10.0 and math.ceil(2.1) == 3 and math.floor(-2.5) == -3 and math.sqrt(16) == 4.0\n"
                 "assert math.gcd(12, 18) == 6 and math.lcm(4, 6) == 12 and math.prod([2, 3, 4]) == 24 and math.isqrt(17) == 4\n"
                 "assert math.log(8, 2) == 3.0 and math.pow(2, 3) == 8.0 and math.pi > 3.14 and math.trunc(-2.7) == -2\n"
                 "assert list(itertools.product([1, 2], ['a'])) == [(1, 'a'), (2, 'a')]\n"
                 "assert len(list(itertools.product(range(3), repeat=2))) == 9 and list(itertools.chain([1], (2,))) == [1, 2]\n"
                 "assert tilelang.cdiv(129, 64) == 3 and tl.cdiv(128, 64) == 2 and cdiv(1, 64) == 1\n"
                 "assert tilelang.next_power_of_2(100) == 128 and tl.next_power_of_2(64) == 64 and tl.next_power_of_2(1) == 1\n"
                 "assert (255).bit_length() == 8 and (0).bit_length() == 0 and (-4).bit_length() == 3\n"
                 "assert tilelang.math.cdiv(10, 3) == 4\n");
    EvalRun r;
    r.run("import math\nx = math.sqrt(-1)\n");
    EXPECT_NE(r.diags().find("error: math.sqrt(): math domain error"), std::string::npos) << r.diags();
    EvalRun big;
    big.run("import itertools\nx = list(itertools.product([1, 2], repeat=1000000000))\n");
    EXPECT_NE(big.diags().find("error: itertools.product() with repeat=1000000000 is too large"), std::string::npos)
        << big.diags();
    expectPython("import tilelang\nassert tilelang.next_power_of_2(0) == 2\n");
}

TEST(EvalCompat, GpuQueriesAnsweredFromTheTarget) {
    const std::string src = "import torch\nfrom tilelang.carver.arch import driver\nimport tilelang\n"
                            "assert torch.cuda.is_available() and torch.cuda.current_device() == 0\n"
                            "major, minor = torch.cuda.get_device_capability(0)\n"
                            "sm = major * 10 + minor\n"
                            "props = torch.cuda.get_device_properties(0)\n"
                            "assert (props.major, props.minor) == (major, minor)\n"
                            "assert props.multi_processor_count == driver.get_num_sms()\n"
                            "assert props.name == torch.cuda.get_device_name(0) == torch.cuda.get_device_name()\n";
    expectPython(src + "assert sm == 90 and driver.get_num_sms() == 132\n"
                       "assert torch.cuda.get_device_name() == 'NVIDIA H100 80GB HBM3'\n");
    expectPython(src + "assert sm == 80 and tilelang.carver.arch.driver.get_num_sms() == 108\n"
                       "assert torch.cuda.get_device_name() == 'NVIDIA A100-SXM4-80GB'\n", 80);
    EvalRun r;
    r.opts.target = r.opts.target.withSmCount(114); // --num-sms=114
    r.run(src + "assert driver.get_num_sms() == 114\n");
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
}

TEST(EvalCompat, TorchTensorsMadeFromSizesHaveTheirShape) {
    expectPython("import torch\n"
                 "A = torch.rand(256, 512, device='cuda', dtype=torch.float16) * 2 - 1\n"
                 "M, K = A.shape\n"
                 "assert (M, K) == (256, 512)\n"
                 "B = torch.randn((4, 8)).cuda().half()\n"
                 "assert B.shape == (4, 8) and B.size(1) == 8 and B.size(-2) == 4 and B.size() == (4, 8)\n"
                 "assert B.ndim == 2 and B.dim() == 2 and (torch.zeros(3, 4) + torch.ones(3, 4)).shape == (3, 4)\n"
                 "assert (-torch.empty([2, 3]) > 0).shape == (2, 3)\n");
    // What tilec cannot follow has no shape: a matrix product, broadcasting, a transpose, a shape from data.
    for (const char *unknown : {"torch.zeros(3, 4) @ torch.zeros(4, 5)", "torch.zeros(3, 1) + torch.zeros(1, 4)",
                                "torch.zeros(3, 4).T", "torch.zeros(3, 4).reshape(2, 6)", "torch.load('x.pt')"}) {
        EvalRun r;
        r.run(std::string("import torch\nm, n = (") + unknown + ").shape\n");
        EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
        EXPECT_NE(r.diags().find("comes from module 'torch', which tilec does not evaluate (the module-level statement is skipped)"),
                  std::string::npos)
            << unknown << ": " << r.diags();
    }
}

TEST(EvalCompat, PersistentLoopVisitsEveryTileOnce) {
    // T.Persistent([5, 7], 4, block, 3): 4 blocks share the 35 tiles; 7 is not a multiple of the group size 3.
    EvalRun r;
    const ir::Kernel *k =
        compiledKernel(r, "import tilelang.language as T\n@T.prim_func\ndef k(Hits: T.Tensor((5, 7), T.int32)):\n"
                          "    with T.Kernel(4, threads=32) as block:\n"
                          "        for bx, by in T.Persistent([5, 7], 4, block, 3):\n            Hits[bx, by] = 1\n");
    ASSERT_TRUE(k);
    auto loop = ir::as<ir::For>(k->body);
    ASSERT_TRUE(loop) << ir::print(*k);
    auto guarded = ir::as<ir::IfThenElse>(loop->body);
    ASSERT_TRUE(guarded) << ir::print(*k);
    auto store = ir::as<ir::Store>(guarded->then);
    ASSERT_TRUE(store) << ir::print(*k);
    auto waves = ir::constInt(loop->extent);
    ASSERT_TRUE(waves);
    std::map<std::pair<int64_t, int64_t>, int> visits;
    for (int64_t w = 0; w < *waves; ++w)
        for (int64_t b = 0; b < 4; ++b) {
            passes::VarMap m{{loop->var.get(), ir::intImm(w)}, {k->blockIdx[0].get(), ir::intImm(b)}};
            auto cond = ir::constInt(ir::simplify(passes::substitute(guarded->cond, m)));
            ASSERT_TRUE(cond) << ir::print(*k);
            if (!*cond) continue;
            auto i = ir::constInt(ir::simplify(passes::substitute(store->indices[0], m)));
            auto j = ir::constInt(ir::simplify(passes::substitute(store->indices[1], m)));
            ASSERT_TRUE(i && j);
            ++visits[{*i, *j}];
        }
    EXPECT_EQ(visits.size(), 35u);
    for (auto &[tile, n] : visits) {
        EXPECT_TRUE(tile.first >= 0 && tile.first < 5 && tile.second >= 0 && tile.second < 7);
        EXPECT_EQ(n, 1) << tile.first << ", " << tile.second;
    }
    EvalRun bad;
    bad.run("import tilelang.language as T\n@T.prim_func\ndef k(A: T.Tensor((8,), T.int32)):\n"
            "    with T.Kernel(4, threads=32) as block:\n        for bx, by in T.Persistent([8], 4, block):\n"
            "            A[bx] = by\n");
    EXPECT_NE(bad.diags().find("t.tile:5:13: error: T.Persistent makes 1 loop but 2 loop variables are named"), std::string::npos)
        << bad.diags();
}

TEST(EvalCompat, AutotuneConfigsAreNotEvaluated) {
    // The configuration generator needs torch and a GPU: tilec compiles the configuration the export passes.
    EvalRun r;
    r.exportCall("g", "scale(512, block=128)");
    r.run("import torch\nimport tilelang\nimport tilelang.language as T\nfrom tilelang.autotuner import *\n"
          "def get_configs():\n    return [dict(block=b) for b in torch.cuda.list_of_blocks()]\n"
          "@autotune(configs=get_configs(), warmup=10, rep=10)\n@tilelang.jit(out_idx=[-1])\n"
          "def scale(n, block=None):\n    @T.prim_func\n"
          "    def k(A: T.Tensor((n,), 'float32')):\n        with T.Kernel(n // block, threads=128) as bx:\n"
          "            for i in T.Parallel(block):\n                A[bx * block + i] = A[bx * block + i] * 2.0\n"
          "    return k\n"
          "@tilelang.autotune(configs=get_configs())\ndef other(n, block=None):\n    return scale(n, block)\n");
    ASSERT_TRUE(r.program) << r.diags();
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
    ASSERT_TRUE(r.kernel("g"));
    EXPECT_EQ(ir::constInt(r.kernel("g")->grid[0]), 4);
}

TEST(EvalCompat, ModuleLevelStatementsTilecDoesNotEvaluateAreSkipped) {
    EvalRun r;
    r.run("import torch\nimport tilelang.language as T\n"
          "x = torch.load('x.pt', map_location='cuda')\n" // opaque, fine
          "M, N = x.shape\n"                         // skipped: a warning
          "half = M // 2\n"                          // depends on it: skipped silently
          "del x\npass\n"                            // skipped: a warning
          "@T.prim_func\ndef k(A: T.Tensor((64,), 'float32')):\n    with T.Kernel(1, threads=64) as bx:\n"
          "        for i in T.Parallel(64):\n            A[i] = 1.0\n"
          "y = k(x)\n"                               // running the kernel: skipped
          "assert 1 + 1 == 2\n");
    ASSERT_TRUE(r.program) << r.diags();
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
    EXPECT_EQ(r.diag.warningCount(), 3) << r.diags();
    EXPECT_NE(r.diags().find("t.tile:4:1: warning: 'torch.load(...).shape' comes from module 'torch', which tilec does "
                             "not evaluate (the module-level statement is skipped)"),
              std::string::npos)
        << r.diags();
    EXPECT_NE(r.diags().find("t.tile:6:1: warning: del is not supported at compile time"), std::string::npos) << r.diags();
    EXPECT_NE(r.diags().find("t.tile:13:5: warning: a prim_func cannot be called at compile time"), std::string::npos)
        << r.diags();

    // Used by a kernel: an error there, naming the skipped statement.
    EvalRun use;
    use.run("import torch\nimport tilelang.language as T\nM, N = torch.load('x.pt').shape\nhalf = M // 2\n"
            "@T.prim_func\ndef k(A: T.Tensor((half,), 'float32')):\n    with T.Kernel(1, threads=64) as bx:\n"
            "        A[0] = 1.0\n");
    EXPECT_FALSE(use.program);
    EXPECT_NE(use.diags().find("t.tile:6:20: error: 'half' is not available: the module-level statement at line 3, "
                               "which it depends on, was skipped ('torch.load(...).shape' comes from module 'torch', "
                               "which tilec does not evaluate)"),
              std::string::npos)
        << use.diags();

    // Python's own errors stay errors, and so do a kernel factory's.
    EvalRun py;
    py.run("x = undefined_name\n");
    EXPECT_NE(py.diags().find("error: undefined name"), std::string::npos) << py.diags();
    EvalRun factory;
    factory.run("import torch\nimport tilelang.language as T\ndef make(n):\n    m = torch.size(n) + 1\n"
                "    @T.prim_func\n    def k(A: T.Tensor((m,), 'float32')):\n        with T.Kernel(1, threads=64) as bx:\n"
                "            A[0] = 1.0\n    return k\nk = make(4)\n");
    EXPECT_FALSE(factory.program);
    // The opaque value says where it comes from.
    EXPECT_NE(factory.diags().find("t.tile:6:23: error: 'torch.size(...)' comes from module 'torch', which tilec does not evaluate"),
              std::string::npos)
        << factory.diags();
}

TEST(EvalCompat, OpaqueCallStatementInAKernelIsAnError) {
    EvalRun r;
    r.run(kernel("import somelib\n", "        somelib.do_something(A, bx)\n        A[0] = 1.0\n"));
    EXPECT_FALSE(r.program);
    EXPECT_NE(r.diags().find("t.tile:7:9: error: 'somelib.do_something(...)' cannot be compiled into a kernel: it "
                             "comes from module 'somelib', which tilec does not evaluate"),
              std::string::npos)
        << r.diags();
    // Outside kernels (a factory, the module) such a call does nothing, as before.
    expectPython("import somelib\nsomelib.seed(0)\ndef f():\n    somelib.log('x')\n    return 1\nassert f() == 1\n");
}

TEST(EvalCompat, BufferReadScalarsPassedBare) {
    EvalRun r;
    r.run(kernel("", "        n = L[bx]\n        blocks = T.ceildiv(n, 64)\n        m = T.min(n, 100)\n"
                     "        for k in T.Pipelined(blocks, num_stages=2):\n            A[k] = T.cast(m, 'float32')\n"
                     "        for k in T.serial(n):\n            A[k] = n.astype(T.float32)\n",
                 "A: T.Tensor((512,), 'float32'), L: T.Tensor((4,), 'int32')"));
    ASSERT_TRUE(r.program) << r.diags();
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
}

TEST(EvalCompat, NoMisleadingNoLaunchErrorAfterAnEarlierOne) {
    EvalRun r;
    r.run("import numpy\nimport tilelang.language as T\nG = numpy.grid()\n"
          "@T.prim_func\ndef k(A: T.Tensor((64,), 'float32')):\n    with T.Kernel(G, threads=64) as bx:\n        A[0] = 1.0\n");
    EXPECT_FALSE(r.program);
    EXPECT_NE(r.diags().find("t.tile:6:19: error: 'numpy.grid(...)' comes from module 'numpy', which tilec does not evaluate"),
              std::string::npos)
        << r.diags();
    EXPECT_NE(r.diags().find("t.tile:1:8: note: module 'numpy' is imported here"), std::string::npos) << r.diags();
    EXPECT_EQ(r.diags().find("has no 'with T.Kernel"), std::string::npos) << r.diags();
}

TEST(EvalCompat, AFactorysUnusedPrimFuncDoesNotFailTheFile) {
    const std::string src = "import tilelang.language as T\n"
                            "def make(n, split):\n"
                            "    @T.prim_func\n    def whole(A: T.Tensor((n,), 'float32')):\n"
                            "        with T.Kernel(1, threads=64) as bx:\n            A[0] = 1.0\n"
                            "    @T.prim_func\n    def parts(A: T.Tensor((n,), 'float32')):\n"
                            "        with T.Kernel(n // split, threads=64) as bx:\n            A[bx] = 1.0\n"
                            "    return parts if split != 0 else whole\n";
    EvalRun r;
    r.run(src + "k = make(64, 0)\n"); // `parts` divides by zero, but only `whole` is exported
    ASSERT_TRUE(r.program) << r.diags();
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
    EvalRun bad;
    bad.run(src + "p = make(64, -1)\n"); // `parts` exported with a negative grid: its errors are reported
    EXPECT_FALSE(bad.program);
    EXPECT_NE(bad.diags().find("grid extent must be at least 1"), std::string::npos) << bad.diags();
}

TEST(EvalCompat, MultiDimensionalThreadBlocks) {
    EvalRun r;
    const ir::Kernel *k = compiledKernel(r, "import tilelang.language as T\n@T.prim_func\ndef k(A: T.Tensor[(64, 4), 'float32']):\n"
                                            "    with T.Kernel(1, threads=(64, 4)) as bx:\n        tn = T.get_thread_binding(0)\n"
                                            "        tk = T.get_thread_binding(1)\n        A[tn, tk] = 1.0\n");
    ASSERT_TRUE(k);
    EXPECT_EQ(k->threads, 256);
    std::string body = ir::print(k->body);
    EXPECT_NE(body.find("tx // 64"), std::string::npos) << body;
    EXPECT_NE(body.find("tx % 64"), std::string::npos) << body;
    // past the block's dimensions, TileLang's threadIdx.y / .z of a 1-wide extent: 0
    EvalRun one;
    const ir::Kernel *k1 = compiledKernel(one, kernel("", "        A[T.get_thread_binding(1) + 3 * T.get_thread_binding(2)] = 1.0\n"));
    ASSERT_TRUE(k1);
    std::string body1 = ir::print(k1->body);
    EXPECT_NE(body1.find("A[0] = "), std::string::npos) << body1;
    EvalRun bad;
    bad.run(kernel("", "        t = T.get_thread_binding(3)\n"));
    EXPECT_NE(bad.diags().find("error: dim=3 does not exist: a thread block has dimensions 0, 1 and 2"), std::string::npos)
        << bad.diags();
}

TEST(EvalCompat, MacroAndLayoutHints) {
    EvalRun r;
    r.run("import tilelang\nimport tilelang.language as T\nfrom tilelang.intrinsics import make_mma_swizzle_layout\n"
          "@T.macro\ndef twice(buf, i):\n    buf[i] = buf[i] * 2.0\n"
          "@T.prim_func\ndef k(A: T.Tensor((128,), 'float32')):\n    with T.Kernel(1, threads=128) as bx:\n"
          "        S = T.alloc_shared((128,), 'float32')\n"
          "        S2 = T.alloc_shared((64, 64), 'float16')\n"
          "        T.annotate_layout({S: tilelang.layout.make_swizzled_layout(S), S2: make_mma_swizzle_layout(S2)})\n"
          "        T.no_set_max_nreg()\n"
          "        T.copy(A, S)\n        for i in T.Parallel(128):\n            twice(S, i)\n        T.copy(S, A)\n");
    ASSERT_TRUE(r.program) << r.diags();
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
    EvalRun bad;
    bad.run(kernel("def my_layout(b):\n    return b\n",
                   "        S = T.alloc_shared((128,), 'float32')\n        T.annotate_layout({S: my_layout(S)})\n"));
    EXPECT_NE(bad.diags().find("error: T.annotate_layout: only a T.Layout of a global tensor or shared buffer, a T.Fragment or T.Layout of a fragment"),
              std::string::npos)
        << bad.diags();
    // A view of a tensor's data is a parameter the launch function passes the tensor's pointer for.
    EvalRun view;
    view.run(kernel("", "        flat = T.Tensor((2, 256), 'float32', A.data)\n"
                        "        for i in T.Parallel(256):\n            flat[bx % 2, i] = 0\n"));
    ASSERT_TRUE(view.program) << view.diags();
    const auto &params = view.program->kernels[0]->params;
    ASSERT_EQ(params.size(), 2u);
    EXPECT_EQ(params[1].buffer->name, "flat");
    EXPECT_EQ(params[1].viewOf, params[0].buffer);
    EXPECT_FALSE(params[1].argument());
}

TEST(EvalCompat, WithSeveralContextsNestsThem) {
    // `with A as a, B:` is `with A as a:` around `with B:` (TileLang's iket examples put a profiling range beside
    // T.Kernel); an opaque context (torch.no_grad()) runs its body, as alone.
    EvalRun r;
    const ir::Kernel *k = compiledKernel(r, "import torch\nimport tilelang.language as T\n"
                                            "with torch.no_grad(), torch.cuda.device(0) as d:\n    n = 128\n"
                                            "@T.prim_func\ndef k(A: T.Tensor((128,), 'float32')):\n"
                                            "    with T.Kernel(1, threads=n) as bx, torch.no_grad():\n"
                                            "        for i in T.Parallel(n):\n            A[i] = A[i] * 2.0\n");
    ASSERT_TRUE(k);
    EXPECT_EQ(k->threads, 128);
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
    // What the inner context cannot be is an error at that context.
    EvalRun nested;
    nested.run("import tilelang.language as T\n@T.prim_func\ndef k(A: T.Tensor((128,), 'float32')):\n"
               "    with T.Kernel(1, threads=128) as bx, T.Kernel(2) as by:\n        A[0] = 1.0\n");
    EXPECT_NE(nested.diags().find("t.tile:4:42: error: T.Kernel cannot be nested inside another T.Kernel"), std::string::npos)
        << nested.diags();
}

} // namespace
