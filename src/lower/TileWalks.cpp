/// \file
/// Tile walks a kernel writes itself (include/tilec/passes/TileWalks.h).
#include "tilec/passes/TileWalks.h"

#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"

namespace tilec::passes {

using namespace ir;

namespace {

struct PipelinedLoops : IRVisitor {
    using IRVisitor::visit;
    int count = 0;
    void visit(const For &f) override {
        count += f.forKind == ForKind::Pipelined;
        IRVisitor::visit(f);
    }
};

int pipelinedLoops(const Stmt &s) {
    PipelinedLoops v;
    v.visit(s);
    return v.count;
}

bool pipelined(const Stmt &s) {
    auto f = as<For>(s);
    return f && f->forKind == ForKind::Pipelined;
}

} // namespace

std::optional<TileWalk> findTileWalk(const Stmt &s, const Var &threadIdx, std::string &why) {
    why.clear();
    auto top = as<For>(s);
    auto cond = as<IfThenElse>(s);
    if (!(top && top->forKind == ForKind::Serial) && !(cond && !cond->otherwise)) return std::nullopt;
    if (pipelinedLoops(s) == 0) return std::nullopt;
    if (pipelinedLoops(s) > 1) {
        why = "the loops and conditions around it hold more than one T.Pipelined loop";
        return std::nullopt;
    }
    // Both roles evaluate each bound and condition of the path: the same values in every thread.
    auto shared = [&](const Expr &e, const char *what) {
        if (readsMemory(e)) why = std::string("the ") + what + " around it reads a buffer";
        else if (threadIdx && uses(e, threadIdx.get())) why = std::string("the ") + what + " around it depends on the thread";
        return why.empty();
    };
    TileWalk w;
    for (Stmt at = s;;) {
        if (auto f = as<For>(at); f && f->forKind == ForKind::Serial) {
            if (!shared(f->min, "bounds of a serial loop") || !shared(f->extent, "bounds of a serial loop")) return std::nullopt;
            w.path.push_back(at), w.child.push_back(0), ++w.loops;
            at = f->body;
        } else if (auto c = as<IfThenElse>(at); c && !c->otherwise) {
            if (!shared(c->cond, "condition")) return std::nullopt;
            w.path.push_back(at), w.child.push_back(0);
            at = c->then;
        } else if (pipelined(at)) {
            w.inner = {at};
            return w;
        } else if (auto q = as<Seq>(at)) {
            size_t i = 0;
            while (i < q->stmts.size() && pipelinedLoops(q->stmts[i]) == 0) ++i;
            if (i == q->stmts.size()) break;
            if (pipelined(q->stmts[i])) {
                w.inner = q->stmts, w.loopAt = i;
                return w;
            }
            w.path.push_back(at), w.child.push_back(i);
            at = q->stmts[i];
        } else {
            break;
        }
    }
    why = "it stands inside a statement other than serial loops, conditions without an else and statement lists";
    return std::nullopt;
}

VarMap freshWalkVars(const TileWalk &w) {
    VarMap m;
    for (auto &s : w.path)
        if (auto f = as<For>(s)) m[f->var.get()] = makeVar(f->var->name, f->var->dtype, f->var->loc);
    return m;
}

Stmt rewrapTileWalk(const TileWalk &w, Stmt body, const VarMap &vars, bool pathOnly) {
    for (size_t i = w.path.size(); i-- > 0;) {
        const Stmt &s = w.path[i];
        if (auto f = as<For>(s)) {
            auto it = vars.find(f->var.get());
            Var v = it != vars.end() ? std::static_pointer_cast<const VarNode>(it->second) : f->var;
            body = For::make(v, substitute(f->min, vars), substitute(f->extent, vars), ForKind::Serial, 0, body, f->loc);
        } else if (auto c = as<IfThenElse>(s)) {
            body = IfThenElse::make(substitute(c->cond, vars), body, nullptr, c->loc);
        } else if (!pathOnly) {
            auto q = as<Seq>(s);
            std::vector<Stmt> stmts = q->stmts;
            stmts[w.child[i]] = body;
            body = Seq::make(std::move(stmts), q->loc);
        }
    }
    return body;
}

} // namespace tilec::passes
