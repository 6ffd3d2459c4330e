/// \file
/// T.Parallel nests whose iterations exchange data: located errors (src/lower/ParallelRaces.h).
#include "ParallelRaces.h"

#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRSubstitute.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ParallelNest.h"

#include <algorithm>
#include <map>
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
        std::vector<Expr> known; ///< conditions that hold where it is made (conjuncts of the ifs above it)
    };
    std::vector<Access> stores, loads;
    int ifs = 0, loops = 0;
    std::vector<Expr> known; ///< the conjuncts of the enclosing ifs' conditions (and of `&&`'s left sides)
    /// A thread's scalars (`j = offset + i` on an alloc_var `offset` makes `j` one) set earlier in the iteration,
    /// outside any `if` or loop of the body, and their values: a later index that reads one reads that value.
    std::map<const BufferNode *, Expr> defs;
    static bool visible(const Buffer &b) { return b && b->scope != Scope::Local && b->scope != Scope::Var; }
    static bool scalar(const Buffer &b) {
        return b && (b->scope == Scope::Local || b->scope == Scope::Var) && b->shape.size() == 1 &&
               constInt(b->shape[0]) == std::optional<int64_t>(1);
    }
    /// `e` with the loads of defined scalars replaced by their values.
    std::vector<Expr> resolved(const std::vector<Expr> &indices) const {
        std::vector<Expr> out;
        for (auto &i : indices) out.push_back(replaceLoads(i, defs));
        return out;
    }
    void visit(const Store &op) override {
        if (visible(op.buffer)) stores.push_back({op.buffer.get(), resolved(op.indices), op.loc, ifs > 0, known});
        IRVisitor::visit(op);
        if (!scalar(op.buffer)) return;
        if (ifs == 0 && loops == 0) defs[op.buffer.get()] = resolved({op.value})[0];
        else defs.erase(op.buffer.get());
    }
    void visit(const Load &op) override {
        if (visible(op.buffer)) loads.push_back({op.buffer.get(), resolved(op.indices), op.loc, ifs > 0, known});
        IRVisitor::visit(op);
    }
    void visit(const For &op) override {
        ++loops;
        IRVisitor::visit(op);
        --loops;
    }
    /// The conjuncts of `c` (`a && b && ...`), in order.
    static void conjuncts(const Expr &c, std::vector<Expr> &out) {
        auto b = as<Binary>(c);
        if (b && b->op == BinaryOp::And) return conjuncts(b->a, out), conjuncts(b->b, out);
        out.push_back(c);
    }
    void visit(const IfThenElse &op) override {
        // `a && b` runs b only where a holds (the generated C++ and the simulator alike): b's reads know a.
        std::vector<Expr> cs;
        conjuncts(op.cond, cs);
        const size_t depth = known.size();
        for (auto &c : cs) {
            visit(c);
            known.push_back(resolved({c})[0]);
        }
        ++ifs;
        visit(op.then);
        known.resize(depth);
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

/// The `e` of `v ^ e` (either order), or null.
Expr xorPartner(const Expr &idx, const VarNode *v) {
    auto b = as<Binary>(idx);
    if (!b || b->op != BinaryOp::BitXor) return nullptr;
    if (b->a.get() == v && !uses(b->b, v)) return b->b;
    if (b->b.get() == v && !uses(b->a, v)) return b->a;
    return nullptr;
}

/// Whether the accesses of `b` pair the iterations off (a bitonic sort's compare-and-swap: `if i < i ^ m: swap
/// v[i], v[i ^ m]`): in a nest over one variable v, every access of b is at v or at v ^ m (m the same, free of v;
/// b's other indices the same and free of v), each where `v < v ^ m` holds. Iteration v then touches the pair
/// {v, v ^ m} only when its partner v ^ m does not run that code, so no two iterations share an element.
bool pairedOff(const NestAccesses &acc, const BufferNode *b, const VarNode *v) {
    Expr mask;
    int dim = -1;
    const NestAccesses::Access *first = nullptr;
    for (auto *list : {&acc.loads, &acc.stores})
        for (auto &a : *list) {
            if (a.buffer != b) continue;
            if (!first) first = &a;
            if (a.indices.size() != first->indices.size()) return false;
            for (size_t d = 0; d < a.indices.size(); ++d) {
                const Expr &i = a.indices[d];
                if (!uses(i, v)) {
                    if (!provablyEqual(i, first->indices[d])) return false;
                    continue;
                }
                Expr m = i.get() == v ? nullptr : xorPartner(i, v);
                if ((i.get() != v && !m) || (dim >= 0 && dim != (int)d)) return false;
                dim = (int)d;
                if (m && mask && !structurallyEqual(m, mask)) return false;
                if (m) mask = m;
            }
            if (dim < 0) return false;
        }
    if (!mask || !first) return false;
    auto ordered = [&](const Expr &c) {
        auto cmp = as<Binary>(c);
        if (!cmp) return false;
        auto isV = [&](const Expr &e) { return e.get() == v; };
        auto isP = [&](const Expr &e) { return xorPartner(e, v) && structurallyEqual(xorPartner(e, v), mask); };
        return (cmp->op == BinaryOp::LT && isV(cmp->a) && isP(cmp->b)) || (cmp->op == BinaryOp::GT && isP(cmp->a) && isV(cmp->b));
    };
    for (auto *list : {&acc.loads, &acc.stores})
        for (auto &a : *list)
            if (a.buffer == b && std::none_of(a.known.begin(), a.known.end(), ordered)) return false;
    return true;
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
            if (same || disjoint || (vars.size() == 1 && pairedOff(acc, st.buffer, vars[0]))) continue;
            diag.error(ld.loc, "this T.Parallel reads " + accessText(ld) + ", which other iterations store (" + accessText(st) +
                                   "): the iterations run on different threads in no order, with no barrier between "
                                   "them; read from a copy of '" + st.buffer->name + "' instead");
            diag.note(st.loc, "the store is here");
            return;
        }
    }
}


} // namespace tilec::passes
