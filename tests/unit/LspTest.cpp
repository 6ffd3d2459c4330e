/// \file
/// The language server's text handling (src/lsp/Positions.cpp) and the JSON it speaks (src/support/Json.cpp):
/// UTF-16 columns, URIs, dotted names, escapes. The protocol itself is tested over stdio (tests/lsp/).
#include "lsp/LspImpl.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace tilec;
using namespace tilec::lsp;

TEST(LspPositions, Utf16ColumnsCountSurrogatePairsTwice) {
    std::string line = "x = \"h\xC3\xA9llo \xF0\x9F\x98\x80\" + )"; // "héllo 😀"
    size_t paren = line.find(')');
    EXPECT_EQ(paren, 20u);
    EXPECT_EQ(utf16Units(line, paren), 17); // 'é' is 2 bytes and 1 unit, '😀' 4 bytes and 2 units
    EXPECT_EQ(byteOffset(line, 17), paren);
    // Inside a surrogate pair or past the end: the next character boundary, the line's end.
    EXPECT_EQ(byteOffset(line, 12), line.find('\xF0') + 4);
    EXPECT_EQ(byteOffset(line, 1000), line.size());
    // A byte that is not UTF-8 counts as one unit.
    EXPECT_EQ(utf16Units("\xFF\xFE" "a", 3), 3);
}

TEST(LspPositions, RangesConvertLinesAndColumns) {
    std::string text = "a\n\xC3\xA9 = b\n";
    SourceRange r;
    r.file = 0, r.line = r.endLine = 2, r.col = 6, r.endCol = 7; // `b`
    EXPECT_EQ(json::writeCompact(rangeJson(text, r)),
              R"({"start":{"line":1,"character":4},"end":{"line":1,"character":5}})");
    r.endLine = 0; // no end: one character
    EXPECT_EQ(json::writeCompact(rangeJson(text, r)),
              R"({"start":{"line":1,"character":4},"end":{"line":1,"character":5}})");
    EXPECT_EQ(json::writeCompact(rangeJson(text, SourceRange{})),
              R"({"start":{"line":0,"character":0},"end":{"line":0,"character":0}})");
}

TEST(LspPositions, UrisRoundTrip) {
    EXPECT_EQ(uriFromPath("/tmp/my kernel%.tile"), "file:///tmp/my%20kernel%25.tile");
    EXPECT_EQ(pathFromUri("file:///tmp/my%20kernel%25.tile"), "/tmp/my kernel%.tile");
    EXPECT_EQ(pathFromUri("file://localhost/a/b.tile"), "/a/b.tile");
    EXPECT_EQ(pathFromUri("untitled:Untitled-1"), "");
    EXPECT_EQ(pathFromUri("file:///bad%zzescape"), "/bad%zzescape");
}

TEST(LspPositions, DottedNames) {
    std::string_view line = "    T.gemm(A_shared, mod.sub.f)";
    EXPECT_EQ(dottedNameAt(line, 8), (std::vector<std::string>{"T", "gemm"}));
    EXPECT_EQ(dottedNameAt(line, 4), (std::vector<std::string>{"T"}));
    EXPECT_EQ(dottedNameAt(line, 29), (std::vector<std::string>{"mod", "sub", "f"}));
    EXPECT_EQ(dottedNameAt(line, 26), (std::vector<std::string>{"mod", "sub"}));
    EXPECT_TRUE(dottedNameAt(line, 0).empty());
    // Completion: the word up to the cursor, possibly empty after the dot.
    EXPECT_EQ(dottedNameAt("T.", 2, true), (std::vector<std::string>{"T", ""}));
    EXPECT_EQ(dottedNameAt("T.gemm", 4, true), (std::vector<std::string>{"T", "ge"}));
}

TEST(Json, SurrogatePairsAndBadEscapes) {
    EXPECT_EQ(json::parse(R"("\ud83d\ude00")").str, "\xF0\x9F\x98\x80");
    EXPECT_EQ(json::parse(R"("\u00e9")").str, "\xC3\xA9");
    EXPECT_EQ(json::parse(R"("\ud83d")").str, "\xEF\xBF\xBD"); // a lone surrogate
    EXPECT_THROW(json::parse(R"("\u12zz")"), std::invalid_argument);
    EXPECT_THROW(json::parse(R"("\u12")"), std::invalid_argument);
    EXPECT_THROW(json::parse("{\"a\":"), std::invalid_argument);
    EXPECT_THROW(json::parse("1e999"), std::invalid_argument);
}

TEST(Json, CompactAndAlwaysUtf8) {
    json::Value v = json::Value::object();
    v.set("id", json::Value::number(7)).set("s", json::Value::string("a\"\n\xC3\xA9\xFF"));
    v.set("list", json::Value::array());
    EXPECT_EQ(json::writeCompact(v), "{\"id\":7,\"s\":\"a\\\"\\n\xC3\xA9\xEF\xBF\xBD\",\"list\":[]}");
    EXPECT_EQ(json::parse(json::writeCompact(v)).at("s").str, "a\"\n\xC3\xA9\xEF\xBF\xBD");
}
