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

/// Each of `texts` (option `opt`, as written) as an entry of `out` whose expression is `field`.
template <class Option>
void addAll(std::vector<Option> &out, ast::ExprP Option::*field, const std::vector<std::string> &texts, const char *opt,
            bool bareIsString, SourceManager &sm, DiagnosticEngine &diag) {
    for (auto &t : texts) {
        auto [name, value] = split(t, opt);
        Option o{name, nullptr, {}};
        o.*field = parseOptionValue(sm, diag, value, std::string(opt) + " " + name, bareIsString, o.range);
        if (o.*field) out.push_back(std::move(o));
    }
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
    addAll(fo.defines, &FrontendOptions::Define::value, defines, "-D", true, sm, diag);
}

void addExports(FrontendOptions &fo, const std::vector<std::string> &exports, SourceManager &sm, DiagnosticEngine &diag) {
    addAll(fo.exports, &FrontendOptions::Export::call, exports, "--export", false, sm, diag);
}

} // namespace tilec
