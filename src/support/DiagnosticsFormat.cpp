/// \file
/// -fdiagnostics-format=json|sarif (include/tilec/DiagnosticsFormat.h).
#include "tilec/DiagnosticsFormat.h"

#include "support/Json.h"

#include <algorithm>

namespace tilec {

// json: tilec::json (src/support/Json.h)

namespace {

const char *kindName(Severity s) { return s == Severity::Error ? "error" : s == Severity::Warning ? "warning" : "note"; }

json::Value num(int n) { return json::Value::number(n); }

/// A file name as a SARIF URI reference: bytes other than unreserved characters and '/' percent-encoded (names
/// such as `<stdin>` or `<-D M>` are not URIs as they stand).
std::string uriOf(const std::string &name) {
    static const char *hex = "0123456789ABCDEF";
    std::string u;
    for (unsigned char c : name) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') u += (char)c;
        else u += std::string("%") + hex[c >> 4] + hex[c & 15];
    }
    return u;
}

/// The last column the range covers (gcc's "finish" is inclusive; ranges end exclusively).
int lastColumn(const SourceRange &r) { return std::max(r.col, (r.endLine == r.line ? r.endCol : r.col + 1) - 1); }

json::Value gccLocation(const SourceManager &sm, const SourceRange &r) {
    auto point = [&](int line, int col) {
        return json::Value::object().set("file", json::Value::string(sm.name(r.file))).set("line", num(line)).set("column", num(col));
    };
    int endLine = r.endLine >= r.line ? r.endLine : r.line;
    return json::Value::object().set("caret", point(r.line, r.col)).set("finish", point(endLine, endLine == r.line ? lastColumn(r) : std::max(1, r.endCol - 1)));
}

json::Value gccDiagnostic(const SourceManager &sm, const EmittedDiagnostic &d, const std::vector<EmittedDiagnostic> *notes) {
    json::Value v = json::Value::object();
    v.set("kind", json::Value::string(kindName(d.severity)));
    v.set("message", json::Value::string(d.message));
    v.set("phase", json::Value::string(d.phase));
    if (d.promoted) v.set("option", json::Value::string("-Werror"));
    json::Value locs = json::Value::array();
    if (d.range.valid() && d.range.file < sm.fileCount()) locs.items.push_back(gccLocation(sm, d.range));
    v.set("locations", std::move(locs));
    if (notes) {
        json::Value children = json::Value::array();
        for (auto &n : *notes) children.items.push_back(gccDiagnostic(sm, n, nullptr));
        v.set("children", std::move(children));
    }
    return v;
}

/// A SARIF location with its region; `message` for a related location (a note).
json::Value sarifLocation(const SourceManager &sm, const EmittedDiagnostic &d, bool withMessage) {
    json::Value loc = json::Value::object();
    const SourceRange &r = d.range;
    if (r.valid() && r.file < sm.fileCount()) {
        int endLine = r.endLine >= r.line ? r.endLine : r.line;
        int endCol = endLine == r.line ? lastColumn(r) + 1 : std::max(1, r.endCol);
        json::Value region = json::Value::object().set("startLine", num(r.line)).set("startColumn", num(r.col));
        region.set("endLine", num(endLine)).set("endColumn", num(endCol));
        json::Value physical = json::Value::object();
        physical.set("artifactLocation", json::Value::object().set("uri", json::Value::string(uriOf(sm.name(r.file)))));
        physical.set("region", std::move(region));
        loc.set("physicalLocation", std::move(physical));
    }
    if (withMessage) loc.set("message", json::Value::object().set("text", json::Value::string(d.message)));
    return loc;
}

} // namespace

std::optional<DiagnosticsFormat> parseDiagnosticsFormat(std::string_view s) {
    if (s == "text") return DiagnosticsFormat::Text;
    if (s == "json") return DiagnosticsFormat::Json;
    if (s == "sarif") return DiagnosticsFormat::Sarif;
    return std::nullopt;
}

void DiagnosticLog::add(const EmittedDiagnostic &d) {
    if (d.severity == Severity::Note && !entries_.empty()) entries_.back().notes.push_back(d);
    else entries_.push_back(Entry{d, {}});
}

std::string DiagnosticLog::render(const SourceManager &sm, const std::string &version) const {
    if (format_ == DiagnosticsFormat::Json) {
        json::Value all = json::Value::array();
        for (auto &e : entries_) all.items.push_back(gccDiagnostic(sm, e.d, &e.notes));
        return json::write(all) + "\n";
    }
    // SARIF 2.1.0: the rules are the phases that reported something, in the order first seen.
    json::Value results = json::Value::array(), rules = json::Value::array();
    std::vector<std::string> ruleIds;
    for (auto &e : entries_) {
        if (std::find(ruleIds.begin(), ruleIds.end(), e.d.phase) == ruleIds.end()) {
            ruleIds.push_back(e.d.phase);
            rules.items.push_back(json::Value::object().set("id", json::Value::string(e.d.phase)).set(
                "shortDescription", json::Value::object().set("text", json::Value::string("diagnostics of tilec's " + e.d.phase + " phase"))));
        }
        json::Value r = json::Value::object();
        r.set("ruleId", json::Value::string(e.d.phase));
        r.set("level", json::Value::string(kindName(e.d.severity)));
        r.set("message", json::Value::object().set("text", json::Value::string(e.d.message + (e.d.promoted ? " [-Werror]" : ""))));
        json::Value locs = json::Value::array();
        if (e.d.range.valid()) locs.items.push_back(sarifLocation(sm, e.d, false));
        r.set("locations", std::move(locs));
        if (!e.notes.empty()) {
            json::Value related = json::Value::array();
            for (size_t i = 0; i < e.notes.size(); ++i)
                related.items.push_back(sarifLocation(sm, e.notes[i], true).set("id", num((int)i)));
            r.set("relatedLocations", std::move(related));
        }
        results.items.push_back(std::move(r));
    }
    json::Value driver = json::Value::object();
    driver.set("name", json::Value::string("tilec")).set("version", json::Value::string(version));
    driver.set("rules", std::move(rules));
    json::Value run = json::Value::object();
    run.set("tool", json::Value::object().set("driver", std::move(driver)));
    run.set("results", std::move(results));
    json::Value log = json::Value::object();
    log.set("$schema", json::Value::string("https://json.schemastore.org/sarif-2.1.0.json"));
    log.set("version", json::Value::string("2.1.0"));
    log.set("runs", json::Value::array());
    log.members.back().second.items.push_back(std::move(run));
    return json::write(log) + "\n";
}

} // namespace tilec
