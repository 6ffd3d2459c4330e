/// \file
/// T.view to another dtype (src/eval/TileLangViews.cpp) run on the CPU simulator: a uint32 view of a uint16
/// shared buffer joins each pair of halves (the first the low one) and a store through it writes both halves
/// back; an int16 view of the same buffer is its bits as signed; a uint8 view of a global uint16 tensor is one
/// byte of the element holding it; a float32 view of a uint32 tensor is the float with those bits.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace {

namespace sim = tilec::simtest;

TEST(LowerSimViewBits, WiderNarrowerAndSameWidthViews) {
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def view_bits(X: T.Tensor((64,), \"uint16\"), Y: T.Tensor((32,), \"uint32\"), Z: T.Tensor((64,), \"int16\"),\n"
          "         B: T.Tensor((64,), \"uint8\"), F: T.Tensor((32,), \"float32\")):\n"
          "    with T.Kernel(1, threads=64) as bx:\n"
          "        s = T.alloc_shared((64,), \"uint16\")\n"
          "        w = T.view(s, (32,), \"uint32\")\n"
          "        z = T.view(s, (64,), \"int16\")\n"
          "        xb = T.view(X, (128,), \"uint8\")\n"
          "        yf = T.view(Y, (32,), \"float32\")\n"
          "        tx = T.get_thread_binding()\n"
          "        s[tx] = X[tx]\n"
          "        B[tx] = xb[tx * 2 + 1]\n"
          "        T.sync_threads()\n"
          "        if tx < 32:\n"
          "            Y[tx] = w[tx]\n"
          "            F[tx] = yf[tx]\n"
          "        T.sync_threads()\n"
          "        if tx < 32:\n"
          "            w[31 - tx] = Y[tx] + 1\n"
          "        T.sync_threads()\n"
          "        Z[tx] = z[tx]\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    std::vector<double> x(64), y(32, -1), z(64, -1), b(64, -1), f(32, -1);
    // odd elements (the high halves) below 0x4000: no word is a NaN or infinite float
    for (int i = 0; i < 64; ++i) x[i] = (double)((i * 40503u + 1234u) & (i % 2 ? 0x3fffu : 0xffffu));
    std::vector<double> wantY(32), wantZ(64), wantB(64), wantF(32);
    std::vector<uint16_t> s(64);
    for (int i = 0; i < 64; ++i) wantB[i] = (double)(((uint32_t)x[i] >> 8) & 0xff);
    for (int i = 0; i < 32; ++i) {
        uint32_t word = (uint32_t)x[2 * i] | (uint32_t)x[2 * i + 1] << 16;
        wantY[i] = word;
        float fl;
        std::memcpy(&fl, &word, 4);
        wantF[i] = fl;
        uint32_t stored = word + 1; // w[31 - i] = Y[i] + 1
        s[2 * (31 - i)] = (uint16_t)stored, s[2 * (31 - i) + 1] = (uint16_t)(stored >> 16);
    }
    for (int i = 0; i < 64; ++i) wantZ[i] = (double)(int16_t)s[i];
    sim::runAll(r, {{"X", &x}, {"Y", &y}, {"Z", &z}, {"B", &b}, {"F", &f}});
    sim::expectNear(y, wantY, 0, "Y");
    sim::expectNear(z, wantZ, 0, "Z");
    sim::expectNear(b, wantB, 0, "B");
    sim::expectNear(f, wantF, 0, "F");
}

/// A float32 view of a bfloat16 shared tile (DeepSeek's sparse MLA backward keeps its float32 dKV rows in its KV tile
/// so): each float's halves are bfloat16 bit patterns, NaN and infinity patterns among them, and read back through
/// the view they give the same floats, bit for bit.
TEST(LowerSimViewBits, Float32ViewOfBfloat16KeepsEveryHalf) {
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def halves(F: T.Tensor((32,), \"float32\"), G: T.Tensor((32,), \"float32\")):\n"
          "    with T.Kernel(1, threads=32) as bx:\n"
          "        s = T.alloc_shared((64,), \"bfloat16\")\n"
          "        v = T.view(s, (32,), \"float32\")\n"
          "        tx = T.get_thread_binding()\n"
          "        v[tx] = F[tx]\n"
          "        T.sync_threads()\n"
          "        G[tx] = v[31 - tx]\n",
          "t.tile", *tilec::Target::parse("sm_90a"));
    ASSERT_TRUE(r.lowered) << r.diags();
    // low halves: a quiet and a signalling bfloat16 NaN, +-infinity, -0, a normal, a subnormal; high halves normal
    const uint32_t lows[] = {0x7FC1, 0x7F81, 0xFF80, 0x7F80, 0x8000, 0x3F80, 0x0001, 0xFFFF};
    std::vector<double> f(32), g(32, -1), want(32);
    for (int i = 0; i < 32; ++i) {
        uint32_t w = (uint32_t)(0x3F80 + 3 * i) << 16 | lows[i % 8];
        float x;
        std::memcpy(&x, &w, 4);
        f[i] = x;
    }
    for (int i = 0; i < 32; ++i) want[i] = f[31 - i];
    sim::runAll(r, {{"F", &f}, {"G", &g}});
    for (int i = 0; i < 32; ++i) {
        float a = (float)g[i], b = (float)want[i];
        uint32_t ua, ub;
        std::memcpy(&ua, &a, 4), std::memcpy(&ub, &b, 4);
        EXPECT_EQ(ua, ub) << "G[" << i << "]";
    }
}

} // namespace
