/// \file
/// TileLang's intrinsics-level GEMM (tilelang.cuda.intrinsics' TensorCoreIntrinEmitter,
/// src/eval/TileLangMmaEmitter.cpp) lowered for sm_80 and run on the CPU simulator, whose tilec.mma_sync
/// assembles each warp's A, B and C from the lanes' registers in the PTX fragment order: whole GEMMs
/// (float16, bfloat16, int8, float32 through tf32; A and B stored either way; n8 and n16 warp tiles) checked
/// against a reference computed here. A lane's registers holding anything but mma.sync's fragment, or the
/// accumulators read back from the wrong lane, give a wrong C. The fragments are loaded with ldmatrix where
/// TileLang loads them so (the simulator's tilec.ldmatrix hands each lane the rows other lanes address).
/// BitBLAS's emitter (bitblas.tl), whose methods take the thread index, the same way.
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
    /// BitBLAS's flavour: the thread index handed to the methods, "tx" (T.thread_binding's) or an expression
    /// of it whose warps take other warp tiles (lanes unchanged)
    const char *threads = "tx";
    /// the k loop: T.serial (0) or T.Pipelined with this many stages, whose T.Parallel tile fills become
    /// cp.async transfers into a ring of stages (copyOfNest), the k-steps' loop unrolled
    int stages = 0;
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
                    "            for ko in " +
                    (c.stages ? "T.Pipelined(K // bk, num_stages=" + std::to_string(c.stages) + ")" : std::string("T.serial(K // bk)")) +
                    ":\n"
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

/// Runs the GEMM of `src` (Config's shapes and types) for `arch` against a reference computed here; returns
/// its tilec.ldmatrix calls (and its cp.async tile transfers in `transfers`).
int runGemmOf(const Config &c, const std::string &src, const char *arch, int *transfers = nullptr) {
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, src, arch);
    EXPECT_TRUE(r.lowered) << r.diags();
    if (!r.lowered)
        return -1;
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
        if (transfers) *transfers += sim::callCounts(*k)[tilec::passes::lib::Fn::CopyG2S];
    }
    EXPECT_GT(calls, 0) << "the GEMM ran without tilec.mma_sync";
    return ldmatrix;
}

void runGemm(const Config &c) {
    const int ldmatrix = runGemmOf(c, source(c), "sm_80");
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

// The example's k loop as it is written: T.Pipelined(num_stages=2) around T.Parallel fills of the shared tiles.
// The fills are tile copies (copyOfNest): cp.async transfers into two stages, prologue and steady state, the
// ldmatrix rows read from the stage being computed on (before: element copies, synchronous, one buffer).
TEST(LowerSimMmaEmitter, PipelinedParallelFills) {
    for (bool aT : {false, true}) {
        Config c{"float16", "float32", aT, true, 2, 2, 32, 32, 32, 64, 64, 128};
        c.stages = 2;
        int transfers = 0;
        runGemmOf(c, source(c), "sm_80", &transfers);
        EXPECT_GT(transfers, 0) << "the T.Parallel fills stayed element copies";
    }
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

/// BitBLAS's flavour (bitblas.tl's emitter, whose methods take the thread index) in the program shape of
/// TileLang's BitNet benchmark (examples/bitnet-1.58b/kernel_benchmark/tl_int8xint8.py: `from bitblas import
/// tvm`, tvm.tl.language, T.thread_binding as the thread index, BitBLAS's get_swizzle_layout on the shared
/// tiles, stmatrix into a 4-D shared C; with `direct`, into block (by, bx) of the global C), lowered for
/// sm_90a.
std::string bitblasSource(const Config &c) {
    auto b = [](bool v) { return std::string(v ? "True" : "False"); };
    auto n = [](int v) { return std::to_string(v); };
    const std::string in = c.in, acc = c.acc;
    std::string s =
        "from bitblas import tvm as tvm\n"
        "from tvm import DataType\n"
        "import tvm.tl.language as T\n"
        "from bitblas.tl.utils import get_swizzle_layout\n"
        "from bitblas.tl.mma_macro_generator import TensorCoreIntrinEmitter\n"
        "def swizzled(buf):\n"
        "    rows = buf.shape[-1]\n"
        "    if rows * DataType(buf.dtype).bits % 512:\n"
        "        return T.Layout(buf.shape, lambda *i: i)\n"
        "    return T.Layout(buf.shape, lambda i, j: list(get_swizzle_layout(i, j, rows, buf.dtype)))\n"
        "def make(M, N, K, a_t, b_t):\n"
        "    e = TensorCoreIntrinEmitter(a_dtype='" +
        in + "', b_dtype='" + in + "', accum_dtype='" + acc +
        "', a_transposed=a_t, b_transposed=b_t, block_row_warps=" + n(c.rowWarps) +
        ", block_col_warps=" + n(c.colWarps) + ", warp_row_tiles=" + n(c.rowTiles) +
        ", warp_col_tiles=" + n(c.colTiles) + ", chunk=" + n(c.chunk) +
        ")\n"
        "    bm = e.block_row_warps * e.warp_row_tiles\n"
        "    bn = e.block_col_warps * e.warp_col_tiles\n"
        "    bk = e.chunk\n"
        "    As_shape = (bk, bm) if a_t else (bm, bk)\n"
        "    Bs_shape = (bn, bk) if b_t else (bk, bn)\n"
        "    @T.prim_func\n"
        "    def main(A: T.Buffer((K, M) if a_t else (M, K), '" +
        in + "'), B: T.Buffer((N, K) if b_t else (K, N), '" + in + "'), C: T.Buffer((M, N), '" + acc +
        "')):\n"
        "        with T.Kernel(N // bn, M // bm, threads=e.threads) as (bx, by):\n"
        "            As = T.alloc_shared(As_shape, '" +
        in +
        "', scope='shared.dyn')\n"
        "            Bs = T.alloc_shared(Bs_shape, '" +
        in +
        "', scope='shared.dyn')\n"
        "            Cs = T.alloc_shared((bm // 16, bn // 16, 16, 16), '" +
        acc +
        "', scope='shared.dyn')\n"
        "            Al = T.alloc_local((e.warp_rows * e.local_size_a), '" +
        in +
        "')\n"
        "            Bl = T.alloc_local((e.warp_cols * e.local_size_b), '" +
        in +
        "')\n"
        "            Cl = T.alloc_local((e.warp_rows * e.warp_cols * e.local_size_out), '" +
        acc +
        "')\n"
        "            tx = T.thread_binding(0, e.threads, 'threadIdx.x')\n"
        "            T.annotate_layout({As: swizzled(As), Bs: swizzled(Bs)})\n"
        "            T.clear(Cl)\n"
        "            for ko in T.Pipelined(K // bk, num_stages=2):\n"
        "                for i, k in T.Parallel(As_shape[0], As_shape[1]):\n"
        "                    As[i, k] = A[(ko * bk if a_t else by * bm) + i, (by * bm if a_t else ko * bk) + "
        "k]\n"
        "                for j, k in T.Parallel(Bs_shape[0], Bs_shape[1]):\n"
        "                    Bs[j, k] = B[(bx * bn if b_t else ko * bk) + j, (ko * bk if b_t else bx * bn) + "
        "k]\n"
        "                for ki in T.serial(bk // e.micro_size_k):\n"
        "                    e.ldmatrix_a(Al, As, ki, thread_bindings=" +
        c.threads +
        ")\n"
        "                    e.ldmatrix_b(Bl, Bs, ki, " +
        c.threads +
        ")\n"
        "                    e.mma(Al, Bl, Cl)\n";
    if (c.direct)
        s += "            e.stmatrix(Cl, C, " + std::string(c.threads) + ", by, bx)\n";
    else
        s += "            e.stmatrix(Cl, Cs, thread_bindings=" + std::string(c.threads) +
             ")\n"
             "            for i, j in T.Parallel(bm, bn):\n"
             "                C[by * bm + i, bx * bn + j] = Cs[i // 16, j // 16, i % 16, j % 16]\n";
    s += "    return main\n"
         "k = make(" +
         n(c.M) + ", " + n(c.N) + ", " + n(c.K) + ", " + b(c.aT) + ", " + b(c.bT) + ")\n";
    return s;
}

// The benchmark's int8 configuration in small: A (M, K), B (N, K), k32 steps; T.thread_binding's index is the
// kernel's own, so the fragments are read by ldmatrix as on BitBLAS.
TEST(LowerSimMmaEmitter, BitblasInt8) {
    const Config c{"int8", "int32", false, true, 2, 2, 32, 32, 64, 128, 128, 128};
    EXPECT_GT(runGemmOf(c, bitblasSource(c), "sm_90a"), 0);
}

// Its float16 configuration (float16 accumulators, chunk 32), A stored (K, M) and B (K, N): ldmatrix.trans.
TEST(LowerSimMmaEmitter, BitblasFloat16StoredByK) {
    const Config c{"float16", "float16", true, false, 2, 2, 32, 32, 32, 128, 128, 64};
    EXPECT_GT(runGemmOf(c, bitblasSource(c), "sm_90a"), 0);
}

// A thread index other than the kernel's (the warps rotated over the warp tiles): each thread's fragments are
// those of the warp tile its index names, read element by element, stored from the same registers; stmatrix
// into block (by, bx) of the global C.
TEST(LowerSimMmaEmitter, BitblasOtherThreadIndexIntoGlobal) {
    Config c{"float16", "float32", false, true, 2, 2, 16, 32, 16, 64, 128, 32};
    c.threads = "(tx + 32) % e.threads";
    c.direct = true;
    EXPECT_EQ(runGemmOf(c, bitblasSource(c), "sm_90a"), 0);
}

} // namespace
