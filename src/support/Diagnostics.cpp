/// \file
/// Diagnostic printing in clang's format, and internal errors.
#include "tilec/Diagnostics.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace tilec {

SourceRange SourceRange::span(const SourceRange &a, const SourceRange &b) {
    if (!a.valid()) return b;
    if (!b.valid() || a.file != b.file) return a;
    SourceRange r = a;
    r.endLine = b.endLine;
    r.endCol = b.endCol;
    return r;
}

int SourceManager::add(std::string name, std::string text) {
    File f{std::move(name), std::move(text), {0}};
    for (size_t i = 0; i < f.text.size(); ++i)
        if (f.text[i] == '\n') f.lineStarts.push_back(i + 1);
    files_.push_back(std::move(f));
    return (int)files_.size() - 1;
}

std::string_view SourceManager::line(int file, int line) const {
    if (file < 0 || file >= (int)files_.size()) return {};
    const File &f = files_[file];
    if (line < 1 || line > (int)f.lineStarts.size()) return {};
    size_t b = f.lineStarts[line - 1];
    if (b > f.text.size()) return {};
    size_t e = f.text.find('\n', b);
    if (e == std::string::npos) e = f.text.size();
    if (e > b && f.text[e - 1] == '\r') --e;
    return std::string_view(f.text).substr(b, e - b);
}

namespace {
/// Replace bytes that would garble a terminal (control characters, invalid input) with '?'.
std::string printable(std::string_view s) {
    std::string r;
    r.reserve(s.size());
    for (unsigned char c : s) r += (c == '\t' || (c >= 0x20 && c != 0x7f)) ? (char)c : '?';
    return r;
}
} // namespace

std::vector<HeldDiagnostic> DiagnosticEngine::endHold() {
    if (holdMarks_.empty()) return {};
    size_t mark = holdMarks_.back();
    holdMarks_.pop_back();
    std::vector<HeldDiagnostic> out(held_.begin() + (std::ptrdiff_t)mark, held_.end());
    held_.resize(mark);
    for (auto &d : out) {
        if (d.severity == Severity::Error || (d.severity == Severity::Warning && werror_)) --errors_;
        else if (d.severity == Severity::Warning) --warnings_;
    }
    return out;
}

void DiagnosticEngine::report(Severity s, const SourceRange &r, const std::string &msg) {
    if (!holdMarks_.empty()) {
        held_.push_back({s, r, msg});
        if (s == Severity::Error || (s == Severity::Warning && werror_)) ++errors_;
        else if (s == Severity::Warning) ++warnings_;
        return;
    }
    bool promoted = false;
    if (s == Severity::Note) {
        if (lastSuppressed_) return;
    } else if (s == Severity::Warning) {
        if (noWarn_) {
            lastSuppressed_ = true;
            return;
        }
        if (werror_) {
            s = Severity::Error;
            promoted = true;
        }
    }
    if (s != Severity::Note) lastSuppressed_ = false;
    if (s == Severity::Error && errorLimit_ > 0 && errors_ >= errorLimit_) throw TooManyErrors{};
    if (sink_) {
        sink_(EmittedDiagnostic{s, r, msg, promoted, currentPhase()});
        if (s == Severity::Error) ++errors_;
        if (s == Severity::Warning) ++warnings_;
        return;
    }
    if (consumer_) consumer_(s, r, promoted ? msg + " [-Werror]" : msg);
    else print(s, r, msg, promoted);
    if (s == Severity::Error) ++errors_;
    if (s == Severity::Warning) ++warnings_;
}

void DiagnosticEngine::print(Severity s, const SourceRange &r, const std::string &msg, bool promoted) {
    const char *label = s == Severity::Error ? "error" : s == Severity::Warning ? "warning" : "note";
    const char *colorOn = !color_ ? "" : s == Severity::Error ? "\033[1;31m" : s == Severity::Warning ? "\033[1;35m" : "\033[1;36m";
    const char *bold = color_ ? "\033[1m" : "", *reset = color_ ? "\033[0m" : "";
    // A range into a file this engine's SourceManager does not hold (a scratch engine that only counts errors,
    // ownRegisterNest's) is printed without its place, never looked up past the files.
    const bool located = r.valid() && r.file < sm_.fileCount();
    if (located) {
        out_ << bold << sm_.name(r.file) << ":" << r.line << ":" << r.col << ": " << reset;
    } else {
        out_ << bold << "tilec: " << reset;
    }
    out_ << colorOn << label << ": " << reset << bold << msg << reset;
    if (promoted) out_ << " [-Werror]";
    out_ << "\n";
    if (located) {
        std::string_view line = sm_.line(r.file, r.line);
        if (!line.empty() || r.col == 1) {
            out_ << printable(line) << "\n";
            // The underline keeps tabs so it lines up with the source line as printed.
            std::string ul;
            int start = std::max(1, r.col);
            for (int i = 1; i < start && i <= (int)line.size(); ++i) ul += line[i - 1] == '\t' ? '\t' : ' ';
            int end = (r.endLine == r.line && r.endCol > start) ? r.endCol : (r.endLine > r.line ? (int)line.size() + 1 : start + 1);
            if (end <= start) end = start + 1;
            ul += '^';
            for (int i = start + 1; i < end; ++i) ul += '~';
            out_ << (color_ ? "\033[1;32m" : "") << ul << reset << "\n";
        }
    }
}

namespace {
thread_local const char *g_phase = "driver";
}
void setCurrentPhase(const char *name) { g_phase = name; }
const char *currentPhase() { return g_phase; }

void setRemarks(bool on) {
    spdlog::set_pattern("%v"); // the remark's own text, no timestamp or level
    spdlog::set_level(on ? spdlog::level::debug : spdlog::level::info);
}

void remark(const SourceManager *sources, const SourceRange &at, const std::string &msg) {
    if (!spdlog::should_log(spdlog::level::debug)) return;
    if (sources && at.valid() && at.file < sources->fileCount())
        spdlog::debug("{}:{}:{}: remark: {}", sources->name(at.file), at.line, at.col, msg);
    else
        spdlog::debug("tilec: remark: {}", msg);
}

void internalError(const char *file, int line, const std::string &msg) {
    std::string f = file;
    // Print the path relative to the source tree, never an absolute build path.
    if (auto p = f.rfind("/src/"); p != std::string::npos) f = f.substr(p + 1);
    else if (auto q = f.rfind("/include/"); q != std::string::npos) f = f.substr(q + 1);
    throw InternalError("internal error: in " + std::string(g_phase) + " (" + f + ":" + std::to_string(line) +
                        "): " + msg);
}

} // namespace tilec
