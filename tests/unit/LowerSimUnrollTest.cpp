/// \file
/// Short serial loops of independent memory rounds unrolled (unrollSerialLoops) keep what the kernel computes:
/// TileKernels' fn_normw_merge_bwd shape (a gradient accumulated down the rows, 12 here so that the unrolled rounds'
/// loads stay within the pass's budget at this kernel's 4-wide layout; its last block past the tensor's edge), and a loop whose rounds carry a running value in registers (a decaying sum down the rows), where
/// unrolling must keep the order. Both on the CPU simulator against a float64 reference, with the loop checked
/// to be unrolled in the lowered kernel. Also the round loop of a long copy (lowerParallel: 72 rounds of a
/// 4-wide float-to-bfloat16 copy, sparse MLA backward's postprocess in small, its last block past the edge).
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <string>

namespace {

namespace sim = tilec::simtest;
using namespace tilec::ir;

/// The trip counts of the kernel's unrolled loops of `var`.
std::vector<int64_t> unrolledTrips(const Stmt &body, const std::string &var) {
    struct W : IRVisitor {
        using IRVisitor::visit;
        std::string name;
        std::vector<int64_t> trips;
        void visit(const For &op) override {
            if (op.forKind == ForKind::Unrolled && op.var->name == name)
                trips.push_back(constInt(op.extent).value_or(-1));
            IRVisitor::visit(op);
        }
    } w;
    w.name = var;
    w.visit(body);
    return w.trips;
}

TEST(LowerSimUnroll, GradientDownRows) {
    const int M = 12, N = 600;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(a: T.Tensor((12, 600), \"float32\"), w: T.Tensor((600,), \"float32\"),\n"
                      "      g: T.Tensor((12, 600), \"float32\"), wg: T.Tensor((600,), \"float32\")):\n"
                      "    with T.Kernel(T.ceildiv(600, 256)) as pid:\n"
                      "        wf = T.alloc_fragment(256, \"float32\")\n"
                      "        acc = T.alloc_fragment(256, \"float32\")\n"
                      "        T.copy(w[pid * 256], wf)\n"
                      "        T.clear(acc)\n"
                      "        for i_m in T.serial(12):\n"
                      "            for j in T.Parallel(256):\n"
                      "                if pid * 256 + j < 600:\n"
                      "                    g[i_m, pid * 256 + j] += a[i_m, pid * 256 + j] * wf[j]\n"
                      "                    acc[j] += a[i_m, pid * 256 + j] * g[i_m, pid * 256 + j]\n"
                      "        for j in T.Parallel(256):\n"
                      "            wg[pid * 256 + j] += acc[j]\n";
    tilec::lowertest::LowerRun run;
    run.run(src, "t.tile", *tilec::Target::parse("sm_90a"));
    ASSERT_TRUE(run.lowered) << run.diags();
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    EXPECT_EQ(unrolledTrips(run.lowered->kernels[0]->body, "i_m"), std::vector<int64_t>{12});
    auto a = sim::randomData(M * N, 91), w = sim::randomData(N, 92), g = sim::randomData(M * N, 93), wg = sim::randomData(N, 94);
    std::vector<double> wantG = g, wantWg = wg;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            wantG[i * N + j] += a[i * N + j] * w[j];
            wantWg[j] += a[i * N + j] * wantG[i * N + j];
        }
    sim::simulate(*run.lowered->kernels[0], {{"a", &a}, {"w", &w}, {"g", &g}, {"wg", &wg}});
    sim::expectNear(g, wantG, 1e-5, "g");
    sim::expectNear(wg, wantWg, 1e-5, "wg");
}

TEST(LowerSimUnroll, RoundsCarryARunningValue) {
    const int M = 16, N = 512;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(x: T.Tensor((16, 512), \"float32\"), p: T.Tensor((16, 512), \"float32\")):\n"
                      "    with T.Kernel(2, threads=128) as pid:\n"
                      "        s = T.alloc_fragment(256, \"float32\")\n"
                      "        T.clear(s)\n"
                      "        for i in T.serial(16):\n"
                      "            for j in T.Parallel(256):\n"
                      "                s[j] = s[j] * 0.5 + x[i, pid * 256 + j]\n"
                      "                p[i, pid * 256 + j] = s[j]\n";
    tilec::lowertest::LowerRun run;
    run.run(src, "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(run.lowered) << run.diags();
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    EXPECT_EQ(unrolledTrips(run.lowered->kernels[0]->body, "i"), std::vector<int64_t>{16});
    auto x = sim::randomData(M * N, 95), p = sim::randomData(M * N, 96);
    std::vector<double> want(M * N), s(N, 0.0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) want[i * N + j] = s[j] = s[j] * 0.5 + x[i * N + j];
    sim::simulate(*run.lowered->kernels[0], {{"x", &x}, {"p", &p}});
    sim::expectNear(p, want, 1e-5, "p");
}

TEST(LowerSimUnroll, LongCopyRoundsUnrolledWhole) {
    const int S = 100, W = 576;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(x: T.Tensor((100, 1, 576), \"float32\"), y: T.Tensor((100, 1, 576), \"bfloat16\")):\n"
                      "    with T.Kernel(T.ceildiv(100, 64), 1, threads=128) as (bx, by):\n"
                      "        T.copy(x[bx * 64:(bx + 1) * 64, by, :], y[bx * 64:(bx + 1) * 64, by, :])\n";
    tilec::lowertest::LowerRun run;
    run.run(src, "t.tile", *tilec::Target::parse("sm_90a"));
    ASSERT_TRUE(run.lowered) << run.diags();
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    EXPECT_EQ(unrolledTrips(run.lowered->kernels[0]->body, "r"), std::vector<int64_t>{72});
    auto x = sim::randomData(S * W, 97), y = std::vector<double>(S * W, std::nan(""));
    for (auto &e : x) e = std::round(e * 64) / 64; // bfloat16 values: the copy is exact
    sim::simulate(*run.lowered->kernels[0], {{"x", &x}, {"y", &y}});
    sim::expectNear(y, x, 0, "y");
}

} // namespace
