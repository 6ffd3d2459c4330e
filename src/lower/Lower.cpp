/// \file
/// The whole pipeline in one screen. Each step is one pass from its own file; PassContext::run names it for
/// internal errors, times it and dumps the IR after it on request.
#include "tilec/Lower.h"

#include "tilec/IRPrinter.h"

#include <iomanip>
#include <ostream>

namespace tilec {

const std::vector<std::string> &passNames() {
    // Front-end phases (run by the driver) first, then the passes of lower() in the order they run.
    static const std::vector<std::string> names = {"parse", "evaluate", "check"};
    return names;
}

ir::Program lower(ir::Program p, const Target &t, PassContext &ctx) {
    // The scheduling passes (layout inference, software pipelining, warp specialization, memory planning)
    // are added here in order as they are written, each as:
    //   p = ctx.run("name", [&] { return passName(p, t); }, printProgram);
    (void)t;
    (void)ctx;
    return p;
}

void PassContext::reportTimes(std::ostream &os) const {
    double total = 0;
    for (auto &[n, ms] : times) total += ms;
    os << "===- pass execution timing -===\n";
    for (auto &[n, ms] : times)
        os << "  " << std::setw(10) << std::fixed << std::setprecision(3) << ms << " ms  " << n << "\n";
    os << "  " << std::setw(10) << std::fixed << std::setprecision(3) << total << " ms  total\n";
}

} // namespace tilec
