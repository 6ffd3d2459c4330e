/// \file
/// Finding the user's modules as Python's import system finds them (ModuleLoader.cpp): files and packages on
/// a list of folders, the package a file belongs to, relative module names. Paths only; running a module is
/// the interpreter's (InterpModule.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tilec::eval {

/// Where a module is.
struct ModuleFile {
    std::string path;     ///< the module's .py file, or the package's __init__.py ("" for a namespace package)
    std::string dir;      ///< a package's folder (its submodules are there)
    bool package = false; ///< a folder: a package (with __init__.py) or a namespace package (without)
};

/// The package a file belongs to, found by walking up the folders that hold an __init__.py: its dotted name
/// ("" when the file's folder is not a package) and the folder above the outermost package (where absolute
/// imports of the package start; the file's own folder when it is not in a package).
struct PackageOf {
    std::string package;
    std::string root;
};
PackageOf packageOf(const std::string &file);

/// Looks for module `dotted` ("a.b.c") on `roots`, in order: in each folder a package `a/__init__.py`, then
/// a module `a.py`; a folder `a/` without __init__.py (a namespace package) only when no root has either.
/// The later components are looked for in the package found. nullopt when there is none.
std::optional<ModuleFile> findModule(const std::string &dotted, const std::vector<std::string> &roots);

/// Submodule `name` of a package in folder `dir` (a file `dir/name.py` or a folder `dir/name/`).
std::optional<ModuleFile> findSubmodule(const std::string &dir, const std::string &name);

/// The absolute name of `from <dots><rest> import ...` in a module of package `package` (the package itself
/// for an __init__.py): one dot is the package, each further dot its parent. nullopt with `error` set (the
/// message Python gives) when the import leaves the top-level package or the module has no package.
std::optional<std::string> resolveRelative(const std::string &package, int dots, const std::string &rest,
                                           std::string &error);

/// `dir/name`, without a leading "./" for the current folder.
std::string joinPath(const std::string &dir, const std::string &name);
/// The folder of a path ("" for a bare file name).
std::string dirName(const std::string &path);
/// The entries of a colon-separated list (TILEC_PATH), empty ones left out.
std::vector<std::string> splitSearchPath(const std::string &list);
/// The path with symbolic links and `..` resolved (the key a module is cached by); the path itself when it
/// cannot be resolved.
std::string canonicalPath(const std::string &path);

} // namespace tilec::eval
