// The target table, the lowering switches and the pipeline's table of passes (issue 26): what each promises.
#include "tilec/Driver.h"
#include "tilec/IR.h"
#include "tilec/Lower.h"
#include "tilec/LoweringOptions.h"
#include "tilec/Lsp.h"
#include "tilec/OptionValues.h"
#include "tilec/SharedMemory.h"
#include "tilec/Target.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace tilec;

TEST(Target, EveryKnownNameRoundTrips) {
    ASSERT_FALSE(Target::known().empty());
    std::set<std::string> names;
    for (const Target &t : Target::known()) {
        auto back = Target::parse(t.name);
        ASSERT_TRUE(back) << t.name;
        EXPECT_EQ(*back, t) << t.name;
        EXPECT_TRUE(names.insert(t.name).second) << t.name << " twice";
    }
    EXPECT_EQ(Target::knownNames(), "sm_80, sm_86, sm_89, sm_90, sm_90a");
    EXPECT_FALSE(Target::parse("sm_70"));
    EXPECT_FALSE(Target::parse("SM_90A"));
}

TEST(Target, TheDefaultIsNamedOnceAndIsItsRow) {
    // A default-constructed Target repeats the default row's numbers: they must agree with the table.
    EXPECT_EQ(Target(), Target::byDefault());
    EXPECT_EQ(Target::byDefault().name, Target::kDefaultName);
    EXPECT_EQ(DriverOptions().archs, std::vector<std::string>{Target::kDefaultName});
    EXPECT_EQ(LspOptions().archs, std::vector<std::string>{Target::kDefaultName});
}

TEST(Target, FeaturesAndLimits) {
    const Target a80 = *Target::parse("sm_80"), h90 = *Target::parse("sm_90"), h90a = *Target::parse("sm_90a");
    EXPECT_FALSE(a80.hasTmaUnit());
    EXPECT_TRUE(h90.hasTmaUnit());
    EXPECT_FALSE(h90.hasWgmma());
    EXPECT_TRUE(h90a.hasWgmma());
    EXPECT_EQ(h90a.virtualArch(), "compute_90a");
    EXPECT_EQ(a80.virtualArch(), "compute_80");
    EXPECT_EQ(a80.numSms, 108);
    const Target small = h90a.withSmCount(114);
    EXPECT_EQ(small.numSms, 114);
    EXPECT_EQ(small.name, "sm_90a");
    EXPECT_NE(small, h90a);
}

TEST(Target, ForDeviceTakesItsOwnElseTheNewestOlderPortableOne) {
    EXPECT_EQ(Target::forDevice(90)->name, "sm_90a");
    EXPECT_EQ(Target::forDevice(89)->name, "sm_89");
    EXPECT_EQ(Target::forDevice(87)->name, "sm_86");
    EXPECT_EQ(Target::forDevice(100)->name, "sm_90"); // PTX JIT: not the arch-specific sm_90a
    EXPECT_FALSE(Target::forDevice(75));
}

TEST(LoweringOptions, PassConfigsNarrowTheSwitchesPerKernel) {
    LoweringOptions o;
    ir::Kernel k;
    EXPECT_EQ(o.forKernel(k), o);
    k.noTma = true;
    EXPECT_FALSE(o.forKernel(k).tma);
    EXPECT_TRUE(o.forKernel(k).warpSpecialize);
    k.noWarpSpecialize = true;
    EXPECT_FALSE(o.forKernel(k).warpSpecialize);
    o.tma = false;
    k.noTma = false;
    EXPECT_FALSE(o.forKernel(k).tma); // a kernel cannot turn on what the command line turned off
    EXPECT_FALSE((Variant{*Target::parse("sm_90a"), o}.hasTma()));
    EXPECT_FALSE((Variant{*Target::parse("sm_80"), {}}.hasTma()));
    EXPECT_TRUE((Variant{*Target::parse("sm_90"), {}}.hasTma()));
}

TEST(Pipeline, OneTableNamesEveryPass) {
    const auto &rows = pipeline();
    const auto &names = passNames();
    ASSERT_EQ(rows.size(), names.size());
    for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(names[i], rows[i].name);
    // The front-end phases come first and only they have no `run`.
    EXPECT_TRUE(isFrontEndPhase("parse") && isFrontEndPhase("evaluate") && isFrontEndPhase("check"));
    EXPECT_FALSE(isFrontEndPhase("lowerGemm") || isFrontEndPhase("all"));
    bool lowering = false;
    for (auto &p : rows) {
        if (p.run) lowering = true;
        else EXPECT_FALSE(lowering) << p.name << " is a front-end phase after a pass";
        if (p.run) EXPECT_TRUE(p.enabled) << p.name;
    }
    EXPECT_EQ(std::string(rows.back().name), "planSharedMemory");
    // Switch-dependent passes run exactly when their switch is on.
    auto row = [&](const char *n) {
        return *std::find_if(rows.begin(), rows.end(), [&](const Pass &p) { return std::string(p.name) == n; });
    };
    // By default overlapScores runs and decides per loop by the head dimension (turns included);
    // pingPongConsumers gives turns to the loops it left only on --pingpong.
    LoweringOptions o;
    EXPECT_FALSE(row("pingPongConsumers").enabled(o));
    EXPECT_TRUE(row("overlapScores").enabled(o));
    o.pingPong = Choice::On;
    EXPECT_TRUE(row("pingPongConsumers").enabled(o));
    o.intraOverlap = Choice::Off;
    EXPECT_TRUE(row("pingPongConsumers").enabled(o));
    EXPECT_FALSE(row("overlapScores").enabled(o));
    o.pingPong = Choice::Off;
    EXPECT_FALSE(row("pingPongConsumers").enabled(o));
    EXPECT_TRUE(row("lowerGemm").enabled(o));
    // storeMatrices runs by default (on targets with stmatrix, its own test); --no-stmatrix-copies turns it off.
    EXPECT_TRUE(row("storeMatrices").enabled(o));
    o.stmatrixCopies = false;
    EXPECT_FALSE(row("storeMatrices").enabled(o));
    EXPECT_TRUE(Target::parse("sm_90")->hasStmatrix() && Target::parse("sm_90a")->hasStmatrix());
    EXPECT_FALSE(Target::parse("sm_80")->hasStmatrix() || Target::parse("sm_89")->hasStmatrix());
}

// The attention schedule each setting of the two switches gives a loop, by its head dimension.
TEST(LoweringOptions, AttentionSchedule) {
    LoweringOptions o; // both Auto: FlashAttention-3's schedule from head dimension 128 on
    EXPECT_FALSE(o.attentionSchedule(64).any());
    EXPECT_TRUE(o.attentionSchedule(128).overlap && o.attentionSchedule(128).turns);
    EXPECT_TRUE(o.attentionSchedule(256).overlap && o.attentionSchedule(256).turns);
    o.pingPong = Choice::Off; // --no-pingpong
    EXPECT_TRUE(o.attentionSchedule(128).overlap && !o.attentionSchedule(128).turns);
    o.pingPong = Choice::On; // --pingpong: turns everywhere, the overlap still by head dimension
    EXPECT_TRUE(o.attentionSchedule(64).turns && !o.attentionSchedule(64).overlap);
    o.intraOverlap = Choice::Off; // --no-intra-overlap
    EXPECT_FALSE(o.attentionSchedule(256).overlap);
    o = LoweringOptions{};
    o.intraOverlap = Choice::On; // --intra-overlap alone: turns still by head dimension
    EXPECT_TRUE(o.attentionSchedule(64).overlap && !o.attentionSchedule(64).turns);
    EXPECT_TRUE(o.attentionSchedule(128).turns);
}

TEST(SharedMemory, BudgetArithmetic) {
    const Target a80 = *Target::parse("sm_80"), h90a = *Target::parse("sm_90a");
    EXPECT_EQ(smem::roundUp(1, 1024), 1024);
    EXPECT_EQ(smem::roundUp(2048, 1024), 2048);
    // 164 KiB per SM on sm_80: two blocks of 81 KiB (plus 1 KiB each the system keeps) fit, of 82 KiB not.
    EXPECT_TRUE(smem::fitsSm(a80, 81 * 1024, 2));
    EXPECT_FALSE(smem::fitsSm(a80, 82 * 1024, 2));
    EXPECT_EQ(smem::blocksPerSm(a80, 81 * 1024), 2);
    EXPECT_TRUE(smem::fits(h90a, h90a.maxSharedPerBlock, 1));
    EXPECT_FALSE(smem::fits(h90a, h90a.maxSharedPerBlock + 1, 1));
}

TEST(OptionValues, IdentifiersAndMalformedOptions) {
    EXPECT_TRUE(isIdentifier("_a1"));
    EXPECT_FALSE(isIdentifier("1a"));
    EXPECT_FALSE(isIdentifier("x-y"));
    EXPECT_FALSE(isIdentifier(""));
    SourceManager sm;
    std::ostringstream err;
    DiagnosticEngine diag(sm, err);
    FrontendOptions fo;
    addDefines(fo, {"M=4096", "dtype=bfloat16"}, sm, diag);
    ASSERT_EQ(fo.defines.size(), 2u);
    EXPECT_EQ(fo.defines[1].value->kind, ast::ExprKind::Str); // a bare identifier is a string
    EXPECT_EQ(fo.defines[1].value->str, "bfloat16");
    EXPECT_THROW(addDefines(fo, {"x-y=1"}, sm, diag), std::invalid_argument);
    EXPECT_THROW(addExports(fo, {"=f()"}, sm, diag), std::invalid_argument);
    addExports(fo, {"g=f(1"}, sm, diag); // does not parse: reported, left out
    EXPECT_TRUE(diag.hasErrors());
    EXPECT_TRUE(fo.exports.empty());
}
