/// \file
/// Shared by the Eval*Test.cpp files: parses a .tile source held in memory and evaluates it, keeping the
/// diagnostics as text.
#pragma once

#include "tilec/Frontend.h"
#include "tilec/IRPrinter.h"
#include "tilec/Parser.h"

#include <fstream>
#include <sstream>
#include <string>

namespace tilec::evaltest {

struct EvalRun {
    SourceManager sm;
    std::ostringstream out;
    DiagnosticEngine diag{sm, out};
    FrontendOptions opts;
    std::optional<ir::Program> program;
    bool parsed = false;

    EvalRun() { diag.setErrorLimit(0); }

    /// `-D NAME=VALUE` with VALUE parsed like the driver does.
    void define(const std::string &name, const std::string &value) {
        int f = sm.add("<-D " + name + ">", value);
        opts.defines.push_back({name, parseExpression(f, diag), SourceRange{f, 1, 1, 1, (int)value.size() + 1}});
    }
    void exportCall(const std::string &name, const std::string &call) {
        int f = sm.add("<--export " + name + ">", call);
        opts.exports.push_back({name, parseExpression(f, diag), SourceRange{f, 1, 1, 1, (int)call.size() + 1}});
    }

    EvalRun &run(const std::string &src, const std::string &name = "t.tile") {
        int f = sm.add(name, src);
        auto m = parseModule(f, diag);
        parsed = m.has_value();
        if (m) program = evaluateModule(*m, opts, diag);
        return *this;
    }
    std::string diags() const { return out.str(); }
    /// Evaluated without any diagnostic at all.
    bool clean() const { return parsed && program && out.str().empty(); }
    const ir::Kernel *kernel(const std::string &name) const {
        if (!program) return nullptr;
        for (auto &k : program->kernels)
            if (k->name == name) return k.get();
        return nullptr;
    }
};

inline std::string readFile(const std::string &path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

} // namespace tilec::evaltest
