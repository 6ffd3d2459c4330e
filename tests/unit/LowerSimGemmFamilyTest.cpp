/// \file
/// Issue 27's block-scaled float8 GEMM (benchmarks/gemm_fp8_blockscaled.tile) and MoE grouped GEMM
/// (benchmarks/gemm_grouped.tile) lowered for sm_90a and run on the CPU simulator against float64 references, at
/// shapes the tiles do not divide: K not a multiple of 128 (a partial last K block and its scale column), M and N
/// not multiples of the tile, empty groups (first, last, in a row), one-row groups and groups one row past a tile.
/// The warp-role kernel (TMA producer, wgmma consumers promoting each K block's product scaled by its A and B
/// scales) and the cp.async variant beside it (the kernel for arguments TMA cannot take) both run; the grouped
/// GEMM's scan variant (TileLang's formulation: the group found by a loop over the groups) takes warp roles too,
/// its producer replaying the scan before each tile's loads.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using namespace tilec::simtest;
namespace lib = passes::lib;

namespace {

constexpr int kGroup = 128; ///< the scale block of the files (GROUP)

/// Float8 e4m3 values in [-2, 2], as the kernels' inputs hold them.
std::vector<double> e4m3Data(size_t n, unsigned seed) {
    auto v = randomData(n, seed, -2, 2);
    for (auto &x : v) x = roundToDType(DType(DType::Float8E4M3), x);
    return v;
}

/// Powers of two 2^-3 .. 2^3: a scale applied to the wrong block is off by a factor of 2 or more.
std::vector<double> pow2Scales(size_t n, unsigned seed) {
    auto v = randomData(n, seed, -3.49, 3.49);
    for (auto &x : v) x = std::ldexp(1.0, (int)std::lround(x));
    return v;
}

/// The two kernels of one lowering for sm_90a on a one-SM GPU without clusters: warp roles (null when the
/// lowering made none) and the variant without TMA (lowered again with --no-tma).
struct Lowered {
    lowertest::LowerRun r, c;
    const ir::Kernel *roles = nullptr, *cpAsync = nullptr;
    Lowered(const std::string &src) {
        Variant v{Target::parse("sm_90a")->withSmCount(1), {}};
        v.options.clusters = false;
        r.run(src, "family.tile", v);
        v.options.tma = false;
        c.run(src, "family.tile", v);
        roles = warpRoles(r);
        if (c.lowered && !c.lowered->kernels.empty()) cpAsync = c.lowered->kernels[0].get();
    }
};

/// `k` on `tensors` under the interleavings of `seeds`: no error, no race, C within `rel` of max(1, |want|).
void expectRuns(const ir::Kernel &k, const Tensors &tensors, const Scalars &scalars, const std::vector<double> &want,
                std::initializer_list<uint64_t> seeds, double rel = 8e-3) {
    for (uint64_t seed : seeds) {
        std::map<std::string, std::vector<double>> copies;
        Tensors in;
        for (auto &[name, v] : tensors) copies[name] = *v, in[name] = &copies[name];
        auto &c = copies.at("C");
        std::fill(c.begin(), c.end(), std::nan(""));
        Outcome o = runCaught(k, in, scalars, seed);
        for (size_t i = 0; i < c.size(); ++i)
            o.check(std::fabs(c[i] - want[i]) <= rel * std::max(1.0, std::fabs(want[i])), [&] {
                return "C[" + std::to_string(i) + "] = " + std::to_string(c[i]) + ", expected " + std::to_string(want[i]);
            });
        EXPECT_EQ(o.error, "") << k.name << " seed " << seed;
        for (auto &race : o.races) ADD_FAILURE() << k.name << " seed " << seed << ": race: " << race;
        EXPECT_EQ(o.wrong, 0) << k.name << " seed " << seed << ": " << o.firstWrong;
    }
}

/// The warp-role kernel's shape: wgmma only, its tiles by TMA.
void expectHopper(const ir::Kernel &k) {
    auto calls = callCounts(k);
    EXPECT_EQ(calls[lib::Fn::WgmmaSS], 1);
    EXPECT_EQ(calls[lib::Fn::TmaLoadTile], 2) << "A's and B's tiles per stage";
    EXPECT_EQ(calls[lib::Fn::GemmSS] + calls[lib::Fn::GemmRS], 0) << "mma.sync left in the Hopper kernel";
}

/// The stores to scalar `name` in the producer role (the replayed group scan: its initial value and one per group).
int producerStores(const ir::Kernel &k, const std::string &name) {
    struct V : ir::IRVisitor {
        using ir::IRVisitor::visit;
        std::string name;
        bool inProducer = false;
        int n = 0;
        void visit(const ir::WarpRoles &w) override {
            inProducer = true;
            visit(w.producer);
            inProducer = false;
        }
        void visit(const ir::Store &st) override {
            n += inProducer && st.buffer->name == name;
            ir::IRVisitor::visit(st);
        }
    } v;
    v.name = name;
    v.visit(k.body);
    return v.n;
}

// ------------------------------------------------------------------------------------------ block-scaled

struct ScaledCase {
    int M, N, K, bm, bn, stages, threads;
};

void blockScaledCase(const ScaledCase &a, std::initializer_list<uint64_t> seeds) {
    auto n = [](int v) { return std::to_string(v); };
    Lowered l(withExport("gemm_fp8_blockscaled.tile",
                         "k = matmul(" + n(a.M) + ", " + n(a.N) + ", " + n(a.K) + ", block_M=" + n(a.bm) + ", block_N=" +
                             n(a.bn) + ", num_stages=" + n(a.stages) + ", threads=" + n(a.threads) + ")",
                         "benchmarks"));
    ASSERT_TRUE(l.roles) << "no warp roles\n" << l.r.diags();
    ASSERT_TRUE(l.cpAsync && !l.cpAsync->producerThreads) << l.c.diags();
    expectHopper(*l.roles);
    const int kb = (a.K + kGroup - 1) / kGroup, nb = (a.N + kGroup - 1) / kGroup;
    auto A = e4m3Data((size_t)a.M * a.K, 11), B = e4m3Data((size_t)a.N * a.K, 12);
    auto sa = pow2Scales((size_t)a.M * kb, 13), sb = pow2Scales((size_t)nb * kb, 14);
    std::vector<double> C((size_t)a.M * a.N), want(C.size());
    for (int i = 0; i < a.M; ++i)
        for (int j = 0; j < a.N; ++j) {
            double s = 0;
            for (int k = 0; k < a.K; ++k)
                s += A[(size_t)i * a.K + k] * B[(size_t)j * a.K + k] * sa[(size_t)i * kb + k / kGroup] *
                     sb[(size_t)(j / kGroup) * kb + k / kGroup];
            want[(size_t)i * a.N + j] = s;
        }
    Tensors t{{"A", &A}, {"B", &B}, {"A_scale", &sa}, {"B_scale", &sb}, {"C", &C}};
    expectRuns(*l.roles, t, {}, want, seeds);
    expectRuns(*l.cpAsync, t, {}, want, {*seeds.begin()});
}

// K = 400: three full 128-wide K blocks and one of 16 (its scale column read); M = 100 and N = 136 leave
// partial tiles in both directions, the second N tile in B's second scale row; one consumer warpgroup.
TEST(SimGemmFamily, BlockScaledOddShapeOneWarpgroup) { blockScaledCase({100, 136, 400, 64, 128, 2, 128}, {0, 1}); }
// the benchmark's 128 x 128 tiles over two consumer warpgroups, a ring of 3 stages that wraps
TEST(SimGemmFamily, BlockScaledTwoWarpgroups) { blockScaledCase({136, 128, 528, 128, 128, 3, 256}, {0}); }

// ------------------------------------------------------------------------------------------------ grouped

struct GroupedCase {
    std::vector<int> sizes;
    int N, K, bm, bn, bk, stages, threads;
    bool fp8 = false, scan = false;
};

void groupedCase(const GroupedCase &a, std::initializer_list<uint64_t> seeds) {
    auto n = [](int v) { return std::to_string(v); };
    const int G = (int)a.sizes.size();
    std::string call = "k = grouped(" + n(G) + ", " + n(a.N) + ", " + n(a.K) + ", block_M=" + n(a.bm) + ", block_N=" +
                       n(a.bn) + ", block_K=" + n(a.bk) + ", num_stages=" + n(a.stages) + ", threads=" + n(a.threads) +
                       (a.fp8 ? ", dtype='float8_e4m3', block_scaled=True" : "") + (a.scan ? ", scan=True" : "") + ")";
    Lowered l(withExport("gemm_grouped.tile", call, "benchmarks"));
    ASSERT_TRUE(l.cpAsync && !l.cpAsync->producerThreads) << l.c.diags();
    ASSERT_TRUE(l.roles) << "no warp roles\n" << l.r.diags();
    expectHopper(*l.roles);
    // The epilogue `if i < rows: C[...] = acc[i, j]` (rows known at run time, the same in every consumer thread):
    // staged through shared memory, a whole piece by TMA, a piece the bound crosses by guarded 16-byte stores.
    auto calls = callCounts(*l.roles);
    EXPECT_GE(calls[lib::Fn::StmatrixTile], 1) << "the guarded epilogue is not staged";
    EXPECT_EQ(calls[lib::Fn::StmatrixTile], calls[lib::Fn::TmaStoreTile]) << "a staged piece without its TMA store";
    if (a.scan) EXPECT_GE(producerStores(*l.roles, "g"), 2) << "the producer does not replay the group scan";
    else EXPECT_EQ(producerStores(*l.roles, "g"), 0) << "the table's group is an expression the producer substitutes";
    // the tables as the host makes them
    std::vector<double> sizes, offsets, groupTiles, tileGroup;
    int rows = 0, tiles = 0;
    for (int g = 0; g < G; ++g) {
        sizes.push_back(a.sizes[(size_t)g]), offsets.push_back(rows), groupTiles.push_back(tiles);
        for (int t = 0; t < (a.sizes[(size_t)g] + a.bm - 1) / a.bm; ++t) tileGroup.push_back(g), ++tiles;
        rows += a.sizes[(size_t)g];
    }
    if (tileGroup.empty()) tileGroup.push_back(0);
    const int kb = (a.K + kGroup - 1) / kGroup, nb = (a.N + kGroup - 1) / kGroup;
    auto A = a.fp8 ? e4m3Data((size_t)rows * a.K, 21) : quarters((size_t)rows * a.K, 21);
    auto B = a.fp8 ? e4m3Data((size_t)G * a.N * a.K, 22) : quarters((size_t)G * a.N * a.K, 22);
    auto sa = pow2Scales((size_t)rows * kb, 23), sb = pow2Scales((size_t)G * nb * kb, 24);
    if (!a.fp8) std::fill(sa.begin(), sa.end(), 1.0), std::fill(sb.begin(), sb.end(), 1.0);
    std::vector<double> C((size_t)rows * a.N), want(C.size());
    for (int g = 0, r0 = 0; g < G; r0 += a.sizes[(size_t)g++])
        for (int i = r0; i < r0 + a.sizes[(size_t)g]; ++i)
            for (int j = 0; j < a.N; ++j) {
                double s = 0;
                for (int k = 0; k < a.K; ++k)
                    s += A[(size_t)i * a.K + k] * B[((size_t)g * a.N + j) * a.K + k] * sa[(size_t)i * kb + k / kGroup] *
                         sb[((size_t)g * nb + j / kGroup) * kb + k / kGroup];
                want[(size_t)i * a.N + j] = s;
            }
    Tensors t{{"A", &A},           {"B", &B},                {"A_scale", &sa},           {"B_scale", &sb},
              {"group_sizes", &sizes}, {"group_offsets", &offsets}, {"group_tiles", &groupTiles}, {"tile_group", &tileGroup},
              {"C", &C}};
    Scalars s{{"m_total", rows}, {"tiles", tiles}};
    if (l.roles) expectRuns(*l.roles, t, s, want, seeds);
    expectRuns(*l.cpAsync, t, s, want, {*seeds.begin()});
}

// bfloat16: groups empty at both ends and in the middle, a group one row past a 64-row tile and a one-row group;
// K = 200 (three 64-wide K blocks and one of 8), N = 136 (a partial N tile)
TEST(SimGemmFamily, GroupedBf16EmptyAndRaggedGroups) {
    groupedCase({{0, 65, 0, 1, 0}, 136, 200, 64, 128, 64, 2, 128}, {0, 1});
}
// block-scaled float8 experts: K = 272 (two 128-wide K blocks and one of 16), the second N tile in B's second
// scale row, a group of three rows between an empty one and a group of 130 (three tiles)
TEST(SimGemmFamily, GroupedFp8BlockScaled) {
    GroupedCase c{{130, 0, 3}, 136, 272, 64, 128, 128, 2, 128};
    c.fp8 = true;
    groupedCase(c, {0, 1});
}
// two consumer warpgroups on 128-row tiles; one group
TEST(SimGemmFamily, GroupedTwoWarpgroupsOneGroup) { groupedCase({{129}, 128, 128, 128, 128, 64, 3, 256}, {0}); }
// 256 experts, most empty: the last expert's rows, a group of one row past a tile, one exactly a tile; N = 72 (a
// partial N tile: the guarded stores' vectors past the tensor's columns left out), K = 96
TEST(SimGemmFamily, Grouped256ExpertsSparse) {
    std::vector<int> sizes(256, 0);
    sizes[3] = 1, sizes[100] = 65, sizes[200] = 64, sizes[255] = 2;
    groupedCase({sizes, 72, 96, 64, 64, 64, 2, 128}, {0});
}
// TileLang's formulation (each block scans group_tiles for its group, the grid sized for the worst split, blocks
// past the last tile storing nothing): the producer replays the scan (KernelScalars::replay), same results
TEST(SimGemmFamily, GroupedScanVariant) {
    GroupedCase c{{0, 65, 0, 1, 0}, 136, 200, 64, 128, 64, 2, 128};
    c.scan = true;
    groupedCase(c, {0});
}

// The replay's other form: a scalar set twice before the loop, the second time under a condition on the block
// index (tests/lit/codegen/pipeline_scalar_bounds.tile's `twice`: k0 = cu_k[bz]; if bz > 3: k0 = k0 + 64). The
// producer runs both statements; each block's tiles start at its own k0 (blocks 4..7 64 rows later).
TEST(SimGemmFamily, ReplayedConditionalScalar) {
    lowertest::LowerRun r;
    Variant v{Target::parse("sm_90a")->withSmCount(1), {}};
    v.options.clusters = false;
    r.run(withExport("pipeline_scalar_bounds.tile", "k = gemm_rows(twice=True)", "tests/lit/codegen"), "twice.tile", v);
    const ir::Kernel *roles = warpRoles(r);
    ASSERT_TRUE(roles) << r.diags();
    EXPECT_GE(producerStores(*roles, "k0"), 2) << "the producer does not replay both stores to k0";
    const std::vector<double> cu{0, 64, 200, 264, 400, 512, 640, 700, 800};
    auto A = quarters(4096 * 64, 31), B = quarters(4096 * 64, 32), cuk = cu;
    std::vector<double> C(512 * 64), want(C.size(), 0);
    for (int bz = 0; bz < 8; ++bz) {
        const int k0 = (int)cu[(size_t)bz] + (bz > 3 ? 64 : 0), rows = ((int)(cu[(size_t)bz + 1] - cu[(size_t)bz]) + 63) / 64 * 64;
        for (int row = k0; row < std::min(k0 + rows, 4096); ++row)
            for (int i = 0; i < 64; ++i)
                for (int j = 0; j < 64; ++j) want[(size_t)(bz * 64 + i) * 64 + j] += A[(size_t)row * 64 + i] * B[(size_t)row * 64 + j];
    }
    expectRuns(*roles, {{"A", &A}, {"B", &B}, {"cu_k", &cuk}, {"C", &C}}, {}, want, {0, 1}, 1e-6);
}

} // namespace
