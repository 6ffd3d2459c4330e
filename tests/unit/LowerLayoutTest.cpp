/// \file
/// Layout inference and the layout arithmetic: which layout each fragment and T.Parallel nest gets, the
/// per-thread element coordinates (checked against the definition for every thread, round and lane), and
/// the diagnostics for uses that need different layouts.
#include "LowerTestUtil.h"

#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRUses.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/InferLayouts.h"
#include "tilec/passes/LowerTileOps.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace tilec;
using namespace tilec::passes;
using tilec::lowertest::LowerRun;

namespace {

/// Front end, lowerTileOps and inferLayouts on a source; the layouts of its first kernel.
struct Inferred {
    evaltest::EvalRun front;
    std::optional<ir::Program> tiles; ///< with the layouts on its kernels
    explicit Inferred(const std::string &src) {
        front.run(src);
        if (!front.program || front.diag.hasErrors()) return;
        tiles = inferLayouts(lowerTileOps(*front.program, front.diag), front.diag);
    }
    const ir::Kernel &kernel() const { return *tiles->kernels.at(0); }
    const Layout *fragment(const std::string &name) const {
        for (auto &b : kernel().allocs)
            if (b->name == name) {
                auto &fragments = layoutsOf(kernel()).fragments;
                auto it = fragments.find(b.get());
                return it == fragments.end() ? nullptr : &it->second;
            }
        return nullptr;
    }
    std::string text() const { return describeLayouts(*tiles); }
};

const char *kHeader = "import tilelang.language as T\n@T.prim_func\n";

TEST(LowerLayout, ElementwiseLoopIsVectorizedBySixteenBytes) {
    Inferred in(std::string(kHeader) +
                "def k(A: T.Tensor((64, 512), \"float16\"), C: T.Tensor((64, 512), \"float32\")):\n"
                "    with T.Kernel(1, threads=128) as bx:\n"
                "        for i, j in T.Parallel(64, 512):\n"
                "            C[i, j] = A[i, j]\n");
    ASSERT_TRUE(in.tiles) << in.front.diags();
    // The widest element (float32) decides: 4 lanes of 4 bytes.
    EXPECT_NE(in.text().find("T.Parallel at line 5: distributed over 128 threads, 4-wide, 256 slots per thread"),
              std::string::npos)
        << in.text();
}

TEST(LowerLayout, FragmentsShareTheirLoopsLayoutAndReductionResultsAreReplicated) {
    Inferred in(std::string(kHeader) +
                "def k(X: T.Tensor((2, 4096), \"bfloat16\"), Y: T.Tensor((2,), \"float\")):\n"
                "    with T.Kernel(1, threads=256) as bx:\n"
                "        xf = T.alloc_fragment((2, 4096), \"float\")\n"
                "        sq = T.alloc_fragment((2, 4096), \"float\")\n"
                "        ss = T.alloc_fragment((2,), \"float\")\n"
                "        T.copy(X, xf)\n"
                "        for i, j in T.Parallel(2, 4096):\n"
                "            sq[i, j] = xf[i, j] * xf[i, j]\n"
                "        T.reduce_sum(sq, ss, dim=1)\n"
                "        T.copy(ss, Y)\n");
    ASSERT_TRUE(in.tiles) << in.front.diags();
    const Layout *xf = in.fragment("xf"), *sq = in.fragment("sq"), *ss = in.fragment("ss");
    ASSERT_TRUE(xf && sq && ss);
    // xf takes the bfloat16 copy's 8 lanes, and sq (linked through the loop) the same layout.
    EXPECT_EQ(xf->kind, Layout::Distributed);
    EXPECT_EQ(xf->vec, 8);
    EXPECT_EQ(xf->threads, 256);
    EXPECT_EQ(xf->slotsPerThread(), 32);
    EXPECT_EQ(*sq, *xf);
    EXPECT_EQ(ss->kind, Layout::Replicated);
    EXPECT_EQ(ss->slotsPerThread(), 2);
}

TEST(LowerLayout, RowsTheThreadsDoNotDivideArePredicatedNotRejected) {
    Inferred in(std::string(kHeader) +
                "def k(X: T.Tensor((4, 1000), \"float16\"), Y: T.Tensor((4, 1000), \"float16\")):\n"
                "    with T.Kernel(4, threads=128) as bx:\n"
                "        x = T.alloc_fragment((1, 1000), \"float\")\n"
                "        T.copy(X[bx, 0], x)\n"
                "        T.copy(x, Y[bx, 0])\n");
    ASSERT_TRUE(in.tiles) << in.front.diags();
    const Layout *x = in.fragment("x");
    ASSERT_TRUE(x);
    EXPECT_EQ(x->vec, 8);
    EXPECT_EQ(x->rounds(), 1);
    EXPECT_EQ(x->fullRounds(), 0); // 1000 < 128 * 8: one partial round
    EXPECT_EQ(x->slotsPerThread(), 8);
}

TEST(LowerLayout, IncompatibleUsesNameBothPlaces) {
    LowerRun r;
    r.run(std::string(kHeader) +
          "def k(X: T.Tensor((64, 64), \"float\"), Y: T.Tensor((64, 64), \"float\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        f = T.alloc_fragment((64, 64), \"float\")\n"
          "        for i, j in T.Parallel(64, 64):\n"
          "            f[63 - i, j] = X[i, j]\n"
          "        T.copy(f, Y)\n");
    EXPECT_FALSE(r.lowered);
    EXPECT_NE(r.diags().find("t.tile:7:13: error: fragment 'f' is indexed here by (63 - i, j)"), std::string::npos) << r.diags();
    EXPECT_NE(r.diags().find("t.tile:8:9: note: elsewhere 'f' is spread over the threads"), std::string::npos) << r.diags();
}

/// The mma layout against its definition: every element of the fragment is in exactly one slot of one
/// thread, the symbolic row and column agree with the numeric evaluation for every thread and slot, and the
/// mmaRows slots of a thread name the rows of its mma slots.
void checkMma(int64_t m, int64_t n, int wm, int wn) {
    const int threads = 32 * wm * wn;
    Layout l = Layout::mma({m, n}, threads, wm, wn);
    Layout rows = Layout::mmaRows(m, threads, wm, wn);
    ASSERT_EQ(l.slotsPerThread() * threads, m * n);
    std::vector<int> seen(m * n, 0);
    auto t = ir::makeVar("t", DType::Int32), mi = ir::makeVar("mi", DType::Int32), ni = ir::makeVar("ni", DType::Int32);
    auto h = ir::makeVar("h", DType::Int32), c = ir::makeVar("c", DType::Int32);
    ir::Expr row = mmaRow(l, t, mi, h), col = mmaCol(l, t, ni, c);
    for (int64_t tt = 0; tt < threads; ++tt) {
        std::set<int64_t> ownRows;
        for (int64_t s = 0; s < l.slotsPerThread(); ++s) {
            int64_t e = elementOf(l, tt, s);
            ASSERT_GE(e, 0);
            ++seen[e];
            std::map<const ir::VarNode *, int64_t> v{{t.get(), tt}, {mi.get(), s / 4 / l.tilesN()}, {ni.get(), s / 4 % l.tilesN()},
                                                     {h.get(), s / 2 % 2}, {c.get(), s % 2}};
            EXPECT_EQ(evalInt(row, v), e / n) << "thread " << tt << " slot " << s;
            EXPECT_EQ(evalInt(col, v), e % n) << "thread " << tt << " slot " << s;
            ownRows.insert(e / n);
        }
        std::set<int64_t> rowSlots;
        for (int64_t s = 0; s < rows.slotsPerThread(); ++s) rowSlots.insert(elementOf(rows, tt, s));
        EXPECT_EQ(rowSlots, ownRows) << "thread " << tt;
    }
    for (int64_t e = 0; e < m * n; ++e) ASSERT_EQ(seen[e], 1) << "element " << e;
}

TEST(LowerLayout, MmaLayoutMatchesItsDefinition) {
    checkMma(16, 8, 1, 1);
    checkMma(64, 64, 4, 1);
    checkMma(128, 128, 2, 2);
    checkMma(128, 64, 2, 4);
    checkMma(64, 128, 1, 8);
}

TEST(LowerLayout, GemmAccumulatorSplitsSquareByDefault) {
    Inferred r(std::string(kHeader) +
               "def k(A: T.Tensor((128, 64), \"float16\"), B: T.Tensor((64, 128), \"float16\"), C: T.Tensor((128, 128), \"float\")):\n"
               "    with T.Kernel(1, threads=128) as bx:\n"
               "        a = T.alloc_shared((128, 64), \"float16\")\n"
               "        b = T.alloc_shared((64, 128), \"float16\")\n"
               "        c = T.alloc_fragment((128, 128), \"float\")\n"
               "        T.copy(A, a)\n"
               "        T.copy(B, b)\n"
               "        T.gemm(a, b, c, clear_accum=True)\n"
               "        T.copy(c, C)\n");
    ASSERT_FALSE(r.front.diag.hasErrors()) << r.front.diags();
    const Layout *c = r.fragment("c");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->kind, Layout::Mma);
    EXPECT_EQ(c->warpsM, 2);
    EXPECT_EQ(c->warpsN, 2);
}

/// FlashAttention's shape: a result read as operand A splits by rows, and the per-row values follow it.
TEST(LowerLayout, OperandAFragmentSplitsByRows) {
    Inferred r(std::string(kHeader) +
               "def k(Q: T.Tensor((64, 64), \"float16\"), V: T.Tensor((64, 64), \"float16\"), O: T.Tensor((64, 64), \"float\")):\n"
               "    with T.Kernel(1, threads=128) as bx:\n"
               "        q = T.alloc_shared((64, 64), \"float16\")\n"
               "        v = T.alloc_shared((64, 64), \"float16\")\n"
               "        s = T.alloc_fragment((64, 64), \"float\")\n"
               "        p = T.alloc_fragment((64, 64), \"float16\")\n"
               "        o = T.alloc_fragment((64, 64), \"float\")\n"
               "        m = T.alloc_fragment((64,), \"float\")\n"
               "        T.copy(Q, q)\n"
               "        T.copy(V, v)\n"
               "        T.gemm(q, q, s, transpose_B=True, clear_accum=True)\n"
               "        T.reduce_max(s, m, dim=1)\n"
               "        for i, j in T.Parallel(64, 64):\n"
               "            p[i, j] = T.exp2(s[i, j] - m[i])\n"
               "        T.gemm(p, v, o, clear_accum=True)\n"
               "        T.copy(o, O)\n");
    ASSERT_FALSE(r.front.diag.hasErrors()) << r.front.diags();
    for (const char *f : {"s", "p", "o"}) {
        const Layout *l = r.fragment(f);
        ASSERT_TRUE(l) << f;
        EXPECT_EQ(l->kind, Layout::Mma) << f;
        EXPECT_EQ(l->warpsM, 4) << f;
        EXPECT_EQ(l->warpsN, 1) << f;
    }
    const Layout *m = r.fragment("m");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kind, Layout::MmaRows);
    EXPECT_EQ(m->slotsPerThread(), 2);
}

// A policy that splits the columns of a fragment later read as operand A keeps its split; the product reads a
// shared copy of the operand instead (StagedOperands.h). Before: "policy FullCol splits the columns of 's'".
TEST(LowerLayout, PolicyThatSplitsOperandColumnsStagesTheOperand) {
    Inferred r(std::string(kHeader) +
               "def k(Q: T.Tensor((64, 64), \"float16\"), O: T.Tensor((64, 64), \"float\")):\n"
               "    with T.Kernel(1, threads=128) as bx:\n"
               "        q = T.alloc_shared((64, 64), \"float16\")\n"
               "        s = T.alloc_fragment((64, 64), \"float16\")\n"
               "        o = T.alloc_fragment((64, 64), \"float\")\n"
               "        T.copy(Q, q)\n"
               "        T.gemm(q, q, s, clear_accum=True, policy=T.GemmWarpPolicy.FullCol)\n"
               "        T.gemm(s, q, o, clear_accum=True)\n"
               "        T.copy(o, O)\n");
    ASSERT_TRUE(r.tiles) << r.front.diags();
    EXPECT_FALSE(r.front.diag.hasErrors()) << r.front.diags();
    const Layout *s = r.fragment("s");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->kind, Layout::Mma);
    EXPECT_EQ(s->warpsM, 1);
    EXPECT_EQ(s->warpsN, 4);
    const ir::Buffer *copy = nullptr;
    for (auto &b : r.kernel().allocs)
        if (b->name == "s_operand") copy = &b;
    ASSERT_TRUE(copy);
    EXPECT_EQ((*copy)->scope, ir::Scope::Shared);
    EXPECT_NE(ir::print(r.kernel().body).find("gemm(s_operand[0:64, 0:64], q[0:64, 0:64], o[0:64, 0:64])"), std::string::npos)
        << ir::print(r.kernel().body);
}

/// elementCoords against the definition: element r*T*V + t*V + v has the row-major coordinates of that
/// number, for every thread, round and lane inside the shape.
void checkCoords(std::vector<int64_t> shape, int threads, int vec) {
    Layout l = Layout::distributed(shape, threads, vec);
    auto r = ir::makeVar("r", DType::Int32), t = ir::makeVar("t", DType::Int32), v = ir::makeVar("v", DType::Int32);
    auto coords = elementCoords(l, r, t, v);
    ASSERT_EQ(coords.size(), shape.size());
    int64_t n = l.elements();
    for (int64_t rr = 0; rr < l.rounds(); ++rr)
        for (int64_t tt = 0; tt < threads; ++tt)
            for (int64_t vv = 0; vv < vec; ++vv) {
                int64_t e = (rr * threads + tt) * vec + vv;
                if (e >= n) continue;
                std::map<const ir::VarNode *, int64_t> values{{r.get(), rr}, {t.get(), tt}, {v.get(), vv}};
                int64_t rest = e;
                for (size_t d = shape.size(); d-- > 0;) {
                    auto got = evalInt(coords[d], values);
                    ASSERT_TRUE(got);
                    ASSERT_EQ(*got, rest % shape[d]) << "dim " << d << " of element " << e << ": " << ir::print(coords[d]);
                    rest /= shape[d];
                }
            }
}

TEST(LowerLayout, ElementCoordinatesMatchTheDefinition) {
    checkCoords({2, 4096}, 256, 8);   // whole rows per round
    checkCoords({64, 64}, 128, 4);    // several rows per round
    checkCoords({1, 1000}, 128, 8);   // a partial round
    checkCoords({3, 5, 8}, 32, 2);    // odd extents
    checkCoords({7, 96}, 96, 4);      // a block that is not a power of two
    checkCoords({4, 6, 4}, 64, 4);    // rounds that neither divide nor are divided by rows
    checkCoords({1000}, 256, 1);
}

TEST(LowerLayout, CoordinatesOfRowsThatFillRoundsDependOnTheRoundAlone) {
    Layout l = Layout::distributed({2, 4096}, 256, 8);
    auto r = ir::makeVar("r", DType::Int32), t = ir::makeVar("t", DType::Int32), v = ir::makeVar("v", DType::Int32);
    auto coords = elementCoords(l, r, t, v);
    // Row index: a constant once the round loop is unrolled, so per-row registers stay registers.
    EXPECT_FALSE(ir::uses(coords[0], t.get())) << ir::print(coords[0]);
    EXPECT_EQ(knownMultiple(simplify(ir::binary(ir::BinaryOp::Sub, coords[1], v))) % 8, 0) << ir::print(coords[1]);
}

} // namespace
