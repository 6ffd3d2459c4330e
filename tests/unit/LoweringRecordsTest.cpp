// What lowering records on a kernel (issue 26) and how lowerings are compared: structural equality of lowerings
// (when lowerVariants merges two lowerings of a kernel into one that names both targets: node by node, variables
// and buffers matched one to one, not the printed IR), the fragment layouts inferLayouts stores on the kernel,
// and the shared tiles' layout records (TMA, panel swizzle) that lowerGemm and planSharedMemory read.
#include "LowerTestUtil.h"

#include "tilec/IRCompare.h"
#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Layout.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace tilec;
using namespace tilec::ir;
using tilec::lowertest::LowerRun;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// The two tensors every lowering shares (the front end made them).
struct Tensors {
    Buffer A = makeBuffer("A", Scope::Global, DType::Float32, {i32(1024)}, {});
    Buffer C = makeBuffer("C", Scope::Global, DType::Float32, {i32(1024)}, {});
};

/// One lowering of `S[tx] = A[bx * 128 + tx]; C[...] = S[127 - tx]` with its own thread index, loop-free body
/// and shared buffer, as each lowering makes its own; `index` is the thread index's type, `offset` S's place.
KernelP lowering(const Tensors &t, DType index = DType::Int32, int64_t offset = 0, const char *shared = "S") {
    auto k = std::make_shared<Kernel>();
    k->name = "k";
    Param a, c;
    a.buffer = t.A, c.buffer = t.C;
    k->params = {a, c};
    for (int d = 0; d < 3; ++d) k->grid[(size_t)d] = i32(d == 0 ? 8 : 1), k->blockIdx[(size_t)d] = makeVar("b" + std::to_string(d), DType::Int32);
    k->threadIdx = makeVar("tx", index);
    Buffer S = makeBuffer(shared, Scope::Shared, DType::Float32, {i32(128)}, {});
    k->allocs = {S};
    Expr tx = k->threadIdx, at = binary(BinaryOp::Add, binary(BinaryOp::Mul, k->blockIdx[0], i32(128)), tx);
    k->body = Seq::make({Store::make(S, {tx}, Load::make(t.A, {at})),
                         Store::make(t.C, {at}, Load::make(S, {binary(BinaryOp::Sub, i32(127), tx)}))});
    k->shared.offsets = {{S.get(), offset}};
    k->shared.bytes = offset + 512;
    return k;
}

TEST(IRCompare, LoweringsWithTheirOwnVariablesAndBuffersAreTheSameKernel) {
    Tensors t;
    KernelP a = lowering(t), b = lowering(t);
    ASSERT_NE(a->threadIdx, b->threadIdx);
    EXPECT_TRUE(sameLowering(*a, *b));
    // The targets a lowering is for are what merging adds up, not a difference.
    auto c = std::make_shared<Kernel>(*b);
    c->targets = {*Target::parse("sm_80")};
    EXPECT_TRUE(sameLowering(*a, *c));
}

TEST(IRCompare, WhatThePrinterLeavesOutStillDiffers) {
    Tensors t;
    KernelP a = lowering(t);
    // The printed IR does not spell a variable's type: comparing text merged these two (S[tx] = A[tx] with a
    // 32-bit and a 64-bit thread index), whose code differs. (Arithmetic mixing the types would print its casts.)
    auto copyRow = [&](DType index) {
        auto k = std::make_shared<Kernel>(*lowering(t, index));
        k->body = Store::make(k->allocs[0], {k->threadIdx}, Load::make(t.A, {k->threadIdx}));
        return k;
    };
    KernelP narrow = copyRow(DType::Int32), wide = copyRow(DType::Int64);
    EXPECT_EQ(print(*narrow), print(*wide));
    EXPECT_FALSE(sameLowering(*narrow, *wide));
    EXPECT_TRUE(sameLowering(*narrow, *copyRow(DType::Int32)));
    EXPECT_FALSE(sameLowering(*a, *lowering(t, DType::Int32, 1024))); // another shared-memory plan
    EXPECT_FALSE(sameLowering(*a, *lowering(t, DType::Int32, 0, "T"))); // another buffer name
    auto tma = std::make_shared<Kernel>(*lowering(t));
    tma->needsTma = true;
    EXPECT_FALSE(sameLowering(*a, *tma));
    auto panels = std::make_shared<Kernel>(*lowering(t));
    panels->recordTileLayout({panels->allocs[0], 128, false});
    EXPECT_FALSE(sameLowering(*a, *panels));
}

TEST(IRCompare, OneVariableIsNotTwo) {
    // b's body reads one thread index where a's reads two variables of that name: the same text, not the same code.
    Tensors t;
    KernelP a = lowering(t);
    auto b = std::make_shared<Kernel>(*lowering(t));
    Var other = makeVar("tx", DType::Int32);
    auto *seq = as<Seq>(b->body);
    auto first = as<Store>(seq->stmts[0]);
    b->body = Seq::make({Store::make(first->buffer, {other}, first->value), seq->stmts[1]});
    EXPECT_EQ(print(*a), print(*b));
    EXPECT_FALSE(sameLowering(*a, *b));
}

const char *kGemm = "import tilelang.language as T\n"
                    "@T.prim_func\n"
                    "def mm(A: T.Tensor((512, 256), \"float16\"), B: T.Tensor((256, 512), \"float16\"),\n"
                    "       C: T.Tensor((512, 512), \"float16\")):\n"
                    "    with T.Kernel(4, 4, threads=128) as (bx, by):\n"
                    "        A_s = T.alloc_shared((128, 32), \"float16\")\n"
                    "        B_s = T.alloc_shared((32, 128), \"float16\")\n"
                    "        acc = T.alloc_fragment((128, 128), \"float\")\n"
                    "        T.clear(acc)\n"
                    "        for ko in T.Pipelined(8, num_stages=3):\n"
                    "            T.copy(A[by * 128, ko * 32], A_s)\n"
                    "            T.copy(B[ko * 32, bx * 128], B_s)\n"
                    "            T.gemm(A_s, B_s, acc)\n"
                    "        T.copy(acc, C[by * 128, bx * 128])\n";

const char *kAdd = "import tilelang.language as T\n"
                   "@T.prim_func\n"
                   "def add(A: T.Tensor((1024,), \"float32\"), C: T.Tensor((1024,), \"float32\")):\n"
                   "    with T.Kernel(8, threads=128) as bx:\n"
                   "        for i in T.Parallel(128):\n"
                   "            C[bx * 128 + i] = A[bx * 128 + i] + 1.0\n";

TEST(IRCompare, IdenticalLoweringsOfTwoTargetsBecomeOneKernel) {
    // sm_80 and sm_86 lower an element-wise kernel alike: one kernel naming both.
    evaltest::EvalRun front;
    front.run(kAdd, "add.tile");
    ASSERT_TRUE(front.program) << front.diags();
    PassContext ctx;
    ctx.diag = &front.diag;
    ir::Program out = lowerVariants(*front.program, {*Target::parse("sm_80"), *Target::parse("sm_86")}, LoweringOptions{}, ctx);
    ASSERT_FALSE(front.diag.hasErrors()) << front.diags();
    ASSERT_EQ(out.kernels.size(), 1u);
    EXPECT_EQ(out.kernels[0]->targets.size(), 2u);
}

TEST(LoweringRecords, FragmentLayoutsTravelOnTheKernelWhileLoweringRuns) {
    evaltest::EvalRun front;
    front.run(kGemm, "mm.tile");
    ASSERT_TRUE(front.program) << front.diags();
    PassContext ctx;
    ctx.diag = &front.diag;
    std::vector<std::string> withLayouts;
    ctx.observe = [&](const char *pass, const ir::Program &p) {
        if (p.kernels.at(0)->layouts) withLayouts.push_back(pass);
    };
    ir::Program out = lower(*front.program, Variant{*Target::parse("sm_80"), {}}, ctx);
    ASSERT_FALSE(front.diag.hasErrors()) << front.diags();
    // From inferLayouts to the last pass; dropped with the fragments once lowering ends.
    ASSERT_FALSE(withLayouts.empty());
    EXPECT_EQ(withLayouts.front(), "inferLayouts");
    EXPECT_EQ(withLayouts.back(), "planSharedMemory");
    EXPECT_FALSE(out.kernels.at(0)->layouts);
}

/// The swizzle arguments of the kernel's wgmma calls.
std::vector<int64_t> wgmmaSwizzles(const Kernel &k) {
    struct Calls : IRVisitor {
        using IRVisitor::visit;
        std::vector<int64_t> found;
        void visit(const Call &c) override {
            if (passes::lib::is(c, passes::lib::Fn::WgmmaSS))
                for (const char *arg : {"swzA", "swzB"})
                    found.push_back(*constValue(passes::lib::arg(c, passes::lib::Fn::WgmmaSS, arg)));
            IRVisitor::visit(c);
        }
    } calls;
    calls.visit(k.body);
    return calls.found;
}

TEST(LoweringRecords, TmaTilesAreRecordedOnceAndReadByLowerGemmAndThePlan) {
    LowerRun hopper;
    hopper.run(kGemm, "mm.tile", *Target::parse("sm_90a"));
    const Kernel *k = hopper.kernel("mm");
    ASSERT_TRUE(k) << hopper.diags();
    // specializeWarps' rings: rows of 64 and 256 bytes, TMA's 64- and 128-byte modes.
    std::map<std::string, std::pair<int, bool>> records;
    for (auto &t : k->tileLayouts) records[t.buffer->name] = {t.swizzleBytes, t.tma};
    EXPECT_EQ(records["A_s"], std::make_pair(64, true));
    EXPECT_EQ(records["B_s"], std::make_pair(128, true));
    EXPECT_EQ(wgmmaSwizzles(*k), (std::vector<int64_t>{64, 128}));
    for (auto &t : k->tileLayouts)
        if (auto at = k->shared.offsetOf(t.buffer.get())) EXPECT_EQ(*at % 1024, 0) << t.buffer->name;
    // cp.async and mma.sync (sm_80): tiles the threads store in the row swizzle, no record.
    LowerRun ampere;
    ampere.run(kGemm, "mm.tile", *Target::parse("sm_80"));
    ASSERT_TRUE(ampere.kernel("mm")) << ampere.diags();
    EXPECT_TRUE(ampere.kernel("mm")->tileLayouts.empty());
}

} // namespace
