/// \file
/// Warp-wide calls in blocks that end in a partial warp (include/tilec/passes/CheckWholeWarps.h).
#include "tilec/passes/CheckWholeWarps.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <string>

namespace tilec::passes {

using namespace ir;

namespace {

/// What a call that needs a whole warp is, for the message; null for any other call.
const char *warpWide(const Call &c) {
    using lib::Fn;
    const lib::Info *info = lib::find(c.name);
    if (!info) return nullptr;
    switch (info->fn) {
    case Fn::ShflXor: return "a reduction across the threads that share a row (a warp shuffle)";
    case Fn::Shfl:
    case Fn::ShflXorSync:
    case Fn::ShflDownSync:
    case Fn::ShflUpSync: return "a warp shuffle";
    case Fn::SyncWarp: return "T.sync_warp";
    case Fn::WarpAny: return "a vote of the warp";
    case Fn::NamedSync:
    case Fn::NamedArrive: return "a named barrier";
    case Fn::GemmSS:
    case Fn::GemmRS:
    case Fn::GemmSSPanels:
    case Fn::GemmRSPanels: return "a warp MMA (T.gemm)";
    default: return info->issuers == lib::Issuers::Warpgroups ? "a warpgroup instruction" : nullptr;
    }
}

struct Finder : IRVisitor {
    using IRVisitor::visit;
    DiagnosticEngine &diag;
    const Kernel &k;
    SourceRange at;
    bool reported = false;
    Finder(DiagnosticEngine &d, const Kernel &kernel) : diag(d), k(kernel), at(kernel.launchLoc) {}

    template <class S, class F> void within(const S &s, F f) {
        SourceRange saved = at;
        if (s.loc.valid()) at = s.loc;
        f();
        at = saved;
    }
    void visit(const Call &c) override {
        if (const char *what = warpWide(c); what && !reported) {
            const int n = k.threads;
            reported = true; // one error per kernel: every other such call has the same cause
            diag.error(c.loc.valid() ? c.loc : at,
                       std::string(what) + " needs whole warps, but this block has " + std::to_string(n) +
                           " threads, so its last warp has only " + std::to_string(n % 32) + " of 32 lanes");
        }
        IRVisitor::visit(c);
    }
    void visit(const For &f) override { within(f, [&] { IRVisitor::visit(f); }); }
    void visit(const Store &s) override { within(s, [&] { IRVisitor::visit(s); }); }
    void visit(const IfThenElse &s) override { within(s, [&] { IRVisitor::visit(s); }); }
    void visit(const While &s) override { within(s, [&] { IRVisitor::visit(s); }); }
    void visit(const Evaluate &s) override { within(s, [&] { IRVisitor::visit(s); }); }
};

} // namespace

void checkWholeWarps(const Program &p, DiagnosticEngine &diag) {
    for (auto &k : p.kernels) {
        if (!k->body || k->threads % 32 == 0) continue;
        Finder f(diag, *k);
        f.visit(k->body);
    }
}

} // namespace tilec::passes
