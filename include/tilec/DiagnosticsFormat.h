/// \file
/// Machine-readable diagnostics (-fdiagnostics-format=json|sarif): every diagnostic of a compilation, collected
/// from the engine (DiagnosticEngine::setSink) and from the driver (command-line and internal errors), written as
/// one document when the compilation ends.
///
/// json:  gcc's layout: an array of {kind, message, locations: [{caret, finish}], children: [notes]}, plus
///        "phase" (the pass that reported it) and "option": "-Werror" for a promoted warning.
/// sarif: SARIF 2.1.0, one run; a result per error or warning (ruleId: the phase, level, message, locations
///        with a region), its notes as relatedLocations.
#pragma once

#include "tilec/Diagnostics.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec {

enum class DiagnosticsFormat { Text, Json, Sarif };

/// "text", "json" or "sarif"; nothing for another word.
std::optional<DiagnosticsFormat> parseDiagnosticsFormat(std::string_view s);

class DiagnosticLog {
  public:
    explicit DiagnosticLog(DiagnosticsFormat f) : format_(f) {}
    /// A note joins the error or warning before it (a note with none before is a result of its own).
    void add(const EmittedDiagnostic &d);
    /// The document: `sources` names the files of the ranges; `version` is tilec's.
    std::string render(const SourceManager &sources, const std::string &version) const;

  private:
    struct Entry {
        EmittedDiagnostic d;
        std::vector<EmittedDiagnostic> notes;
    };
    DiagnosticsFormat format_;
    std::vector<Entry> entries_;
};

} // namespace tilec
