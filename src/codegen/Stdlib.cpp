/// \file
/// The order in which generated code embeds the device runtime (codegen/Stdlib.h): each file includes what it
/// uses, and the embedding follows those includes from the umbrella stdlib/tilec/tilec.cuh.
#include "codegen/Stdlib.h"

#include "tilec/Diagnostics.h"

#include <algorithm>
#include <set>

namespace tilec::codegen {

namespace {

constexpr const char *kUmbrella = "tilec/tilec.cuh";

/// The stdlib file a line includes, as "tilec/NAME.cuh", or "". The files include their siblings by file name
/// (`#include "NAME.cuh"`, found beside the including file whatever the include path), "tilec/NAME.cuh" too.
std::string includedStdlibFile(const std::string &line) {
    const std::string open = "#include \"";
    if (line.compare(0, open.size(), open) != 0) return "";
    size_t close = line.find('"', open.size());
    std::string name = close == std::string::npos ? "" : line.substr(open.size(), close - open.size());
    if (name.compare(0, 6, "tilec/") == 0) return name;
    const bool sibling = name.size() > 4 && name.find('/') == std::string::npos && name.compare(name.size() - 4, 4, ".cuh") == 0;
    return sibling ? "tilec/" + name : "";
}

const StdlibFile &fileNamed(const std::string &name) {
    auto &files = stdlibFiles();
    auto it = std::find_if(files.begin(), files.end(), [&](const StdlibFile &f) { return name == f.name; });
    TILEC_ASSERT(it != files.end(), "stdlib/" + name + " is included but does not exist");
    return *it;
}

/// Appends `name` to `out` after the files it includes (depth first); `open`: the files being visited, whose
/// inclusion again would be a cycle.
void embed(const std::string &name, std::vector<EmbeddedStdlibFile> &out, std::set<std::string> &open) {
    auto done = [&](const std::string &n) {
        return std::any_of(out.begin(), out.end(), [&](const EmbeddedStdlibFile &f) { return f.name == n; });
    };
    if (done(name)) return;
    TILEC_ASSERT(open.insert(name).second, "stdlib/" + name + " includes itself");
    const std::string text = fileNamed(name).text;
    std::string kept;
    bool dropBlank = false; // the blank line after a removed group of includes
    for (size_t at = 0; at < text.size();) {
        size_t end = text.find('\n', at);
        end = end == std::string::npos ? text.size() : end + 1;
        std::string line = text.substr(at, end - at), included = includedStdlibFile(line);
        at = end;
        if (!included.empty()) {
            embed(included, out, open);
            dropBlank = kept.size() >= 2 && kept.compare(kept.size() - 2, 2, "\n\n") == 0;
            continue;
        }
        if (!(dropBlank && line == "\n")) kept += line;
        dropBlank = false;
    }
    open.erase(name);
    if (name != kUmbrella) out.push_back({name, kept});
}

} // namespace

const std::vector<EmbeddedStdlibFile> &embeddedStdlib() {
    static const std::vector<EmbeddedStdlibFile> files = [] {
        std::vector<EmbeddedStdlibFile> out;
        std::set<std::string> open;
        embed(kUmbrella, out, open);
        // Every file is part of the library the umbrella gathers.
        for (auto &f : stdlibFiles())
            TILEC_ASSERT(f.name == std::string(kUmbrella) ||
                             std::any_of(out.begin(), out.end(), [&](auto &e) { return e.name == f.name; }),
                         std::string("stdlib/") + f.name + " is not included by stdlib/" + kUmbrella);
        return out;
    }();
    return files;
}

} // namespace tilec::codegen
