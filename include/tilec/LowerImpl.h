/// \file
/// PassContext::run, kept out of Lower.h so the pipeline's header reads as a list of declarations.
#pragma once

#include "tilec/Diagnostics.h"

#include <chrono>
#include <ostream>

namespace tilec {

template <class F, class D> auto PassContext::run(const char *name, F &&fn, D &&text) -> decltype(fn()) {
    setCurrentPhase(name);
    auto t0 = std::chrono::steady_clock::now();
    auto result = fn();
    auto t1 = std::chrono::steady_clock::now();
    if (timePasses) recordTime(name, std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (dump && wantsDump(name)) *dump << "// ---- IR after " << name << " ----\n" << text(result);
    return result;
}

} // namespace tilec
