/// \file
/// Layout inference and the layout arithmetic: which layout each fragment and T.Parallel nest gets, the
/// per-thread element coordinates (checked against the definition for every thread, round and lane), and
/// the diagnostics for uses that need different layouts.
#include "LowerTestUtil.h"

#include "tilec/IROperator.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/InferLayouts.h"
#include "tilec/passes/LowerTileOps.h"

#include <gtest/gtest.h>

using namespace tilec;
using namespace tilec::passes;
using tilec::lowertest::LowerRun;

namespace {

/// Front end, lowerTileOps and inferLayouts on a source; the layouts of its first kernel.
struct Inferred {
    evaltest::EvalRun front;
    std::optional<ir::Program> tiles;
    std::vector<KernelLayouts> layouts;
    explicit Inferred(const std::string &src) {
        front.run(src);
        if (!front.program || front.diag.hasErrors()) return;
        tiles = lowerTileOps(*front.program, front.diag);
        layouts = inferLayouts(*tiles, front.diag);
    }
    const ir::Kernel &kernel() const { return *tiles->kernels.at(0); }
    const Layout *fragment(const std::string &name) const {
        for (auto &b : kernel().allocs)
            if (b->name == name) {
                auto it = layouts.at(0).fragments.find(b.get());
                return it == layouts.at(0).fragments.end() ? nullptr : &it->second;
            }
        return nullptr;
    }
    std::string text() const { return describeLayouts(*tiles, layouts); }
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
          "        T.copy(X, f)\n"
          "        for i, j in T.Parallel(64, 64):\n"
          "            Y[i, j] = f[j, i]\n");
    EXPECT_FALSE(r.lowered);
    EXPECT_NE(r.diags().find("t.tile:8:23: error: fragment 'f' is indexed here by (j, i)"), std::string::npos) << r.diags();
    EXPECT_NE(r.diags().find("t.tile:6:9: note: elsewhere 'f' is spread over the threads"), std::string::npos) << r.diags();
}

TEST(LowerLayout, GemmIsALocatedErrorForNow) {
    LowerRun r;
    r.run(std::string(kHeader) +
          "def k(A: T.Tensor((64, 64), \"float16\"), C: T.Tensor((64, 64), \"float\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        a = T.alloc_shared((64, 64), \"float16\")\n"
          "        c = T.alloc_fragment((64, 64), \"float\")\n"
          "        T.copy(A, a)\n"
          "        T.gemm(a, a, c, clear_accum=True)\n"
          "        T.copy(c, C)\n");
    EXPECT_FALSE(r.lowered);
    EXPECT_NE(r.diags().find("t.tile:8:9: error: T.gemm needs the tensor-core code generation, which is not implemented yet"),
              std::string::npos)
        << r.diags();
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
    EXPECT_FALSE(mentions(coords[0], t.get())) << ir::print(coords[0]);
    EXPECT_EQ(knownMultiple(simplify(ir::binary(ir::BinaryOp::Sub, coords[1], v))) % 8, 0) << ir::print(coords[1]);
}

} // namespace
