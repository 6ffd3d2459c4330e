/// \file
/// Per-column values of a tensor-core fragment (Layout::mmaCols, issue 25's mamba chunk kernels): a 1-D fragment
/// `d[j]` read in a T.Parallel over a T.gemm's accumulator or operand A, and otherwise only copied or computed
/// whole, is held by column: each thread keeps the values of its own columns (2 per 8-column tile), where a copy of
/// the whole vector indexed by the lane would sit in local memory. Lowered for sm_90a (warp roles and TMA, and
/// the cp.async path) and sm_80, run on the CPU simulator against float64 references, with the register count of
/// the column fragments checked; and the uses that still need the whole vector in every thread keep it.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

using namespace tilec;
using tilec::simtest::Simulator;

namespace {

/// C (64 x 64) = (A * d[k]) @ B + e[j], K = 128 in two 64-wide steps: d scales the columns of operand A (read
/// as `d_f[j]` in the nest over A's fragment), e the columns of the accumulator; `scale` computes d's fragment in
/// a 1-D nest of its own (mamba chunk_state's `scale[i] = ...`), `extra` adds statements after the loop.
std::string source(bool scale, const std::string &extra = "") {
    return std::string("import tilelang.language as T\n"
                       "@T.prim_func\n"
                       "def g(A: T.Tensor((64, 128), \"float16\"), B: T.Tensor((128, 64), \"float16\"), "
                       "d: T.Tensor((128,), \"float16\"), e: T.Tensor((64,), \"float16\"), C: T.Tensor((64, 64), \"float32\"), "
                       "E: T.Tensor((64,), \"float32\")):\n"
                       "    with T.Kernel(1, threads=128) as bx:\n"
                       "        A_s = T.alloc_shared((64, 64), \"float16\")\n"
                       "        A_f = T.alloc_fragment((64, 64), \"float16\")\n"
                       "        B_s = T.alloc_shared((64, 64), \"float16\")\n"
                       "        d_s = T.alloc_shared((64,), \"float16\")\n"
                       "        d_f = T.alloc_fragment((64,), \"float\")\n"
                       "        d_g = T.alloc_fragment((64,), \"float\")\n"
                       "        e_f = T.alloc_fragment((64,), \"float\")\n"
                       "        acc = T.alloc_fragment((64, 64), \"float\")\n"
                       "        T.clear(acc)\n"
                       "        for ko in T.Pipelined(2, num_stages=2):\n"
                       "            T.copy(A[0, ko * 64], A_s)\n"
                       "            T.copy(A_s, A_f)\n"
                       "            T.copy(d[ko * 64], d_s)\n"
                       "            T.copy(d_s, d_f)\n") +
           (scale ? "            for i in T.Parallel(64):\n"
                    "                d_g[i] = d_f[i] * 2.0\n"
                    "            for i, j in T.Parallel(64, 64):\n"
                    "                A_f[i, j] = A_f[i, j] * d_g[j] * 0.5\n"
                  : "            for i, j in T.Parallel(64, 64):\n"
                    "                A_f[i, j] = A_f[i, j] * d_f[j]\n") +
           "            T.copy(B[ko * 64, 0], B_s)\n"
           "            T.gemm(A_f, B_s, acc)\n"
           "        T.copy(e, e_f)\n"
           "        for i, j in T.Parallel(64, 64):\n"
           "            acc[i, j] = acc[i, j] + e_f[j]\n"
           "        T.copy(acc, C)\n" +
           extra;
}

ir::Program lower(const std::string &src, const char *target, bool tma = true) {
    Variant v{*Target::parse(target), {}};
    v.options.tma = tma;
    lowertest::LowerRun r;
    r.run(src, "t.tile", v);
    EXPECT_TRUE(r.lowered) << r.diags();
    return r.lowered ? *r.lowered : ir::Program{};
}

/// The register count of the fragment named `name` (its Local array), -1 when there is none.
int64_t registers(const ir::Program &p, const std::string &name) {
    struct Find : ir::IRVisitor {
        using ir::IRVisitor::visit;
        std::string name;
        int64_t n = -1;
        void see(const ir::Buffer &b) {
            if (b && b->name == name && b->scope == ir::Scope::Local && b->shape.size() == 1)
                n = ir::constInt(b->shape[0]).value_or(-1);
        }
        void visit(const ir::Load &l) override { see(l.buffer), ir::IRVisitor::visit(l); }
        void visit(const ir::Store &s) override { see(s.buffer), ir::IRVisitor::visit(s); }
    } f;
    f.name = name;
    for (auto &k : p.kernels) f.visit(k->body);
    return f.n;
}

/// Runs the program's one kernel on `tensors`; failures (an error, a race) are the test's.
void simulate(const ir::Program &p, std::map<std::string, std::vector<double> *> tensors) {
    ASSERT_EQ(p.kernels.size(), 1u);
    Simulator s(*p.kernels[0], std::move(tensors), {}, 0);
    try {
        s.run();
    } catch (const simtest::SimError &err) {
        FAIL() << err.what();
    }
    for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
}

/// Runs the kernel and compares C (and E, when `withE`) with float64.
void expectRight(const ir::Program &p, bool withE) {
    auto a = simtest::quarters(64 * 128, 1), b = simtest::quarters(128 * 64, 2);
    auto d = simtest::quarters(128, 3), e = simtest::quarters(64, 4);
    std::vector<double> c(64 * 64, std::nan("")), E(64, std::nan(""));
    simulate(p, {{"A", &a}, {"B", &b}, {"d", &d}, {"e", &e}, {"C", &c}, {"E", &E}});
    int wrong = 0;
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j) {
            double want = e[j];
            for (int k = 0; k < 128; ++k) want += a[(size_t)i * 128 + k] * d[k] * b[(size_t)k * 64 + j];
            if (c[(size_t)i * 64 + j] != want && wrong++ < 5)
                ADD_FAILURE() << "C[" << i << ", " << j << "] = " << c[(size_t)i * 64 + j] << ", expected " << want;
        }
    for (int j = 0; withE && j < 64; ++j)
        if (E[j] != e[j] * 3 && wrong++ < 8) ADD_FAILURE() << "E[" << j << "] = " << E[j] << ", expected " << e[j] * 3;
}

} // namespace

// The column values of operand A (d_f) and of the accumulator (e_f): 16 registers each (8 column tiles, 2 columns),
// not 64, on the warp-role path, on cp.async and on sm_80's mma.sync.
TEST(SimColumnValues, OperandAndAccumulatorColumns) {
    for (auto [target, tma] : {std::pair{"sm_90a", true}, std::pair{"sm_90a", false}, std::pair{"sm_80", false}}) {
        SCOPED_TRACE(std::string(target) + (tma ? " tma" : ""));
        ir::Program p = lower(source(false), target, tma);
        EXPECT_EQ(registers(p, "d_f"), 16);
        EXPECT_EQ(registers(p, "e_f"), 16);
        expectRight(p, false);
    }
}

// Computed in a 1-D nest of its own before the product (chunk_state's scale): the nest runs over the thread's
// columns only, and the memory it writes (E) is written by one copy of each column.
TEST(SimColumnValues, ComputedByColumnAndStored) {
    const std::string store = "        for j in T.Parallel(64):\n"
                              "            E[j] = e_f[j] * 3.0\n";
    for (auto [target, tma] : {std::pair{"sm_90a", true}, std::pair{"sm_90a", false}, std::pair{"sm_80", false}}) {
        SCOPED_TRACE(std::string(target) + (tma ? " tma" : ""));
        ir::Program p = lower(source(true, store), target, tma);
        EXPECT_EQ(registers(p, "d_g"), 16);
        EXPECT_EQ(registers(p, "d_f"), 16);
        EXPECT_EQ(registers(p, "e_f"), 16);
        expectRight(p, true);
    }
}

// A use that needs other elements than the thread's columns keeps the whole vector in every thread: a constant
// index (e_f[0]) after the loop.
TEST(SimColumnValues, OtherUsesKeepTheWholeVector) {
    const std::string first = "        for j in T.Parallel(64):\n"
                              "            E[j] = e_f[0] * 0.0 + e_f[j] * 3.0\n";
    ir::Program p = lower(source(false, first), "sm_90a", false);
    EXPECT_EQ(registers(p, "e_f"), 64);
    EXPECT_EQ(registers(p, "d_f"), 16);
    expectRight(p, true);
}

// A 2-D fragment of per-column values of a view (fp8_lighting_indexer's weights[bq_i, h_i] over a reshape of its
// logits' accumulator as (block_N, block_Q, heads)): w[a, b] read in a nest (i, a, b) over the (64, 4, 16) view of
// the (64, 64) accumulator is the view's column a * 16 + b, so w is held by column too: 16 registers, where the
// whole (4, 16) in every thread (64, indexed by the lane) sat in local memory. Its copy from global memory loads
// the thread's columns only.
TEST(SimColumnValues, TwoDimensionalColumnsOfAView) {
    const std::string src = "import tilelang.language as T\n"
                            "@T.prim_func\n"
                            "def g(A: T.Tensor((64, 64), \"float16\"), B: T.Tensor((64, 64), \"float16\"), "
                            "W: T.Tensor((4, 16), \"float32\"), C: T.Tensor((64, 64), \"float32\")):\n"
                            "    with T.Kernel(1, threads=128) as bx:\n"
                            "        A_s = T.alloc_shared((64, 64), \"float16\")\n"
                            "        B_s = T.alloc_shared((64, 64), \"float16\")\n"
                            "        acc = T.alloc_fragment((64, 64), \"float\")\n"
                            "        view = T.reshape(acc, (64, 4, 16))\n"
                            "        w = T.alloc_fragment((4, 16), \"float\")\n"
                            "        T.copy(W, w)\n"
                            "        T.copy(A, A_s)\n"
                            "        T.copy(B, B_s)\n"
                            "        T.gemm(A_s, B_s, acc, clear_accum=True)\n"
                            "        for i, a, b in T.Parallel(64, 4, 16):\n"
                            "            view[i, a, b] = T.max(view[i, a, b], 0) * w[a, b]\n"
                            "        T.copy(acc, C)\n";
    for (auto [target, tma] : {std::pair{"sm_90a", true}, std::pair{"sm_90a", false}, std::pair{"sm_80", false}}) {
        SCOPED_TRACE(std::string(target) + (tma ? " tma" : ""));
        ir::Program p = lower(src, target, tma);
        const int64_t cols = registers(p, "w");
        EXPECT_GT(cols, 0);
        EXPECT_LT(cols, 64);
        auto a = simtest::quarters(64 * 64, 1), b = simtest::quarters(64 * 64, 2), w = simtest::quarters(64, 3);
        std::vector<double> c(64 * 64, std::nan(""));
        simulate(p, {{"A", &a}, {"B", &b}, {"W", &w}, {"C", &c}});
        int wrong = 0;
        for (int i = 0; i < 64; ++i)
            for (int j = 0; j < 64; ++j) {
                double want = 0;
                for (int k = 0; k < 64; ++k) want += a[(size_t)i * 64 + k] * b[(size_t)k * 64 + j];
                want = std::max(want, 0.0) * w[j];
                if (c[(size_t)i * 64 + j] != want && wrong++ < 5)
                    ADD_FAILURE() << "C[" << i << ", " << j << "] = " << c[(size_t)i * 64 + j] << ", expected " << want;
            }
    }
}
