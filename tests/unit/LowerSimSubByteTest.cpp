/// \file
/// Sub-byte elements (T.int4, T.uint4, T.float4_e2m1fn; src/eval/TileLangSubByte.cpp) run on the CPU simulator
/// against references written here from the formats' definitions: every byte value read back as its two elements
/// (int4 sign-extended, fp4 decoded), copies between global, shared and fragment buffers of them (bytes, unpacked,
/// packed again in pairs, converted to float16), and values stored as them (fp4 rounded to nearest, ties to even,
/// saturating; integers keeping their low four bits), the packed bytes compared exactly; a T.gemm of int4 tiles.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace {

namespace sim = tilec::simtest;

const double kFp4[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

double fp4Value(int code) { return (code & 8 ? -1.0 : 1.0) * kFp4[code & 7]; }
double int4Value(int code) { return code >= 8 ? code - 16 : code; }

/// The fp4 code of x: the nearest magnitude (a tie to the even code), the sign bit for x < 0; NaN is 0.
int fp4Code(double x) {
    if (std::isnan(x)) return 0;
    double a = std::fabs(x);
    if (a >= 6) return 7 | (x < 0 ? 8 : 0); // (far enough, every distance rounds to the same double)
    int best = 0;
    for (int c = 1; c < 8; ++c) {
        double d = std::fabs(a - kFp4[c]), db = std::fabs(a - kFp4[best]);
        if (d < db || (d == db && c % 2 == 0)) best = c;
    }
    return best | (x < 0 ? 8 : 0);
}

/// A torch int8 tensor's byte from two codes (element 2k low, 2k + 1 high).
double packed(int lo, int hi) { return (double)(int8_t)(uint8_t)(lo | hi << 4); }
int lowCode(double byte) { return (uint8_t)(int8_t)byte & 15; }
int highCode(double byte) { return (uint8_t)(int8_t)byte >> 4; }

TEST(LowerSimSubByte, EveryByteReadsAsItsTwoElements) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, "import tilelang.language as T\n"
                     "@T.prim_func\n"
                     "def loads(A: T.Tensor((8, 32), T.int4), B: T.Tensor((8, 32), T.uint4), F: T.Tensor((8, 32), T.float4_e2m1fn),\n"
                     "          OA: T.Tensor((8, 32), \"int32\"), OB: T.Tensor((8, 32), \"int32\"), OF: T.Tensor((8, 32), \"float32\")):\n"
                     "    with T.Kernel(1, threads=64) as bx:\n"
                     "        for i, j in T.Parallel(8, 32):\n"
                     "            OA[i, j] = A[i, j]\n"
                     "            OB[i, j] = B[i, j] + 0\n"
                     "            OF[i, j] = F[i, j]\n");
    std::vector<double> a(128), b(128), f(128), oa(256, -99), ob(256, -99), of(256, -99);
    for (int i = 0; i < 128; ++i) {
        a[i] = (double)(int8_t)(uint8_t)(i * 2 + 1);   // odd bytes here, even ones in f: all 256 between them
        f[i] = (double)(int8_t)(uint8_t)(i * 2);
        b[i] = (double)(uint8_t)(255 - i * 2);
    }
    std::vector<double> wa(256), wb(256), wf(256);
    for (int e = 0; e < 256; ++e) {
        int k = e / 2; // elements e = 2k (low nibble) and 2k + 1 (high) of byte k, row by row
        bool hi = e % 2;
        wa[e] = int4Value(hi ? highCode(a[k]) : lowCode(a[k]));
        int ub = (int)b[k];
        wb[e] = hi ? ub >> 4 : ub & 15;
        wf[e] = fp4Value(hi ? highCode(f[k]) : lowCode(f[k]));
    }
    sim::runAll(r, {{"A", &a}, {"B", &b}, {"F", &f}, {"OA", &oa}, {"OB", &ob}, {"OF", &of}});
    sim::expectNear(oa, wa, 0, "OA");
    sim::expectNear(ob, wb, 0, "OB");
    sim::expectNear(of, wf, 0, "OF");
    for (int e = 0; e < 256; ++e) // fp4's -0 (code 8) reads as a negative zero
        if (wf[e] == 0) EXPECT_EQ(std::signbit(of[e]), std::signbit(wf[e])) << "OF[" << e << "]";
}

TEST(LowerSimSubByte, CopiesKeepBytesUnpackAndPackAgain) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, "import tilelang.language as T\n"
                     "@T.prim_func\n"
                     "def copies(F: T.Tensor((16, 64), T.float4_e2m1fn), O: T.Tensor((16, 64), \"float32\"),\n"
                     "           G: T.Tensor((16, 64), T.float4_e2m1fn), H: T.Tensor((16, 64), \"float16\")):\n"
                     "    with T.Kernel(2, threads=128) as bx:\n"
                     "        s = T.alloc_shared((8, 64), T.float4_e2m1fn)\n"
                     "        f = T.alloc_fragment((8, 64), T.float4_e2m1fn)\n"
                     "        T.copy(F[bx * 8, 0], s)\n"
                     "        T.copy(s, f)\n"
                     "        for i, j in T.Parallel(8, 64):\n"
                     "            O[bx * 8 + i, j] = f[i, j] * 2\n"
                     "        T.copy(f, G[bx * 8, 0])\n"
                     "        T.copy(s, H[bx * 8 : bx * 8 + 8, 0:64])\n");
    std::vector<double> fin(512), o(1024, -99), g(512, 99), h(1024, -99);
    for (int i = 0; i < 512; ++i) fin[i] = (double)(int8_t)(uint8_t)(i * 7 + 3);
    std::vector<double> wo(1024), wh(1024);
    for (int e = 0; e < 1024; ++e) {
        double byte = fin[e / 2];
        wh[e] = fp4Value(e % 2 ? highCode(byte) : lowCode(byte));
        wo[e] = 2 * wh[e];
    }
    sim::runAll(r, {{"F", &fin}, {"O", &o}, {"G", &g}, {"H", &h}});
    sim::expectNear(o, wo, 0, "O");
    sim::expectNear(h, wh, 0, "H");
    sim::expectNear(g, fin, 0, "G"); // the same bytes, -0 included
}

TEST(LowerSimSubByte, StoredValuesRoundAndWrapIntoPackedBytes) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, "import tilelang.language as T\n"
                     "@T.prim_func\n"
                     "def casts(X: T.Tensor((16, 64), \"float32\"), I: T.Tensor((16, 64), \"int32\"),\n"
                     "          Q: T.Tensor((16, 64), T.float4_e2m1fn), Q4: T.Tensor((16, 64), T.int4),\n"
                     "          U4: T.Tensor((16, 64), T.uint4)):\n"
                     "    with T.Kernel(1, threads=128) as bx:\n"
                     "        y = T.alloc_fragment((16, 64), T.float4_e2m1fn)\n"
                     "        ys = T.alloc_shared((16, 64), T.float4_e2m1fn)\n"
                     "        n = T.alloc_fragment((16, 64), T.int4)\n"
                     "        for i, j in T.Parallel(16, 64):\n"
                     "            y[i, j] = X[i, j] * 2.0\n"
                     "            n[i, j] = I[i, j]\n"
                     "        T.copy(y, ys)\n"
                     "        T.copy(ys, Q)\n"
                     "        T.copy(n, Q4)\n"
                     "        T.copy(I, U4)\n");
    std::vector<double> x(1024), in(1024), q(512, 99), q4(512, 99), u4(512, 99);
    // halves of the ties 0.25, 0.75, ..., 5, of points beside them, negatives, zeros and values past 6
    const double special[] = {0.125, 0.375, 0.625, 0.875, 1.25, 1.75, 2.5, 0.1249, 0.1251, 0.3749, 0.3751,
                              -0.125, -0.375, -1.25, -2.5, -0.01, 0.0, -0.0, 3.1, -3.1, 100.0, -1e30, 1.2, 0.7};
    for (int i = 0; i < 1024; ++i) {
        x[i] = i < 24 ? special[i] : std::sin(i * 0.37) * 3.5;
        in[i] = (i * 37) % 61 - 30;
    }
    std::vector<double> wq(512), wq4(512), wu4(512);
    for (int k = 0; k < 512; ++k) {
        wq[k] = packed(fp4Code((double)(float)(x[2 * k] * 2)), fp4Code((double)(float)(x[2 * k + 1] * 2)));
        int lo = (int)in[2 * k] & 15, hi = (int)in[2 * k + 1] & 15;
        wq4[k] = packed(lo, hi);
        wu4[k] = (double)(uint8_t)(lo | hi << 4);
    }
    sim::runAll(r, {{"X", &x}, {"I", &in}, {"Q", &q}, {"Q4", &q4}, {"U4", &u4}});
    sim::expectNear(q, wq, 0, "Q");
    sim::expectNear(q4, wq4, 0, "Q4");
    sim::expectNear(u4, wu4, 0, "U4");
}

TEST(LowerSimSubByte, SharedElementStoresAndStridedTensors) {
    // TileKernels' per-token cast to e2m1 stores elements of a shared tile, which T.copy packs into the output; a
    // T.StridedTensor of fp4 counts its strides in elements (a row of 128 here: 64 bytes).
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, "import tilelang.language as T\n"
                     "@T.prim_func\n"
                     "def shared_stores(X: T.Tensor((32, 64), \"float32\"), Q: T.Tensor((32, 64), T.float4_e2m1fn),\n"
                     "                  S: T.StridedTensor((32, 64), (128, 1), T.float4_e2m1fn), O: T.Tensor((32, 64), \"float32\")):\n"
                     "    with T.Kernel(2, threads=128) as bx:\n"
                     "        s = T.alloc_shared((16, 64), T.float4_e2m1fn)\n"
                     "        for i, j in T.Parallel(16, 64):\n"
                     "            s[i, j] = X[bx * 16 + i, j] - 1.0\n"
                     "        T.copy(s, Q[bx * 16, 0])\n"
                     "        for i, j in T.Parallel(16, 64):\n"
                     "            O[bx * 16 + i, j] = S[bx * 16 + i, j]\n");
    std::vector<double> x(2048), q(1024, 99), st(32 * 64, 0), o(2048, -99);
    for (int i = 0; i < 2048; ++i) x[i] = std::cos(i * 0.71) * 4;
    for (int i = 0; i < 2048; ++i) st[i] = (double)(int8_t)(uint8_t)(i * 13 + 5); // 32 rows of 64 bytes
    std::vector<double> wq(1024), wo(2048);
    for (int k = 0; k < 1024; ++k)
        wq[k] = packed(fp4Code((double)(float)(x[2 * k] - 1.0)), fp4Code((double)(float)(x[2 * k + 1] - 1.0)));
    for (int i = 0; i < 32; ++i)
        for (int j = 0; j < 64; ++j) {
            double byte = st[i * 64 + j / 2];
            wo[i * 64 + j] = fp4Value(j % 2 ? highCode(byte) : lowCode(byte));
        }
    sim::runAll(r, {{"X", &x}, {"Q", &q}, {"S", &st}, {"O", &o}});
    sim::expectNear(q, wq, 0, "Q");
    sim::expectNear(o, wo, 0, "O");
}

/// T.gemm of int4 tiles (the int8 product of their sign-extended bytes on chip), pipelined over K, and an element
/// stored into a shared int4 tile read back: exact int32 results for every pair of codes.
TEST(LowerSimSubByte, GemmOfInt4TilesIsExact) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, "import tilelang.language as T\n"
                     "@T.prim_func\n"
                     "def g(A: T.Tensor((64, 128), T.int4), B: T.Tensor((32, 128), T.int4), C: T.Tensor((64, 32), \"int32\")):\n"
                     "    with T.Kernel(1, threads=128) as bx:\n"
                     "        As = T.alloc_shared((64, 64), T.int4)\n"
                     "        Bs = T.alloc_shared((32, 64), T.int4)\n"
                     "        Cf = T.alloc_fragment((64, 32), \"int32\")\n"
                     "        T.clear(Cf)\n"
                     "        for ko in T.Pipelined(2, num_stages=2):\n"
                     "            T.copy(A[0, ko * 64], As)\n"
                     "            T.copy(B[0, ko * 64], Bs)\n"
                     "            T.gemm(As, Bs, Cf, transpose_B=True)\n"
                     "        T.copy(Cf, C)\n");
    std::vector<double> a(64 * 64), b(32 * 64), c(64 * 32, -99999);
    for (size_t i = 0; i < a.size(); ++i) a[i] = (double)(int8_t)(uint8_t)(i * 37 + 11);
    for (size_t i = 0; i < b.size(); ++i) b[i] = (double)(int8_t)(uint8_t)(i * 53 + 7);
    auto elem = [](const std::vector<double> &t, int row, int col) { // element (row, col) of a (., 128) int4 tensor
        double byte = t[row * 64 + col / 2];
        return int4Value(col % 2 ? highCode(byte) : lowCode(byte));
    };
    std::vector<double> want(64 * 32, 0);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 32; ++j)
            for (int k = 0; k < 128; ++k) want[i * 32 + j] += elem(a, i, k) * elem(b, j, k);
    sim::runAll(r, {{"A", &a}, {"B", &b}, {"C", &c}});
    sim::expectNear(c, want, 0, "C");
}

} // namespace

namespace {

// TileLang's act_quant fp4 shape: a one-trip T.Pipelined(1, num_stages=2) (plain code now: no ring of stages)
// loading a tile through shared memory, each element stored as fp4 in a fragment (the device library's single
// conversion) and copied out through shared memory, and the shared floats copied straight into a packed tensor
// (the pair conversion). Every midpoint between fp4 magnitudes, the floats beside them, both zeros, subnormals,
// values past 6, infinities and NaNs, against the definition.
TEST(LowerSimSubByte, OneTripPipelineAndPairConversionsRoundEveryMidpoint) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, "import tilelang.language as T\n"
                     "@T.prim_func\n"
                     "def quant(X: T.Tensor((64, 64), \"float32\"), Q: T.Tensor((64, 64), T.float4_e2m1fn),\n"
                     "          P: T.Tensor((64, 64), T.float4_e2m1fn)):\n"
                     "    with T.Kernel(2, threads=128) as bx:\n"
                     "        xs = T.alloc_shared((32, 64), \"float32\")\n"
                     "        xf = T.alloc_fragment((32, 64), \"float32\")\n"
                     "        y = T.alloc_fragment((32, 64), T.float4_e2m1fn)\n"
                     "        ys = T.alloc_shared((32, 64), T.float4_e2m1fn)\n"
                     "        for _ in T.Pipelined(1, num_stages=2):\n"
                     "            T.copy(X[bx * 32, 0], xs)\n"
                     "            T.copy(xs, xf)\n"
                     "            for i, j in T.Parallel(32, 64):\n"
                     "                y[i, j] = xf[i, j]\n"
                     "            T.copy(y, ys)\n"
                     "            T.copy(ys, Q[bx * 32, 0])\n"
                     "            T.copy(xs, P[bx * 32, 0])\n");
    std::vector<double> special;
    for (float m : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f})
        for (float s : {1.0f, -1.0f})
            for (float v : {std::nextafter(m, 0.0f), m, std::nextafter(m, 100.0f)}) special.push_back(s * v);
    for (double v : {0.0, -0.0, 1e-45, -1e-45, 1e-39, -1e-39, 7.0, -7.0, 1e30, -1e30, (double)INFINITY, -(double)INFINITY,
                     (double)NAN, 0.1, -0.1})
        special.push_back(v);
    std::vector<double> x(4096), q(2048, 99), p(2048, 99), wq(2048);
    for (size_t i = 0; i < x.size(); ++i) x[i] = i < special.size() ? special[i] : (double)(float)(std::sin(i * 0.37) * 6.5);
    for (int k = 0; k < 2048; ++k) wq[k] = packed(fp4Code(x[2 * k]), fp4Code(x[2 * k + 1]));
    sim::runAll(r, {{"X", &x}, {"Q", &q}, {"P", &p}});
    sim::expectNear(q, wq, 0, "Q");
    sim::expectNear(p, wq, 0, "P");
}

} // namespace
