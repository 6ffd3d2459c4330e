/// \file
/// The man page and shell completions of the tilec command, from its CLI11 options (tools/tilec/CliDocs.h).
#include "CliDocs.h"

#include <algorithm>
#include <sstream>

namespace tilec::cli {

namespace {

/// The options users see: not the positional input, not CLI11's own help.
std::vector<const CLI::Option *> visible(const CLI::App &app) {
    std::vector<const CLI::Option *> out;
    for (const CLI::Option *o : app.get_options())
        if (o->nonpositional() && !o->get_description().empty()) out.push_back(o);
    return out;
}

/// Flags have no type name (CLI11 prints one only for options that take a value).
bool takesValue(const CLI::Option &o) { return !o.get_type_name().empty(); }

/// roff text: backslashes, hyphens and a leading dot or quote escaped.
std::string roff(const std::string &s) {
    std::string r;
    for (char c : s) {
        if (c == '\\') r += "\\e";
        else if (c == '-') r += "\\-";
        else r += c;
    }
    if (!r.empty() && (r[0] == '.' || r[0] == '\'')) r = "\\&" + r;
    return r;
}

/// The placeholder of an option's value: CLI11's type name (less the choices it may append, as in
/// `TEXT:{auto,always,never}`, whose colon would end a zsh message), or VALUE.
std::string valueName(const CLI::Option &o) {
    std::string t = o.get_type_name();
    t = t.substr(0, t.find(':'));
    if (t.empty() || t == "TEXT" || t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
        return "VALUE";
    return t;
}

std::string manOptions(const CLI::App &app, const DocOptions &d) {
    std::string s;
    for (auto *o : visible(app)) {
        std::vector<std::string> names = spellings(*o, d);
        s += ".TP\n";
        for (size_t i = 0; i < names.size(); ++i) {
            s += (i ? ", " : "") + std::string("\\fB") + roff(names[i]) + "\\fR";
            if (takesValue(*o)) s += " \\fI" + roff(valueName(*o)) + "\\fR";
        }
        s += "\n" + roff(o->get_description()) + "\n";
    }
    return s;
}

/// The first clause of a description, for completion menus (no brackets, colons or quotes that zsh would read).
std::string shortHelp(const std::string &desc) {
    std::string s = desc.substr(0, desc.find_first_of(":;(\n"));
    while (!s.empty() && s.back() == ' ') s.pop_back();
    if (s.size() > 70) s = s.substr(0, 67) + "...";
    std::string r;
    for (char c : s) r += (c == '[' || c == ']' || c == '\'' || c == '`' || c == '"' || c == '$' || c == '\\') ? ' ' : c;
    return r;
}

bool isFileOption(const std::string &name) {
    static const char *const files[] = {"-o", "-H", "--MF", "--tuned", "--ccbin", "--tilec"};
    return std::find(std::begin(files), std::end(files), name) != std::end(files);
}

std::string bashWords(const CLI::App &app, const DocOptions &d) {
    std::string w;
    for (auto *o : visible(app))
        for (auto &n : spellings(*o, d)) w += (w.empty() ? "" : " ") + n;
    return w;
}

/// The bash `case` arms for options whose value is a file, a folder or one of fixed words.
std::string bashValueCases(const CLI::App &app, const DocOptions &d) {
    std::string s;
    for (auto *o : visible(app)) {
        if (!takesValue(*o)) continue;
        std::string pattern;
        for (auto &n : spellings(*o, d)) pattern += (pattern.empty() ? "" : "|") + n;
        auto it = d.values.find(o->get_name());
        std::string action;
        if (it != d.values.end()) {
            std::string words;
            for (auto &v : it->second) words += (words.empty() ? "" : " ") + v;
            action = "COMPREPLY=($(compgen -W \"" + words + "\" -- \"${cur##*,}\"))";
        } else if (o->get_name() == "-I") {
            action = "COMPREPLY=($(compgen -d -- \"$cur\"))";
        } else if (isFileOption(o->get_name())) {
            action = "COMPREPLY=($(compgen -f -- \"$cur\"))";
        } else {
            action = "COMPREPLY=()";
        }
        s += "        " + pattern + ") " + action + "; return ;;\n";
    }
    return s;
}

std::string zshSpecs(const CLI::App &app, const DocOptions &d) {
    std::string s;
    for (auto *o : visible(app)) {
        std::string action;
        if (takesValue(*o)) {
            auto it = d.values.find(o->get_name());
            if (it != d.values.end()) {
                std::string words;
                for (auto &v : it->second) words += (words.empty() ? "" : " ") + v;
                action = ":" + valueName(*o) + ":(" + words + ")";
            } else if (o->get_name() == "-I") {
                action = ":folder:_files -/";
            } else if (isFileOption(o->get_name())) {
                action = ":file:_files";
            } else {
                action = ":" + valueName(*o) + ": ";
            }
        }
        for (auto &n : spellings(*o, d)) {
            // a value written as -oFILE, --arch=X or --arch X
            std::string form = takesValue(*o) ? (n.size() == 2 ? "+" : "=") : "";
            s += "    '" + n + form + "[" + shortHelp(o->get_description()) + "]" + action + "'\n";
        }
    }
    return s;
}

} // namespace

std::vector<std::string> spellings(const CLI::Option &opt, const DocOptions &d) {
    std::vector<std::string> out;
    for (auto &n : opt.get_snames()) out.push_back("-" + n);
    for (auto &n : opt.get_lnames()) {
        if (std::find(d.singleDash.begin(), d.singleDash.end(), n) != d.singleDash.end()) out.push_back("-" + n);
        out.push_back("--" + n);
    }
    return out;
}

std::string manPage(const CLI::App &compile, const CLI::App &tune, const DocOptions &d) {
    std::string s;
    s += ".TH TILEC 1 \"\" \"tilec " + roff(d.version) + "\" \"User Commands\"\n";
    s += ".SH NAME\ntilec \\- " + roff("ahead-of-time compiler for the tile language (TileLang's kernels as CUDA C++, PTX, "
                                      "cubins or C with the binaries embedded)") + "\n";
    s += ".SH SYNOPSIS\n.B tilec\n.I FILE.tile\n[\\fIOPTIONS\\fR]\n.br\n.B tilec tune\n.I FILE.tile\n"
         "\\fB\\-\\-kernel\\fR \\fINAME\\fR \\fB\\-o\\fR \\fITABLE\\fR [\\fIOPTIONS\\fR]\n";
    s += ".SH DESCRIPTION\n" + roff(compile.get_description()) + ". The extension of \\fB\\-o\\fR picks the output: "
         ".cu, .ptx, .cubin, .c, .o, .ast or .ir; a header (.h) comes with .cu, .c and .o.\n";
    s += ".PP\n" + roff(tune.get_description()) + ".\n";
    s += ".SH OPTIONS\n" + manOptions(compile, d);
    s += ".SH TUNE OPTIONS\n" + manOptions(tune, d);
    s += ".SH EXIT STATUS\n.TP\n0\nsuccess\n.TP\n1\nerrors in the input (reported as file:line:col: error:)\n"
         ".TP\n2\na mistake on the command line, or an output this installation cannot make\n.TP\n3\nan internal "
         "error of tilec\n";
    s += ".SH ENVIRONMENT\n.TP\nTILEC_PATH\nfolders of imported modules, after \\fB\\-I\\fR (colon-separated)\n"
         ".TP\nCUDA_HOME, CUDA_PATH\nwhere NVRTC and the CUDA headers are looked for\n.TP\nCC\nthe C compiler "
         "for \\fB\\-o\\fR \\fIFILE.o\\fR\n";
    return s;
}

std::string completion(const std::string &shell, const CLI::App &compile, const CLI::App &tune, const DocOptions &d) {
    if (shell == "bash") {
        std::string s = "# bash completion for tilec (generated by `tilec --completion=bash`)\n";
        s += "_tilec() {\n";
        s += "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n";
        s += "    if [[ ${COMP_WORDS[1]} == tune ]]; then\n        case \"$prev\" in\n" + bashValueCases(tune, d) +
             "        esac\n        [[ $cur == -* ]] && COMPREPLY=($(compgen -W \"" + bashWords(tune, d) +
             "\" -- \"$cur\")) && return\n    else\n        case \"$prev\" in\n" + bashValueCases(compile, d) +
             "        esac\n        [[ $cur == -* ]] && COMPREPLY=($(compgen -W \"" + bashWords(compile, d) +
             "\" -- \"$cur\")) && return\n";
        s += "        [[ $COMP_CWORD == 1 ]] && COMPREPLY=(tune)\n    fi\n";
        s += "    COMPREPLY+=($(compgen -f -X '!*.@(tile|py)' -- \"$cur\") $(compgen -d -- \"$cur\"))\n}\n";
        s += "complete -o filenames -F _tilec tilec\n";
        return s;
    }
    if (shell == "zsh") {
        std::string s = "#compdef tilec\n# zsh completion for tilec (generated by `tilec --completion=zsh`)\n";
        // the first word: an input file, or the `tune` subcommand
        s += "_tilec_input() {\n    _alternative 'commands:subcommand:(tune)' 'files:input:_files -g \"*.(tile|py)\"'\n}\n";
        s += "_tilec() {\n    if [[ ${words[2]} == tune ]]; then\n        shift words; (( CURRENT-- ))\n";
        s += "        _arguments \\\n" + zshSpecs(tune, d) + "    '1:input:_files -g \"*.(tile|py)\"'\n";
        s += "    else\n        _arguments \\\n" + zshSpecs(compile, d) +
             "    '1:input:_tilec_input'\n    fi\n}\n_tilec \"$@\"\n";
        // each spec line continues the _arguments command
        std::string out;
        std::istringstream in(s);
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("    '", 0) == 0 && line.find("'1:input") == std::string::npos) line += " \\";
            out += line + "\n";
        }
        return out;
    }
    return "";
}

} // namespace tilec::cli
