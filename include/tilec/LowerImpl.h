/// \file
/// PassContext::run, kept out of Lower.h so the pipeline's header reads as a list of declarations.
#pragma once

#include "tilec/Diagnostics.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <ostream>

namespace tilec {

template <class F, class D> auto PassContext::run(const char *name, F &&fn, D &&text) -> decltype(fn()) {
    // Every name is a row of the pipeline's table, so --dump-after accepts exactly what runs.
    TILEC_ASSERT(std::find(passNames().begin(), passNames().end(), name) != passNames().end(),
                 std::string("'") + name + "' is not in the pipeline's table (src/lower/Lower.cpp)");
    setCurrentPhase(name);
    auto t0 = std::chrono::steady_clock::now();
    auto result = fn();
    auto t1 = std::chrono::steady_clock::now();
    if (timePasses) recordTime(name, std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (dump && wantsDump(name)) *dump << "// ---- IR after " << name << " ----\n" << text(result);
    return result;
}

} // namespace tilec
