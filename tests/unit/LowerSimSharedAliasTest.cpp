/// \file
/// A T.view of a shared buffer to another dtype as a buffer of its own over the same bytes (Kernel::sharedAliases)
/// run on the CPU simulator against a float64 reference of the bytes: a float32 view of a bfloat16 tile that a GEMM
/// reads, so that the tile is stored swizzled (mma.sync's row swizzle on sm_80, wgmma's panel layout on sm_90a),
/// read through the view (each float the bfloat16 pair at its row-major bytes) and written through it (each
/// bfloat16 of the tile then half of a float), with the barriers insertSyncs places between the GEMM's reads, the
/// view's writes and the tile's reads; and a bfloat16 view of a float32 tile written half by half.
#include "LowerSimUtil.h"

#include "tilec/IRVisitor.h"
#include "tilec/SharedAliases.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace {

namespace sim = tilec::simtest;

uint16_t bf16Bits(double v) {
    float f = (float)v;
    uint32_t w;
    std::memcpy(&w, &f, 4);
    return (uint16_t)(w >> 16);
}

double bf16Value(uint16_t u) {
    uint32_t w = (uint32_t)u << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
}

double floatOf(uint16_t lo, uint16_t hi) {
    uint32_t w = (uint32_t)lo | (uint32_t)hi << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
}

/// Whether the kernel stores to buffer `name` itself (the alias, not its base's elements).
bool storesTo(const tilec::ir::Kernel &k, const std::string &name) {
    struct V : tilec::ir::IRVisitor {
        using IRVisitor::visit;
        std::string name;
        bool found = false;
        void visit(const tilec::ir::Store &op) override { found |= op.buffer->name == name, IRVisitor::visit(op); }
    } v;
    v.name = name;
    v.visit(k.body);
    return v.found;
}

const char *const kSwizzledTile = R"(import tilelang.language as T


@T.prim_func
def alias(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 128), "bfloat16"), C: T.Tensor((64, 128), "float32"),
          F: T.Tensor((32, 128), "float32"), H: T.Tensor((32, 128), "float32"), G: T.Tensor((64, 128), "bfloat16")):
    with T.Kernel(1, threads=128) as bx:
        a_s = T.alloc_shared((64, 64), "bfloat16")
        b_s = T.alloc_shared((64, 128), "bfloat16")
        c = T.alloc_fragment((64, 128), "float32")
        v = T.view(b_s, (32, 128), "float32")
        T.copy(A, a_s)
        T.copy(B, b_s)
        T.gemm(a_s, b_s, c, clear_accum=True)
        T.copy(c, C)
        for i, j in T.Parallel(32, 128):
            H[i, j] = v[i, j]
        for i, j in T.Parallel(32, 128):
            v[i, j] = F[i, j]
        for i, j in T.Parallel(64, 128):
            G[i, j] = b_s[i, j]
)";

void swizzledTileBothWays(const char *arch) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, kSwizzledTile, arch);
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    const tilec::ir::Kernel &k = *r.lowered->kernels[0];
    EXPECT_TRUE(storesTo(k, "v")) << "the view's stores are not its own (expanded into the tile's elements)";
    ASSERT_EQ(tilec::ir::sharedAliases(k).size(), 1u);
    auto [view, base] = tilec::ir::sharedAliases(k)[0];
    EXPECT_EQ(k.shared.offsetOf(view.get()), k.shared.offsetOf(base.get())); // the view is the tile's bytes
    std::vector<double> a(64 * 64), b(64 * 128), f(32 * 128), c(64 * 128, -1), h(32 * 128, -1), g(64 * 128, -1);
    // bfloat16 values (small multiples of 1/32), no two neighbours alike; F's halves are such values too
    for (int i = 0; i < 64 * 64; ++i) a[i] = ((i * 29) % 61 - 30) / 32.0;
    for (int i = 0; i < 64 * 128; ++i) b[i] = ((i * 37) % 67 - 33) / 32.0;
    for (int i = 0; i < 32 * 128; ++i) f[i] = floatOf(bf16Bits(((i * 11) % 53 - 26) / 16.0), bf16Bits(((i * 7) % 59 + 1) / 8.0));
    std::vector<double> wantC(64 * 128, 0), wantH(32 * 128), wantG(64 * 128);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 128; ++j)
            for (int x = 0; x < 64; ++x) wantC[i * 128 + j] += a[i * 64 + x] * b[x * 128 + j];
    for (int e = 0; e < 32 * 128; ++e) { // view element e holds the tile's row-major elements 2e (low half), 2e + 1
        wantH[e] = floatOf(bf16Bits(b[2 * e]), bf16Bits(b[2 * e + 1]));
        float x = (float)f[e];
        uint32_t w;
        std::memcpy(&w, &x, 4);
        wantG[2 * e] = bf16Value((uint16_t)w), wantG[2 * e + 1] = bf16Value((uint16_t)(w >> 16));
    }
    for (uint64_t seed : {0u, 5u}) {
        SCOPED_TRACE(std::string(arch) + ", interleaving " + std::to_string(seed));
        sim::Outcome o = sim::runCaught(k, {{"A", &a}, {"B", &b}, {"C", &c}, {"F", &f}, {"H", &h}, {"G", &g}}, {}, seed);
        EXPECT_EQ(o.error, "");
        for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
        sim::expectNear(c, wantC, 1e-4, "C");
        sim::expectNear(h, wantH, 0, "H");
        sim::expectNear(g, wantG, 0, "G");
    }
}

TEST(LowerSimSharedAlias, Float32ViewOfSwizzledBfloat16TileSm80) { swizzledTileBothWays("sm_80"); }
TEST(LowerSimSharedAlias, Float32ViewOfPanelLayoutBfloat16TileSm90a) { swizzledTileBothWays("sm_90a"); }

/// Without the barrier between the view's writes and the tile's reads (the last one the kernel has), the
/// simulator reports the race on the tile's bytes: the alias's accesses are seen as the base's.
TEST(LowerSimSharedAlias, DroppedBarrierBetweenViewAndTileRaces) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, kSwizzledTile, "sm_80");
    ASSERT_TRUE(r.lowered) << r.diags();
    const tilec::ir::Kernel &k = *r.lowered->kernels[0];
    const int syncs = sim::countSyncs(k.body);
    ASSERT_GE(syncs, 2);
    // Each barrier dropped in turn (the merged passes may add barriers after the one between the view's writes and
    // the tile's reads): some drop must be reported as a race on the tile's bytes.
    std::string found;
    for (int drop = 1; drop <= syncs && found.empty(); ++drop) {
        int seen = 0;
        auto dropped = sim::rewriteCalls(k, [&](const tilec::ir::Evaluate &e, const tilec::ir::Call &c, sim::Role) {
            if (tilec::passes::lib::is(c, tilec::passes::lib::Fn::Sync) && ++seen == drop) return tilec::ir::Stmt();
            return sim::same(e);
        });
        std::vector<double> a(64 * 64, 0.5), b(64 * 128, 0.25), f(32 * 128, 1.5), c(64 * 128), h(32 * 128), g(64 * 128);
        sim::Outcome o = sim::runCaught(*dropped, {{"A", &a}, {"B", &b}, {"C", &c}, {"F", &f}, {"H", &h}, {"G", &g}}, {}, 1);
        for (auto &race : o.races)
            if (race.find("b_s") != std::string::npos) found = race; // on the tile, or on the view through it
    }
    EXPECT_FALSE(found.empty()) << "no barrier's drop is reported as a race on b_s";
}

/// A narrower view: each thread stores its own bfloat16 halves of a float32 tile (no other thread's bits in the
/// elements it writes), read back as floats.
TEST(LowerSimSharedAlias, Bfloat16ViewOfFloat32TileWrittenHalfByHalf) {
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def halves(X: T.Tensor((16, 128), \"bfloat16\"), Y: T.Tensor((16, 64), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        s = T.alloc_shared((16, 64), \"float32\")\n"
          "        h = T.view(s, (16, 128), \"bfloat16\")\n"
          "        for i, j in T.Parallel(16, 128):\n"
          "            h[i, j] = X[i, j]\n"
          "        for i, j in T.Parallel(16, 64):\n"
          "            Y[i, j] = s[i, j] * 2\n",
          "t.tile", *tilec::Target::parse("sm_90a"));
    ASSERT_TRUE(r.lowered) << r.diags();
    std::vector<double> x(16 * 128), y(16 * 64, -1), want(16 * 64);
    for (int i = 0; i < 16 * 128; ++i) x[i] = ((i * 13) % 41 - 20) / 8.0; // bfloat16 values
    for (int e = 0; e < 16 * 64; ++e) want[e] = 2 * floatOf(bf16Bits(x[2 * e]), bf16Bits(x[2 * e + 1]));
    sim::runAll(r, {{"X", &x}, {"Y", &y}});
    sim::expectNear(y, want, 0, "Y");
}

} // namespace
