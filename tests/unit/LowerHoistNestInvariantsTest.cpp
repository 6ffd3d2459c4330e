/// \file
/// passes::hoistNestInvariants: a per-row scale that an accumulator's T.Parallel reads at every element is read
/// once per row a thread holds, the guarded loads of a run-time row count included (the grouped and block-scaled
/// GEMMs' promotion); what the nest writes, and values that differ at every element, stay where they are; and
/// the kernel computes the same bits on the CPU simulator as a float64 reference.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

using namespace tilec;
using namespace tilec::simtest;

namespace {

/// C = (A @ B) times `term` per element (a row's scale s[by * 64 + i]), M rows (at run time by default: every
/// load of s is then guarded by predicateBounds).
std::string scaledGemm(const std::string &term, const std::string &m = "T.dynamic(\"M\")") {
    return "import tilelang.language as T\n"
           "M = " + m + "\n"
           "N = 64\nK = 64\n"
           "@T.prim_func\n"
           "def g(A: T.Tensor((M, K), \"float16\"), B: T.Tensor((K, N), \"float16\"), s: T.Tensor((M,), \"float32\"),\n"
           "      C: T.Tensor((M, N), \"float32\")):\n"
           "    with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):\n"
           "        A_s = T.alloc_shared((64, 64), \"float16\")\n"
           "        B_s = T.alloc_shared((64, 64), \"float16\")\n"
           "        acc = T.alloc_fragment((64, 64), \"float\")\n"
           "        T.clear(acc)\n"
           "        T.copy(A[by * 64, 0], A_s)\n"
           "        T.copy(B[0, bx * 64], B_s)\n"
           "        T.gemm(A_s, B_s, acc)\n"
           "        for i, j in T.Parallel(64, 64):\n"
           "            acc[i, j] = acc[i, j] * " + term + "\n"
           "        T.copy(acc, C[by * 64, bx * 64])\n";
}

/// Per thread, how many times the kernel's loads of `name` run: each load site counted once per iteration of
/// the loops around it (constant extents).
int64_t loadsPerThread(const ir::Kernel &k, const std::string &name) {
    struct V : ir::IRVisitor {
        using ir::IRVisitor::visit;
        std::string name;
        int64_t trips = 1, total = 0;
        void visit(const ir::For &f) override {
            const int64_t n = ir::constInt(f.extent).value_or(1), saved = trips;
            trips *= n;
            IRVisitor::visit(f);
            trips = saved;
        }
        void visit(const ir::Load &l) override {
            if (l.buffer->name == name) total += trips;
            IRVisitor::visit(l);
        }
    } v;
    v.name = name;
    v.visit(k.body);
    return v.total;
}

bool hasHoisted(const ir::Kernel &k) {
    for (auto &b : k.allocs)
        if (b->name.rfind("hoisted", 0) == 0) return true;
    return false;
}

/// The lowered kernel's C for M rows against the float64 reference (A, B small integers and s powers of two:
/// every product and sum exact in float32, so the bits must match).
void expectExact(const ir::Kernel &k, int M, const std::function<double(int, int, const std::vector<double> &)> &term) {
    const int N = 64, K = 64;
    std::vector<double> a((size_t)M * K), b((size_t)K * N), s((size_t)M), c((size_t)M * N, -1.0);
    for (size_t i = 0; i < a.size(); ++i) a[i] = (double)((int)(i * 7 % 5) - 2);
    for (size_t i = 0; i < b.size(); ++i) b[i] = (double)((int)(i * 3 % 7) - 3);
    for (int i = 0; i < M; ++i) s[(size_t)i] = std::ldexp(1.0, i % 5 - 2);
    simulate(k, {{"A", &a}, {"B", &b}, {"s", &s}, {"C", &c}}, {{"M", (double)M}});
    std::vector<double> want((size_t)M * N);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double sum = 0;
            for (int kk = 0; kk < K; ++kk) sum += a[(size_t)i * K + kk] * b[(size_t)kk * N + j];
            want[(size_t)i * N + j] = sum * term(i, j, s);
        }
    expectNear(c, want, 0, "C");
}

} // namespace

// The row scale: 32 accumulator elements per thread (mma.sync on sm_80, wgmma on sm_90a) over 2 rows per
// 16-row slice: one guarded load per row held, not one per element; the same bits as float64.
TEST(LowerHoistNestInvariants, RowScaleReadOncePerRowHeld) {
    for (const char *arch : {"sm_80", "sm_90a"}) {
        SCOPED_TRACE(arch);
        lowertest::LowerRun r;
        lowerFor(r, scaledGemm("s[by * 64 + i]"), arch);
        ASSERT_TRUE(r.lowered) << r.diags();
        const ir::Kernel &k = *r.lowered->kernels[0];
        EXPECT_TRUE(hasHoisted(k));
        const int64_t loads = loadsPerThread(k, "s");
        EXPECT_GE(loads, 1);
        EXPECT_LE(loads, 4); // 32 elements a thread holds, in 4 or fewer rows
        for (int M : {64, 100, 37})
            expectExact(k, M, [](int i, int, const std::vector<double> &s) { return s[(size_t)i]; });
    }
}

// Left in place: a value that differs at every element (the column is part of it), a tensor the kernel
// writes (C itself: another thread's store could be what it reads), a row's value read only in one arm of a
// select whose condition depends on the column (the arm may be evaluated only where the condition holds), and
// unguarded loads (128 rows known at compile time: nvcc merges a row's loads itself).
TEST(LowerHoistNestInvariants, PerElementValuesAndWrittenTensorsStay) {
    lowertest::LowerRun unguarded;
    lowerFor(unguarded, scaledGemm("s[by * 64 + i]", "128"), "sm_80");
    ASSERT_TRUE(unguarded.lowered) << unguarded.diags();
    EXPECT_FALSE(hasHoisted(*unguarded.lowered->kernels[0]));
    EXPECT_EQ(loadsPerThread(*unguarded.lowered->kernels[0], "s"), 32);
    lowertest::LowerRun arm;
    lowerFor(arm, scaledGemm("T.if_then_else(j < 8, s[by * 64 + i], 1.0)"), "sm_80");
    ASSERT_TRUE(arm.lowered) << arm.diags();
    EXPECT_FALSE(hasHoisted(*arm.lowered->kernels[0]));
    lowertest::LowerRun perElement;
    lowerFor(perElement, scaledGemm("s[(by * 64 + i + j) % 64]"), "sm_80");
    ASSERT_TRUE(perElement.lowered) << perElement.diags();
    EXPECT_FALSE(hasHoisted(*perElement.lowered->kernels[0]));
    lowertest::LowerRun written;
    lowerFor(written, scaledGemm("C[by * 64 + i, 0]"), "sm_80");
    ASSERT_TRUE(written.lowered) << written.diags();
    EXPECT_FALSE(hasHoisted(*written.lowered->kernels[0]));
    EXPECT_EQ(loadsPerThread(*written.lowered->kernels[0], "C"), 32);
}
