/// \file
/// Tracing @T.prim_func bodies into kernels: every example file, the launch, loop nests, run-time ifs,
/// stores, kernel variables, and the errors of tracing.
#include "EvalTestUtil.h"

#include "tilec/IROperator.h"

#include <gtest/gtest.h>

#include <filesystem>

using tilec::evaltest::EvalRun;
using namespace tilec;

namespace {

std::string example(const std::string &name) { return evaltest::readFile(std::string(TILEC_SOURCE_DIR) + "/examples/" + name); }

int64_t dim(const ir::Buffer &b, size_t i) { return ir::constInt(b->shape[i]).value_or(-1); }

TEST(EvalTrace, GemmExample) {
    EvalRun r;
    r.run(example("gemm.tile"), "gemm.tile");
    ASSERT_TRUE(r.program) << r.diags();
    EXPECT_TRUE(r.diags().empty()) << r.diags();
    ASSERT_EQ(r.program->kernels.size(), 2u);
    const ir::Kernel *k = r.kernel("gemm");
    ASSERT_TRUE(k);
    ASSERT_EQ(k->params.size(), 3u);
    EXPECT_EQ(k->params[0].name(), "A");
    EXPECT_EQ(k->params[0].buffer->dtype, DType::Float16);
    EXPECT_EQ(k->params[0].buffer->scope, ir::Scope::Global);
    EXPECT_EQ(dim(k->params[0].buffer, 0), 1024);
    EXPECT_EQ(k->gridDims, 2);
    EXPECT_EQ(ir::constInt(k->grid[0]), 8);
    EXPECT_EQ(ir::constInt(k->grid[1]), 8);
    EXPECT_EQ(ir::constInt(k->grid[2]), 1);
    EXPECT_EQ(k->blockIdx[0]->name, "bx");
    EXPECT_EQ(k->blockIdx[1]->name, "by");
    EXPECT_EQ(k->threads, 128);
    ASSERT_EQ(k->allocs.size(), 3u);
    EXPECT_EQ(k->allocs[0]->name, "A_shared");
    EXPECT_EQ(k->allocs[0]->scope, ir::Scope::Shared);
    EXPECT_EQ(dim(k->allocs[0], 0), 128);
    EXPECT_EQ(dim(k->allocs[0], 1), 64);
    EXPECT_EQ(k->allocs[2]->scope, ir::Scope::Fragment);
    EXPECT_EQ(k->allocs[2]->dtype, DType::Float32);
    // fill, the pipelined loop, the final copy
    auto seq = ir::as<ir::Seq>(k->body);
    ASSERT_TRUE(seq);
    ASSERT_EQ(seq->stmts.size(), 3u);
    auto loop = ir::as<ir::For>(seq->stmts[1]);
    ASSERT_TRUE(loop);
    EXPECT_EQ(loop->forKind, ir::ForKind::Pipelined);
    EXPECT_EQ(loop->numStages, 3);
    EXPECT_EQ(ir::constInt(loop->extent), 16);
    EXPECT_EQ(loop->var->name, "ko");
    EXPECT_EQ(r.kernel("gemm_4096")->threads, 128);
    EXPECT_EQ(ir::constInt(r.kernel("gemm_4096")->grid[0]), 32);
}

TEST(EvalTrace, EveryExampleEvaluates) {
    struct Expect {
        const char *file;
        std::vector<const char *> kernels;
    };
    std::vector<Expect> all = {
        {"gemm.tile", {"gemm", "gemm_4096"}},
        {"gemm_fp32.tile", {"sgemm_4096"}},
        {"gemm_dynamic_m.tile", {"linear_4096x4096"}},
        {"elementwise_add.tile", {"add_8192", "add_odd"}},
        {"rms_norm.tile", {"rms_norm_4096"}},
        {"flash_attn.tile", {"flash", "flash_d128"}},
    };
    // Every file in examples/ evaluates cleanly and exports kernels; the known ones export these.
    for (auto &entry : std::filesystem::directory_iterator(std::string(TILEC_SOURCE_DIR) + "/examples")) {
        if (entry.path().extension() != ".tile") continue;
        EvalRun r;
        r.run(evaltest::readFile(entry.path().string()), entry.path().filename().string());
        ASSERT_TRUE(r.program) << entry.path() << "\n" << r.diags();
        EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
        EXPECT_FALSE(r.program->kernels.empty()) << entry.path();
        for (auto &k : r.program->kernels) {
            EXPECT_TRUE(k->body) << k->name;
            EXPECT_GE(k->gridDims, 1);
            EXPECT_TRUE(k->threads >= 32 && k->threads <= 1024 && k->threads % 32 == 0) << k->name;
            EXPECT_FALSE(k->params.empty()) << k->name;
        }
    }
    for (auto &e : all) {
        EvalRun r;
        r.run(example(e.file), e.file);
        ASSERT_TRUE(r.program) << e.file << "\n" << r.diags();
        EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
        ASSERT_EQ(r.program->kernels.size(), e.kernels.size()) << e.file;
        for (size_t i = 0; i < e.kernels.size(); ++i) EXPECT_EQ(r.program->kernels[i]->name, e.kernels[i]);
    }
}

TEST(EvalTrace, ExampleDetails) {
    EvalRun dyn;
    dyn.run(example("gemm_dynamic_m.tile"));
    const ir::Kernel *k = dyn.kernel("linear_4096x4096");
    ASSERT_TRUE(k) << dyn.diags();
    ASSERT_EQ(k->dynamicSymbols.size(), 1u);
    EXPECT_EQ(k->dynamicSymbols[0]->name, "m");
    EXPECT_EQ(k->params[0].buffer->shape[0], k->dynamicSymbols[0]);
    EXPECT_FALSE(ir::constInt(k->grid[1]));
    EXPECT_EQ(k->threads, 256);
    EXPECT_EQ(k->swizzlePanel, 8);

    EvalRun rms;
    rms.run(example("rms_norm.tile"));
    k = rms.kernel("rms_norm_4096");
    ASSERT_TRUE(k) << rms.diags();
    EXPECT_EQ(k->gridDims, 1);
    EXPECT_EQ(k->blockIdx[0]->name, "bx");
    EXPECT_EQ(ir::constInt(k->grid[0]), 4096);
    EXPECT_EQ(k->threads, 256);

    EvalRun fa;
    fa.run(example("flash_attn.tile"), "flash_attn.tile");
    k = fa.kernel("flash_d128");
    ASSERT_TRUE(k) << fa.diags();
    EXPECT_EQ(k->gridDims, 3);
    EXPECT_EQ(ir::constInt(k->grid[2]), 8);
    EXPECT_EQ(k->blockIdx[2]->name, "bz");
    EXPECT_EQ(k->allocs.size(), 10u);
    EXPECT_EQ(fa.diags().find("warning"), std::string::npos); // the example writes its regions out: no warning (its
    // point-indexed seed form, tests/lit/sema/Inputs/flash_attn_point_indexed.tile, keeps the warning)
}

TEST(EvalTrace, DefinesChangeTheKernel) {
    EvalRun r;
    r.define("M", "2048");
    r.run(example("gemm_fp32.tile"));
    const ir::Kernel *k = r.kernel("sgemm_4096");
    ASSERT_TRUE(k) << r.diags();
    EXPECT_EQ(dim(k->params[0].buffer, 0), 2048);
    EXPECT_EQ(ir::constInt(k->grid[1]), 16);
}

const char *kHeader = "import tilelang.language as T\n";

TEST(EvalTrace, LoopsIfsStoresAndVariables) {
    EvalRun r;
    r.run(std::string(kHeader) +
          "def mk(M, N):\n"
          "    @T.prim_func\n"
          "    def kernel(A: T.Tensor((M, N), 'float16'), n: T.int32):\n"
          "        with T.Kernel(4, threads=128) as bx:\n"
          "            x = T.alloc_var('int32')\n"
          "            x = 5\n"
          "            x += bx\n"
          "            for i, j in T.Parallel(4, 8):\n"
          "                if i < 2:\n"
          "                    A[i, j] = A[i, j] * 2.0\n"
          "                else:\n"
          "                    A[i, j] += x\n"
          "            for k in range(n):\n"
          "                A[k, 0] = 1\n"
          "            for u in range(2):\n"
          "                A[u, bx] = u * 1.5 if bx > 0 else 0.25\n"
          "    return kernel\n"
          "k = mk(64, 64)\n");
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    ASSERT_EQ(k->params.size(), 2u);
    EXPECT_EQ(k->params[1].kind, ir::Param::Scalar);
    EXPECT_EQ(k->params[1].var->dtype, DType::Int32);
    auto seq = ir::as<ir::Seq>(k->body);
    ASSERT_TRUE(seq);
    // x = 5, x += bx, the parallel nest, the serial loop, two unrolled stores
    ASSERT_EQ(seq->stmts.size(), 6u) << ir::print(*k);
    auto st = ir::as<ir::Store>(seq->stmts[0]);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->buffer->scope, ir::Scope::Var);
    auto outer = ir::as<ir::For>(seq->stmts[2]);
    ASSERT_TRUE(outer);
    EXPECT_EQ(outer->forKind, ir::ForKind::Parallel);
    EXPECT_EQ(outer->var->name, "i");
    auto inner = ir::as<ir::For>(outer->body);
    ASSERT_TRUE(inner);
    EXPECT_EQ(inner->var->name, "j");
    EXPECT_EQ(ir::constInt(inner->extent), 8);
    auto ite = ir::as<ir::IfThenElse>(inner->body);
    ASSERT_TRUE(ite);
    EXPECT_TRUE(ite->otherwise);
    auto serial = ir::as<ir::For>(seq->stmts[3]);
    ASSERT_TRUE(serial);
    EXPECT_EQ(serial->forKind, ir::ForKind::Serial);
    EXPECT_EQ(serial->extent, k->params[1].var);
    auto unrolled = ir::as<ir::Store>(seq->stmts[5]);
    ASSERT_TRUE(unrolled);
    EXPECT_EQ(ir::constInt(unrolled->indices[0]), 1);
    auto conv = ir::as<ir::Cast>(unrolled->value); // the float32 select, stored into float16
    ASSERT_TRUE(conv);
    EXPECT_TRUE(ir::as<ir::Select>(conv->value));
    EXPECT_EQ(unrolled->value->dtype, DType::Float16);
}

TEST(EvalTrace, TopLevelPrimFuncExportsUnderItsName) {
    EvalRun r;
    r.run(std::string(kHeader) +
          "@T.prim_func\n"
          "def copy_kernel(A: T.Tensor((128,), T.float32), B: T.Buffer((128,), 'float32')):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        for i in T.Parallel(128):\n"
          "            B[i] = A[i]\n");
    ASSERT_TRUE(r.program) << r.diags();
    ASSERT_EQ(r.program->kernels.size(), 1u);
    EXPECT_EQ(r.program->kernels[0]->name, "copy_kernel");
    EXPECT_EQ(r.program->kernels[0]->loc.line, 3); // the def
}

std::string traceErrors(const std::string &body, const std::string &params = "A: T.Tensor((64, 64), 'float16')") {
    EvalRun r;
    r.run(std::string(kHeader) + "@T.prim_func\ndef k(" + params + "):\n" + body);
    std::string out, line;
    std::istringstream in(r.diags());
    while (std::getline(in, line))
        if (line.find(": error: ") != std::string::npos) out += line + "\n";
    return out;
}

TEST(EvalTrace, Errors) {
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        A[0] = 1\n"),
              "t.tile:5:9: error: buffer 'A' has 2 dimensions but is indexed with 1 index\n");
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        A[0:4, 0] = 1\n"),
              "t.tile:5:9: error: assigning to a slice of buffer 'A' is not supported; use T.copy or T.fill\n");
    // break / continue leave a sequential run-time loop (runtime_break.tile), not a T.Parallel or T.Pipelined one.
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        while bx < 3:\n            continue\n"), "");
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        for i in T.Parallel(4):\n            continue\n"),
              "t.tile:6:13: error: 'continue' inside a T.Parallel loop is not supported\n");
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        for i in T.Parallel(4, 4):\n            pass\n"),
              "t.tile:5:13: error: T.Parallel makes 2 loops but 1 loop variable is named\n");
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        for i in T.serial(4):\n            break\n"), "");
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        for i in T.Pipelined(4, num_stages=2):\n            break\n"),
              "t.tile:6:13: error: 'break' inside a T.Pipelined loop is not supported\n");
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        if bx > 0:\n            return\n"),
              "t.tile:6:13: error: 'return' inside an 'if' on a run-time condition is not supported\n");
    EXPECT_EQ(traceErrors("    A[0, 0] = 1\n    with T.Kernel(1) as bx:\n        pass\n"),
              "t.tile:4:5: error: a store to buffer 'A' must be inside 'with T.Kernel(...)'\n");
    // Several launches are one prim_func's parts; a workspace belongs before them.
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        pass\n    with T.Kernel(1) as by:\n        pass\n"), "");
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        w = T.alloc_global((4,), 'float32')\n"),
              "t.tile:5:13: error: T.alloc_global makes a workspace for the prim_func's launches: it must come before "
              "'with T.Kernel(...)', not inside it (use T.alloc_shared or T.alloc_fragment there)\n");
    EXPECT_EQ(traceErrors("    pass\n"),
              "t.tile:3:1: error: prim_func 'k' has no 'with T.Kernel(...)' block, so it launches nothing\n");
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        pass\n", "A: int"),
              "t.tile:3:10: error: the annotation of prim_func parameter 'A' must be T.Tensor(shape, dtype) or a "
              "scalar dtype such as T.int32, not a builtin function\n");
    EXPECT_EQ(traceErrors("    with T.Kernel(1) as bx:\n        for i in range(bx):\n            pass\n        y = A[0:2, 0] + 1\n"),
              "t.tile:7:13: error: a slice of buffer 'A' names a region, not a value; index it with plain indices to "
              "read one element\n");
}

} // namespace
