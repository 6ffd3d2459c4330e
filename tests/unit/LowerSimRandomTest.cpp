/// \file
/// Blocks of fewer than 32 threads (or of a partial last warp) and TileLang's random numbers (issue 24), run on the
/// CPU simulator: TileLang's rand example (threads=1, T.rng_init / T.rng_rand in a T.Parallel nest), per-thread
/// work, copies, block barriers and in-thread reductions in blocks of 1, 16 and 48 threads; what needs a whole
/// warp there is a located error. The simulator's Philox is checked against cuRAND's own output.
#include "LowerSimUtil.h"
#include "sim/SimulatorRandom.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

/// The n-th number (from 0) of subsequence `seq` of `seed`, as curand_init(seed, seq, n) then curand() give it.
double nth(uint64_t seed, uint64_t seq, uint64_t n) {
    std::vector<double> w(16);
    sim::philoxInit(w.data(), seed, seq, n);
    return sim::philoxNext(w.data());
}

TEST(LowerSimRandom, PhiloxIsCuRandsBitForBit) {
    // curand_init(seed, seq, off, &s) then six curand(&s): cuRAND 13's device code compiled for the host
    // (QUALIFIERS defined __host__ __device__), printed once.
    struct Case {
        uint64_t seed, seq, off;
        uint32_t want[6];
    } cases[] = {
        {42, 0, 0, {2632642643u, 2012563771u, 314527917u, 1463989207u, 4242219303u, 1404726525u}},
        {42, 0, 128, {2700622120u, 1018086070u, 3689554224u, 2830907139u, 1778550086u, 49606125u}},
        {123, 0, 4, {2747274318u, 2101354157u, 886462750u, 3725512111u, 739990181u, 1075717757u}},
        {0, 0, 130, {2507224108u, 999677583u, 4139131227u, 3833431669u, 4189577723u, 2039554037u}},
        {0x123456789abcdefull, 3, 7, {514718783u, 2606638874u, 2062599732u, 2561374748u, 388174275u, 4049781759u}},
    };
    for (auto &c : cases) {
        std::vector<double> w(16);
        sim::philoxInit(w.data(), c.seed, c.seq, c.off);
        for (int i = 0; i < 6; ++i) EXPECT_EQ(sim::philoxNext(w.data()), c.want[i]) << "seed " << c.seed << " draw " << i;
    }
    std::vector<double> w(16);
    sim::philoxInit(w.data(), 42, 0, 0);
    EXPECT_FLOAT_EQ(sim::philoxUniform(w.data()), 2632642643.0f * 2.3283064e-10f + 2.3283064e-10f / 2);
}

/// TileLang's examples/rand/rand_uint.py, as a prim_func: one thread per block draws 128 numbers in a T.Parallel.
const char *kRandUint = "import tilelang.language as T\n"
                        "@T.prim_func\n"
                        "def draw(A: T.Tensor((M,), \"uint32\")):\n"
                        "    with T.Kernel(T.ceildiv(M, 128 * THREADS), threads=THREADS) as bx:\n"
                        "        tx = T.get_thread_binding()\n"
                        "        T.rng_init(SEED, 0, bx * 128 * THREADS + tx * 128)\n"
                        "        for i, j in T.Parallel(THREADS, 128):\n"
                        "            idx = (bx * THREADS + i) * 128 + j\n"
                        "            if idx < M:\n"
                        "                A[idx] = T.rng_rand()\n";

std::string randSource(int m, int threads, int seed) {
    std::string s = kRandUint;
    auto put = [&](const std::string &k, int v) {
        for (size_t p; (p = s.find(k)) != std::string::npos;) s.replace(p, k.size(), std::to_string(v));
    };
    put("THREADS", threads);
    put("SEED", seed);
    put("M", m);
    return s;
}

TEST(LowerSimRandom, RandExampleWithOneThreadPerBlock) {
    for (auto [m, seed] : {std::pair{1024, 42}, std::pair{512, 123}, std::pair{200, 0}}) {
        for (const char *arch : {"sm_80", "sm_90a"}) {
            SCOPED_TRACE(std::string(arch) + " M=" + std::to_string(m));
            tilec::lowertest::LowerRun r;
            sim::lowerFor(r, randSource(m, 1, seed), arch);
            ASSERT_TRUE(r.lowered) << r.diags();
            std::vector<double> a(m, std::nan("")), want(m);
            for (int i = 0; i < m; ++i) want[i] = nth(seed, 0, i); // number idx of the seed's first subsequence
            sim::runAll(r, {{"A", &a}});
            sim::expectNear(a, want, 0, "A");
        }
    }
}

TEST(LowerSimRandom, EachThreadDrawsItsOwnNumbersInABlockOf48) {
    // 48 threads: a whole warp and a half one; thread g's 100 numbers start at its own offset g * 100.
    const int m = 2 * 48 * 100;
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, "import tilelang.language as T\n"
                     "@T.prim_func\n"
                     "def draw(A: T.Tensor((9600,), \"uint32\")):\n"
                     "    with T.Kernel(2, threads=48) as bx:\n"
                     "        g = bx * 48 + T.get_thread_binding()\n"
                     "        T.rng_init(7, 0, g * 100)\n"
                     "        for j in T.serial(100):\n"
                     "            A[g * 100 + j] = T.rng_rand()\n");
    ASSERT_TRUE(r.lowered) << r.diags();
    std::vector<double> a(m, std::nan("")), want(m);
    for (int i = 0; i < m; ++i) want[i] = nth(7, 0, i);
    sim::runAll(r, {{"A", &a}});
    sim::expectNear(a, want, 0, "A");
}

TEST(LowerSimRandom, UniformFloatsAndTheDefaultSubsequence) {
    // seq defaults to the thread's global index (tx + bx * threads): thread g draws from subsequence g.
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, "import tilelang.language as T\n"
                     "@T.prim_func\n"
                     "def u(A: T.Tensor((16, 3), \"float32\")):\n"
                     "    with T.Kernel(2, threads=8) as bx:\n"
                     "        tx = T.get_thread_binding()\n"
                     "        T.rng_init(5)\n"
                     "        for k in T.serial(3):\n"
                     "            A[bx * 8 + tx, k] = T.rng_rand_float()\n");
    ASSERT_TRUE(r.lowered) << r.diags();
    std::vector<double> a(48, std::nan("")), want(48);
    for (int g = 0; g < 16; ++g) {
        std::vector<double> w(16);
        sim::philoxInit(w.data(), 5, g, 0);
        for (int k = 0; k < 3; ++k) want[g * 3 + k] = sim::philoxUniform(w.data());
    }
    sim::runAll(r, {{"A", &a}});
    sim::expectNear(a, want, 0, "A");
}

TEST(LowerSimRandom, TileWorkInBlocksWithAPartialWarp) {
    // Copies through shared memory, a block barrier, T.Parallel nests and a reduction: the same results in blocks of
    // 1, 16 and 48 threads. Over 16 threads the layout spreads each row of f over several threads, whose reduction
    // needs a warp shuffle (an error, below); over 1 and 48 each thread holds its rows whole.
    for (int threads : {1, 16, 48}) {
        SCOPED_TRACE("threads=" + std::to_string(threads));
        const std::string reduce = threads == 16 ? "        for i in T.Parallel(32):\n            s[i] = f[i, 0] + f[i, 1] + f[i, 2] + "
                                                   "f[i, 3] + f[i, 4] + f[i, 5] + f[i, 6] + f[i, 7]\n"
                                                 : "        T.reduce_sum(f, s, dim=1)\n";
        tilec::lowertest::LowerRun r;
        sim::lowerFor(r, "import tilelang.language as T\n"
                         "@T.prim_func\n"
                         "def k(A: T.Tensor((64, 8), \"float32\"), B: T.Tensor((64, 8), \"float32\"), S: T.Tensor((64,), \"float32\")):\n"
                         "    with T.Kernel(2, threads=" + std::to_string(threads) + ") as bx:\n"
                         "        a_s = T.alloc_shared((32, 8), \"float32\")\n"
                         "        f = T.alloc_fragment((32, 8), \"float32\")\n"
                         "        s = T.alloc_fragment((32,), \"float32\")\n"
                         "        T.copy(A[bx * 32, 0], a_s)\n"
                         "        for i, j in T.Parallel(32, 8):\n"
                         "            f[i, j] = a_s[31 - i, j] * 2.0\n"
                         + reduce +
                         "        T.copy(f, B[bx * 32, 0])\n"
                         "        T.copy(s, S[bx * 32])\n");
        ASSERT_TRUE(r.lowered) << r.diags();
        auto a = sim::randomData(512, 3);
        std::vector<double> b(512, std::nan("")), s(64, std::nan("")), wantB(512), wantS(64, 0);
        for (int blk = 0; blk < 2; ++blk)
            for (int i = 0; i < 32; ++i)
                for (int j = 0; j < 8; ++j) {
                    double v = 2 * a[(blk * 32 + 31 - i) * 8 + j];
                    wantB[(blk * 32 + i) * 8 + j] = v;
                    wantS[blk * 32 + i] += v;
                }
        sim::runAll(r, {{"A", &a}, {"B", &b}, {"S", &s}});
        sim::expectNear(b, wantB, 1e-6, "B");
        sim::expectNear(s, wantS, 1e-5, "S");
    }
}

TEST(LowerSimRandom, WarpWideCallsInAPartialWarpAreLocatedErrors) {
    auto errorOf = [](const std::string &src) {
        tilec::lowertest::LowerRun r;
        sim::lowerFor(r, "import tilelang.language as T\n" + src);
        EXPECT_FALSE(r.lowered);
        return r.diags();
    };
    // A reduction across the threads that share a row: its shuffles would name lanes the block does not have.
    std::string d = errorOf("@T.prim_func\n"
                            "def k(A: T.Tensor((4, 64), \"float32\"), S: T.Tensor((4,), \"float32\")):\n"
                            "    with T.Kernel(1, threads=16) as bx:\n"
                            "        f = T.alloc_fragment((4, 64), \"float32\")\n"
                            "        s = T.alloc_fragment((4,), \"float32\")\n"
                            "        T.copy(A, f)\n"
                            "        T.reduce_max(f, s, dim=1)\n"
                            "        T.copy(s, S)\n");
    if (d.find("warp shuffle") != std::string::npos)
        EXPECT_NE(d.find("t.tile:8:9: error: a reduction across the threads that share a row (a warp shuffle) needs whole "
                         "warps, but this block has 16 threads, so its last warp has only 16 of 32 lanes"),
                  std::string::npos)
            << d;
    else
        ADD_FAILURE() << "expected the reduction's shuffle to be reported: " << d;
    d = errorOf("@T.prim_func\n"
                "def k(A: T.Tensor((1,), \"float32\")):\n"
                "    with T.Kernel(1, threads=1) as bx:\n"
                "        v = T.alloc_var(\"float32\")\n"
                "        v = A[0]\n"
                "        A[0] = T.shfl_xor(v, 1)\n");
    EXPECT_NE(d.find("t.tile:7:16: error: a warp shuffle needs whole warps, but this block has 1 threads"), std::string::npos) << d;
    d = errorOf("@T.prim_func\n"
                "def k(A: T.Tensor((64, 64), \"float16\"), C: T.Tensor((64, 64), \"float32\")):\n"
                "    with T.Kernel(1, threads=48) as bx:\n"
                "        a = T.alloc_shared((64, 64), \"float16\")\n"
                "        c = T.alloc_fragment((64, 64), \"float32\")\n"
                "        T.copy(A, a)\n"
                "        T.gemm(a, a, c, clear_accum=True)\n"
                "        T.copy(c, C)\n");
    EXPECT_NE(d.find("T.gemm needs a whole number of warps, but the kernel has 48 threads"), std::string::npos) << d;
}

TEST(LowerSimRandom, RandWithoutInitIsAnError) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, "import tilelang.language as T\n"
                     "@T.prim_func\n"
                     "def k(A: T.Tensor((32,), \"uint32\")):\n"
                     "    with T.Kernel(1, threads=32) as bx:\n"
                     "        A[T.get_thread_binding()] = T.rng_rand()\n");
    EXPECT_NE(r.diags().find("t.tile:5:37: error: T.rng_rand draws from the thread's generator, which T.rng_init starts: "
                             "call it first in this kernel"),
              std::string::npos)
        << r.diags();
    tilec::lowertest::LowerRun g;
    sim::lowerFor(g, "import tilelang.language as T\n"
                     "@T.prim_func\n"
                     "def k(A: T.Tensor((32,), \"uint32\")):\n"
                     "    with T.Kernel(1, threads=32) as bx:\n"
                     "        T.rng_init(1, generator=\"curandStateXORWOW_t\")\n");
    EXPECT_NE(g.diags().find("error: T.rng_init: tilec implements the generator curandStatePhilox4_32_10_t"), std::string::npos)
        << g.diags();
}

} // namespace
