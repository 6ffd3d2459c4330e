/// \file
/// Forms of T.Parallel that TileLang programs write and that tilec rejected before issue 24's lang24r work,
/// lowered and run on the CPU simulator against float64 references (a race or a simulator error fails):
/// - a nest over (h, c) that reaches fragments only by per-row values of a T.gemm result at its first variable
///   (`S_shared[h, k] = exp2(S_shared[h, k] - scores_max[h])`, GQA varlen decoding's logits): it runs over the
///   threads' rows of the accumulator, the other variables whole in each, one copy of each row storing;
/// - a nest that runs whole in every thread and updates shared memory in place (`pp[i] += part[i]`, KDA's
///   chunk_bwd_dqkwg): the element's one writer reads what it writes;
/// - a shared store indexed through a thread's scalar set earlier in the iteration (`j = offset + i;
///   sh[j] = ...` with `offset` an alloc_var, DeepSeek's indexer top-k);
/// - a bitonic sort's compare-and-swap steps (`if i < i ^ m: swap`), iterations paired off;
/// - a fragment too big to hold whole filled in boxes by several nests (`f[i, j + 4]`, TileKernels' mHC
///   split-mixes backward), through a shared copy;
/// - a small reducer updated at an index computed from the nest's variables (`r[T.min(2, j // 4)] += e`);
/// - a fragment stored through its flat view beside one of another shape, then reduced;
/// - T.gemm with operand B a fragment.
#include "LowerSimUtil.h"

#include <algorithm>
#include <cmath>
#include <functional>

using namespace tilec;

namespace {

std::string rowsSource(int threads) {
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def k(Q: T.Tensor((64, 64), \"float16\"), K: T.Tensor((64, 64), \"float16\"), S: T.Tensor((64, 12), \"float32\")):\n"
           "    with T.Kernel(1, threads=" + std::to_string(threads) + ") as bx:\n"
           "        q = T.alloc_shared((64, 64), \"float16\")\n"
           "        kk = T.alloc_shared((64, 64), \"float16\")\n"
           "        s_sh = T.alloc_shared((64, 12), \"float32\")\n"
           "        acc = T.alloc_fragment((64, 64), \"float32\")\n"
           "        mx = T.alloc_fragment((64,), \"float32\")\n"
           "        T.copy(Q, q)\n"
           "        T.copy(K, kk)\n"
           "        T.copy(S, s_sh)\n"
           "        T.clear(acc)\n"
           "        T.gemm(q, kk, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)\n"
           "        T.reduce_max(acc, mx, dim=1)\n"
           "        for h, c in T.Parallel(64, 12):\n"
           "            s_sh[h, c] = s_sh[h, c] * 2.0 - mx[h]\n"
           "        T.copy(s_sh, S)\n";
}

} // namespace

// The rows nest on the warp-role path (wgmma's rows), on sm_80's mma.sync, and with 256 threads (8 warps over
// 64 rows: FullRow splits 4 x 2, so two warp columns hold each row and one of them stores).
TEST(SimNestForms, PerRowValuesOfAGemmInANestOfTheirRows) {
    for (auto [arch, threads] : {std::pair{"sm_90a", 128}, std::pair{"sm_80", 128}, std::pair{"sm_80", 256}}) {
        SCOPED_TRACE(std::string(arch) + " " + std::to_string(threads));
        auto q = simtest::quarters(64 * 64, 1), kk = simtest::quarters(64 * 64, 2), s = simtest::quarters(64 * 12, 3);
        std::vector<double> want(64 * 12);
        for (int h = 0; h < 64; ++h) {
            double mx = -INFINITY;
            for (int n = 0; n < 64; ++n) {
                double dot = 0;
                for (int d = 0; d < 64; ++d) dot += q[h * 64 + d] * kk[n * 64 + d];
                mx = std::max(mx, dot);
            }
            for (int c = 0; c < 12; ++c) want[h * 12 + c] = s[h * 12 + c] * 2 - mx;
        }
        lowertest::LowerRun r;
        simtest::lowerFor(r, rowsSource(threads), arch);
        simtest::runAll(r, {{"Q", &q}, {"K", &kk}, {"S", &s}});
        simtest::expectNear(s, want, 0, "S");
    }
}

// A nest run whole in every thread (it reads a reduction's result, held whole) adds to a shared vector in place.
TEST(SimNestForms, InPlaceUpdateOfSharedMemoryInAWholeNest) {
    const std::string src = "import tilelang.language as T\n"
                            "@T.prim_func\n"
                            "def k(X: T.Tensor((64, 32), \"float32\"), O: T.Tensor((32,), \"float32\")):\n"
                            "    with T.Kernel(1, threads=128) as bx:\n"
                            "        xs = T.alloc_shared((64, 32), \"float32\")\n"
                            "        pp = T.alloc_shared((32,), \"float32\")\n"
                            "        part = T.alloc_fragment((32,), \"float32\")\n"
                            "        T.copy(X, xs)\n"
                            "        T.reduce_sum(xs, pp, dim=0, clear=True)\n"
                            "        T.reduce_max(xs, part, dim=0, clear=True)\n"
                            "        for i in T.Parallel(32):\n"
                            "            pp[i] += part[i]\n"
                            "        T.copy(pp, O)\n";
    auto x = simtest::quarters(64 * 32, 4);
    std::vector<double> o(32, NAN), want(32);
    for (int j = 0; j < 32; ++j) {
        double sum = 0, mx = -INFINITY;
        for (int i = 0; i < 64; ++i) sum += x[i * 32 + j], mx = std::max(mx, x[i * 32 + j]);
        want[j] = sum + mx;
    }
    lowertest::LowerRun r;
    simtest::lowerFor(r, src, "sm_80");
    simtest::runAll(r, {{"X", &x}, {"O", &o}});
    simtest::expectNear(o, want, 0, "O");
}

// `j = offset + i` (offset an alloc_var set under a run-time `if`) names each iteration's own element.
TEST(SimNestForms, StoreThroughAScalarOfTheIteration) {
    const std::string src = "import tilelang.language as T\n"
                            "@T.prim_func\n"
                            "def k(S: T.Tensor((64,), \"float32\"), O: T.Tensor((128,), \"float32\"), n: T.int32):\n"
                            "    with T.Kernel(1, threads=128) as bx:\n"
                            "        sh = T.alloc_shared((128,), \"float32\")\n"
                            "        T.clear(sh)\n"
                            "        offset = T.alloc_var(\"int32\")\n"
                            "        if n >= 64:\n"
                            "            offset = 64\n"
                            "        else:\n"
                            "            offset = 0\n"
                            "        for i in T.Parallel(64):\n"
                            "            j = offset + i\n"
                            "            sh[j] = S[i] * 2.0\n"
                            "        T.copy(sh, O)\n";
    for (int n : {10, 100}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        auto s = simtest::quarters(64, 5);
        std::vector<double> o(128, NAN), want(128, 0);
        for (int i = 0; i < 64; ++i) want[(n >= 64 ? 64 : 0) + i] = s[i] * 2;
        lowertest::LowerRun r;
        simtest::lowerFor(r, src, "sm_80");
        simtest::runAll(r, {{"S", &s}, {"O", &o}}, {{"n", (double)n}});
        simtest::expectNear(o, want, 0, "O");
    }
}

// A bitonic sort of 128 values by compare-and-swap steps in a T.Parallel: sorted, no race.
TEST(SimNestForms, BitonicSortPairsTheIterationsOff) {
    const std::string src = "import tilelang.language as T\n"
                            "@T.prim_func\n"
                            "def k(V: T.Tensor((128,), \"float32\"), O: T.Tensor((128,), \"float32\")):\n"
                            "    with T.Kernel(1, threads=64) as bx:\n"
                            "        v = T.alloc_shared((128,), \"float32\")\n"
                            "        T.copy(V, v)\n"
                            "        T.sync_threads()\n"
                            "        for i1 in T.serial(7):\n"
                            "            for i2 in T.serial(i1 + 1):\n"
                            "                for i in T.Parallel(128):\n"
                            "                    ascending = (i & (1 << (i1 + 1))) != 0\n"
                            "                    j = i ^ (1 << (i1 - i2))\n"
                            "                    if i < j and ((ascending and v[i] > v[j]) or (not ascending and v[i] < v[j])):\n"
                            "                        val = v[i]\n"
                            "                        v[i] = v[j]\n"
                            "                        v[j] = val\n"
                            "                T.sync_threads()\n"
                            "        T.copy(v, O)\n";
    auto v = simtest::randomData(128, 6);
    std::vector<double> o(128, NAN), want = v;
    std::sort(want.begin(), want.end(), std::greater<double>());
    lowertest::LowerRun r;
    simtest::lowerFor(r, src, "sm_80");
    simtest::runAll(r, {{"V", &v}, {"O", &o}});
    simtest::expectNear(o, want, 0, "O");
}

// A (32, 24) fragment (768 elements: too many to hold whole) filled in three boxes by nests over (32, 4),
// (32, 4) and (32, 16), then read whole; and an (8, 24) one (192 elements) so, whose box nests also index an (8, 4)
// fragment exactly (spread over the threads: a copy in every thread would get only some of the values).
TEST(SimNestForms, FragmentFilledInBoxes) {
    for (int rows : {32, 8}) {
        SCOPED_TRACE(std::to_string(rows) + " rows");
        const std::string R = std::to_string(rows);
        const std::string src = "import tilelang.language as T\n"
                                "@T.prim_func\n"
                                "def k(A: T.Tensor((" + R + ", 4), \"float32\"), B: T.Tensor((" + R + ", 16), \"float32\"), O: T.Tensor((" + R + ", 24), \"float32\")):\n"
                                "    with T.Kernel(1, threads=128) as bx:\n"
                                "        a = T.alloc_fragment((" + R + ", 4), \"float32\")\n"
                                "        b = T.alloc_fragment((" + R + ", 16), \"float32\")\n"
                                "        f = T.alloc_fragment((" + R + ", 24), \"float32\")\n"
                                "        T.copy(A, a)\n"
                                "        T.copy(B, b)\n"
                                "        for i, j in T.Parallel(" + R + ", 4):\n"
                                "            f[i, j] = a[i, j] * 2.0\n"
                                "        for i, j in T.Parallel(" + R + ", 4):\n"
                                "            f[i, j + 4] = a[i, j] + 1.0\n"
                                "        for i, j in T.Parallel(" + R + ", 16):\n"
                                "            f[i, j + 8] = b[i, j]\n"
                                "        for i, j in T.Parallel(" + R + ", 24):\n"
                                "            f[i, j] = f[i, j] - 0.5\n"
                                "        T.copy(f, O)\n";
        auto a = simtest::quarters(rows * 4, 7), b = simtest::quarters(rows * 16, 8);
        std::vector<double> o(rows * 24, NAN), want(rows * 24);
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < 24; ++j)
                want[i * 24 + j] = (j < 4 ? a[i * 4 + j] * 2 : j < 8 ? a[i * 4 + j - 4] + 1 : b[i * 16 + j - 8]) - 0.5;
        lowertest::LowerRun r;
        simtest::lowerFor(r, src, "sm_80");
        simtest::runAll(r, {{"A", &a}, {"B", &b}, {"O", &o}});
        simtest::expectNear(o, want, 0, "O");
    }
}

// A 3-element reducer summed at `min(2, j // 4)` over (32, 24) nests in two trips of a loop (accumulated in
// registers, combined at T.finalize_reducer), and a max reducer updated once, among another statement.
TEST(SimNestForms, ReducerAtAComputedIndex) {
    const std::string src = "import tilelang.language as T\n"
                            "@T.prim_func\n"
                            "def k(X: T.Tensor((64, 24), \"float32\"), O: T.Tensor((3,), \"float32\"), M: T.Tensor((2,), \"float32\"), Y: T.Tensor((32, 24), \"float32\")):\n"
                            "    with T.Kernel(1, threads=128) as bx:\n"
                            "        x = T.alloc_fragment((32, 24), \"float32\")\n"
                            "        r = T.alloc_reducer(3, \"float32\", replication=\"all\")\n"
                            "        m = T.alloc_reducer(2, \"float32\", op=\"max\", replication=\"all\")\n"
                            "        T.clear(r)\n"
                            "        T.fill(m, -T.infinity(\"float32\"))\n"
                            "        for t in T.serial(2):\n"
                            "            T.copy(X[t * 32, 0], x)\n"
                            "            for i, j in T.Parallel(32, 24):\n"
                            "                r[T.min(2, j // 4)] += x[i, j]\n"
                            "        T.finalize_reducer(r)\n"
                            "        for i, j in T.Parallel(32, 24):\n"
                            "            m[j % 2] = T.max(m[j % 2], x[i, j])\n"
                            "            Y[i, j] = x[i, j] * 2.0\n"
                            "        T.finalize_reducer(m)\n"
                            "        T.copy(r, O)\n"
                            "        T.copy(m, M)\n";
    auto x = simtest::quarters(64 * 24, 9);
    std::vector<double> o(3, NAN), m(2, NAN), y(32 * 24, NAN), wantO(3, 0), wantM(2, -INFINITY), wantY(32 * 24);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 24; ++j) wantO[std::min(2, j / 4)] += x[i * 24 + j];
    for (int i = 0; i < 32; ++i)
        for (int j = 0; j < 24; ++j) {
            wantM[j % 2] = std::max(wantM[j % 2], x[(32 + i) * 24 + j]);
            wantY[i * 24 + j] = x[(32 + i) * 24 + j] * 2;
        }
    lowertest::LowerRun r;
    simtest::lowerFor(r, src, "sm_80");
    simtest::runAll(r, {{"X", &x}, {"O", &o}, {"M", &m}, {"Y", &y}});
    simtest::expectNear(o, wantO, 0, "O");
    simtest::expectNear(m, wantM, 0, "M");
    simtest::expectNear(y, wantY, 0, "Y");
}

// A (1, 1, 512) fragment stored through its flat view in a nest over (128, 4) that also stores a (128, 4)
// fragment allocated before it, then reduced along its last dimension (TileKernels' per_block_cast_lossless
// reshapes its scale factors so): each fragment keeps the layout over its own shape (an internal error before).
TEST(SimNestForms, ReductionOfAFragmentStoredThroughItsFlatView) {
    const std::string src = "import tilelang.language as T\n"
                            "@T.prim_func\n"
                            "def k(X: T.Tensor((128, 4), \"float32\"), O: T.Tensor((1, 1), \"float32\"), Y: T.Tensor((128, 4), \"float32\")):\n"
                            "    with T.Kernel(1, threads=256) as bx:\n"
                            "        g = T.alloc_fragment((128, 4), \"float32\")\n"
                            "        f = T.alloc_fragment((1, 1, 512), \"float32\")\n"
                            "        o = T.alloc_fragment((1, 1), \"float32\")\n"
                            "        for i, j in T.Parallel(128, 4):\n"
                            "            g[i, j] = X[i, j] * 2.0\n"
                            "            f[i // 128, j // 4, (i % 128) * 4 + j % 4] = g[i, j]\n"
                            "        T.reduce_max(f, o, dim=2)\n"
                            "        T.copy(o, O)\n"
                            "        T.copy(g, Y)\n";
    auto x = simtest::quarters(512, 10);
    std::vector<double> o(1, NAN), y(512, NAN), wantY(512);
    double mx = -INFINITY;
    for (int i = 0; i < 512; ++i) wantY[i] = x[i] * 2, mx = std::max(mx, x[i] * 2);
    lowertest::LowerRun r;
    simtest::lowerFor(r, src, "sm_80");
    simtest::runAll(r, {{"X", &x}, {"O", &o}, {"Y", &y}});
    simtest::expectNear(o, {mx}, 0, "O");
    simtest::expectNear(y, wantY, 0, "Y");
}

// T.gemm with operand B a fragment computed in a T.Parallel (KDA chunk_bwd_intra's kg_fragment, TileLang's gemm_sr),
// plain and transposed, on sm_80's mma.sync and sm_90a: B is read through a shared copy made before the product.
TEST(SimNestForms, GemmOperandBFromAFragment) {
    for (bool transB : {false, true})
        for (const char *arch : {"sm_80", "sm_90a"}) {
            SCOPED_TRACE(std::string(arch) + (transB ? " transposed" : ""));
            const std::string bShape = transB ? "(64, 32)" : "(32, 64)";
            const std::string src = "import tilelang.language as T\n"
                                    "@T.prim_func\n"
                                    "def k(A: T.Tensor((64, 32), \"float16\"), B: T.Tensor(" + bShape + ", \"float16\"), C: T.Tensor((64, 64), \"float32\")):\n"
                                    "    with T.Kernel(1, threads=128) as bx:\n"
                                    "        a = T.alloc_shared((64, 32), \"float16\")\n"
                                    "        bf = T.alloc_fragment(" + bShape + ", \"float16\")\n"
                                    "        c = T.alloc_fragment((64, 64), \"float32\")\n"
                                    "        T.copy(A, a)\n"
                                    "        for i, j in T.Parallel" + bShape + ":\n"
                                    "            bf[i, j] = B[i, j] * 2.0\n"
                                    "        T.gemm(a, bf, c, transpose_B=" + (transB ? "True" : "False") + ", clear_accum=True)\n"
                                    "        T.copy(c, C)\n";
            auto a = simtest::quarters(64 * 32, 11), b = simtest::quarters(32 * 64, 12);
            std::vector<double> c(64 * 64, NAN), want(64 * 64, 0);
            for (int i = 0; i < 64; ++i)
                for (int j = 0; j < 64; ++j)
                    for (int k = 0; k < 32; ++k) want[i * 64 + j] += a[i * 32 + k] * 2 * b[transB ? j * 32 + k : k * 64 + j];
            lowertest::LowerRun r;
            simtest::lowerFor(r, src, arch);
            simtest::runAll(r, {{"A", &a}, {"B", &b}, {"C", &c}});
            simtest::expectNear(c, want, 0, "C");
        }
}
