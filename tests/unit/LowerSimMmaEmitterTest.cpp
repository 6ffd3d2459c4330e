/// \file
/// TileLang's intrinsics-level GEMM (tilelang.cuda.intrinsics' TensorCoreIntrinEmitter,
/// src/eval/TileLangMmaEmitter.cpp) lowered for sm_80 and run on the CPU simulator, whose tilec.mma_sync
/// assembles each warp's A, B and C from the lanes' registers in the PTX fragment order: whole GEMMs
/// (float16, bfloat16, int8, float32 through tf32; A and B stored either way; n8 and n16 warp tiles) checked
/// against a reference computed here. A lane's registers holding anything but mma.sync's fragment, or the
/// accumulators read back from the wrong lane, give a wrong C. The fragments are loaded with ldmatrix where TileLang
/// loads them so (the simulator's tilec.ldmatrix hands each lane the rows other lanes address).
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

struct Config {
    const char *in, *acc;
    bool aT, bT;
    int rowWarps, colWarps, rowTiles, colTiles, chunk;
    int M, N, K;
    bool direct = false; ///< mma_atom per tile and stmatrix straight into block (by, bx) of the global C
};

/// The example's kernel shape (gemm/example_gemm_intrinsics.py), generalized: shared tiles of A and B per
/// k-block, the emitter's ldmatrix / mma per k-step, stmatrix into a 4-D shared C, then C row by row.
std::string source(const Config &c) {
    auto b = [](bool v) { return v ? "True" : "False"; };
    std::string s = "import tilelang.language as T\n"
                    "from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter\n"
                    "def make(M, N, K, a_t, b_t):\n"
                    "    e = TensorCoreIntrinEmitter(a_dtype='" +
                    std::string(c.in) + "', b_dtype='" + c.in + "', accum_dtype='" + c.acc +
                    "', a_transposed=a_t, b_transposed=b_t, block_row_warps=" + std::to_string(c.rowWarps) +
                    ", block_col_warps=" + std::to_string(c.colWarps) +
                    ", warp_row_tiles=" + std::to_string(c.rowTiles) +
                    ", warp_col_tiles=" + std::to_string(c.colTiles) + ", chunk=" + std::to_string(c.chunk) +
                    ")\n"
                    "    bm = e.block_row_warps * e.warp_row_tiles\n"
                    "    bn = e.block_col_warps * e.warp_col_tiles\n"
                    "    bk = e.chunk\n"
                    "    A_shape = (K, M) if a_t else (M, K)\n"
                    "    B_shape = (N, K) if b_t else (K, N)\n"
                    "    As_shape = (bk, bm) if a_t else (bm, bk)\n"
                    "    Bs_shape = (bn, bk) if b_t else (bk, bn)\n"
                    "    @T.prim_func\n"
                    "    def main(A: T.Tensor(A_shape, '" +
                    c.in + "'), B: T.Tensor(B_shape, '" + c.in + "'), C: T.Tensor((M, N), '" + c.acc +
                    "')):\n"
                    "        with T.Kernel(N // bn, M // bm, threads=e.threads) as (bx, by):\n"
                    "            As = T.alloc_shared(As_shape, '" +
                    c.in +
                    "')\n"
                    "            Bs = T.alloc_shared(Bs_shape, '" +
                    c.in +
                    "')\n"
                    "            Cs = T.alloc_shared((bm // e.micro_size_x, bn // e.micro_size_y, "
                    "e.micro_size_x, e.micro_size_y), '" +
                    c.acc +
                    "')\n"
                    "            Al = T.alloc_local((e.warp_rows * e.local_size_a), '" +
                    c.in +
                    "')\n"
                    "            Bl = T.alloc_local((e.warp_cols * e.local_size_b), '" +
                    c.in +
                    "')\n"
                    "            Cl = T.alloc_local((e.warp_rows * e.warp_cols * e.local_size_out), '" +
                    c.acc +
                    "')\n"
                    "            T.clear(Cl)\n"
                    "            for ko in T.serial(K // bk):\n"
                    "                for i, k in T.Parallel(As_shape[0], As_shape[1]):\n"
                    "                    As[i, k] = A[(ko * bk if a_t else by * bm) + i, (by * bm if a_t "
                    "else ko * bk) + k]\n"
                    "                for j, k in T.Parallel(Bs_shape[0], Bs_shape[1]):\n"
                    "                    Bs[j, k] = B[(bx * bn if b_t else ko * bk) + j, (ko * bk if b_t "
                    "else bx * bn) + k]\n"
                    "                for ki in T.serial(bk // e.micro_size_k):\n"
                    "                    e.ldmatrix_a(Al, As, ki)\n"
                    "                    e.ldmatrix_b(Bl, Bs, ki)\n" +
                    std::string(c.direct ? "                    for i in T.serial(e.mma_num_inst_m):\n"
                                           "                        for j in T.serial(e.mma_num_inst_n):\n"
                                           "                            e.mma_atom(Al, Bl, Cl, i, j)\n"
                                           "            e.stmatrix(Cl, C, by, bx)\n"
                                         : "                    e.mma(Al, Bl, Cl)\n"
                                           "            e.stmatrix(Cl, Cs)\n"
                                           "            for i, j in T.Parallel(bm, bn):\n"
                                           "                C[by * bm + i, bx * bn + j] = Cs[i // "
                                           "e.micro_size_x, j // e.micro_size_y, "
                                           "i % e.micro_size_x, j % e.micro_size_y]\n") +
                    "    return main\n";
    s += "k = make(" + std::to_string(c.M) + ", " + std::to_string(c.N) + ", " + std::to_string(c.K) + ", " +
         b(c.aT) + ", " + b(c.bT) + ")\n";
    return s;
}

void runGemm(const Config &c) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, source(c));
    ASSERT_TRUE(r.lowered) << r.diags();
    const bool isInt = std::string(c.in) == "int8";
    // small integers: every product and sum is exact in each type (and tf32 keeps them)
    std::vector<double> a((size_t)c.M * c.K), b((size_t)c.K * c.N), out((size_t)c.M * c.N, std::nan("")),
        want(out.size(), 0);
    for (size_t i = 0; i < a.size(); ++i)
        a[i] = (double)((int)(i * 7 % 13) - 6) * (isInt ? 9 : 1);
    for (size_t i = 0; i < b.size(); ++i)
        b[i] = (double)((int)(i * 5 % 11) - 5) * (isInt ? 11 : 1);
    auto A = [&](int i, int k) { return a[c.aT ? (size_t)k * c.M + i : (size_t)i * c.K + k]; };
    auto B = [&](int k, int j) { return b[c.bT ? (size_t)j * c.K + k : (size_t)k * c.N + j]; };
    for (int i = 0; i < c.M; ++i)
        for (int j = 0; j < c.N; ++j)
            for (int k = 0; k < c.K; ++k)
                want[(size_t)i * c.N + j] += A(i, k) * B(k, j);
    sim::runAll(r, {{"A", &a}, {"B", &b}, {"C", &out}});
    sim::expectNear(out, want, 0, "C");
    int calls = 0, ldmatrix = 0;
    for (auto &k : r.lowered->kernels) {
        calls += sim::callCounts(*k)[tilec::passes::lib::Fn::MmaSync];
        ldmatrix += sim::callCounts(*k)[tilec::passes::lib::Fn::LdMatrix];
    }
    EXPECT_GT(calls, 0) << "the GEMM ran without tilec.mma_sync";
    // TileLang's ldmatrix path: 16-bit operands either way, others stored with K innermost (A (M, K), B (N, K));
    // ldmatrix.trans cannot move 8- or 32-bit elements, so those read element by element
    const bool wide = std::string(c.in) == "float16" || std::string(c.in) == "bfloat16";
    EXPECT_EQ(ldmatrix > 0, wide || !c.aT || c.bT) << ldmatrix << " tilec.ldmatrix calls";
}

// The example's own configuration in small: float16 -> float32, B stored (N, K), 2 x 2 warps of 32 x 32, n16
// tiles.
TEST(LowerSimMmaEmitter, Float16BTransposed) {
    runGemm({"float16", "float32", false, true, 2, 2, 32, 32, 32, 64, 64, 64});
}

// A stored (K, M) and B (K, N): the other fragment addressing; float16 accumulators; n8 tiles (warp_col_tiles
// 24).
TEST(LowerSimMmaEmitter, Float16BothStoredByK) {
    runGemm({"float16", "float16", true, false, 2, 1, 16, 24, 16, 32, 24, 48});
}

TEST(LowerSimMmaEmitter, BFloat16) {
    runGemm({"bfloat16", "float32", false, true, 1, 2, 32, 16, 16, 32, 32, 32});
}

// int8: k32 steps, four elements to a register; B stored (K, N) (TileLang's plain-load path).
TEST(LowerSimMmaEmitter, Int8) {
    runGemm({"int8", "int32", false, true, 2, 2, 16, 16, 64, 32, 32, 128});
}
TEST(LowerSimMmaEmitter, Int8BStoredByK) {
    runGemm({"int8", "int32", false, false, 1, 1, 16, 16, 32, 16, 16, 64});
}
// Both stored with K along the rows: no ldmatrix (no .trans of bytes), every fragment element read on its own.
TEST(LowerSimMmaEmitter, Int8BothStoredByK) {
    runGemm({"int8", "int32", true, false, 1, 1, 16, 16, 32, 16, 16, 64});
}

// mma_atom tile by tile (a loop variable's offsets) and stmatrix into the block of the global C (pid_m,
// pid_n).
TEST(LowerSimMmaEmitter, AtomsIntoGlobal) {
    runGemm({"float16", "float32", false, true, 2, 2, 32, 16, 32, 128, 64, 64, true});
}

// float32 operands go through tf32 (m16n8k8): one element to a register.
TEST(LowerSimMmaEmitter, Float32) {
    runGemm({"float32", "float32", false, true, 1, 1, 16, 16, 8, 16, 16, 16});
}

} // namespace
