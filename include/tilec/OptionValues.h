/// \file
/// The command line's values that are Python (`-D NAME=VALUE`, `--export NAME=CALL`, --tuned's calls) turned
/// into the front end's options, once for `tilec` and `tilec tune`.
#pragma once

#include "tilec/Frontend.h"

#include <string>
#include <string_view>
#include <vector>

namespace tilec {

/// A C and Python identifier: a letter or '_', then letters, digits and '_'.
bool isIdentifier(std::string_view s);

/// Parses an option's VALUE or CALL as a Python expression kept in a SourceManager file of its own, named
/// "<WHAT>", so that its diagnostics point into the option's text; with `bareIsString`, a bare identifier (not
/// True, False or None) is a string. Null when it does not parse (reported through `diag`).
ast::ExprP parseOptionValue(SourceManager &sm, DiagnosticEngine &diag, const std::string &text, const std::string &what,
                            bool bareIsString, SourceRange &range);

/// Adds `-D NAME=VALUE` options (as written) to `fo.defines` and `--export NAME=CALL` options to `fo.exports`.
/// Throws std::invalid_argument, with the message to print, for one that is not NAME=VALUE with NAME an
/// identifier; one whose value does not parse is reported through `diag` and left out.
void addDefines(FrontendOptions &fo, const std::vector<std::string> &defines, SourceManager &sm, DiagnosticEngine &diag);
void addExports(FrontendOptions &fo, const std::vector<std::string> &exports, SourceManager &sm, DiagnosticEngine &diag);

} // namespace tilec
