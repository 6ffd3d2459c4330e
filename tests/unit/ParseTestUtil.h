/// \file
/// The parser tests' one helper: a program parsed, with its diagnostics as printed.
#pragma once

#include "tilec/Parser.h"

#include <optional>
#include <sstream>
#include <string>

namespace tilec::test {

struct Parsed {
    std::optional<ast::Module> module;
    std::string diags;
};

inline Parsed parse(const std::string &text, const std::string &name = "t.tile") {
    SourceManager sm;
    int f = sm.add(name, text);
    std::ostringstream out;
    DiagnosticEngine d(sm, out);
    Parsed p;
    p.module = parseModule(f, d);
    p.diags = out.str();
    return p;
}

} // namespace tilec::test
