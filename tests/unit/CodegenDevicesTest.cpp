/// \file
/// Where a variant runs (src/codegen/CodegenImpl.h's deviceTerms): the C condition the launchers and queries
/// print (runsOn) and the value the header's alignment documentation computes with (runsOnDevice) name the
/// same devices, and both say what the targets mean: sm_XYa code on X.Y alone, sm_XY code on X.Y and later.
#include "codegen/CodegenImpl.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace tilec;
using namespace tilec::codegen;

namespace {

Target target(const std::string &name) {
    if (auto t = Target::parse(name)) return *t;
    // A target the table does not list (a later GPU): only its compute capability and `a` matter here.
    Target t;
    t.name = name;
    t.archSpecific = name.back() == 'a';
    t.sm = std::stoi(name.substr(3, name.size() - 3 - (t.archSpecific ? 1 : 0)));
    return t;
}

/// The printed condition evaluated for `sm`: terms `x == N` / `x >= N` joined by ` || `, or `0`. Anything else
/// fails the test (the printer's form changed: this evaluator must follow it).
bool evaluate(const std::string &cond, const std::string &x, int sm) {
    if (cond == "0") return false;
    bool any = false;
    size_t at = 0;
    while (true) {
        size_t end = cond.find(" || ", at);
        std::string term = cond.substr(at, end == std::string::npos ? std::string::npos : end - at);
        EXPECT_EQ(term.rfind(x + " ", 0), 0u) << term;
        std::string op = term.substr(x.size() + 1, 2);
        int n = std::stoi(term.substr(x.size() + 4));
        EXPECT_TRUE(op == "==" || op == ">=") << term;
        any |= op == "==" ? sm == n : sm >= n;
        if (end == std::string::npos) return any;
        at = end + 4;
    }
}

/// What the targets mean, from their definition: some target's code runs on `sm`.
bool meaning(const std::vector<Target> &targets, int sm) {
    for (auto &t : targets)
        if (t.archSpecific ? sm == t.sm : sm >= t.sm) return true;
    return false;
}

const std::vector<std::vector<std::string>> kTargetLists = {
    {},
    {"sm_80"},
    {"sm_90a"},
    {"sm_80", "sm_90a"},
    {"sm_90a", "sm_80"},
    {"sm_90", "sm_90a"},
    {"sm_86", "sm_89", "sm_90"},
    {"sm_90a", "sm_100a"},
    {"sm_100a", "sm_90"},
    {"sm_80", "sm_90a", "sm_100a", "sm_120"},
    {"sm_90a", "sm_90a"},
};

} // namespace

TEST(CodegenDevices, PrintedConditionAndValueAgreeOnEveryDevice) {
    for (auto &names : kTargetLists) {
        KernelInfo v;
        for (auto &n : names) v.targets.push_back(target(n));
        const std::string cond = runsOn(v, "sm"), other = runsOn(v, "cc");
        for (int sm = 0; sm <= 200; ++sm) {
            SCOPED_TRACE(cond + " at sm " + std::to_string(sm));
            EXPECT_EQ(evaluate(cond, "sm", sm), runsOnDevice(v, sm));
            EXPECT_EQ(evaluate(other, "cc", sm), runsOnDevice(v, sm));
            EXPECT_EQ(runsOnDevice(v, sm), meaning(v.targets, sm));
        }
    }
}

TEST(CodegenDevices, TermsLeaveOutWhatAnOlderPortableTargetCovers) {
    KernelInfo v;
    for (auto n : {"sm_120a", "sm_100", "sm_90a", "sm_100"}) v.targets.push_back(target(n));
    // sm_120a runs where sm_100's code does; sm_90a is older, and sm_100 is named once.
    EXPECT_EQ(runsOn(v, "sm"), "sm >= 100 || sm == 90");
    KernelInfo none;
    EXPECT_EQ(runsOn(none, "sm"), "0");
    EXPECT_TRUE(deviceTerms(none).empty());
}
