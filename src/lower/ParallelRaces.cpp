/// \file
/// T.Parallel nests whose iterations exchange data: located errors (src/lower/ParallelRaces.h).
#include "ParallelRaces.h"

#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ParallelNest.h"

#include <string>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// The accesses of a T.Parallel nest to buffers its iterations share (shared, global, fragments), for the
/// check that the iterations exchange nothing.
struct NestAccesses : IRVisitor {
    using IRVisitor::visit;
    struct Access {
        const BufferNode *buffer;
        std::vector<Expr> indices;
        SourceRange loc;
        bool guarded; ///< under an if inside the nest
    };
    std::vector<Access> stores, loads;
    int ifs = 0;
    static bool visible(const Buffer &b) { return b && b->scope != Scope::Local && b->scope != Scope::Var; }
    void visit(const Store &op) override {
        if (visible(op.buffer)) stores.push_back({op.buffer.get(), op.indices, op.loc, ifs > 0});
        IRVisitor::visit(op);
    }
    void visit(const Load &op) override {
        if (visible(op.buffer)) loads.push_back({op.buffer.get(), op.indices, op.loc, ifs > 0});
        IRVisitor::visit(op);
    }
    void visit(const IfThenElse &op) override {
        visit(op.cond);
        ++ifs;
        visit(op.then);
        visit(op.otherwise);
        --ifs;
    }
    void visit(const Call &op) override {
        if (op.name != "tilec.address_of") IRVisitor::visit(op);
    }
};

std::string accessText(const NestAccesses::Access &a) {
    std::string s = a.buffer->name + "[";
    for (size_t i = 0; i < a.indices.size(); ++i) s += (i ? ", " : "") + ir::print(a.indices[i]);
    return s + "]";
}

} // namespace

void checkNest(const For &outer, DiagnosticEngine &diag) {
    std::vector<const VarNode *> vars;
    const std::vector<const For *> loops = parallelNest(outer);
    for (const For *l : loops)
        if (constValue(l->extent) != std::optional<int64_t>(1)) vars.push_back(l->var.get());
    const For *f = loops.back();
    auto varying = [&](const Expr &e) {
        for (auto *v : vars)
            if (uses(e, v)) return true;
        return false;
    };
    NestAccesses acc;
    acc.visit(f->body);
    for (auto &st : acc.stores) {
        if (!st.guarded)
            for (auto *v : vars) {
                bool used = false;
                for (auto &i : st.indices) used |= uses(i, v);
                if (!used) {
                    diag.error(st.loc, "every iteration of '" + v->name + "' of this T.Parallel stores to " + accessText(st) +
                                           ": the iterations run on different threads in no order, so the element's "
                                           "final value is unspecified");
                    return;
                }
            }
        for (auto &ld : acc.loads) {
            if (ld.buffer != st.buffer || ld.indices.size() != st.indices.size()) continue;
            bool same = true, disjoint = false;
            for (size_t d = 0; d < ld.indices.size(); ++d) {
                bool eq = provablyEqual(ld.indices[d], st.indices[d]);
                same &= eq;
                disjoint |= !eq && !varying(ld.indices[d]) && !varying(st.indices[d]);
            }
            if (same || disjoint) continue;
            diag.error(ld.loc, "this T.Parallel reads " + accessText(ld) + ", which other iterations store (" + accessText(st) +
                                   "): the iterations run on different threads in no order, with no barrier between "
                                   "them; read from a copy of '" + st.buffer->name + "' instead");
            diag.note(st.loc, "the store is here");
            return;
        }
    }
}


} // namespace tilec::passes
