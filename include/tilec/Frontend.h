/// \file
/// From a parsed module to the typed, checked kernels it exports.
#pragma once

#include "tilec/AST.h"
#include "tilec/IR.h"
#include "tilec/Target.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilec {

struct FrontendOptions {
    /// `-D NAME=VALUE`: VALUE is a Python literal; a bare identifier is a string. Each entry's range
    /// points into a SourceManager file holding the option's text (for diagnostics).
    struct Define {
        std::string name;
        ast::ExprP value;
        SourceRange range;
    };
    std::vector<Define> defines;
    /// `--export NAME=CALL`: evaluated after the module, as if `NAME = CALL` ended the file.
    struct Export {
        std::string name;
        ast::ExprP call;
        SourceRange range;
    };
    std::vector<Export> exports;
    std::vector<std::string> kernels; ///< --kernel: only these (empty: all)
    Target target;                    ///< the lowest target of -arch: limits for the checks
    int64_t stepBudget = 20'000'000;  ///< evaluation steps before "exceeds its step budget"
    int recursionLimit = 200;         ///< nested calls
    /// The user's modules: the main file's path ("" for standard input; its folder, or its package's root,
    /// is where imports look first), then `-I` folders and TILEC_PATH entries in order. Imported files are
    /// added to `sources` (the diagnostic engine's; null: no module of the user's is loaded, imports of
    /// them are opaque) and their paths appended to `importedFiles` (for -MD) when it is set.
    std::string mainPath;
    std::vector<std::string> importDirs;
    SourceManager *sources = nullptr;
    std::vector<std::string> *importedFiles = nullptr;
};

/// Evaluates the module (src/eval/) and returns every exported kernel in export order. Reports user errors
/// through `diag`; the result is empty when there was any.
std::optional<ir::Program> evaluateModule(const ast::Module &m, const FrontendOptions &opts, DiagnosticEngine &diag);

} // namespace tilec
