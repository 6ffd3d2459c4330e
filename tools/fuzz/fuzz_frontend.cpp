/// \file
/// libFuzzer target for the whole compiler: parse, evaluate, check and print, then, for programs without
/// errors, every lowering pass and the code generation, on arbitrary bytes. Inputs of even length are compiled
/// for sm_90a (the Hopper path: TMA, warp roles, wgmma), of odd length for sm_80 (cp.async, mma.sync), so one
/// campaign covers both paths at the cost of one lowering per input.
/// Build: cmake -DTILEC_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 (tools/fuzz/run.sh does it, with ASan+UBSan).
/// Any crash, sanitizer report, uncaught exception or internal error is a bug.
#include "tilec/Check.h"
#include "tilec/Codegen.h"
#include "tilec/Frontend.h"
#include "tilec/IRPrinter.h"
#include "tilec/Lower.h"
#include "tilec/Parser.h"

#include <cstdlib>
#include <iostream>
#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace tilec;
    SourceManager sm;
    int file = sm.add("fuzz.tile", std::string(reinterpret_cast<const char *>(data), size));
    std::ostringstream sink;
    DiagnosticEngine diag(sm, sink);
    diag.setErrorLimit(50);
    FrontendOptions fo;
    if (size % 2) fo.target = *Target::parse("sm_80");
    fo.stepBudget = 200000; // keep each input fast; the budget error itself is exercised
    try {
        auto m = parseModule(file, diag);
        if (!m) return 0;
        auto p = evaluateModule(*m, fo, diag);
        if (!p) return 0;
        for (auto &k : p->kernels) {
            checkKernel(*k, fo.target, diag);
            (void)ir::print(*k);
        }
        if (!diag.hasErrors()) {
            PassContext ctx;
            ctx.diag = &diag;
            ir::Program lowered = lower(*p, Variant{fo.target, {}}, ctx);
            if (!diag.hasErrors()) {
                CodegenOptions o;
                o.sourceName = "fuzz.tile";
                o.targets = {fo.target};
                (void)generateCode(lowered, o, diag);
            }
        }
    } catch (const TooManyErrors &) {
    } catch (const InternalError &e) {
        std::cerr << e.what() << "\n";
        std::abort();
    }
    return 0;
}
