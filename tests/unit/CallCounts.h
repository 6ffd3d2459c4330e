/// \file
/// How many calls of each name a lowered kernel's body holds (the LowerSim tests' check of which instruction a
/// product took: tilec.wgmma_ss, tilec.gemm_ss, tilec.swz_panels, ...).
#pragma once

#include "tilec/IR.h"
#include "tilec/IRVisitor.h"

#include <map>
#include <string>

namespace tilec::simtest {

inline std::map<std::string, int> callCounts(const ir::Kernel &k) {
    struct Calls : ir::IRVisitor {
        using IRVisitor::visit;
        std::map<std::string, int> n;
        void visit(const ir::Call &c) override { ++n[c.name], IRVisitor::visit(c); }
    } calls;
    calls.visit(k.body);
    return calls.n;
}

} // namespace tilec::simtest
