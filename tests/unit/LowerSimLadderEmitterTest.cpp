/// \file
/// TileLang's ladder-transform MMA emitter (TensorCoreIntrinEmitterWithLadderTransform,
/// src/eval/TileLangLadderEmitter.cpp) on the CPU simulator: GEMMs whose operands are laid out ahead of time by
/// BitBLAS's ladder transform (written out here from its definition: bitblas.ops.LadderPermutate's stages 1-3 and
/// bitblas.gpu.matmul_analysis' ldmatrix permutations), one run per transform kind of A and of B, float16 and
/// int8, against a float64 reference of the untransformed product; and TileLang's
/// examples/dequantize_gemm/example_dequant_gemm_fine_grained.py (its ladder kernel: B int4 in int8, ladder kind 3
/// plus BitBLAS's LOP3 permutation, decoded by the prelude's decode_i4u_to_f16) against A @ B^T of the
/// untransformed weights. A lane reading any element but its own fragment's gives a wrong C.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <utility>

namespace {

namespace sim = tilec::simtest;

using Coord = std::pair<int, int>;

/// BitBLAS's intra-warp permutation of a 16 x r tile (stage 2, get_propagate_map): (i, j) of the permuted tile is
/// (row, column) of the original, the ldmatrix layout of thread i * 2 + j / (r / 2).
Coord intraWarp(int i, int j, int bits, bool isA, bool trans) {
    if (bits == 16) {
        const int t = i * 2 + j / 8, l = j % 8;
        return trans ? Coord{8 * (t / 16) + t % 8, 8 * ((t % 16) / 8) + l} : Coord{t % 16, 8 * (t / 16) + l};
    }
    const int t = i * 2 + j / 16, l = j % 16;
    return isA ? Coord{t % 16, l + 16 * (t / 16)} : Coord{(t / 16) * 8 + t % 8, l + 16 * ((t % 16) / 8)};
}

/// BitBLAS's stage-3 map (get_ladder_stage3_map) of a 16 x r tile: its forward direction.
Coord stage3(int i, int j, int bits) {
    const int half = bits == 16 ? 8 : 16, t = i * 2 + j / half, l = j % half;
    const int nt = bits == 16 ? (t % 8) * 4 + l / 2 : (t % 8) * 4 + l / 4;
    const int nl = bits == 16 ? (t / 8) * 2 + l % 2 : (t / 8) * 4 + l % 4;
    const int r = 2 * half, flat = nt * half + nl;
    return {flat / r, flat % r};
}

/// LadderPermutate(transform_kind) of a (rows, cols) matrix X into (rows / 16, cols / r, 16, r) tiles: kind 1 the
/// tiles, 2 each tile's element (a, b) from the original's intraWarp(a, b), 3 from intraWarp of stage 3's inverse.
std::vector<double> ladder(const std::vector<double> &x, int rows, int cols, int kind, int bits, bool isA, bool trans) {
    const int r = bits == 16 ? 16 : 32;
    std::map<Coord, Coord> inv;
    for (int a = 0; a < 16; ++a)
        for (int b = 0; b < r; ++b)
            inv[stage3(a, b, bits)] = {a, b};
    EXPECT_EQ(inv.size(), (size_t)16 * r) << "stage 3 is not a permutation";
    std::vector<double> out(x.size());
    for (int ti = 0; ti < rows / 16; ++ti)
        for (int tj = 0; tj < cols / r; ++tj)
            for (int a = 0; a < 16; ++a)
                for (int b = 0; b < r; ++b) {
                    Coord s = {a, b};
                    if (kind == 3) s = inv.at(s);
                    if (kind >= 2) s = intraWarp(s.first, s.second, bits, isA, trans);
                    out[(((size_t)ti * (cols / r) + tj) * 16 + a) * r + b] = x[(size_t)(ti * 16 + s.first) * cols + tj * r + s.second];
                }
    return out;
}

/// A GEMM C = A B^T of one block of 2 x 2 warps (warp tiles 32 x 32) through the ladder emitter with transform kinds
/// ka (A) and kb (B); kind 0 reads (rows, K) shared tiles, the others (row tile, k tile, 16, K) ones.
std::string ladderSource(const char *in, const char *acc, int ka, int kb) {
    auto tileOf = [](const char *name, const char *rows, int kind) {
        std::string n = name;
        if (kind == 0)
            return "                for i, k in T.Parallel(" + std::string(rows) + ", bk):\n                    " + n + "s[i, k] = " + n +
                   "[i, ko * bk + k]\n";
        return "                for i, j, ii, jj in T.Parallel(" + std::string(rows) + " // 16, bk // kd, 16, kd):\n                    " + n +
               "s[i, j, ii, jj] = " + n + "[i, ko * (bk // kd) + j, ii, jj]\n";
    };
    auto shape = [](const char *rows, const char *cols, int kind, bool shared) {
        std::string r = rows, c = shared ? "bk" : cols;
        return kind == 0 ? "(" + r + ", " + c + ")" : "(" + r + " // 16, " + c + " // kd, 16, kd)";
    };
    return std::string("import tilelang.language as T\n"
                       "from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitterWithLadderTransform, TransformKind\n"
                       "def make(M, N, K):\n"
                       "    e = TensorCoreIntrinEmitterWithLadderTransform(a_dtype='") +
           in + "', b_dtype='" + in + "', accum_dtype='" + acc +
           "', a_transposed=False, b_transposed=True, block_row_warps=2, block_col_warps=2, warp_row_tiles=32, "
           "warp_col_tiles=32, chunk=" + (std::string(in) == "int8" ? "64" : "32") + ", transform_kind_a=" + std::to_string(ka) +
           ", transform_kind_b=[TransformKind.NonTransform, TransformKind.InterWarpTransform, "
           "TransformKind.IntraWarpTransform, TransformKind.LDMatrixTransform][" + std::to_string(kb) + "])\n"
           "    bm, bn, bk, kd = 64, 64, e.chunk, e.micro_size_k\n"
           "    @T.prim_func\n"
           "    def main(A: T.Tensor(" + shape("M", "K", ka, false) + ", '" + in + "'), B: T.Tensor(" + shape("N", "K", kb, false) + ", '" + in +
           "'), C: T.Tensor((M, N), '" + acc + "')):\n"
           "        with T.Kernel(1, 1, threads=128) as (bx, by):\n"
           "            As = T.alloc_shared(" + shape("bm", "bk", ka, true) + ", '" + in + "')\n"
           "            Bs = T.alloc_shared(" + shape("bn", "bk", kb, true) + ", '" + in + "')\n"
           "            Cs = T.alloc_shared((bm // 16, bn // 16, 16, 16), '" + acc + "')\n"
           "            Al = T.alloc_local((e.warp_rows * e.local_size_a), '" + in + "')\n"
           "            Bl = T.alloc_local((e.warp_cols * e.local_size_b), '" + in + "')\n"
           "            Cl = T.alloc_local((e.warp_rows * e.warp_cols * e.local_size_out), '" + acc + "')\n"
           "            T.clear(Cl)\n"
           "            for ko in T.serial(K // bk):\n" +
           tileOf("A", "bm", ka) + tileOf("B", "bn", kb) +
           "                for ki in T.serial(bk // kd):\n"
           "                    e.ldmatrix_a(Al, As, ki)\n"
           "                    e.ldmatrix_b(Bl, Bs, ki)\n"
           "                    e.mma(Al, Bl, Cl)\n"
           "            e.stmatrix(Cl, Cs)\n"
           "            for i, j in T.Parallel(bm, bn):\n"
           "                C[i, j] = Cs[i // 16, j // 16, i % 16, j % 16]\n"
           "    return main\n"
           "k = make(64, 64, " + (std::string(in) == "int8" ? "128" : "64") + ")\n";
}

void runLadder(const char *in, const char *acc, int ka, int kb) {
    SCOPED_TRACE(std::string(in) + " transform kinds " + std::to_string(ka) + ", " + std::to_string(kb));
    const bool isInt = std::string(in) == "int8";
    const int M = 64, N = 64, K = isInt ? 128 : 64, bits = isInt ? 8 : 16;
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, ladderSource(in, acc, ka, kb), "sm_80");
    ASSERT_TRUE(r.lowered) << r.diags();
    std::vector<double> a((size_t)M * K), b((size_t)N * K), out((size_t)M * N, std::nan("")), want(out.size(), 0);
    for (size_t i = 0; i < a.size(); ++i) a[i] = (double)((int)(i * 7 % 13) - 6) * (isInt ? 9 : 1);
    for (size_t i = 0; i < b.size(); ++i) b[i] = (double)((int)(i * 5 % 11) - 5) * (isInt ? 11 : 1);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int k = 0; k < K; ++k) want[(size_t)i * N + j] += a[(size_t)i * K + k] * b[(size_t)j * K + k];
    std::vector<double> la = ka ? ladder(a, M, K, ka, bits, true, false) : a, lb = kb ? ladder(b, N, K, kb, bits, false, true) : b;
    sim::runAll(r, {{"A", &la}, {"B", &lb}, {"C", &out}});
    sim::expectNear(out, want, 0, "C");
    int ldmatrix = 0;
    for (auto &k : r.lowered->kernels) ldmatrix += sim::callCounts(*k)[tilec::passes::lib::Fn::LdMatrix];
    // kinds 0-2 load by ldmatrix (as TileLang's), kind 3 by plain loads
    EXPECT_EQ(ldmatrix > 0, ka < 3 || kb < 3);
}

TEST(LowerSimLadderEmitter, Float16EveryTransformKind) {
    for (int k = 0; k < 4; ++k) runLadder("float16", "float32", k, k);
    runLadder("float16", "float16", 0, 3);
    runLadder("float16", "float32", 3, 1);
    runLadder("float16", "float32", 2, 0);
}

TEST(LowerSimLadderEmitter, Int8EveryTransformKind) {
    for (int k = 0; k < 4; ++k) runLadder("int8", "int32", k, 3 - k);
}

/// examples/dequantize_gemm/example_dequant_gemm_fine_grained.py's tl_matmul_with_ladder_weight_only_transform_
/// block_reduce_int4 (from the checkout TILELANG_SRC names), unchanged, at M = 128, N = 256, K = 64 (two blocks,
/// two k-blocks): A float16, B the int4 weights (two to an int8, low nibble first) after BitBLAS's LadderPermutate
/// (kind 3, transposed, 4 bits in int8) and LOP3Permutate (each 32-bit word's nibbles 0-7 to bits 0, 16, 4, 20, ...,
/// as its decoder reads them), C float16 = A @ B^T. Small integers: every sum is exact in float16.
TEST(LowerSimLadderEmitter, DequantFineGrainedExample) {
    std::string src = sim::tilelangExample("dequantize_gemm/example_dequant_gemm_fine_grained.py");
    if (src.empty()) GTEST_SKIP() << "set TILELANG_SRC to a TileLang git checkout (tag v0.1.13)";
    constexpr int M = 128, N = 256, K = 64;
    src += "\n\nkernel = tl_matmul_with_ladder_weight_only_transform_block_reduce_int4(128, 256, 64, T.float16, T.float16, "
           "T.float16, 3)\n";
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, src, "sm_80");
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    std::vector<double> a((size_t)M * K), nib((size_t)N * K), want((size_t)M * N, 0), out((size_t)M * N, std::nan(""));
    for (size_t i = 0; i < a.size(); ++i) a[i] = (double)((int)(i * 7 % 5) - 2);
    for (size_t i = 0; i < nib.size(); ++i) nib[i] = (double)((i * 11 + i / 64 * 3) % 16);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int k = 0; k < K; ++k) want[(size_t)i * N + j] += a[(size_t)i * K + k] * nib[(size_t)j * K + k];
    // qB (N, K / 2) bytes as the example packs them, through LadderPermutate: its maps of float16 tiles (16 x 16)
    // scaled to bytes (16 x 8): element column 2 c of the map's input, its output column halved
    std::vector<double> q((size_t)N * K / 2);
    for (size_t i = 0; i < q.size(); ++i) q[i] = nib[2 * i] + 16 * nib[2 * i + 1];
    std::map<Coord, Coord> inv;
    for (int x = 0; x < 16; ++x)
        for (int y = 0; y < 8; ++y) {
            Coord f = stage3(x, 2 * y, 16);
            inv[{f.first, f.second / 2}] = {x, y};
        }
    ASSERT_EQ(inv.size(), 128u);
    std::vector<double> lq(q.size());
    for (int ti = 0; ti < N / 16; ++ti)
        for (int tj = 0; tj < K / 16; ++tj)
            for (int x = 0; x < 16; ++x)
                for (int y = 0; y < 8; ++y) {
                    Coord s = inv.at({x, y});
                    Coord o = intraWarp(s.first, 2 * s.second, 16, false, true);
                    lq[(((size_t)ti * (K / 16) + tj) * 16 + x) * 8 + y] = q[(size_t)(ti * 16 + o.first) * (K / 2) + tj * 8 + o.second / 2];
                }
    // LOP3Permutate: each 4 bytes (little-endian word) in memory order, nibble e to bits (e % 2) * 16 + (e / 2) * 4
    std::vector<double> qb(lq.size());
    for (size_t w = 0; w < lq.size() / 4; ++w) {
        uint32_t in = 0, o = 0;
        for (int b = 0; b < 4; ++b) in |= (uint32_t)lq[4 * w + b] << (8 * b);
        for (int e = 0; e < 8; ++e) o |= ((in >> (4 * e)) & 15u) << ((e % 2) * 16 + (e / 2) * 4);
        for (int b = 0; b < 4; ++b) qb[4 * w + b] = (double)(int8_t)(uint8_t)(o >> (8 * b));
    }
    sim::Outcome o = sim::runCaught(*r.lowered->kernels[0], {{"A", &a}, {"B", &qb}, {"C", &out}});
    EXPECT_EQ(o.error, "");
    for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
    sim::expectNear(out, want, 0, "C");
}

} // namespace
