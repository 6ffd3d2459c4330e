/// \file
/// `tilec lsp`: a Language Server Protocol server on standard input and output (src/lsp/). It reports what
/// tilec itself finds while the user types — syntax errors, the front end's errors, the lowering's checks for
/// the target — and answers hover (a buffer's shape, dtype, scope, layout and shared memory), completion of
/// `T.` names and go to definition across the user's modules.
#pragma once

#include "tilec/Target.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace tilec {

struct LspOptions {
    std::vector<std::string> archs{Target::kDefaultName}; ///< -arch, or initializationOptions.arch
    std::vector<std::string> importDirs;      ///< -I, or initializationOptions.importDirs (then TILEC_PATH)
    int debounceMs = 200;                     ///< an analysis starts this long after a document's last change
};

/// Serves one client: reads JSON-RPC messages with Content-Length headers from `in`, writes responses and
/// notifications to `out`, and logs what it could not handle to `log`. Returns when the client sends `exit`
/// or closes `in`: 0 after a `shutdown` request, else 1 (as the protocol says).
int runLanguageServer(const LspOptions &opts, std::istream &in, std::ostream &out, std::ostream &log);

} // namespace tilec
