/// \file
/// The tf32 operand column order (Layout::opCols): a 32-bit operand-A fragment that no accumulator shares is held
/// as mma.sync's m16n8k8 A operand holds it (lane l: columns 4q + l % 4), so that a nest reading it by 4-column
/// groups, `part[i, j] += x[i, jj * S + j]` (mHC's pre-norm sum of squares), runs in registers in the lane that
/// holds every such column instead of through a shared copy, and gemm_rs reads B in the instruction's own k order.
/// The layout against its definition for every thread and slot, then mHC-shaped kernels on the CPU simulator
/// (rows and product columns the tiles do not divide, several group widths and strides, B stored either way)
/// against float64 sums of tf32-exact values.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace tilec;
using namespace tilec::passes;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;

namespace {

/// Every element in warpCopies() slots, the numeric element of each slot (elementOf) equal to the symbolic one
/// (mmaSlotRowCol), each column c in lane c % 4, and a tf32 k-step's four slots 4kk + r the instruction's a_r:
/// (g + 8 (r % 2), 8 kk + t + 4 (r / 2)).
/// With `wgmma` (wgmma's rows), slot 4 (mi * KT + kk) + r is register a_r of tf32 wgmma RS's m64k8 step kk for
/// m-tile mi (KT = n / 8): row wg * (m / warpgroups) + mi * 64 + (w % 4) * 16 + g + 8 (r % 2),
/// column 8 kk + t + 4 (r / 2).
void checkOperandOrder(int64_t m, int64_t n, int warpsM, int threads, bool wgmma = false) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + " over " + std::to_string(warpsM) + " warps, " +
                 std::to_string(threads) + " threads" + (wgmma ? ", wgmma rows" : ""));
    Layout l = Layout::mmaOperand({m, n}, threads, warpsM);
    l.wgmma = wgmma; // as inferLayouts gives the A of a tf32 wgmma RS (MmaLayouts.cpp, operandOrder)
    ASSERT_EQ(l.slotsPerThread() * threads, m * n * l.warpCopies());
    std::vector<int> seen(m * n, 0);
    auto t = ir::makeVar("t", DType::Int32);
    for (int tt = 0; tt < threads; ++tt) {
        const int64_t lane = tt % 32, g = lane / 4, q4 = lane % 4;
        for (int64_t s = 0; s < l.slotsPerThread(); ++s) {
            const int64_t e = elementOf(l, tt, s);
            ASSERT_GE(e, 0) << "thread " << tt << " slot " << s;
            ++seen[e];
            auto [row, col] = mmaSlotRowCol(l, t, s);
            std::map<const ir::VarNode *, int64_t> v{{t.get(), tt}};
            EXPECT_EQ(evalInt(row, v), e / n) << "thread " << tt << " slot " << s;
            EXPECT_EQ(evalInt(col, v), e % n) << "thread " << tt << " slot " << s;
            EXPECT_EQ(e % n % 4, q4) << "column " << e % n << " outside lane " << lane << "'s group position";
            if (n % 8 == 0) { // the m16n8k8 A registers: slot 4kk + r of a 16-row tile
                const int64_t kSteps = n / 8, r = s % 4, kk = s / 4 % kSteps;
                EXPECT_EQ(e % n, 8 * kk + q4 + 4 * (r / 2)) << "slot " << s;
                EXPECT_EQ(e / n % 16, g + 8 * (r % 2)) << "slot " << s;
                if (wgmma) {
                    const int64_t wm = tt / 32 % warpsM, mi = s / 4 / kSteps, wgRows = m / (warpsM / 4);
                    EXPECT_EQ(e / n, wm / 4 * wgRows + mi * 64 + wm % 4 * 16 + g + 8 * (r % 2)) << "slot " << s;
                }
            }
        }
    }
    for (int64_t e = 0; e < m * n; ++e) ASSERT_EQ(seen[e], l.warpCopies()) << "element " << e;
}

TEST(LowerSimOperandOrder, LayoutMatchesItsDefinition) {
    checkOperandOrder(16, 8, 1, 32);
    checkOperandOrder(32, 256, 2, 128); // mHC's x_frag: two warp columns hold copies
    checkOperandOrder(32, 4, 2, 128);   // its sum-of-squares nest
    checkOperandOrder(64, 12, 4, 128);
    checkOperandOrder(48, 16, 3, 96);
    checkOperandOrder(128, 64, 4, 128, true); // chunk_delta_bwd's Q_fragment_t: two m64 tiles per warp
    checkOperandOrder(128, 16, 8, 256, true); // two warpgroups, 64 rows each
    checkOperandOrder(64, 32, 4, 256, true);  // one warpgroup's rows, a copy in the second (columns split)
}

/// mHC's fused product and sum of squares at a small size: X (n, 128) bfloat16 in 64-column stages, F (24, 128)
/// (transB) or (128, 24) float, the product over 32 columns of which 24 are stored, the squares read `W` columns at
/// a time `S` apart; S[r] the row sums, CS[b, j] block b's column sums of the partial squares (a dim-0 reduction of
/// a fragment in the operand order).
std::string source(int W, int S, bool transB) {
    const std::string w = std::to_string(W), s = std::to_string(S);
    const std::string fShape = transB ? "(24, 128)" : "(128, 24)", fsShape = transB ? "(32, 64)" : "(64, 32)";
    const std::string fAt = transB ? "F[0, pz * 64]" : "F[pz * 64, 0]";
    return "import tilelang.language as T\n"
           "n = T.dynamic(\"n\")\n"
           "@T.prim_func\n"
           "def k(X: T.Tensor((n, 128), \"bfloat16\"), F: T.Tensor(" + fShape + ", \"float32\"),\n"
           "      O: T.Tensor((n, 24), \"float32\"), S: T.Tensor((n,), \"float32\"), CS: T.Tensor((2, " + w + "), \"float32\")):\n"
           "    with T.Kernel(T.ceildiv(n, 32), threads=128) as px:\n"
           "        acc = T.alloc_fragment((32, 32), \"float32\")\n"
           "        part = T.alloc_fragment((32, " + w + "), \"float32\")\n"
           "        T.clear(acc)\n"
           "        T.clear(part)\n"
           "        for pz in T.Pipelined(2, num_stages=2):\n"
           "            xs = T.alloc_shared((32, 64), \"bfloat16\")\n"
           "            fs = T.alloc_shared(" + fsShape + ", \"float32\")\n"
           "            T.copy(X[px * 32, pz * 64], xs)\n"
           "            T.copy(" + fAt + ", fs)\n"
           "            x16 = T.alloc_fragment((32, 64), \"bfloat16\")\n"
           "            T.copy(xs, x16)\n"
           "            x = T.alloc_fragment((32, 64), \"float32\")\n"
           "            T.copy(x16, x)\n"
           "            for jj in T.serial((64 - " + w + ") // " + s + " + 1):\n"
           "                for i, j in T.Parallel(32, " + w + "):\n"
           "                    part[i, j] += x[i, jj * " + s + " + j] * x[i, jj * " + s + " + j]\n"
           "            T.gemm(x, fs, acc" + std::string(transB ? ", transpose_B=True" : "") + ")\n"
           "        rs = T.alloc_fragment((32,), \"float32\")\n"
           "        T.reduce_sum(part, rs, dim=1)\n"
           "        cs = T.alloc_fragment((" + w + ",), \"float32\")\n"
           "        T.reduce_sum(part, cs, dim=0)\n"
           "        for i in T.Parallel(32):\n"
           "            S[px * 32 + i] = rs[i]\n"
           "        for j in T.Parallel(" + w + "):\n"
           "            CS[px, j] = cs[j]\n"
           "        for i, j in T.Parallel(32, 32):\n"
           "            if j < 24:\n"
           "                O[px * 32 + i, j] = acc[i, j]\n";
}

std::vector<double> smallValues(size_t n, uint64_t seed) { // exact in bfloat16 and tf32, and their sums in float
    std::mt19937_64 g(seed);
    std::vector<double> v(n);
    for (auto &x : v) x = (double)((int64_t)(g() % 9) - 4) / 2;
    return v;
}

struct Library : ir::IRVisitor {
    using IRVisitor::visit;
    std::vector<const ir::Call *> gemms;
    int staged = 0;
    void visit(const ir::Call &c) override {
        if (lib::is(c, lib::Fn::GemmRS) || lib::is(c, lib::Fn::GemmRSPanels)) gemms.push_back(&c);
        IRVisitor::visit(c);
    }
};

TEST(LowerSimOperandOrder, GroupReadsStayInRegistersAndTheProductReadsTheOperandOrder) {
    struct Case {
        int W, S;
        bool transB;
    };
    const int64_t n = 40; // two blocks, the second with 8 of its 32 rows
    for (const Case &c : {Case{4, 4, true}, Case{4, 4, false}, Case{8, 8, true}, Case{4, 8, true}, Case{8, 4, false},
                          Case{4, 16, true}}) {
        SCOPED_TRACE("W " + std::to_string(c.W) + ", S " + std::to_string(c.S) + (c.transB ? ", B^T" : ", B"));
        for (const char *arch : {"sm_80", "sm_90a"}) {
            SCOPED_TRACE(arch);
            LowerRun r;
            r.run(source(c.W, c.S, c.transB), "t.tile", *Target::parse(arch));
            const ir::Kernel *k = r.kernel("k");
            ASSERT_TRUE(k) << r.diags();
            Library calls;
            calls.visit(k->body);
            ASSERT_EQ(calls.gemms.size(), 1u) << "A from registers";
            const ir::Call &g = *calls.gemms[0];
            EXPECT_EQ(constInt(lib::arg(g, lib::is(g, lib::Fn::GemmRS) ? lib::Fn::GemmRS : lib::Fn::GemmRSPanels, "opA")),
                      std::optional<int64_t>(1))
                << "A in the tf32 operand order";
            for (auto &b : k->allocs) EXPECT_EQ(b->name.find("_staged"), std::string::npos) << b->name << ": A through shared memory";
            const int jjs = (64 - c.W) / c.S + 1;
            auto x = smallValues(n * 128, 7), f = smallValues(24 * 128, 8);
            std::vector<double> o(n * 24, std::nan("")), s(n, std::nan("")), cs(2 * c.W, std::nan(""));
            Simulator sim(*k, {{"X", &x}, {"F", &f}, {"O", &o}, {"S", &s}, {"CS", &cs}}, {{"n", (double)n}});
            sim.run();
            EXPECT_TRUE(sim.races.empty()) << sim.races.front();
            int wrongO = 0, wrongS = 0, wrongCS = 0;
            std::vector<double> colSums(2 * c.W, 0.0);
            for (int64_t i = 0; i < n; ++i) {
                double rowSum = 0;
                for (int pz = 0; pz < 2; ++pz)
                    for (int jj = 0; jj < jjs; ++jj)
                        for (int j = 0; j < c.W; ++j) {
                            const double v = x[(size_t)(i * 128 + pz * 64 + jj * c.S + j)];
                            rowSum += v * v;
                            colSums[(size_t)((i / 32) * c.W + j)] += v * v;
                        }
                wrongS += s[(size_t)i] != rowSum;
                for (int j = 0; j < 24; ++j) {
                    double want = 0;
                    for (int kk = 0; kk < 128; ++kk)
                        want += x[(size_t)(i * 128 + kk)] * (c.transB ? f[(size_t)(j * 128 + kk)] : f[(size_t)(kk * 24 + j)]);
                    wrongO += o[(size_t)(i * 24 + j)] != want;
                }
            }
            for (size_t e = 0; e < cs.size(); ++e) wrongCS += cs[e] != colSums[e];
            EXPECT_EQ(wrongO, 0) << "O = X F";
            EXPECT_EQ(wrongS, 0) << "row sums of the squares read by column groups";
            EXPECT_EQ(wrongCS, 0) << "column sums of the partial squares (each warp copy counted once)";
        }
    }
}

/// The other uses of a fragment in the operand order: per-column values `d[j]` in a nest over it (the operand
/// order's mmaCols, column 4q + l % 4 in slot q, not a whole copy of d indexed by the lane), its rows and columns
/// reduced, and a copy of it through shared memory.
TEST(LowerSimOperandOrder, ColumnValuesReductionsAndCopiesOfTheOperandOrder) {
    const std::string src = "import tilelang.language as T\n"
                            "@T.prim_func\n"
                            "def k(A: T.Tensor((64, 32), \"float32\"), B: T.Tensor((16, 32), \"float32\"), D: T.Tensor((32,), \"float32\"),\n"
                            "      C: T.Tensor((64, 16), \"float32\"), R: T.Tensor((64,), \"float32\"), CM: T.Tensor((32,), \"float32\"),\n"
                            "      A2: T.Tensor((64, 32), \"float32\")):\n"
                            "    with T.Kernel(1, threads=128) as bx:\n"
                            "        A_s = T.alloc_shared((64, 32), \"float32\")\n"
                            "        B_s = T.alloc_shared((16, 32), \"float32\")\n"
                            "        a = T.alloc_fragment((64, 32), \"float32\")\n"
                            "        d = T.alloc_fragment((32,), \"float32\")\n"
                            "        c = T.alloc_fragment((64, 16), \"float32\")\n"
                            "        r = T.alloc_fragment((64,), \"float32\")\n"
                            "        cm = T.alloc_fragment((32,), \"float32\")\n"
                            "        T.copy(A, A_s)\n"
                            "        T.copy(B, B_s)\n"
                            "        T.copy(D, d)\n"
                            "        for i, j in T.Parallel(64, 32):\n"
                            "            a[i, j] = A_s[i, j] * d[j]\n"
                            "        T.clear(c)\n"
                            "        T.gemm(a, B_s, c, transpose_B=True)\n"
                            "        T.reduce_sum(a, r, dim=1)\n"
                            "        T.reduce_max(a, cm, dim=0)\n"
                            "        T.copy(a, A_s)\n"
                            "        T.copy(A_s, A2)\n"
                            "        T.copy(c, C)\n"
                            "        T.copy(r, R)\n"
                            "        T.copy(cm, CM)\n";
    for (const char *arch : {"sm_80", "sm_90a"}) {
        SCOPED_TRACE(arch);
        LowerRun r;
        r.run(src, "t.tile", *Target::parse(arch));
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k) << r.diags();
        int dRegisters = 0; // d's registers: the 8 column groups of its lane, not all 32 values
        for (auto &b : k->allocs)
            if (b->name == "d" && b->scope == ir::Scope::Local) dRegisters = (int)constInt(b->shape.at(0)).value_or(-1);
        EXPECT_EQ(dRegisters, 8) << "d's registers per thread (32: held whole by every thread)";
        auto a = smallValues(64 * 32, 3), b = smallValues(16 * 32, 4), d = smallValues(32, 5);
        std::vector<double> c(64 * 16, std::nan("")), rs(64, std::nan("")), cm(32, std::nan("")), a2(64 * 32, std::nan(""));
        Simulator sim(*k, {{"A", &a}, {"B", &b}, {"D", &d}, {"C", &c}, {"R", &rs}, {"CM", &cm}, {"A2", &a2}});
        sim.run();
        EXPECT_TRUE(sim.races.empty()) << sim.races.front();
        int wrong = 0;
        std::vector<double> colMax(32, -1e300);
        for (int i = 0; i < 64; ++i) {
            double sum = 0;
            for (int j = 0; j < 32; ++j) {
                const double v = a[(size_t)(i * 32 + j)] * d[(size_t)j];
                sum += v, colMax[(size_t)j] = std::max(colMax[(size_t)j], v);
                wrong += a2[(size_t)(i * 32 + j)] != v;
            }
            wrong += rs[(size_t)i] != sum;
            for (int j = 0; j < 16; ++j) {
                double want = 0;
                for (int kk = 0; kk < 32; ++kk) want += a[(size_t)(i * 32 + kk)] * d[(size_t)kk] * b[(size_t)(j * 32 + kk)];
                wrong += c[(size_t)(i * 16 + j)] != want;
            }
        }
        for (int j = 0; j < 32; ++j) wrong += cm[(size_t)j] != colMax[(size_t)j];
        EXPECT_EQ(wrong, 0) << "products, row sums, column maxima and the copy of a = A d";
    }
}

/// A tf32 A in the operand order on wgmma (sm_90a): gdn chunk_delta_bwd's shape of it, Q^T (128, 64) filled by a
/// transposing nest from a (64, 128) fragment and multiplied by a K-major tf32 B, beside a bfloat16 product, over
/// one warpgroup (two m64 tiles a warp) and over two (64 rows each). The product is a wgmma_rs whose A registers
/// the simulator reads in the instruction's m64k8 order, not through the compiler's layouts.
TEST(LowerSimOperandOrder, Tf32OperandOnWgmmaFromRegisters) {
    for (int threads : {128, 256}) {
        SCOPED_TRACE(std::to_string(threads) + " threads");
        const std::string src =
            "import tilelang.language as T\n"
            "@T.prim_func\n"
            "def k(Q: T.Tensor((64, 128), \"float32\"), K: T.Tensor((64, 128), \"bfloat16\"), H: T.Tensor((128, 32), \"bfloat16\"),\n"
            "      D: T.Tensor((32, 64), \"float32\"), O: T.Tensor((128, 32), \"float32\"), V: T.Tensor((64, 32), \"float32\")):\n"
            "    with T.Kernel(1, threads=" + std::to_string(threads) + ") as bx:\n"
            "        K_s = T.alloc_shared((64, 128), \"bfloat16\")\n"
            "        H_s = T.alloc_shared((128, 32), \"bfloat16\")\n"
            "        D_s = T.alloc_shared((32, 64), \"float32\")\n"
            "        q = T.alloc_fragment((64, 128), \"float32\")\n"
            "        qt = T.alloc_fragment((128, 64), \"float32\")\n"
            "        v = T.alloc_fragment((64, 32), \"float32\")\n"
            "        acc = T.alloc_fragment((128, 32), \"float32\")\n"
            "        T.copy(K, K_s)\n"
            "        T.copy(H, H_s)\n"
            "        T.copy(D, D_s)\n"
            "        T.gemm(K_s, H_s, v, clear_accum=True)\n"
            "        T.copy(Q, q)\n"
            "        for i, kk in T.Parallel(64, 128):\n"
            "            qt[kk, i] = q[i, kk] * 0.5\n"
            "        T.clear(acc)\n"
            "        T.gemm(qt, D_s, acc, transpose_B=True)\n"
            "        T.copy(acc, O)\n"
            "        T.copy(v, V)\n";
        LowerRun r;
        r.run(src, "t.tile", *Target::parse("sm_90a"));
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k) << r.diags();
        struct Rs : ir::IRVisitor {
            using IRVisitor::visit;
            int wgmmaRs = 0, mmaRs = 0;
            void visit(const ir::Call &c) override {
                wgmmaRs += lib::is(c, lib::Fn::WgmmaRS), mmaRs += lib::is(c, lib::Fn::GemmRS) || lib::is(c, lib::Fn::GemmRSPanels);
                IRVisitor::visit(c);
            }
        } calls;
        calls.visit(k->body);
        EXPECT_EQ(calls.wgmmaRs, 1) << "the tf32 product on wgmma from registers";
        EXPECT_EQ(calls.mmaRs, 0);
        auto q = smallValues(64 * 128, 11), kk = smallValues(64 * 128, 12), h = smallValues(128 * 32, 13), d = smallValues(32 * 64, 14);
        std::vector<double> o(128 * 32, std::nan("")), v(64 * 32, std::nan(""));
        Simulator sim(*k, {{"Q", &q}, {"K", &kk}, {"H", &h}, {"D", &d}, {"O", &o}, {"V", &v}});
        sim.run();
        EXPECT_TRUE(sim.races.empty()) << sim.races.front();
        int wrongO = 0, wrongV = 0;
        for (int i = 0; i < 128; ++i)
            for (int j = 0; j < 32; ++j) {
                double want = 0;
                for (int s2 = 0; s2 < 64; ++s2) want += q[(size_t)(s2 * 128 + i)] * 0.5 * d[(size_t)(j * 64 + s2)];
                wrongO += o[(size_t)(i * 32 + j)] != want;
            }
        for (int i = 0; i < 64; ++i)
            for (int j = 0; j < 32; ++j) {
                double want = 0;
                for (int c = 0; c < 128; ++c) want += kk[(size_t)(i * 128 + c)] * h[(size_t)(c * 32 + j)];
                wrongV += v[(size_t)(i * 32 + j)] != want;
            }
        EXPECT_EQ(wrongO, 0) << "O = (Q / 2)^T D^T";
        EXPECT_EQ(wrongV, 0) << "V = K H";
    }
}

} // namespace
