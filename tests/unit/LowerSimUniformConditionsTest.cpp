/// \file
/// Loops split where their element-wise conditions are uniformly true or false over the tile
/// (splitUniformConditions) compute what the unsplit loop computed: a causal mask, a sliding window's left edge
/// (constant at the other end of the loop) and a bounds check on a ragged key length, over a loop whose start is
/// zero, positive, negative or past its end, on the CPU simulator against a float64 reference; and the loop is
/// split (two or three loops where there was one).
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"
#include "tilec/IRPrinter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace {

namespace sim = tilec::simtest;

struct Case {
    int nq, nk, bm, bn, window, start;
    const char *target;
    int loops; ///< serial loops over ko expected once split
};

/// Row maxima and row sums of X over the keys each query row sees, walked in key blocks from `start`.
std::string source(const Case &c) {
    auto n = [](int v) { return std::to_string(v); };
    const std::string x = "X[T.min(bx * " + n(c.bm) + " + i, " + n(c.nq - 1) + "), T.max(T.min(ko * " + n(c.bn) +
                          " + j, " + n(c.nk - 1) + "), 0)]";
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def k(X: T.Tensor((" + n(c.nq) + ", " + n(c.nk) + "), \"float32\"), Mx: T.Tensor((" + n(c.nq) +
           ",), \"float32\"),\n"
           "      Sm: T.Tensor((" + n(c.nq) + ",), \"float32\")):\n"
           "    with T.Kernel(T.ceildiv(" + n(c.nq) + ", " + n(c.bm) + "), threads=128) as bx:\n"
           "        t = T.alloc_fragment((" + n(c.bm) + ", " + n(c.bn) + "), \"float32\")\n"
           "        u = T.alloc_fragment((" + n(c.bm) + ", " + n(c.bn) + "), \"float32\")\n"
           "        mx = T.alloc_fragment((" + n(c.bm) + ",), \"float32\")\n"
           "        sm = T.alloc_fragment((" + n(c.bm) + ",), \"float32\")\n"
           "        T.fill(mx, -1e30)\n"
           "        T.fill(sm, 0)\n"
           "        for ko in T.serial(" + n(c.start) + ", T.ceildiv((bx + 1) * " + n(c.bm) + ", " + n(c.bn) + ")):\n"
           "            for i, j in T.Parallel(" + n(c.bm) + ", " + n(c.bn) + "):\n"
           "                t[i, j] = T.if_then_else(bx * " + n(c.bm) + " + i >= ko * " + n(c.bn) + " + j and ko * " +
           n(c.bn) + " + j > bx * " + n(c.bm) + " + i - " + n(c.window) + " and ko * " + n(c.bn) + " + j < " +
           n(c.nk) + ", " + x + ", -1e30)\n"
           "                u[i, j] = 0.0\n"
           "                if ko * " + n(c.bn) + " + j < " + n(c.nk) + " and ko * " + n(c.bn) + " + j >= 0:\n"
           "                    u[i, j] = " + x + "\n"
           "            T.reduce_max(t, mx, dim=1, clear=False)\n"
           "            T.reduce_sum(u, sm, dim=1, clear=False)\n"
           "        for i in T.Parallel(" + n(c.bm) + "):\n"
           "            if bx * " + n(c.bm) + " + i < " + n(c.nq) + ":\n"
           "                Mx[bx * " + n(c.bm) + " + i] = mx[i]\n"
           "                Sm[bx * " + n(c.bm) + " + i] = sm[i]\n";
}

size_t count(const std::string &s, const std::string &what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
}

void check(const Case &c) {
    tilec::lowertest::LowerRun run;
    run.run(source(c), "t.tile", *tilec::Target::parse(c.target));
    ASSERT_TRUE(run.lowered) << run.diags();
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    const auto &k = *run.lowered->kernels[0];
    EXPECT_EQ(count(tilec::ir::print(k), "for ko in serial"), size_t(c.loops)) << tilec::ir::print(k);
    auto x = sim::randomData(size_t(c.nq) * c.nk, 91);
    std::vector<double> mx(c.nq, 7), sm(c.nq, 7), wantMx(c.nq), wantSm(c.nq);
    for (int q = 0; q < c.nq; ++q) {
        const int bx = q / c.bm, end = (bx * c.bm + c.bm + c.bn - 1) / c.bn;
        double m = -1e30, s = 0;
        for (int ko = c.start; ko < end; ++ko)
            for (int j = 0; j < c.bn; ++j) {
                const int key = ko * c.bn + j;
                const double v = x[size_t(q) * c.nk + std::max(std::min(key, c.nk - 1), 0)];
                if (q >= key && key > q - c.window && key < c.nk) m = std::max(m, double(float(v)));
                if (key < c.nk && key >= 0) s += v;
            }
        wantMx[q] = m, wantSm[q] = s;
    }
    sim::simulate(k, {{"X", &x}, {"Mx", &mx}, {"Sm", &sm}});
    sim::expectNear(mx, wantMx, 1e-6, "Mx");
    sim::expectNear(sm, wantSm, 1e-5, "Sm");
}

// Causal and window masks and the bounds check, three loops (the window false below, the mask true between).
TEST(LowerSimUniformConditions, RaggedFromZero) { check({100, 90, 32, 16, 40, 0, "sm_80", 3}); }
TEST(LowerSimUniformConditions, RaggedFromZeroHopper) { check({100, 90, 32, 16, 40, 0, "sm_90a", 3}); }
// A positive start, a negative one (keys before 0 are masked by the window and the check), one past the end.
TEST(LowerSimUniformConditions, PositiveStart) { check({96, 96, 32, 16, 200, 3, "sm_80", 3}); }
TEST(LowerSimUniformConditions, NegativeStart) { check({64, 70, 16, 32, 24, -2, "sm_80", 3}); }
TEST(LowerSimUniformConditions, EmptyLoop) { check({64, 64, 32, 16, 40, 9, "sm_80", 3}); }
// Tiles wider than the window: no key block lies wholly inside it, so the interior takes the window's other side
// (every key masked, below the diagonal), two loops.
TEST(LowerSimUniformConditions, WindowNarrowerThanTile) { check({80, 80, 32, 32, 5, 0, "sm_80", 2}); }

} // namespace
