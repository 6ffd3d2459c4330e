/// \file
/// Quantization kernels in the shape of TileLang's own (issue 23), lowered for sm_80 and run on the CPU
/// simulator (src/sim/Simulator.h) against references of what each statement computes: a dequantizing loop
/// over a thread's own registers (example_dequant_gemm_bf16_mxfp4_hopper.py's fast path) and block-scaled fp8
/// quantization's scale arithmetic in float32 (deepseek_v32's act_quant_kernel), and packed 4-bit weights read at
/// (i, j // 2) while filling a T.gemm operand (example_dequant_gemm_w4a8.py).
#include "LowerTestUtil.h"
#include "SimTestUtil.h"
#include "sim/Simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::expectNear;
using tilec::simtest::Simulator;

namespace {

/// `src` lowered for sm_80 (the simulator's target).
void lowerForSm80(LowerRun &r, const std::string &src) { r.run(src, "t.tile", *Target::parse("sm_80")); }

void runOnce(const LowerRun &r, std::map<std::string, std::vector<double> *> tensors) {
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    Simulator s(*r.lowered->kernels[0], tensors, {});
    try {
        s.run();
    } catch (const simtest::SimError &e) {
        FAIL() << e.what();
    }
    for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
}

} // namespace

// Each thread unpacks 4 bytes of packed 4-bit values into 8 registers and scales them by its block's power of
// 2, in T.Parallel loops that store only into its T.alloc_local buffers: every thread runs all 8 iterations
// (as TileLang lowers a loop that touches no fragment and stores only into "local" buffers). Spread over the
// 128 threads, thread t scaled (and decoded) only its own register t and the others kept garbage or unscaled
// values: the mxfp4 GEMM's C was wrong almost everywhere on the H200.
TEST(LowerSimQuant, ParallelOverThreadRegistersRunsWholeInEveryThread) {
    LowerRun r;
    lowerForSm80(
        r, "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def dequant(B: T.Tensor((64, 16), 'uint8'), Scale: T.Tensor((64,), 'uint8'),\n"
           "            D: T.Tensor((64, 32), 'float32')):\n"
           "    with T.Kernel(1, threads=128) as bx:\n"
           "        tx = T.get_thread_binding()\n"
           "        B_shared = T.alloc_shared((64, 16), 'uint8')\n"
           "        D_shared = T.alloc_shared((64, 32), 'float32')\n"
           "        b = T.alloc_local((4,), 'uint8')\n"
           "        w = T.alloc_local((8,), 'float32')\n"
           "        e = T.alloc_local((1,), 'float32')\n"
           "        T.copy(B, B_shared)\n"
           "        for i in T.serial(2):\n"
           "            for v in T.vectorized(4):\n"
           "                b[v] = B_shared[(i * 512 + tx * 4 + v) // 16, (i * 512 + tx * 4 + v) % 16]\n"
           "            e[0] = T.shift_left(1, Scale[(i * 512 + tx * 4) // 16])\n"
           "            for v in T.Parallel(8):\n"
           "                w[v] = T.cast((b[v // 2] >> (4 * (v % 2))) & 15, 'float32') - 8\n"
           "            for v in T.Parallel(8):\n"
           "                w[v] *= e[0]\n"
           "            for v in T.vectorized(8):\n"
           "                D_shared[(i * 1024 + tx * 8 + v) // 32, (i * 1024 + tx * 8 + v) % 32] = w[v]\n"
           "        T.copy(D_shared, D)\n");
    std::mt19937 g(23);
    std::vector<double> b(64 * 16), scale(64), d(64 * 32, std::nan("")), want(64 * 32);
    for (auto &x : b) x = (double)(g() % 256);
    for (auto &x : scale) x = (double)(g() % 4);
    for (int row = 0; row < 64; ++row)
        for (int col = 0; col < 32; ++col) {
            int byte = (int)b[(size_t)(row * 16 + col / 2)], nibble = (byte >> (4 * (col % 2))) & 15;
            want[(size_t)(row * 32 + col)] = (nibble - 8) * std::ldexp(1.0, (int)scale[(size_t)row]);
        }
    runOnce(r, {{"B", &b}, {"Scale", &scale}, {"D", &d}});
    expectNear(d, want, 0, "D");
}

// The scale of block-scaled fp8 quantization as act_quant_kernel writes it: amax * (1 / 448) in float32 (the
// constant rounded to float32 first), then x / s in float32. With amax 5.25 and x 69/64, x * 448 / amax is 92
// exactly, the tie between the float8_e4m3 values 88 and 96 (to even: 96); the kernel's float32 scale is one
// ulp above 5.25 / 448, so its quotient lies just below 92 and becomes 88. A float64 reference of the same
// formula is therefore off by one fp8 step wherever it lands on a tie (0.11 % of normal random inputs); the
// reference of the GPU suite (gpu/tlcompat_refs.py block_fp8_quant) computes in float32 as the kernel does.
TEST(LowerSimQuant, Fp8ScaleIsFloat32ArithmeticOfTheKernel) {
    LowerRun r;
    lowerForSm80(r, "import tilelang.language as T\n"
                    "fp8_max_inv = 1 / 448.0\n"
                    "@T.prim_func\n"
                    "def quant(X: T.Tensor((32, 128), 'bfloat16'), Y: T.Tensor((32, 128), 'float32'),\n"
                    "          S: T.Tensor((32,), 'float32')):\n"
                    "    with T.Kernel(1, threads=128) as bx:\n"
                    "        x = T.alloc_fragment((32, 128), 'float32')\n"
                    "        amax = T.alloc_fragment((32,), 'float32')\n"
                    "        s = T.alloc_fragment((32,), 'float32')\n"
                    "        T.copy(X, x)\n"
                    "        T.reduce_absmax(x, amax, dim=1)\n"
                    "        for i in T.Parallel(32):\n"
                    "            amax[i] = T.max(amax[i], 1e-4)\n"
                    "            s[i] = amax[i] * fp8_max_inv\n"
                    "        for i, j in T.Parallel(32, 128):\n"
                    "            x[i, j] = T.clamp(x[i, j] / s[i], -448.0, 448.0)\n"
                    "        T.copy(x, Y)\n"
                    "        for i in T.Parallel(32):\n"
                    "            S[i] = s[i]\n");
    std::mt19937 g(7);
    std::normal_distribution<float> n(0.0f, 1.0f);
    auto bf16 = [](float f) { // round to nearest even bfloat16
        uint32_t u;
        std::memcpy(&u, &f, 4);
        u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
        std::memcpy(&f, &u, 4);
        return (double)f;
    };
    std::vector<double> x(32 * 128), y(32 * 128, std::nan("")), s(32, std::nan("")), wantY(32 * 128),
        wantS(32);
    for (auto &v : x) v = bf16(n(g));
    x[0] = 5.25, x[1] = 69.0 / 64; // row 0: amax 5.25, and the tie
    for (int j = 2; j < 128; ++j) x[(size_t)j] = bf16(n(g) * 0.5f);
    const float inv = (float)(1 / 448.0);
    for (int i = 0; i < 32; ++i) {
        float amax = 0;
        for (int j = 0; j < 128; ++j) amax = std::fmax(amax, std::fabs((float)x[(size_t)(i * 128 + j)]));
        float sc = std::fmax(amax, 1e-4f) * inv;
        wantS[(size_t)i] = sc;
        for (int j = 0; j < 128; ++j)
            wantY[(size_t)(i * 128 + j)] =
                std::fmin(std::fmax((float)x[(size_t)(i * 128 + j)] / sc, -448.0f), 448.0f);
    }
    runOnce(r, {{"X", &x}, {"Y", &y}, {"S", &s}});
    expectNear(y, wantY, 0, "Y");
    expectNear(s, wantS, 0, "S");
    EXPECT_EQ(s[0], (double)std::nextafter(3.0f / 256, 1.0f))
        << "the scale: one float32 ulp above 5.25 / 448 = 3 / 256";
    EXPECT_EQ(y[1], (double)std::nextafter(92.0f, 0.0f))
        << "x / s just below the fp8 tie 92 (so 88 in float8_e4m3)";
}

// TileLang's w4a8 / int4 dequantizing GEMMs (example_dequant_gemm_w4a8.py): a fragment of packed bytes B_local,
// filled from shared memory, read at (i, j // 2) in a nest that fills the T.gemm operand A (through a copy). That
// nest takes the tensor-core layout, whose threads do not hold the bytes they read, so B_local goes through a
// shared copy (transposeFragments) instead of being held whole in every thread (an error before: 2048 elements).
// Every lowering for sm_80 (mma.sync) and sm_90a (wgmma where it applies) against the products in float64.
namespace {

void packedOperandCase(const char *arch) {
    const std::string src = "import tilelang.language as T\n"
                            "@T.prim_func\n"
                            "def w4(A: T.Tensor((32, 64), 'float16'), B: T.Tensor((64, 32), 'uint8'),\n"
                            "       Ct: T.Tensor((64, 32), 'float32')):\n"
                            "    with T.Kernel(1, threads=128) as bx:\n"
                            "        A_shared = T.alloc_shared((32, 64), 'float16')\n"
                            "        B_shared = T.alloc_shared((64, 32), 'uint8')\n"
                            "        B_local = T.alloc_fragment((64, 32), 'uint8')\n"
                            "        W = T.alloc_fragment((64, 64), 'float16')\n"
                            "        W_prev = T.alloc_fragment((64, 64), 'float16')\n"
                            "        C = T.alloc_fragment((64, 32), 'float32')\n"
                            "        T.clear(C)\n"
                            "        T.copy(A, A_shared)\n"
                            "        T.copy(B, B_shared)\n"
                            "        T.copy(B_shared, B_local)\n"
                            "        for i, j in T.Parallel(64, 64):\n"
                            "            W[i, j] = T.cast((B_local[i, j // 2] >> T.cast(j % 2 * 4, 'uint8')) & T.uint8(15), "
                            "'float16') - T.float16(8)\n"
                            "        T.copy(W, W_prev)\n"
                            "        T.gemm(W_prev, A_shared, C, transpose_B=True)\n"
                            "        T.copy(C, Ct)\n";
    LowerRun r;
    r.run(src, "t.tile", *Target::parse(arch));
    ASSERT_TRUE(r.lowered) << r.diags();
    std::mt19937 g(24);
    std::vector<double> a(32 * 64), b(64 * 32), want(64 * 32, 0.0);
    for (auto &x : a) x = (double)((int)(g() % 17) - 8) / 4; // exact in float16
    for (auto &x : b) x = (double)(g() % 256);
    for (int n = 0; n < 64; ++n)
        for (int m = 0; m < 32; ++m)
            for (int k = 0; k < 64; ++k) {
                int nibble = ((int)b[(size_t)(n * 32 + k / 2)] >> (4 * (k % 2))) & 15;
                want[(size_t)(n * 32 + m)] += (nibble - 8) * a[(size_t)(m * 64 + k)];
            }
    for (auto &k : r.lowered->kernels) {
        std::vector<double> c(64 * 32, std::nan(""));
        simtest::simulate(*k, {{"A", &a}, {"B", &b}, {"Ct", &c}});
        expectNear(c, want, 0, "Ct");
    }
}

} // namespace

TEST(LowerSimQuant, PackedReadInATensorCoreNestGoesThroughSharedSm80) { packedOperandCase("sm_80"); }
TEST(LowerSimQuant, PackedReadInATensorCoreNestGoesThroughSharedSm90a) { packedOperandCase("sm_90a"); }
