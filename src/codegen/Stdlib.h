/// \file
/// The device runtime of stdlib/tilec/*.cuh, embedded at build time (cmake/EmbedStdlib.cmake).
#pragma once

#include <string>
#include <vector>

namespace tilec::codegen {

struct StdlibFile {
    const char *name; ///< "tilec/types.cuh"
    const char *text;
};

/// Every stdlib file, sorted by name.
const std::vector<StdlibFile> &stdlibFiles();

/// What generated code embeds: the files that the umbrella tilec/tilec.cuh includes, each after the tilec/
/// files it includes (depth first, in the order of its #include lines), each once, with those #include lines
/// removed (the file they name is embedded before); the umbrella itself, which only includes, is not.
struct EmbeddedStdlibFile {
    std::string name; ///< "tilec/types.cuh"
    std::string text;
};
const std::vector<EmbeddedStdlibFile> &embeddedStdlib();

} // namespace tilec::codegen
