/// \file
/// Parsing a .tile file into the syntax tree (ANTLR grammar grammar/Tile.g4).
#pragma once

#include "tilec/AST.h"

#include <optional>

namespace tilec {

/// Parses file `file` of the diagnostic engine's SourceManager. Reports every syntax error it finds
/// (invalid UTF-8, binary input, bad indentation, inconsistent tabs, unbalanced brackets, missing `:`...)
/// and returns std::nullopt when there was any. Never throws on bad input.
std::optional<ast::Module> parseModule(int file, DiagnosticEngine &diag);

} // namespace tilec

namespace tilec {
/// Parses the whole of file `file` as one expression (a `-D` value or an `--export` call).
/// Reports syntax errors and returns null when there was any.
ast::ExprP parseExpression(int file, DiagnosticEngine &diag);
} // namespace tilec
