/// \file
/// -D, --export and --tuned values as the front end's options (include/tilec/OptionValues.h).
#include "tilec/OptionValues.h"

#include "tilec/Parser.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tilec {

namespace {

/// `NAME=REST` of option `opt` ("-D" or "--export").
std::pair<std::string, std::string> split(const std::string &s, const char *opt) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
        throw std::invalid_argument(std::string(opt) + " '" + s + "' must have the form NAME=" + (opt[1] == 'D' ? "VALUE" : "CALL"));
    std::string name = s.substr(0, eq);
    if (!isIdentifier(name)) throw std::invalid_argument(std::string(opt) + " '" + s + "': '" + name + "' is not a name");
    return {name, s.substr(eq + 1)};
}

} // namespace

bool isIdentifier(std::string_view s) {
    if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
}

ast::ExprP parseOptionValue(SourceManager &sm, DiagnosticEngine &diag, const std::string &text, const std::string &what,
                            bool bareIsString, SourceRange &range) {
    int f = sm.add("<" + what + ">", text);
    range = SourceRange{f, 1, 1, 1, (int)text.size() + 1};
    if (bareIsString && isIdentifier(text) && text != "True" && text != "False" && text != "None") {
        auto e = ast::Expr::make(ast::ExprKind::Str, range);
        e->str = text;
        return e;
    }
    return parseExpression(f, diag);
}

void addDefines(FrontendOptions &fo, const std::vector<std::string> &defines, SourceManager &sm, DiagnosticEngine &diag) {
    for (auto &d : defines) {
        auto [name, value] = split(d, "-D");
        FrontendOptions::Define def{name, nullptr, {}};
        def.value = parseOptionValue(sm, diag, value, "-D " + name, true, def.range);
        if (def.value) fo.defines.push_back(std::move(def));
    }
}

void addExports(FrontendOptions &fo, const std::vector<std::string> &exports, SourceManager &sm, DiagnosticEngine &diag) {
    for (auto &e : exports) {
        auto [name, call] = split(e, "--export");
        FrontendOptions::Export ex{name, nullptr, {}};
        ex.call = parseOptionValue(sm, diag, call, "--export " + name, false, ex.range);
        if (ex.call) fo.exports.push_back(std::move(ex));
    }
}

} // namespace tilec
