/// \file
/// The diagnostic engine prints clang-style messages with the source line and an underline.
#include "tilec/Diagnostics.h"

#include <gtest/gtest.h>
#include <sstream>

using namespace tilec;

TEST(Diagnostics, ErrorWithUnderline) {
    SourceManager sm;
    int f = sm.add("a.tile", "x = 1\ny = foo(2)\n");
    std::ostringstream out;
    DiagnosticEngine d(sm, out);
    d.error({f, 2, 5, 2, 8}, "undefined name 'foo'");
    EXPECT_EQ(out.str(), "a.tile:2:5: error: undefined name 'foo'\ny = foo(2)\n    ^~~\n");
    EXPECT_EQ(d.errorCount(), 1);
}

/// A scratch engine over a SourceManager without the program's file (LayoutUses' ownRegisterNest counts the errors
/// of a nest quietly) prints a range into that file without its place instead of looking the file up: the
/// differential fuzzer's seed 17 made the lookup throw, an internal error for a program with a located error.
TEST(Diagnostics, RangeIntoAFileTheManagerLacksPrintsUnlocated) {
    SourceManager sm;
    std::ostringstream out;
    DiagnosticEngine d(sm, out);
    EXPECT_NO_THROW(d.error({0, 3, 7, 3, 9}, "index 16 is past the end"));
    EXPECT_EQ(out.str(), "tilec: error: index 16 is past the end\n");
    EXPECT_EQ(d.errorCount(), 1);
}

TEST(Diagnostics, WerrorAndSuppressedWarnings) {
    SourceManager sm;
    int f = sm.add("a.tile", "x\n");
    std::ostringstream out;
    DiagnosticEngine d(sm, out);
    d.setSuppressWarnings(true);
    d.warning({f, 1, 1, 1, 2}, "w");
    d.note({f, 1, 1, 1, 2}, "dropped with its warning");
    EXPECT_EQ(out.str(), "");
    d.setSuppressWarnings(false);
    d.setWarningsAsErrors(true);
    d.warning({f, 1, 1, 1, 2}, "w");
    EXPECT_EQ(d.errorCount(), 1);
    EXPECT_NE(out.str().find("error: w [-Werror]"), std::string::npos);
}

TEST(Diagnostics, ErrorLimitStops) {
    SourceManager sm;
    int f = sm.add("a.tile", "x\n");
    std::ostringstream out;
    DiagnosticEngine d(sm, out);
    d.setErrorLimit(2);
    d.error({f, 1, 1, 1, 2}, "one");
    d.error({f, 1, 1, 1, 2}, "two");
    EXPECT_THROW(d.error({f, 1, 1, 1, 2}, "three"), TooManyErrors);
}
