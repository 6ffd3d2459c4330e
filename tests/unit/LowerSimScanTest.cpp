/// \file
/// T.cumsum on the CPU simulator (float64 references, clean runs: a race is a failure): the serial form (one
/// thread per line) and the parallel one (tl TileLangScan.cpp: log2(n) steps over the whole buffer,
/// alternating with a scratch buffer), in place and not, forward and reverse, lengths that are not powers of two.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <string>

namespace {

namespace sim = tilec::simtest;

/// A (rows, n) float32 tensor A scanned along dimension 1 in shared memory (in place, or into a second shared
/// buffer), written to B; `threads` per block.
std::string scanSource(int rows, int n, int threads, bool reverse, bool inPlace) {
    const std::string shape = "(" + std::to_string(rows) + ", " + std::to_string(n) + ")";
    std::string s = "import tilelang.language as T\n"
                    "@T.prim_func\n"
                    "def k(A: T.Tensor(" + shape + ", T.float32), B: T.Tensor(" + shape + ", T.float32)):\n"
                    "    with T.Kernel(1, threads=" + std::to_string(threads) + ") as bx:\n"
                    "        s = T.alloc_shared(" + shape + ", T.float32)\n"
                    "        d = T.alloc_shared(" + shape + ", T.float32)\n"
                    "        T.copy(A, s)\n";
    const std::string rev = reverse ? "True" : "False";
    if (inPlace) s += "        T.cumsum(s, dim=1, reverse=" + rev + ")\n        T.copy(s, B)\n";
    else s += "        T.cumsum(s, d, dim=1, reverse=" + rev + ")\n        T.copy(d, B)\n";
    return s;
}

/// Whether the lowered kernel holds the parallel form's scratch buffer.
bool parallelForm(const tilec::lowertest::LowerRun &r) {
    for (auto &b : r.lowered->kernels[0]->allocs)
        if (b && b->name.find("_scan") != std::string::npos) return true;
    return false;
}

void scanCase(int rows, int n, int threads, bool reverse, bool inPlace, bool wantParallel) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, scanSource(rows, n, threads, reverse, inPlace), "sm_90a");
    ASSERT_TRUE(r.lowered) << r.diags();
    EXPECT_EQ(parallelForm(r), wantParallel);
    std::vector<double> a((size_t)rows * n), b((size_t)rows * n, std::nan("")), want((size_t)rows * n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = (double)((i * 37 + 11) % 23) - 11.0 + 0.25;
    for (int row = 0; row < rows; ++row) {
        double sum = 0;
        for (int t = 0; t < n; ++t) {
            int k = reverse ? n - 1 - t : t;
            sum += a[(size_t)row * n + k];
            want[(size_t)row * n + k] = sum;
        }
    }
    sim::runAll(r, {{"A", &a}, {"B", &b}});
    sim::expectNear(b, want, 1e-4, "B");
}

// One line of 256 over 256 threads, in place: 8 steps (the last writes the buffer itself).
TEST(LowerSimScan, OneLineInPlaceParallel) { scanCase(1, 256, 256, false, true, true); }
// 100 elements: 7 steps; in place the first would write the source, so a copy into the scratch buffer goes first.
TEST(LowerSimScan, OddStepsInPlaceCopiesFirst) { scanCase(1, 100, 128, false, true, true); }
TEST(LowerSimScan, ReverseIntoAnotherBuffer) { scanCase(1, 100, 128, true, false, true); }
TEST(LowerSimScan, ReverseInPlaceTwoLines) { scanCase(2, 64, 128, true, true, true); }
// 64 lines over 128 threads: every thread has a line already, the serial form stays.
TEST(LowerSimScan, ManyLinesStaySerial) { scanCase(64, 64, 128, false, true, false); }
// Short lines stay serial (fewer dependent steps than the parallel form's barriers).
TEST(LowerSimScan, ShortLineStaysSerial) { scanCase(1, 8, 128, true, true, false); }

} // namespace
