/// \file
/// The device runtime as generated code embeds it (src/codegen/Stdlib.cpp): every stdlib file once, each after
/// the tilec/ files it includes, none of those #include lines left (generated code compiles without stdlib/).
#include "codegen/Stdlib.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

using namespace tilec::codegen;

namespace {

TEST(Stdlib, EmbeddedInDependencyOrderEachOnce) {
    const auto &embedded = embeddedStdlib();
    auto position = [&](const std::string &name) {
        auto it = std::find_if(embedded.begin(), embedded.end(), [&](auto &f) { return f.name == name; });
        return it == embedded.end() ? -1 : (int)(it - embedded.begin());
    };
    std::regex include("#include \"([a-z0-9_]+\\.cuh)\""); // siblings by file name
    size_t files = 0;
    for (const StdlibFile &f : stdlibFiles()) {
        if (std::string(f.name) == "tilec/tilec.cuh") continue; // the umbrella: includes only
        ++files;
        SCOPED_TRACE(f.name);
        const int at = position(f.name);
        ASSERT_GE(at, 0) << "not embedded";
        std::string text = f.text;
        size_t includes = 0;
        for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it, ++includes) {
            const int dep = position("tilec/" + (*it)[1].str());
            EXPECT_GE(dep, 0) << (*it)[1];
            EXPECT_LT(dep, at) << (*it)[1] << " is embedded after the file that includes it";
        }
        EXPECT_FALSE(std::regex_search(embedded[(size_t)at].text, include)) << "an include line is left";
        // Only the include lines are dropped.
        EXPECT_LE(embedded[(size_t)at].text.size(), text.size());
        EXPECT_GE(embedded[(size_t)at].text.size() + includes * 40, text.size());
    }
    EXPECT_EQ(embedded.size(), files);
    // The files this test knows to depend on others come after them.
    EXPECT_LT(position("tilec/swizzle.cuh"), position("tilec/cp_async.cuh"));
    EXPECT_LT(position("tilec/mma_frag.cuh"), position("tilec/mma.cuh"));
    EXPECT_LT(position("tilec/tensor_map.cuh"), position("tilec/sm90_tma.cuh"));
}

} // namespace
