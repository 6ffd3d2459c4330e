/// \file
/// Source files, source ranges and the diagnostic engine.
///
/// User errors (the input's fault) go through DiagnosticEngine and always carry a SourceRange; they print
/// like clang: `file:line:col: error: message`, the source line, and a `^~~~` underline. Internal errors (our
/// bug) go through TILEC_ASSERT / internalError() and never through the engine.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tilec {

/// A half-open range of source text. Lines and columns are 1-based; columns count bytes. `file` indexes
/// SourceManager; -1 means "no location" (command-line errors).
struct SourceRange {
    int file = -1;
    int line = 0, col = 0;
    int endLine = 0, endCol = 0; ///< exclusive end column on endLine
    bool valid() const { return file >= 0 && line > 0; }
    /// The range from the start of `a` to the end of `b`.
    static SourceRange span(const SourceRange &a, const SourceRange &b);
};

/// Owns the text of every file the compiler reads, so diagnostics can show source lines.
class SourceManager {
  public:
    /// Adds a file's text; returns its id. `name` is printed in diagnostics exactly as given.
    int add(std::string name, std::string text);
    const std::string &name(int file) const { return files_.at(file).name; }
    const std::string &text(int file) const { return files_.at(file).text; }
    /// The text of 1-based line `line` without its newline ("" when out of range).
    std::string_view line(int file, int line) const;
    int fileCount() const { return (int)files_.size(); }

  private:
    struct File {
        std::string name, text;
        std::vector<size_t> lineStarts;
    };
    std::vector<File> files_;
};

enum class Severity { Note, Warning, Error };

/// A diagnostic kept while the engine holds them (DiagnosticEngine::hold).
struct HeldDiagnostic {
    Severity severity;
    SourceRange range;
    std::string message;
};

/// A diagnostic as the engine emits it, after -w, -Werror and the error limit: what a machine-readable format
/// (-fdiagnostics-format=json|sarif) writes. `phase` is the pass or phase that reported it (currentPhase()).
struct EmittedDiagnostic {
    Severity severity;
    SourceRange range;
    std::string message;
    bool promoted = false; ///< a warning made an error by -Werror
    std::string phase;
};

/// Thrown when --error-limit is reached; the driver catches it and stops.
struct TooManyErrors {};

/// Collects and prints diagnostics. Not thread-safe (one per compilation).
class DiagnosticEngine {
  public:
    DiagnosticEngine(const SourceManager &sm, std::ostream &out) : sm_(sm), out_(out) {}

    void setErrorLimit(int n) { errorLimit_ = n; }     ///< 0 = unlimited
    void setWarningsAsErrors(bool b) { werror_ = b; }  ///< -Werror
    void setSuppressWarnings(bool b) { noWarn_ = b; }  ///< -w
    void setColor(bool b) { color_ = b; }
    /// Receives each diagnostic instead of the stream (the language server): after -w and -Werror (the
    /// message then ends in " [-Werror]"), without the notes of suppressed warnings. Null: print them.
    using Consumer = std::function<void(Severity, const SourceRange &, const std::string &)>;
    void setConsumer(Consumer c) { consumer_ = std::move(c); }
    /// Hands every diagnostic it would print to `sink` instead of printing it (-fdiagnostics-format=json|sarif).
    void setSink(std::function<void(const EmittedDiagnostic &)> sink) { sink_ = std::move(sink); }

    void error(const SourceRange &r, const std::string &msg) { report(Severity::Error, r, msg); }
    void warning(const SourceRange &r, const std::string &msg) { report(Severity::Warning, r, msg); }
    /// A note attaches to the previous error/warning; it is dropped when that one was suppressed.
    void note(const SourceRange &r, const std::string &msg) { report(Severity::Note, r, msg); }
    void report(Severity s, const SourceRange &r, const std::string &msg);

    /// Keeps the diagnostics reported from now on instead of printing them (they are counted as usual, and
    /// not limited by --error-limit) until the matching endHold(), which returns them and takes them out of
    /// the counts: the caller reports them (or others in their place) through report(). Holds nest.
    void hold() { holdMarks_.push_back(held_.size()); }
    std::vector<HeldDiagnostic> endHold();
    bool holding() const { return !holdMarks_.empty(); }
    int errorCount() const { return errors_; }
    int warningCount() const { return warnings_; }
    bool hasErrors() const { return errors_ > 0; }
    const SourceManager &sources() const { return sm_; }

  private:
    void print(Severity s, const SourceRange &r, const std::string &msg, bool promoted);

    const SourceManager &sm_;
    std::ostream &out_;
    int errorLimit_ = 20;
    Consumer consumer_;
    bool werror_ = false, noWarn_ = false, color_ = false;
    bool lastSuppressed_ = false;
    std::vector<size_t> holdMarks_; ///< per open hold: where its diagnostics start in held_
    std::vector<HeldDiagnostic> held_;
    std::function<void(const EmittedDiagnostic &)> sink_;
    int errors_ = 0, warnings_ = 0;
};

/// Our own bug: carries where it was detected and which pass was running. Exit code 3.
struct InternalError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Name of the pass or phase now running ("parse", "evaluate", a pass name...), for internal-error messages.
void setCurrentPhase(const char *name);
const char *currentPhase();

/// A remark of -v (which path the lowering took, and why): `file:line:col: remark: msg` as clang prints them,
/// `tilec: remark: msg` where `at` is no location (or `sources` is null); nothing without -v.
void remark(const SourceManager *sources, const SourceRange &at, const std::string &msg);
/// Turns -v's remarks on (printed to standard error as they come) or off.
void setRemarks(bool on);

[[noreturn]] void internalError(const char *file, int line, const std::string &msg);

} // namespace tilec

/// Internal invariant. Failing it is a compiler bug, never a user error.
#define TILEC_ASSERT(cond, msg)                                                                              \
    do {                                                                                                     \
        if (!(cond))                                                                                         \
            ::tilec::internalError(__FILE__, __LINE__, std::string("assertion '" #cond "' failed: ") + (msg)); \
    } while (0)
