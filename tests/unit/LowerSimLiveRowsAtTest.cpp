/// \file
/// Rows of a T.gemm accumulator no one observes, known per block at run time (Gemm::liveRowsAt, issue 27's
/// M = 129..255 decode shapes): the last row tile of an M that is not a multiple of the tile's height loads
/// only A's 64-row boxes that start below M - by * BM (expect_tx their bytes) and issues only the wgmma panels
/// that start there, each consumer warpgroup its own. Lowered for sm_90a (warp roles, TMA, wgmma; and the
/// cp.async path) and run on the CPU simulator against float64 for every M around the tile's multiples, tile
/// heights of 1, 2, 3 and 4 panels, one and two consumer warpgroups, M a constant and a T.dynamic size (0
/// among them); the kernels whose row tiles are all full (M = 256 of 128) are left as they were. Mutations:
/// an expect_tx of the whole tile, a box not loaded that a panel reads, a panel not issued whose rows are
/// stored: each is reported.
#include "LowerSimHopperUtil.h"

#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::gemm::Mutated;
namespace lib = tilec::passes::lib;

namespace {

struct Shape {
    int M = 192, N = 128, K = 192, BM = 128, threads = 128, stages = 2;
    bool dynamicM = false;
    bool peek = false; ///< A's tile read after the loop: its rows 64..127 copied to D (rows past the end as zeros)
};

std::string source(const Shape &s) {
    const std::string BM = std::to_string(s.BM);
    return "import tilelang.language as T\n"
           "def g(M, N, K):\n"
           "    @T.prim_func\n"
           "    def main(A: T.Tensor((M, K), \"float16\"), B: T.Tensor((K, N), \"float16\"), C: T.Tensor((M, N), \"float32\")" +
           std::string(s.peek ? ", D: T.Tensor((128, N), \"float16\")" : "") + "):\n"
           "        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, " + BM + "), threads=" + std::to_string(s.threads) + ") as (bx, by):\n"
           "            A_s = T.alloc_shared((" + BM + ", 64), \"float16\")\n"
           "            B_s = T.alloc_shared((64, 64), \"float16\")\n"
           "            acc = T.alloc_fragment((" + BM + ", 64), \"float\")\n"
           "            T.clear(acc)\n"
           "            for ko in T.Pipelined(T.ceildiv(K, 64), num_stages=" + std::to_string(s.stages) + "):\n"
           "                T.copy(A[by * " + BM + ", ko * 64], A_s)\n"
           "                T.copy(B[ko * 64, bx * 64], B_s)\n"
           "                T.gemm(A_s, B_s, acc)\n"
           "            T.copy(acc, C[by * " + BM + ", bx * 64])\n" +
           (s.peek ? "            T.copy(A_s[64:128, 0:64], D[by * 64, bx * 64])\n" : "") +
           "    return main\n"
           "k = g(" + (s.dynamicM ? std::string("T.dynamic(\"M\")") : std::to_string(s.M)) + ", " + std::to_string(s.N) + ", " +
           std::to_string(s.K) + ")\n";
}

struct Lowered {
    LowerRun r;
    const ir::Kernel *k = nullptr;
    Lowered(const Shape &s, bool tma = true) {
        Variant v{*Target::parse("sm_90a"), {}};
        v.options.clusters = false;
        v.options.splitK = false;
        v.options.tma = tma;
        r.run(source(s), "t.tile", v);
        if (r.lowered && r.lowered->kernels.size() == 1) k = r.lowered->kernels[0].get();
    }
};

/// What the lowering issues: loads in part, wgmma with live rows at run time, and their count.
struct Issued {
    int rowLoads = 0, liveWgmma = 0, wgmma = 0;
    std::vector<int64_t> boxes; ///< each tensor map's row box
};
Issued issued(const ir::Kernel &k) {
    struct Find : ir::IRVisitor {
        using ir::IRVisitor::visit;
        Issued n;
        void visit(const ir::Call &c) override {
            n.rowLoads += lib::is(c, lib::Fn::TmaLoadTileRows);
            if (lib::is(c, lib::Fn::WgmmaSS)) ++n.wgmma, n.liveWgmma += lib::optionalArg(c, lib::Fn::WgmmaSS, "live") != nullptr;
            ir::IRVisitor::visit(c);
        }
    } f;
    f.visit(k.body);
    for (auto &m : k.tensorMaps) f.n.boxes.push_back(m.box.size() > 1 ? m.box[1] : 0);
    return f.n;
}

/// Runs `k` on A (M x K) and B (K x N) with values on a grid of quarters; C against float64. Empty: right.
std::string run(const ir::Kernel &k, const Shape &s, uint64_t seed = 0) {
    auto a = simtest::quarters((size_t)s.M * s.K, 1), b = simtest::quarters((size_t)s.K * s.N, 2);
    std::vector<double> c((size_t)s.M * s.N, std::nan("")), d((size_t)128 * s.N, std::nan("")), a2 = a, b2 = b;
    std::map<std::string, double> scalars;
    if (s.dynamicM) scalars["M"] = s.M;
    std::map<std::string, std::vector<double> *> tensors{{"A", &a2}, {"B", &b2}, {"C", &c}};
    if (s.peek) tensors["D"] = &d;
    simtest::Simulator sim(k, tensors, scalars, seed);
    try {
        sim.run();
    } catch (const simtest::SimError &e) {
        return e.what();
    }
    if (!sim.races.empty()) return "race: " + sim.races[0];
    for (int i = 0; i < s.M; ++i)
        for (int j = 0; j < s.N; ++j) {
            double want = 0;
            for (int q = 0; q < s.K; ++q) want += a[(size_t)i * s.K + q] * b[(size_t)q * s.N + j];
            if (c[(size_t)i * s.N + j] != want)
                return "C[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(c[(size_t)i * s.N + j]) +
                       ", expected " + std::to_string(want);
        }
    // D: rows 64..127 of each row tile's A at the last K block, zeros past A's end
    const int kl = (s.K + 63) / 64 - 1;
    for (int i = 0; s.peek && i < 128 && i / 64 * 128 < s.M; ++i)
        for (int j = 0; j < s.N; ++j) {
            const int row = i / 64 * 128 + 64 + i % 64, col = kl * 64 + j % 64;
            const double want = row < s.M && col < s.K ? a[(size_t)row * s.K + col] : 0;
            if (d[(size_t)i * s.N + j] != want)
                return "D[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(d[(size_t)i * s.N + j]) +
                       ", expected " + std::to_string(want);
        }
    return "";
}

/// Whether the last row tile of M leaves a panel of `BM` rows out.
bool leavesPanel(int M, int BM) {
    const int last = M % BM;
    return M > BM && last > 0 && (last + 63) / 64 * 64 < BM;
}

} // namespace

// BM = 128 over one consumer warpgroup, M around 128 and 256: the last row tile of M = 129..192 loads one box
// of A and issues one panel; M <= 128 takes the constant bound (or none), multiples of 128 keep every box.
TEST(SimLiveRowsAt, EveryMAroundTheTile) {
    for (int M : {1, 63, 64, 65, 127, 128, 129, 136, 191, 192, 193, 255, 256, 300}) {
        SCOPED_TRACE("M = " + std::to_string(M));
        Shape s;
        s.M = M;
        Lowered l(s);
        ASSERT_TRUE(l.k) << l.r.diags();
        const Issued n = issued(*l.k);
        const bool part = leavesPanel(M, 128);
        EXPECT_EQ(n.rowLoads, part ? 1 : 0);
        EXPECT_EQ(n.liveWgmma, part ? n.wgmma : 0);
        // A's map in boxes of 64 rows where it is loaded in part, else the tile's 128
        EXPECT_EQ(n.boxes.empty() ? 0 : n.boxes[0], part ? 64 : 128);
        EXPECT_EQ(run(*l.k, s), "");
    }
}

// Tile heights of 3 panels (one warpgroup) and 4 panels (two warpgroups of 2 panels each: the second issues
// none where the block's live rows end in the first's), 1 panel (nothing to leave out), and K in several
// blocks through a ring of 3 stages.
TEST(SimLiveRowsAt, TileHeights) {
    struct C {
        int M, BM, threads;
    };
    for (C c : {C{200, 192, 128}, C{250, 192, 128}, C{260, 192, 128}, C{384, 192, 128}, C{300, 256, 256}, C{386, 256, 256},
                C{400, 256, 256}, C{512, 256, 256}, C{100, 64, 128}, C{129, 64, 128}}) {
        SCOPED_TRACE("M = " + std::to_string(c.M) + ", BM = " + std::to_string(c.BM));
        Shape s;
        s.M = c.M, s.BM = c.BM, s.threads = c.threads, s.K = 320, s.stages = 3;
        Lowered l(s);
        ASSERT_TRUE(l.k) << l.r.diags();
        const Issued n = issued(*l.k);
        EXPECT_EQ(n.rowLoads, leavesPanel(c.M, c.BM) ? 1 : 0);
        EXPECT_EQ(run(*l.k, s), "");
    }
}

// M a T.dynamic size: every launch may leave panels out, 0 rows among the values.
TEST(SimLiveRowsAt, DynamicM) {
    Shape s;
    s.dynamicM = true;
    Lowered l(s);
    ASSERT_TRUE(l.k) << l.r.diags();
    EXPECT_EQ(issued(*l.k).rowLoads, 1);
    for (int M : {0, 1, 63, 64, 65, 128, 129, 192, 193, 255, 256, 257}) {
        SCOPED_TRACE("M = " + std::to_string(M));
        s.M = M;
        EXPECT_EQ(run(*l.k, s), "");
    }
}

// The cp.async path loads every row (zeros past the end) and skips the same panels.
TEST(SimLiveRowsAt, CpAsyncPath) {
    for (int M : {136, 192, 256}) {
        Shape s;
        s.M = M;
        Lowered l(s, false);
        ASSERT_TRUE(l.k) << l.r.diags();
        const Issued n = issued(*l.k);
        EXPECT_EQ(n.rowLoads, 0);
        EXPECT_EQ(n.liveWgmma, M == 256 ? 0 : n.wgmma) << M;
        EXPECT_EQ(run(*l.k, s), "") << M;
    }
}

// A's tile read after the loop (its rows past the block's live rows copied out): every box is loaded, the
// panels still skipped.
TEST(SimLiveRowsAt, ATileReadOtherwiseKeepsEveryBox) {
    Shape s;
    s.peek = true;
    Lowered l(s);
    ASSERT_TRUE(l.k) << l.r.diags();
    const Issued n = issued(*l.k);
    EXPECT_EQ(n.rowLoads, 0);
    EXPECT_EQ(n.liveWgmma, n.wgmma);
    EXPECT_EQ(run(*l.k, s), "");
}

// ---- mutations the simulator must report ----

namespace {

/// The kernel with each call to `f` rewritten by `g` (its arguments in, its arguments out).
std::shared_ptr<ir::Kernel> rewrite(const ir::Kernel &k, lib::Fn f, std::function<void(std::vector<ir::Expr> &)> g) {
    return Mutated(k, [f, g](const ir::Evaluate &e, const ir::Call &c, bool) -> ir::Stmt {
               if (!lib::is(c, f)) return ir::Evaluate::make(e.value, e.loc);
               std::vector<ir::Expr> args = c.args;
               g(args);
               return lib::stmt(f, std::move(args), e.loc);
           }).kernel;
}

ir::Expr minus64(const ir::Expr &e) { return ir::binary(ir::BinaryOp::Sub, e, ir::intImm(64, DType::Int32)); }

} // namespace

TEST(SimLiveRowsAtMutant, ExpectTxOfTheWholeTileIsReported) {
    Shape s; // M = 192: row tile 1 loads one of A's two boxes
    Lowered l(s);
    ASSERT_TRUE(l.k) << l.r.diags();
    ASSERT_EQ(run(*l.k, s), "");
    // the bytes of both boxes of A and B's tile, whatever the block's rows
    auto whole = rewrite(*l.k, lib::Fn::MbarrierArriveExpectTx, [](std::vector<ir::Expr> &a) {
        a[1] = ir::intImm(128 * 64 * 2 + 64 * 64 * 2, DType::Int32);
    });
    EXPECT_NE(run(*whole, s).find("deadlock"), std::string::npos);
    // one box too few: the phase completes before the last box lands
    auto fewer = rewrite(*l.k, lib::Fn::MbarrierArriveExpectTx, [](std::vector<ir::Expr> &a) {
        a[1] = ir::binary(ir::BinaryOp::Sub, a[1], ir::intImm(64 * 64 * 2, DType::Int32));
    });
    EXPECT_NE(run(*fewer, s), "");
}

TEST(SimLiveRowsAtMutant, BoxNotLoadedThatAPanelReadsIsReported) {
    for (int M : {192, 160}) {
        Shape s;
        s.M = M;
        Lowered l(s);
        ASSERT_TRUE(l.k) << l.r.diags();
        const size_t live = lib::argIndex(lib::Fn::TmaLoadTileRows, "live");
        auto k = rewrite(*l.k, lib::Fn::TmaLoadTileRows, [live](std::vector<ir::Expr> &a) { a[live] = minus64(a[live]); });
        // the producer's expect_tx still counts the box: the stage never completes, or its rows are stale
        EXPECT_NE(run(*k, s), "") << M;
    }
}

TEST(SimLiveRowsAtMutant, PanelNotIssuedWhoseRowsAreStoredIsReported) {
    for (int M : {192, 136, 129}) {
        Shape s;
        s.M = M;
        Lowered l(s);
        ASSERT_TRUE(l.k) << l.r.diags();
        const size_t live = lib::argIndex(lib::Fn::WgmmaSS, "live");
        auto k = rewrite(*l.k, lib::Fn::WgmmaSS, [live](std::vector<ir::Expr> &a) { a[live] = minus64(a[live]); });
        const std::string err = run(*k, s);
        EXPECT_EQ(err.rfind("C[128, ", 0), 0u) << M << ": " << err;
    }
}
