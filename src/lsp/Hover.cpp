/// \file
/// Hover and completion for the language server (LspImpl.h). Hover names a buffer's facts as the last
/// analysis that got through the front end found them; completion offers the `tilelang.language` module's
/// names exactly as the front end resolves `T.xxx` (makeTileLanguageModule, the one table), so that what
/// completes is what compiles.
#include "lsp/LspImpl.h"

#include "tilec/Interp.h"
#include "tilec/Value.h"

#include <algorithm>

namespace tilec::lsp {

namespace {

/// Every name of tilelang.language with the completion kind of its value, sorted (the module's table is a map).
const std::vector<std::pair<std::string, int>> &tileLanguageNames() {
    static const std::vector<std::pair<std::string, int>> names = [] {
        enum { Function = 3, Module = 9, Class = 7, Constant = 21 };
        std::vector<std::pair<std::string, int>> out;
        using eval::VK;
        eval::Value m = eval::makeTileLanguageModule();
        for (auto &[name, v] : m.as<eval::ModuleObj>().attrs) {
            int kind = v.is(VK::Builtin) || v.is(VK::Function) ? Function
                       : v.is(VK::Module)                      ? Module
                       : v.is(VK::DType)                        ? Class
                                                                : Constant;
            out.emplace_back(name, kind);
        }
        return out;
    }();
    return names;
}

/// The names the document binds to tilelang.language (`import tilelang.language as T`, `from tilelang
/// import language as L`); "T" when it binds none yet (a new file).
std::vector<std::string> tileLanguageAliases(const ast::Module *m) {
    std::vector<std::string> out;
    if (m)
        for (auto &s : m->body) {
            for (auto &a : s->names) {
                bool imported = (s->kind == ast::StmtKind::Import && a.name == "tilelang.language") ||
                                (s->kind == ast::StmtKind::ImportFrom && s->name == "tilelang" && a.name == "language");
                if (imported) out.push_back(a.asName.empty() ? a.name : a.asName);
            }
        }
    if (out.empty()) out.push_back("T");
    return out;
}

} // namespace

std::string hoverText(const Analysis &a, std::string_view text, Position pos) {
    std::string_view line = lineAt(text, pos.line);
    auto parts = dottedNameAt(line, byteOffset(line, pos.character));
    if (parts.size() != 1) return ""; // an attribute is not a buffer
    std::vector<const BufferFacts *> found;
    for (auto &b : a.buffers)
        if (b.name == parts[0]) found.push_back(&b);
    // The buffers of the function under the cursor, when the name is one of them (the same name may be
    // allocated in another prim_func too).
    if (a.module) {
        if (auto scope = enclosingFunction(*a.module, pos.line + 1)) {
            std::vector<const BufferFacts *> here;
            for (auto *b : found)
                if (b->loc.file == a.module->file && b->loc.line >= scope->first && b->loc.line <= scope->second)
                    here.push_back(b);
            if (!here.empty()) found = here;
        }
    }
    std::string out;
    for (auto *b : found)
        if (out.find(b->text) == std::string::npos) out += (out.empty() ? "" : "\n\n") + b->text;
    return out;
}

Value completions(const Analysis *a, std::string_view text, Position pos) {
    std::string_view line = lineAt(text, pos.line);
    auto parts = dottedNameAt(line, byteOffset(line, pos.character), true);
    if (parts.size() < 2) return Value();
    std::string qualifier;
    for (size_t i = 0; i + 1 < parts.size(); ++i) qualifier += (i ? "." : "") + parts[i];
    auto aliases = tileLanguageAliases(a ? a->module.get() : nullptr);
    if (std::find(aliases.begin(), aliases.end(), qualifier) == aliases.end()) return Value();
    Value items = Value::array();
    for (auto &[name, kind] : tileLanguageNames())
        items.items.push_back(Value::object()
                                  .set("label", Value::string(name))
                                  .set("kind", Value::number(kind))
                                  .set("detail", Value::string("tilelang.language")));
    return Value::object().set("isIncomplete", Value::boolean(false)).set("items", std::move(items));
}

} // namespace tilec::lsp
