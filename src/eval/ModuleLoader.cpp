/// \file
/// Finding the user's modules (ModuleLoader.h): Python's path-based finder reduced to what a compile-time
/// evaluator needs: .py files, packages with __init__.py, namespace packages, relative names.
#include "eval/ModuleLoader.h"

#include <cstdlib>
#include <filesystem>
#include <sys/stat.h>

namespace tilec::eval {

namespace {

bool isFile(const std::string &p) {
    struct stat st{};
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool isDir(const std::string &p) {
    struct stat st{};
    return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool isIdentifier(const std::string &s) {
    if (s.empty() || std::isdigit((unsigned char)s[0])) return false;
    for (char c : s)
        if (!std::isalnum((unsigned char)c) && c != '_' && (unsigned char)c < 0x80) return false;
    return true;
}

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        size_t end = s.find(sep, start);
        out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) return out;
        start = end + 1;
    }
}

/// `name` in folder `dir`: a regular package, a module, or (when `allowNamespace`) a bare folder.
std::optional<ModuleFile> lookIn(const std::string &dir, const std::string &name, bool allowNamespace) {
    std::string folder = joinPath(dir, name);
    if (isFile(joinPath(folder, "__init__.py"))) return ModuleFile{joinPath(folder, "__init__.py"), folder, true};
    if (isFile(folder + ".py")) return ModuleFile{folder + ".py", "", false};
    if (allowNamespace && isDir(folder)) return ModuleFile{"", folder, true};
    return std::nullopt;
}

} // namespace

std::string joinPath(const std::string &dir, const std::string &name) {
    if (dir.empty() || dir == ".") return name;
    return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string dirName(const std::string &path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return "";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::vector<std::string> splitSearchPath(const std::string &list) {
    std::vector<std::string> out;
    for (auto &p : split(list, ':'))
        if (!p.empty()) out.push_back(p);
    return out;
}

std::string canonicalPath(const std::string &path) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
    return ec ? path : p.string();
}

PackageOf packageOf(const std::string &file) {
    PackageOf r;
    std::string dir = dirName(file);
    // Walking up needs real folder names: `tilec kernel.py` run inside the package has a relative path.
    std::string abs = canonicalPath(dir.empty() ? "." : dir);
    int depth = 0;
    while (depth < 64 && isFile(joinPath(abs, "__init__.py"))) {
        std::string name = abs.substr(abs.rfind('/') + 1);
        if (!isIdentifier(name)) break;
        r.package = r.package.empty() ? name : name + "." + r.package;
        abs = dirName(abs);
        ++depth;
    }
    // The root as the user gave the file's folder, walked up ("../.." rather than an absolute path), so that
    // the paths diagnostics and depfiles name stay relative when the input's was.
    r.root = dir;
    for (int i = 0; i < depth; ++i) {
        std::string &p = r.root;
        if (p.empty() || p == ".") p = "..";
        else if (p == ".." || (p.size() >= 3 && p.compare(p.size() - 3, 3, "/..") == 0)) p += "/..";
        else p = dirName(p).empty() ? "." : dirName(p);
    }
    return r;
}

std::optional<ModuleFile> findSubmodule(const std::string &dir, const std::string &name) {
    if (!isIdentifier(name)) return std::nullopt;
    return lookIn(dir, name, true);
}

std::optional<ModuleFile> findModule(const std::string &dotted, const std::vector<std::string> &roots) {
    auto parts = split(dotted, '.');
    for (auto &p : parts)
        if (!isIdentifier(p)) return std::nullopt;
    std::optional<ModuleFile> found;
    for (auto &root : roots)
        if ((found = lookIn(root, parts[0], false))) break;
    if (!found)
        for (auto &root : roots)
            if ((found = lookIn(root, parts[0], true))) break;
    for (size_t i = 1; found && i < parts.size(); ++i) {
        if (!found->package) return std::nullopt;
        found = lookIn(found->dir, parts[i], true);
    }
    return found;
}

std::optional<std::string> resolveRelative(const std::string &package, int dots, const std::string &rest,
                                           std::string &error) {
    if (package.empty()) {
        error = "attempted relative import with no known parent package";
        return std::nullopt;
    }
    auto parts = split(package, '.');
    if (dots - 1 >= (int)parts.size()) {
        error = "attempted relative import beyond top-level package";
        return std::nullopt;
    }
    parts.resize(parts.size() - (size_t)(dots - 1));
    std::string base;
    for (auto &p : parts) base += (base.empty() ? "" : ".") + p;
    return rest.empty() ? base : base + "." + rest;
}

} // namespace tilec::eval
