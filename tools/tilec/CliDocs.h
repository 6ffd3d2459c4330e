/// \file
/// The tilec command's documentation made from its CLI11 options, so it cannot miss one: the man page
/// (`tilec --help-man`) and the bash and zsh completion scripts (`tilec --completion=bash|zsh`).
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

namespace tilec::cli {

/// How the documents spell the options and what they offer as values.
struct DocOptions {
    std::string version;
    /// Options CLI11 knows as `--NAME` that users write `-NAME` (nvcc's spelling: -arch, -MD, -Werror).
    std::vector<std::string> singleDash;
    /// Option (as CLI11 names it, e.g. "--color") -> the values completion offers.
    std::map<std::string, std::vector<std::string>> values;
};

/// Every spelling of `opt` as users write it: -o, -arch, --arch, --MD -> -MD and --MD ...
std::vector<std::string> spellings(const CLI::Option &opt, const DocOptions &d);

/// The man page (roff, section 1) of `compile` (tilec) and `tune` (tilec tune).
std::string manPage(const CLI::App &compile, const CLI::App &tune, const DocOptions &d);

/// A completion script for `shell` ("bash" or "zsh"); "" for another shell.
std::string completion(const std::string &shell, const CLI::App &compile, const CLI::App &tune, const DocOptions &d);

} // namespace tilec::cli
