/// \file
/// Private to src/lsp/: what the language server's parts share. Server.cpp speaks the protocol and keeps the
/// documents; Analysis.cpp runs the compiler on one document; Positions.cpp converts between tilec's source
/// ranges (1-based, byte columns) and the protocol's (0-based, UTF-16 columns); Hover.cpp and Definition.cpp
/// answer the requests from an analysis.
#pragma once

#include "support/Json.h"

#include "tilec/AST.h"
#include "tilec/Diagnostics.h"
#include "tilec/Lsp.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::lsp {

using json::Value;

// ---- Positions.cpp ----

/// A protocol position: 0-based line, 0-based column in UTF-16 code units.
struct Position {
    int line = 0, character = 0;
};

/// Line `line0` (0-based) of `text` without its line break ("" past the end).
std::string_view lineAt(std::string_view text, int line0);
/// UTF-16 code units in the first `bytes` bytes of `line` (a byte that is not valid UTF-8 counts as one).
int utf16Units(std::string_view line, size_t bytes);
/// The byte offset in `line` where UTF-16 column `units` starts (the line's end when past it).
size_t byteOffset(std::string_view line, int units);
/// The protocol's range of `r` (tilec's, in `text`); an empty range at the start of the file when `r` has
/// no location, a one-character range when it has no end.
Value rangeJson(std::string_view text, const SourceRange &r);
Value positionJson(int line, int character);
/// The position of a request's `params.position`; throws std::invalid_argument when it is malformed.
Position positionOf(const Value &params);

/// `file:///a%20b/c.tile` -> `/a b/c.tile`; "" for another scheme.
std::string pathFromUri(const std::string &uri);
/// `/a b/c.tile` -> `file:///a%20b/c.tile` (relative paths are made absolute first).
std::string uriFromPath(const std::string &path);

/// Whether byte `c` can be part of a Python identifier (ASCII letters, digits, '_', and any non-ASCII byte).
bool identifierByte(unsigned char c);
/// The dotted name around (`b` in `a.b.c`: "a.b") or just before byte `col` of `line`: its components, the
/// last one the word at `col` (possibly partial, up to `col` when `upToCursor`). Empty when there is none.
std::vector<std::string> dottedNameAt(std::string_view line, size_t col, bool upToCursor = false);
/// The first occurrence of identifier `name` as a whole word in file `file` at or after (line, col) (tilec's
/// 1-based positions) and not past line `lastLine`, or an invalid range.
SourceRange findWord(const SourceManager &sm, int file, int line, int col, const std::string &name, int lastLine);

// ---- Analysis.cpp ----

struct Note {
    SourceRange range;
    std::string message;
};

/// One error or warning with the notes that followed it.
struct Diagnostic {
    Severity severity = Severity::Error;
    SourceRange range;
    std::string message;
    std::vector<Note> notes;
};

/// What hover says of one buffer of one kernel (a prim_func instantiated twice has two).
struct BufferFacts {
    std::string kernel, name;
    SourceRange loc; ///< the parameter or the alloc_* call
    std::string text; ///< the hover's Markdown for this kernel's buffer
};

/// One run of the compiler over a document's text.
struct Analysis {
    std::shared_ptr<SourceManager> sources; ///< file 0 is the document; imported modules follow
    std::vector<Diagnostic> diagnostics;
    std::shared_ptr<const ast::Module> module; ///< null when the document does not parse
    bool evaluated = false;                    ///< the front end succeeded: `buffers` is meaningful
    std::vector<BufferFacts> buffers;
};

/// How documents are compiled: the targets (the front end checks against the lowest, lowering runs for
/// each) and the module search path.
struct Settings {
    std::vector<std::string> archs{Target::kDefaultName};
    std::vector<std::string> importDirs;
};

/// Parses, evaluates, checks and lowers (no code generation) `text`, the document at `path` ("" when it is
/// not a file: imports then look in the -I folders only). Never throws.
Analysis analyze(const std::string &path, const std::string &text, const Settings &s);

// ---- Hover.cpp ----

/// The hover's Markdown for the word at `pos` of `text` from `a` (the last analysis that evaluated), or "".
std::string hoverText(const Analysis &a, std::string_view text, Position pos);
/// Completion items for the word before `pos` when it follows `T.` (or whatever name the document binds
/// `tilelang.language` to): every name the front end resolves in that module. Null when not after one.
Value completions(const Analysis *a, std::string_view text, Position pos);

// ---- Definition.cpp ----

/// The first and last line (tilec's, 1-based) of the innermost `def` around line `line`, or nullopt.
std::optional<std::pair<int, int>> enclosingFunction(const ast::Module &module, int line);

/// The protocol Location (or null) where the name at `pos` of the document is defined: a binding of the
/// enclosing functions or the module, followed through `import`s into the user's modules. `module` is the
/// document's last parsed syntax tree and `sm` its sources (file 0 the document); `path` its file.
Value definition(const ast::Module &module, const SourceManager &sm, const std::string &uri, const std::string &path,
                 std::string_view text, Position pos, const Settings &s);

} // namespace tilec::lsp
