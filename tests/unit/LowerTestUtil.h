/// \file
/// Shared by the Lower*Test.cpp and Codegen*Test.cpp files: a .tile source held in memory through the
/// front end and lower(), keeping the diagnostics as text.
#pragma once

#include "EvalTestUtil.h"

#include "tilec/Check.h"
#include "tilec/Codegen.h"
#include "tilec/Lower.h"

#include <sstream>

namespace tilec::lowertest {

struct LowerRun {
    evaltest::EvalRun front;
    std::optional<ir::Program> lowered;
    std::ostringstream dump;
    std::string dumpAfter; ///< set before run() to capture --dump-after output in `dump`
    /// Set before run(): `kept` is then the program as the pass of that name received it (the schedule a later
    /// pass copies loops of, as splitUniformConditions does).
    std::string keepBefore;
    std::optional<ir::Program> kept;

    LowerRun &run(const std::string &src, const std::string &name = "t.tile", const Target &t = *Target::parse("sm_90a")) {
        return run(src, name, Variant{t, {}});
    }
    /// Lowers for one target with switches other than the defaults (v.options: --no-tma, --pingpong, ...).
    LowerRun &run(const std::string &src, const std::string &name, const Variant &v) {
        const Target &t = v.target;
        front.run(src, name);
        if (!front.program || front.diag.hasErrors()) return *this;
        for (auto &k : front.program->kernels)
            if (!checkKernel(*k, t, front.diag)) return *this;
        PassContext ctx;
        ctx.diag = &front.diag;
        ctx.dump = &dump;
        ctx.dumpAfter = dumpAfter;
        bool reached = false;
        if (!keepBefore.empty())
            ctx.observe = [&](const char *pass, const ir::Program &p) {
                reached = reached || keepBefore == pass;
                if (!reached) kept = p;
            };
        ir::Program p = lower(*front.program, v, ctx);
        if (!front.diag.hasErrors()) lowered = std::move(p);
        return *this;
    }
    std::string diags() const { return front.diags(); }
    const ir::Kernel *kernel(const std::string &name) const {
        if (!lowered) return nullptr;
        for (auto &k : lowered->kernels)
            if (k->name == name) return k.get();
        return nullptr;
    }
    GeneratedCode generate(const std::string &prefix = "") {
        CodegenOptions o;
        o.sourceName = "t.tile";
        o.cudaName = "t.cu";
        o.headerName = "t.h";
        o.prefix = prefix;
        o.targets = {*Target::parse("sm_80"), *Target::parse("sm_90a")};
        return generateCode(*lowered, o, front.diag);
    }
};

} // namespace tilec::lowertest
