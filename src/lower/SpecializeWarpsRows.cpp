/// \file
/// The global-to-shared row copies of a T.Pipelined loop, given back their copy form for specializeWarps'
/// TMA planning (declared in include/tilec/passes/SpecializeWarps.h). lowerTileOps turns a T.copy into a 1-D
/// shared buffer into a T.Parallel loop of element stores (the cp.async path moves such rows thread by
/// thread); a TMA producer moves the whole row in one box instead (planTmaTile's 1-D rows).
#include "tilec/passes/SpecializeWarps.h"

#include "tilec/IROperator.h"
#include "tilec/passes/Arith.h"
#include "tilec/IRUses.h"

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// `s` as a Copy when it is `for i in parallel(C): dst[i] = src[e0, ..., base + i]`: a whole 1-D shared buffer
/// filled with a run of one global tensor's innermost dimension (same type, no conversion), every other index
/// free of i; null otherwise.
Stmt rowCopy(const Stmt &s) {
    auto f = as<For>(s);
    if (!f || f->forKind != ForKind::Parallel || constInt(f->min) != std::optional<int64_t>(0)) return nullptr;
    auto n = constInt(f->extent);
    auto st = as<Store>(f->body);
    if (!n || !st || st->buffer->scope != Scope::Shared || st->buffer->shape.size() != 1 || st->indices.size() != 1) return nullptr;
    if (constInt(st->buffer->shape[0]) != n) return nullptr;
    auto at = as<VarNode>(st->indices[0]);
    auto ld = as<Load>(st->value);
    if (!at || at != f->var.get() || !ld || ld->buffer->scope != Scope::Global || ld->buffer->dtype != st->buffer->dtype) return nullptr;
    if (ld->indices.size() != ld->buffer->shape.size() || ld->indices.empty()) return nullptr;
    Region src{ld->buffer, {}, s->loc};
    for (size_t d = 0; d + 1 < ld->indices.size(); ++d) {
        if (uses(ld->indices[d], f->var.get())) return nullptr;
        src.ranges.push_back({ld->indices[d], i32(1)});
    }
    auto lin = linearIn(ld->indices.back(), f->var.get());
    if (!lin || lin->second != 1) return nullptr;
    src.ranges.push_back({lin->first ? lin->first : i32(0), i32(*n)});
    return Copy::make(src, Region::whole(st->buffer, s->loc), s->loc);
}

} // namespace

Stmt rowCopies(const Stmt &body, std::map<const StmtNode *, Stmt> &originals) {
    if (auto c = as<IfThenElse>(body); c && !c->otherwise) {
        Stmt then = rowCopies(c->then, originals);
        return then == c->then ? body : IfThenElse::make(c->cond, then, nullptr, c->loc);
    }
    auto q = as<Seq>(body);
    if (!q) return body;
    std::vector<Stmt> out;
    bool changed = false;
    for (auto &s : q->stmts) {
        Stmt c = rowCopy(s);
        changed |= c != nullptr;
        if (c) originals[c.get()] = s;
        out.push_back(c ? c : s);
    }
    return changed ? Seq::make(std::move(out), q->loc) : body;
}

} // namespace tilec::passes
