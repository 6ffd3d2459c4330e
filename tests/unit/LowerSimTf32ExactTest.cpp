/// \file
/// A float T.gemm operand A in registers whose every value tf32 represents (include/tilec/passes/Tf32Values.h) goes
/// to mma.sync unrounded: gemm_rs's exactA. Which fragments are proved (conversions from bfloat16, float16, int8,
/// through a second float fragment, under max / negation / a choice) and which are not (products, float constants,
/// copies of float tiles, float64 values; an accumulator: lit codegen/gemm_rs_tf32_pairs.tile's chained_tf32); the
/// proved kernels on the CPU simulator against float64, whose gemm_rs model checks every A value of an exactA call;
/// and that check itself, on a claim forced onto a kernel that breaks it.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

using namespace tilec;
using namespace tilec::passes;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;

namespace {

/// C (n, 32) = A (n, 64) B (32, 64)^T with A built in a 32 x 64 fragment `a` per block by `fill` (statements over
/// x16, the tile of X as `xtype`, and xf, a second float fragment), B float32 staged in shared memory.
std::string source(const std::string &xtype, const std::string &fill) {
    return "import tilelang.language as T\n"
           "n = T.dynamic(\"n\")\n"
           "@T.prim_func\n"
           "def k(X: T.Tensor((n, 64), \"" + xtype + "\"), F: T.Tensor((32, 64), \"float32\"),\n"
           "      C: T.Tensor((n, 32), \"float32\")):\n"
           "    with T.Kernel(T.ceildiv(n, 32), threads=128) as px:\n"
           "        acc = T.alloc_fragment((32, 32), \"float32\")\n"
           "        xs = T.alloc_shared((32, 64), \"" + xtype + "\")\n"
           "        fs = T.alloc_shared((32, 64), \"float32\")\n"
           "        x16 = T.alloc_fragment((32, 64), \"" + xtype + "\")\n"
           "        xf = T.alloc_fragment((32, 64), \"float32\")\n"
           "        a = T.alloc_fragment((32, 64), \"float32\")\n"
           "        T.clear(acc)\n"
           "        T.copy(X[px * 32, 0], xs)\n"
           "        T.copy(F, fs)\n"
           "        T.copy(xs, x16)\n" +
           fill +
           "        T.gemm(a, fs, acc, transpose_B=True)\n"
           "        T.copy(acc, C[px * 32, 0])\n";
}

struct Gemms : ir::IRVisitor {
    using IRVisitor::visit;
    std::vector<const ir::Call *> rs;
    void visit(const ir::Call &c) override {
        if (lib::is(c, lib::Fn::GemmRS) || lib::is(c, lib::Fn::GemmRSPanels)) rs.push_back(&c);
        IRVisitor::visit(c);
    }
};

lib::Fn fnOf(const ir::Call &c) { return lib::is(c, lib::Fn::GemmRS) ? lib::Fn::GemmRS : lib::Fn::GemmRSPanels; }

/// The exactA argument of the kernel's one gemm_rs, -1 where there is none.
int64_t exactA(const ir::Kernel &k) {
    Gemms g;
    g.visit(k.body);
    if (g.rs.size() != 1) return -1;
    return constInt(lib::arg(*g.rs[0], fnOf(*g.rs[0]), "exactA")).value_or(-1);
}

/// Values of 8 significant bits (exact in bfloat16, and in float16 and int8 where they are integers below 128).
std::vector<double> values(size_t n, uint64_t seed, double scale) {
    std::mt19937_64 g(seed);
    std::vector<double> v(n);
    for (auto &x : v) x = (double)((int64_t)(g() % 255) - 127) * scale;
    return v;
}

/// Runs `k` on X and F and compares C with `ref(i, kk)` (the A the fill makes) times F in float64; every sum is
/// exact in float (8-bit A and B, 64 terms).
void expectProduct(const ir::Kernel &k, const std::vector<double> &x, const std::function<double(double)> &ref) {
    const int64_t n = 40; // two blocks, the second with 8 of its 32 rows
    auto xx = x;
    auto f = values(32 * 64, 9, 1.0 / 16);
    std::vector<double> c(n * 32, std::nan(""));
    Simulator sim(k, {{"X", &xx}, {"F", &f}, {"C", &c}}, {{"n", (double)n}});
    try {
        sim.run();
    } catch (const simtest::SimError &e) {
        FAIL() << e.what();
    }
    EXPECT_TRUE(sim.races.empty()) << sim.races.front();
    int wrong = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < 32; ++j) {
            double want = 0;
            for (int64_t kk = 0; kk < 64; ++kk) want += ref(x[(size_t)(i * 64 + kk)]) * f[(size_t)(j * 64 + kk)];
            wrong += c[(size_t)(i * 32 + j)] != want;
        }
    EXPECT_EQ(wrong, 0) << "C = A F^T";
}

TEST(LowerSimTf32Exact, ConversionsFromNarrowTypesAreProvedAndComputeTheProduct) {
    struct Case {
        const char *name, *xtype, *fill;
        double scale;
        std::function<double(double)> ref;
    };
    const std::vector<Case> cases = {
        {"bfloat16 copy (mHC)", "bfloat16", "        T.copy(x16, a)\n", 1.0 / 64, [](double v) { return v; }},
        {"float16, max with 0", "float16",
         "        for i, j in T.Parallel(32, 64):\n            a[i, j] = T.max(T.cast(x16[i, j], \"float32\"), 0.0)\n",
         1.0 / 4, [](double v) { return v > 0 ? v : 0; }},
        {"int8, negated", "int8", "        for i, j in T.Parallel(32, 64):\n            a[i, j] = -T.cast(x16[i, j], \"float32\")\n",
         1.0, [](double v) { return -v; }},
        {"through a second float fragment, a choice", "bfloat16",
         "        T.copy(x16, xf)\n        for i, j in T.Parallel(32, 64):\n"
         "            a[i, j] = T.if_then_else(j < 32, xf[i, j], 0.5)\n",
         1.0 / 64, [](double v) { return v; }},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        for (const char *arch : {"sm_80", "sm_90a"}) {
            SCOPED_TRACE(arch);
            LowerRun r;
            r.run(source(c.xtype, c.fill), "t.tile", *Target::parse(arch));
            const ir::Kernel *k = r.kernel("k");
            ASSERT_TRUE(k) << r.diags();
            EXPECT_EQ(exactA(*k), 1) << "A's values are tf32 values";
            auto x = values(40 * 64, 7, c.scale);
            if (std::string(c.name).find("choice") != std::string::npos) {
                // columns 32.. of A are 0.5: the reference reads them from X's copy set to 0.5
                for (size_t e = 0; e < x.size(); ++e)
                    if (e % 64 >= 32) x[e] = 0.5;
            }
            expectProduct(*k, x, c.ref);
        }
    }
}

TEST(LowerSimTf32Exact, OtherFloatValuesAreRounded) {
    const std::vector<std::pair<const char *, std::string>> cases = {
        {"a product", "        for i, j in T.Parallel(32, 64):\n            a[i, j] = T.cast(x16[i, j], \"float32\") * 1.1\n"},
        {"a float constant", "        T.fill(a, 0.1)\n"},
        {"a copy of a float tile", "        T.copy(fs, a)\n"},
        {"a float fragment rounded itself", "        T.copy(fs, xf)\n        T.copy(xf, a)\n"},
        {"a float64 conversion", "        for i, j in T.Parallel(32, 64):\n"
                                 "            a[i, j] = T.cast(T.cast(x16[i, j], \"float64\") / 3.0, \"float32\")\n"},
    };
    for (auto &[name, fill] : cases) {
        SCOPED_TRACE(name);
        LowerRun r;
        r.run(source("bfloat16", fill), "t.tile", *Target::parse("sm_80"));
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k) << r.diags();
        Gemms g;
        g.visit(k->body);
        ASSERT_GE(g.rs.size(), 1u);
        for (auto *c : g.rs) EXPECT_EQ(constInt(lib::arg(*c, fnOf(*c), "exactA")), std::optional<int64_t>(0));
    }
}

/// Sets every gemm_rs's exactA to 1.
struct ForceExact : ir::IRMutator {
    using IRMutator::visit;
    ir::Expr visit(const std::shared_ptr<const ir::Call> &op) override {
        if (!lib::is(*op, lib::Fn::GemmRS) && !lib::is(*op, lib::Fn::GemmRSPanels)) return IRMutator::visit(op);
        auto args = op->args;
        const auto &names = lib::info(fnOf(*op)).args;
        for (size_t i = 0; i < names.size(); ++i)
            if (std::string(names[i]) == "exactA") args[i] = ir::IntImm::make(DType::Int32, 1);
        return ir::Call::make(op->dtype, op->name, std::move(args), op->loc);
    }
};

TEST(LowerSimTf32Exact, TheSimulatorChecksTheClaim) {
    LowerRun r;
    r.run(source("bfloat16", "        for i, j in T.Parallel(32, 64):\n"
                             "            a[i, j] = T.cast(x16[i, j], \"float32\") * 1.1\n"),
          "t.tile", *Target::parse("sm_80"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    ASSERT_EQ(exactA(*k), 0);
    ForceExact force;
    auto forced = std::make_shared<ir::Kernel>(*k);
    forced->body = force.mutate(k->body);
    ASSERT_EQ(exactA(*forced), 1);
    auto x = values(40 * 64, 7, 1.0 / 64), f = values(32 * 64, 9, 1.0 / 16);
    std::vector<double> c(40 * 32, std::nan(""));
    Simulator sim(*forced, {{"X", &x}, {"F", &f}, {"C", &c}}, {{"n", 40.0}});
    try {
        sim.run();
        ADD_FAILURE() << "a gemm_rs told its A is tf32 whose A is not ran without complaint";
    } catch (const simtest::SimError &e) {
        EXPECT_NE(std::string(e.what()).find("tf32"), std::string::npos) << e.what();
    }
}

} // namespace
