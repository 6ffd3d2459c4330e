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

} // namespace tilec::codegen
