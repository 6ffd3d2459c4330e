/// \file
/// A fragment read by a nest at (..., y * S + j), j an inner loop over [0, S) (TileKernels' per_token_cast_to_e5m6
/// packs eight scaled values per iteration into three words: `in_local[j] = out_fragment[x, y * 8 + j]`): layout
/// inference widens the fragment to S elements per thread and vector, so iteration y's S elements are in its own
/// thread, instead of the fragment going through a shared copy and a barrier (TransposeFragments.cpp,
/// widenableExpansion; InferLayouts.cpp, agreeOnSlices). Stores at (..., y * S + j) into a fragment every thread
/// holds run whole in every thread (InferLayouts.cpp, joinExpansionStores). Run on the CPU simulator against float64
/// references.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <regex>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

/// Rows of 1024 floats scaled into a fragment, then each iteration y sums its 8 elements j = 0..7 in pairs
/// into 3 outputs (and the fragment is also stored whole, 8 floats per thread: two 16-byte vectors).
std::string source(int threads) {
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def k(X: T.Tensor((4, 1024), \"float32\"), Y: T.Tensor((4, 1024), \"float32\"), O: T.Tensor((4, 384), \"float32\")):\n"
           "    with T.Kernel(4, threads=" + std::to_string(threads) + ") as bx:\n"
           "        xf = T.alloc_fragment((1024,), \"float32\")\n"
           "        loc = T.alloc_local((8,), \"float32\")\n"
           "        for j in T.Parallel(1024):\n"
           "            xf[j] = X[bx, j] * 2.0\n"
           "        for j in T.Parallel(1024):\n"
           "            Y[bx, j] = xf[j]\n"
           "        for y in T.Parallel(128):\n"
           "            for j in T.serial(8):\n"
           "                loc[j] = xf[y * 8 + j]\n"
           "            for j in T.serial(3):\n"
           "                O[bx, y * 3 + j] = loc[j] + loc[j + 5]\n";
}

bool hasSharedBuffer(const tilec::ir::Kernel &k) {
    for (auto &b : k.allocs)
        if (b && b->scope == tilec::ir::Scope::Shared) return true;
    return false;
}

TEST(LowerSimExpansionReads, FragmentWidenedToTheExpansionNoSharedCopy) {
    for (int threads : {64, 128, 256}) {
        SCOPED_TRACE("threads " + std::to_string(threads));
        tilec::lowertest::LowerRun r;
        r.run(source(threads), "t.tile", *tilec::Target::parse("sm_90a"));
        ASSERT_TRUE(r.lowered) << r.diags();
        ASSERT_EQ(r.lowered->kernels.size(), 1u);
        const auto &k = *r.lowered->kernels[0];
        EXPECT_FALSE(hasSharedBuffer(k)) << "the expansion's reads went through a shared copy";
        auto x = sim::randomData(4 * 1024, 11);
        std::vector<double> y(4 * 1024, std::nan("")), o(4 * 384, std::nan("")), wantY(4 * 1024), wantO(4 * 384);
        for (int i = 0; i < 4 * 1024; ++i) wantY[i] = (double)((float)x[i] * 2.0f);
        for (int b = 0; b < 4; ++b)
            for (int it = 0; it < 128; ++it)
                for (int j = 0; j < 3; ++j)
                    wantO[b * 384 + it * 3 + j] =
                        (double)((float)wantY[b * 1024 + it * 8 + j] + (float)wantY[b * 1024 + it * 8 + j + 5]);
        sim::Outcome out = sim::runCaught(k, {{"X", &x}, {"Y", &y}, {"O", &o}});
        ASSERT_TRUE(out.error.empty()) << out.error;
        ASSERT_TRUE(out.races.empty()) << out.races[0];
        sim::expectNear(y, wantY, 1e-6, "Y");
        sim::expectNear(o, wantO, 1e-6, "O");
    }
}

/// A fragment every thread holds whole (read reversed by another nest and at a constant index outside any nest)
/// stored by a nest over (16, 8 / S) at (i, jq * S + w), w an inner loop over [0, S) (the differential fuzzer's
/// GOp::expand): the nest runs whole in every thread, each filling its own copy, over its own extents.
std::string replicatedSource(int s) {
    const std::string S = std::to_string(s);
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def k(A: T.Tensor((16, 8), \"float32\"), Y: T.Tensor((16, 8), \"float32\"), Z: T.Tensor((1,), \"float32\")):\n"
           "    with T.Kernel(1, threads=64) as bx:\n"
           "        F = T.alloc_fragment((16, 8), \"float32\")\n"
           "        G = T.alloc_fragment((16, 8), \"float32\")\n"
           "        for i, jq in T.Parallel(16, 8 // " + S + "):\n"
           "            for w in T.serial(" + S + "):\n"
           "                F[i, jq * " + S + " + w] = A[i, jq * " + S + " + w] * 2.0 + T.cast(w, \"float32\")\n"
           "        for i, j in T.Parallel(16, 8):\n"
           "            G[i, j] = F[15 - i, 7 - j]\n"
           "        Z[0] = F[3, 5]\n"
           "        T.copy(G, Y)\n";
}

TEST(LowerSimExpansionReads, StoresIntoAFragmentEveryThreadHolds) {
    for (int s : {2, 4, 8}) {
        SCOPED_TRACE("S " + std::to_string(s));
        tilec::lowertest::LowerRun r;
        r.run(replicatedSource(s), "t.tile", *tilec::Target::parse("sm_90a"));
        ASSERT_TRUE(r.lowered) << r.diags();
        ASSERT_EQ(r.lowered->kernels.size(), 1u);
        auto a = sim::randomData(16 * 8, 5);
        std::vector<double> y(16 * 8, std::nan("")), z(1, std::nan("")), f(16 * 8), wantY(16 * 8);
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 8; ++j) f[i * 8 + j] = (double)((float)a[i * 8 + j] * 2.0f + (float)(j % s));
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 8; ++j) wantY[i * 8 + j] = f[(15 - i) * 8 + 7 - j];
        sim::Outcome out = sim::runCaught(*r.lowered->kernels[0], {{"A", &a}, {"Y", &y}, {"Z", &z}});
        ASSERT_TRUE(out.error.empty()) << out.error;
        ASSERT_TRUE(out.races.empty()) << out.races[0];
        sim::expectNear(y, wantY, 1e-6, "Y");
        sim::expectNear(z, {f[3 * 8 + 5]}, 1e-6, "Z");
    }
}

} // namespace

namespace {

/// A fragment copied from a column offset whose alignment caps its vector width at 2 (`T.copy(A[0:16, 2:10], F)`,
/// float32 at an odd pair of columns), then stored by an expansion of S = 4 or 8 (`F[i, jq * S + w]`): the widths
/// cannot agree, so F is held whole in every thread, and the expansion's nest runs whole in every thread too, each
/// filling its own copy (agreeOnSlices). Before, the store was refused ("fragment 'F' has a copy in every thread, but
/// this store indexes it by (i, jq * 4 + w)"; the differential fuzzer's seed 27100063).
std::string cappedWidthSource(int s) {
    std::string src = R"(import tilelang.language as T
@T.prim_func
def k(A: T.Tensor((16, 10), "float32"), B: T.Tensor((16, 8), "float32"), Y: T.Tensor((16, 8), "float32")):
    with T.Kernel(1, threads=32) as bx:
        F = T.alloc_fragment((16, 8), "float32")
        G = T.alloc_fragment((16, 8), "float32")
        T.copy(A[0:16, 2:10], F)
        T.copy(B, G)
        for i, jq in T.Parallel(16, 8 // S):
            for w in T.serial(S):
                F[i, jq * S + w] = F[i, jq * S + w] + G[i, jq * S + w] * T.cast(w + 1, "float32")
        T.copy(F, Y)
)";
    return std::regex_replace(src, std::regex("\\bS\\b"), std::to_string(s));
}

} // namespace

TEST(LowerSimExpansionReads, StoresIntoAFragmentTheWidthsReplicate) {
    for (int s : {4, 8}) {
        SCOPED_TRACE("S " + std::to_string(s));
        auto a = sim::randomData(16 * 10, 7), b = sim::randomData(16 * 8, 8);
        std::vector<double> y(16 * 8, std::nan("")), want(16 * 8);
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 8; ++j)
                want[i * 8 + j] = (double)((float)a[i * 10 + 2 + j] + (float)b[i * 8 + j] * (float)(j % s + 1));
        tilec::lowertest::LowerRun r;
        sim::runAll(sim::lowerFor(r, cappedWidthSource(s), "sm_90a"), {{"A", &a}, {"B", &b}, {"Y", &y}}); // no race
        sim::expectNear(y, want, 1e-6, "Y");
    }
}
