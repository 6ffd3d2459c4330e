/// \file
/// Vector loads and stores from the lanes of vectorized loops (include/tilec/passes/VectorizeAccesses.h).
#include "tilec/passes/VectorizeAccesses.h"

#include "BankConflicts.h"
#include "RangeScopedMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "ProgramVectorized.h"
#include "VectorLanes.h"

#include <algorithm>
#include <functional>
#include <set>

namespace tilec::passes {

using namespace ir;
using namespace lanes;

namespace {

/// The lane count for a T.vectorized loop of the program (ProgramVectorized.h) over `extent` lanes whose body
/// is plain stores that either only load memory into registers, or only store registers to one memory
/// buffer, or to several global tensors of the kernel's parameters (which the launcher refuses to overlap
/// where the kernel writes one: TileKernels' engram_gate_bwd stores grad_x and grad_k in one loop), or only
/// copy global tensors into shared memory (T.ptx_cp_async's loop; the two spaces never overlap): its lanes
/// can be reordered, so its accesses become vector loads and stores like those of a vectorized loop, 16 bytes
/// at most each (a longer loop is taken that many lanes at a time). 0 for any other.
int64_t reorderableLanes(const For &f, int64_t extent, const Kernel &k) {
    if (f.forKind != ForKind::Unrolled || !programVectorized(f.numStages) || !isZero(f.min)) return 0;
    std::vector<Stmt> stmts;
    if (auto seq = as<Seq>(f.body)) stmts = seq->stmts;
    else stmts.push_back(f.body);
    struct Mem : IRVisitor {
        using IRVisitor::visit;
        int bytes = 0;
        bool ok = true;
        std::set<const BufferNode *> loaded;
        void visit(const Load &op) override {
            if (isMemory(op.buffer)) loaded.insert(op.buffer.get()), bytes = std::max(bytes, op.buffer->dtype.bytes());
            IRVisitor::visit(op);
        }
        void visit(const Call &op) override { // a value without effect (a role's thread index) changes nothing
            auto *f = lib::find(op.name);
            if (!f || f->effects != lib::kPure) ok = false;
            else IRVisitor::visit(op);
        }
    } m;
    std::set<const BufferNode *> stored;
    for (auto &st : stmts) {
        auto store = topStore(st); // a store under the program's or predicateBounds' own test of the row
        auto guard = as<IfThenElse>(st);
        if (!store || (guard && !pureIndexTest(guard->cond))) return 0;
        if (isMemory(store->buffer)) stored.insert(store->buffer.get()), m.bytes = std::max(m.bytes, store->buffer->dtype.bytes());
        m.visit(st);
    }
    auto disjoint = [&] { // arguments: a view shares its tensor's memory, a T.make_tensor tensor lies anywhere
        for (auto *b : stored)
            if (std::none_of(k.params.begin(), k.params.end(), [&](const Param &p) { return p.buffer.get() == b && p.argument(); }))
                return false;
        return true;
    };
    auto across = [&] { // global tensors into shared memory (T.ptx_cp_async's copy): the two never overlap
        auto in = [](const std::set<const BufferNode *> &bs, Scope s) {
            return std::all_of(bs.begin(), bs.end(), [&](const BufferNode *b) { return b->scope == s; });
        };
        return in(m.loaded, Scope::Global) && in(stored, Scope::Shared);
    };
    if (!m.ok || m.bytes == 0 || !(stored.empty() || (m.loaded.empty() && (stored.size() == 1 || disjoint())) || across()))
        return 0;
    int64_t lanes = std::min<int64_t>(extent, 16 / m.bytes);
    while (lanes > 1 && (extent % lanes || (lanes & (lanes - 1)))) lanes /= 2;
    return lanes >= 2 ? lanes : 0;
}

/// A T.vectorized loop of the program (ProgramVectorized.h) whose body is one atomic addition of float32 lanes
/// that code generation adds at once (matchAtomicVector: T.atomic_addx4's loop) as such a vectorized loop; null
/// for any other. Its lanes touch `lanes` distinct elements, so adding them as one vector changes no result.
Stmt atomicLanes(const For &f) {
    if (f.forKind != ForKind::Unrolled || !programVectorized(f.numStages)) return nullptr;
    Stmt v = For::make(f.var, f.min, f.extent, ForKind::Vectorized, 0, f.body, f.loc);
    return matchAtomicVector(*as<For>(v)) ? v : nullptr;
}

/// A loop of lanes (a vectorized loop, or a program's T.vectorized one) whose body is several atomic additions,
/// optionally all under one test free of the lane, each of which code generation adds at once on its own
/// (matchAtomicVector): one such loop per addition, in the same order; null for any other. A lane loop of
/// T.Parallel over two accumulators (layernorm_bwd's DGamma and DBeta at the end of the kernel) otherwise stays
/// two scalar atomics a lane: 64 REDG of 4 bytes a thread where TileLang's AtomicAddx4 issues 16 of 16. Exact: an
/// atomic addition returns nothing and the loop writes nothing else (the values are registers or shared memory,
/// the test touches no tensor an addition writes), so only the order of one thread's relaxed additions changes,
/// which across threads is unordered already.
Stmt atomicLoopsApart(const For &f) {
    if (f.forKind != ForKind::Vectorized && !(f.forKind == ForKind::Unrolled && programVectorized(f.numStages))) return nullptr;
    Expr cond;
    Stmt body = f.body;
    if (auto i = as<IfThenElse>(body); i && !i->otherwise && !uses(i->cond, f.var.get())) cond = i->cond, body = i->then;
    std::vector<Stmt> items = Seq::items(body), loops;
    if (items.size() < 2) return nullptr;
    for (const Stmt &s : items) {
        Var lane = loops.empty() ? f.var : makeVar(f.var->name, f.var->dtype, f.loc);
        Stmt b = substitute(cond ? IfThenElse::make(cond, s, nullptr, s->loc) : s, VarMap{{f.var.get(), Expr(lane)}});
        Stmt lanes = For::make(lane, f.min, f.extent, ForKind::Vectorized, 0, b, f.loc);
        auto a = matchAtomicVector(*as<For>(lanes));
        if (!a || (cond && uses(cond, a->add->dst.buffer.get()))) return nullptr;
        loops.push_back(f.forKind == ForKind::Vectorized ? lanes : For::make(lane, f.min, f.extent, f.forKind, f.numStages, b, f.loc));
    }
    return Seq::make(std::move(loops), f.loc);
}

/// Registers a gathered load may span (gatherRuns): its runs' extent, from the first run's start to the last one's end.
constexpr int64_t kMaxGatherSpan = 64;

/// The load of `e` (a load, or a zero-select of one; with `castZero` the zero may be a cast one, `int8(0)`) where it
/// may be read once before a vectorized loop's body over `lane`, whatever its index's shape; null otherwise. Run
/// before the body, the load would read the registers and memory its address and test read as they were before
/// any lane stored them (a gather's index register set by the body itself), so neither may read what it stores.
const Load *readOnce(const Expr &e, const Inside &in, const VarNode *lane, const Stmt &body, bool castZero) {
    const Load *l = as<Load>(e);
    Expr cond;
    if (auto s = as<Select>(e)) {
        auto c = castZero ? as<Cast>(s->f) : nullptr;
        if (!isZero(s->f) && !(c && isZero(c->value))) return nullptr;
        l = as<Load>(s->t);
        cond = s->cond;
    }
    if (!l || !isMemory(l->buffer) || l->indices.size() != 1) return nullptr;
    if (in.stored.count(l->buffer.get()) && !readModifyWriteOnly(body, l->buffer.get())) return nullptr;
    if (cond && (uses(cond, lane) || mentionsAny(cond, in.bound) || loadsAny(cond, in.stored))) return nullptr;
    return loadsAny(l->indices[0], in.stored) ? nullptr : l;
}

class Vectorizer : public RangeScopedMutator {
  public:
    using RangeScopedMutator::visit;
    std::vector<Buffer> temps;
    /// With assumeAlignedRows, the kernel's T.dynamic sizes may be assumed multiples of a vector's lanes (its
    /// lowering is then a variant the launcher runs where they are: SizeAssumptions).
    Vectorizer(const Kernel &k, bool assumeAlignedRows, bool selectTestLoads, bool bankVectorLoads)
        : RangeScopedMutator(k), selectTestLoads_(selectTestLoads), bankVectorLoads_(bankVectorLoads), kernel_(k) {
        if (assumeAlignedRows)
            for (auto &v : k.dynamicSymbols)
                if (v) assumed.sizes[v.get()] = v;
    }
    SizeAssumptions assumed;

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (Stmt apart = atomicLoopsApart(*op)) return mutate(apart);
        Stmt s;
        const For *f = nullptr;
        std::optional<int64_t> width;
        int64_t lanes = 0;
        { // the loop's variable in scope while its body is rewritten and its lanes taken as vectors
            LoopScope in(*this, *op);
            s = IRMutator::visit(op);
            f = as<For>(s);
            width = f ? constInt(f->extent) : std::nullopt;
            // (lanes > 0: a loop of no trips is no loop of lanes, and vectorize must not move its statements out)
            lanes = f && width ? reorderableLanes(*f, *width, kernel_) : 0;
            if (f && !lanes && atomicLanes(*f)) s = atomicLanes(*f), f = as<For>(s);
            if (f && width && *width >= 2 && isZero(f->min) && (f->forKind == ForKind::Vectorized || lanes == *width)) {
                s = asVectors(s, *width);
                f = as<For>(s);
            }
        }
        if (lanes > 0 && lanes == width) {
            return vectorize(s, *f, lanes);
        } else if (lanes) { // lanes at a time: for o: for l < lanes: body[v = o * lanes + l]
            Var o = makeVar(f->var->name + "_o", f->var->dtype, f->loc), l = makeVar(f->var->name, f->var->dtype, f->loc);
            Expr v = binary(BinaryOp::Add, binary(BinaryOp::Mul, Expr(o), intImm(lanes, f->var->dtype)), Expr(l));
            Stmt body = simplifyIndices(substitute(f->body, VarMap{{f->var.get(), v}}));
            Stmt inner = For::make(l, intImm(0, f->var->dtype), intImm(lanes, f->var->dtype), ForKind::Unrolled,
                                   kProgramVectorized, body, f->loc);
            inner = asVectors(inner, lanes);
            return For::make(o, intImm(0, f->var->dtype), intImm(*width / lanes, f->var->dtype), ForKind::Unrolled, 0,
                             vectorize(inner, *as<For>(inner), lanes), f->loc);
        }
        if (!f || f->forKind != ForKind::Vectorized) return s;
        // Code generation adds the lanes at once; a shared source is first read as one vector where it can be.
        if (auto a = matchAtomicVector(*f); a && a->regs->scope == Scope::Local) return s;
        if (!width || *width < 2) return plain(s, *f);
        return vectorize(s, *f, *width);
    }

  private:
    bool selectTestLoads_; ///< LoweringOptions::selectTestLoads
    bool bankVectorLoads_; ///< LoweringOptions::bankVectorLoads
    const Kernel &kernel_;
    int counter_ = 0;

    /// Loop f over `width` lanes with its lanes taken as one vector where they provably are (splitLanes: the
    /// floor division and remainder of `base + lane` by a multiple of the width, as a flattened index of a 2-D
    /// buffer has them) and its tests made once per vector (laneConditions). Exact for lanes in [0, width):
    /// a lane-parallel loop and a program's T.vectorized loop alike.
    Stmt asVectors(const Stmt &loop, int64_t width) {
        const For &f = *as<For>(loop);
        Stmt body = laneConditions(splitLanes(f.body, f.var, width, &assumed), f.var.get(), width, ranges(), &assumed);
        return body == f.body ? loop : For::make(f.var, f.min, f.extent, f.forKind, f.numStages, body, f.loc);
    }

    /// The vectorized loop s (= f) unrolled, unless it is a pair conversion (code generation converts those two
    /// lanes at a time) or an atomic add of registers (one vector atomic: what is left of a region T.atomic_add
    /// once its source's vector load is hoisted).
    static Stmt plain(const Stmt &s, const For &f) {
        if (matchPairConversion(f) || matchAtomicVector(f)) return s;
        return For::make(f.var, f.min, f.extent, ForKind::Unrolled, 0, f.body, f.loc);
    }

    /// Stores to sink out of a vectorized loop f's body `body` (its statements `stmts`): top-level stores to memory,
    /// optionally under a lane-free check, at an aligned vector of the lanes; each becomes a store to a register
    /// array in `stmts`, and the vector stores of those arrays after the body are returned.
    std::vector<Stmt> sinkStores(std::vector<Stmt> &stmts, const Stmt &body, const For &f, int64_t width, const Inside &in) {
        const VarNode *lane = f.var.get();
        std::vector<Stmt> sunk;
        for (auto &s : stmts) {
            Expr cond;
            const Store *st = topStore(s);
            if (auto i = as<IfThenElse>(s); i && !i->otherwise) cond = i->cond;
            if (!st || !isMemory(st->buffer) || st->indices.size() != 1) continue;
            if (cond && (uses(cond, lane) || mentionsAny(cond, in.bound))) continue;
            // Run after the body, the store's address and test would read what the last lane left there.
            if ((cond && loadsAny(cond, in.stored)) || loadsAny(st->indices[0], in.stored)) continue;
            auto lin = linearIn(st->indices[0], lane);
            if (!lin || (lin->first && mentionsAny(lin->first, in.bound)) || ir::loads(body, st->buffer.get())) continue;
            if (!alignedBase(st->indices[0], lane, width, &assumed, st->buffer)) continue; // last: it may assume sizes
            Buffer t = temp(st->value->dtype, f.extent, st->loc);
            Stmt back = Store::make(st->buffer, {st->indices[0]}, Load::make(t, {Expr(f.var)}), st->loc);
            if (cond) back = IfThenElse::make(cond, back, nullptr, s->loc);
            sunk.push_back(For::make(f.var, f.min, f.extent, ForKind::Vectorized, 0, back, f.loc));
            s = Store::make(t, {Expr(f.var)}, st->value, st->loc);
        }
        return sunk;
    }

    /// A load e (readOnce) of a vectorized loop f over `width` lanes whose lanes read `base + offset(lane)`
    /// (laneOffsets) where the distinct offsets are whole aligned runs of `run` elements (16 bytes at most; base
    /// a multiple of run): the dQ accumulator layout of TileLang's attention backward interleaves a row's
    /// columns (lanes 0 to 3 at offsets 0, 32, 1, 33), a packed tensor gives two lanes one element (`v // 2`).
    /// Each run is read as one vector into registers `raw` (the run at offset s into raw[s - lo], lo the first
    /// run's start; statements appended to `out`), and the load becomes raw[offset(lane) - lo]; null where the
    /// offsets are no such runs. Every element read is one some lane reads, under the load's own test. `in` is what
    /// f's body binds and stores.
    Expr gatherRuns(const Expr &e, const For &f, int64_t width, const Inside &in, std::vector<Stmt> &out) {
        const Load *l = as<Load>(e);
        const Select *sel = as<Select>(e);
        if (sel) l = as<Load>(sel->t);
        auto t = laneOffsets(l->indices[0], f.var, width);
        if (!t || (t->base && mentionsAny(t->base, in.bound))) return nullptr;
        std::set<int64_t> distinct(t->values.begin(), t->values.end());
        for (int64_t run = 16 / l->buffer->dtype.bytes(); run >= 2; run /= 2) {
            if (t->base && knownMultiple(t->base) % run) continue;
            std::set<int64_t> starts;
            bool whole = true;
            for (int64_t o : distinct) {
                int64_t s0 = (o >= 0 ? o : o - run + 1) / run * run; // floor to the run
                starts.insert(s0);
                for (int64_t k = 0; k < run; ++k) whole &= distinct.count(s0 + k) > 0;
            }
            int64_t lo = *starts.begin(), span = *starts.rbegin() + run - lo;
            if (!whole || span > kMaxGatherSpan) continue;
            DType it = l->indices[0]->dtype;
            Buffer raw = temp(l->buffer->dtype, intImm(span, f.var->dtype), e->loc);
            for (int64_t s0 : starts) {
                Var k = makeVar(f.var->name, f.var->dtype, f.loc);
                Expr at = t->base ? binary(BinaryOp::Add, t->base, intImm(s0, it)) : intImm(s0, it);
                Expr value = Load::make(l->buffer, {binary(BinaryOp::Add, at, cast(it, Expr(k)))}, l->loc);
                if (sel) value = Select::make(sel->cond, value, sel->f, sel->loc);
                Expr reg = s0 == lo ? Expr(k) : binary(BinaryOp::Add, intImm(s0 - lo, k->dtype), Expr(k));
                out.push_back(For::make(k, intImm(0, k->dtype), intImm(run, k->dtype), ForKind::Vectorized, 0,
                                        Store::make(raw, {reg}, value, e->loc), f.loc));
            }
            Expr at = lo == 0 ? t->offset : binary(BinaryOp::Sub, t->offset, intImm(lo, t->offset->dtype));
            return Load::make(raw, {at}, e->loc);
        }
        return nullptr;
    }

    struct Hoisted {
        Expr original; ///< the load, or the select around it
        Buffer temp;
        bool fromTest = false; ///< hoisted from a select's test for its bank conflicts (conflictedTest)
    };

    /// Whether a select's test `cond` in vectorized loop f over `width` lanes is to have its shared loads taken as
    /// vectors for their bank conflicts (bankVectorLoads_, not selectTestLoads_, which takes every one): it reads
    /// shared memory whose lanes' elements, read one by one, conflict in the banks, while one aligned vector of them
    /// a thread would not (banks::, the block's first warp, outer loops at their first iteration): a byte tile each
    /// thread reads 16 bytes of, 16 bytes apart, takes 4 wavefronts a byte and 4 for all 16 as one vector.
    bool conflictedTest(const Expr &cond, const For &f, int64_t width) const {
        if (selectTestLoads_ || !bankVectorLoads_) return false;
        struct Shared : IRVisitor {
            using IRVisitor::visit;
            std::vector<const Load *> loads;
            void visit(const Load &op) override {
                if (op.buffer->scope == Scope::Shared && op.indices.size() == 1) loads.push_back(&op);
                IRVisitor::visit(op);
            }
        } shared;
        shared.visit(cond);
        std::map<const VarNode *, int64_t> values;
        for (auto &[v, range] : ranges())
            if (range.lo) values[v] = *range.lo;
        values[f.var.get()] = 0;
        for (const Load *l : shared.loads) {
            const int eb = l->buffer->dtype.bytes();
            auto lin = linearIn(l->indices[0], f.var.get());
            if (!lin || lin->second != 1 || width * eb > 16) continue;
            auto one = banks::firstWarp(l->indices[0], kernel_.threadIdx.get(), values, eb);
            auto all = banks::firstWarp(l->indices[0], kernel_.threadIdx.get(), values, (int)(width * eb));
            if (!one || !all) continue;
            auto same = [](int64_t o) { return o; };
            if (banks::wavefronts(*one, eb, same) > banks::idealWavefronts(*one) &&
                banks::wavefronts(*all, eb, same) == banks::idealWavefronts(*all))
                return true;
        }
        return false;
    }

    Stmt vectorize(const Stmt &loop, const For &f, int64_t width) {
        if (Stmt split = splitGuards(f.body); split != f.body) {
            Stmt s = For::make(f.var, f.min, f.extent, f.forKind, f.numStages, split, f.loc);
            return vectorize(s, *as<For>(s), width);
        }
        const VarNode *lane = f.var.get();
        Inside in;
        in.visit(f.body);
        in.bound.erase(lane);
        {
            auto seq = as<Seq>(f.body);
            std::vector<Stmt> stmts = seq ? seq->stmts : std::vector<Stmt>{f.body};
            size_t defs = invariantRegisterDefs(stmts, lane, in.bound, in.stored);
            if (width > 0 && defs > 0 && defs < stmts.size()) { // the loop runs, so the statements run once
                std::vector<Stmt> out(stmts.begin(), stmts.begin() + (ptrdiff_t)defs);
                std::vector<Stmt> rest(stmts.begin() + (ptrdiff_t)defs, stmts.end());
                Stmt restBody = rest.size() == 1 ? rest[0] : Seq::make(std::move(rest), f.body->loc);
                Stmt s = For::make(f.var, f.min, f.extent, f.forKind, f.numStages, restBody, f.loc);
                out.push_back(vectorize(s, *as<For>(s), width));
                return Seq::make(std::move(out), f.loc);
            }
        }

        // Loads to hoist: memory, aligned, checked independently of the lane, not stored to in the body.
        std::vector<Hoisted> loads;
        auto candidate = [&](const Expr &e) -> bool {
            const Load *l = readOnce(e, in, lane, f.body, false);
            if (!l) return false;
            auto lin = linearIn(l->indices[0], lane);
            if (!lin || (lin->first && mentionsAny(lin->first, in.bound))) return false;
            Expr base = alignedBase(l->indices[0], lane, width, &assumed, l->buffer); // last: it may assume sizes
            return base && !uses(base, lane);
        };
        // Loads whose lanes are a permutation of aligned runs (gatherRuns): read run by run, picked per lane.
        std::vector<Stmt> gathers;
        std::vector<std::pair<Expr, Expr>> gathered; // the load, its replacement
        auto gather = [&](const Expr &e) -> Expr {
            for (auto &[orig, repl] : gathered)
                if (structurallyEqual(orig, e)) return repl;
            if (!readOnce(e, in, lane, f.body, true)) return nullptr;
            Expr r = gatherRuns(e, f, width, in, gathers);
            if (r) gathered.push_back({e, r});
            return r;
        };
        struct Replace : IRMutator {
            using IRMutator::visit;
            Vectorizer *self;
            std::vector<Hoisted> *loads;
            std::function<bool(const Expr &)> candidate;
            std::function<Expr(const Expr &)> gather;
            const For *loop;
            int64_t width = 0; ///< the loop's lanes
            /// The tests of the enclosing ifs' then-branches that hold for every lane or none (see thenTests):
            /// a load there is needed only where they hold, so its vector is read only then (zeros otherwise,
            /// which no lane uses). TileLang's varlen kernels read rows below a sequence's length this way.
            std::vector<Expr> guards;
            std::function<void(const Expr &, std::vector<Expr> &)> thenTests;
            Expr hoist(Expr e) {
                e = underGuards(e, guards);
                for (auto &h : *loads)
                    if (structurallyEqual(h.original, e)) return Load::make(h.temp, {Expr(loop->var)});
                Buffer t = self->temp(e->dtype, loop->extent, e->loc);
                loads->push_back({e, t, bankTest > 0});
                return Load::make(t, {Expr(loop->var)});
            }
            Expr visit(const std::shared_ptr<const Select> &op) override {
                if (candidate(op)) return hoist(op);
                if (Expr g = gather(underGuards(op, guards))) return g;
                // A load under a bounds check that depends on the lane stays a checked scalar load: hoisted
                // alone, it would read past the tensor's end.
                if (as<Load>(op->t) && isZero(op->f)) {
                    Expr c = mutate(op->cond);
                    return c == op->cond ? Expr(op) : Select::make(c, op->t, op->f, op->loc);
                }
                // The test runs for every lane; only the two values are conditional (its shared loads hoisted: below).
                const bool banked = self->conflictedTest(op->cond, *loop, width), test = self->selectTestLoads_ || banked;
                if (!test) ++conditions;
                bankTest += banked;
                Expr c = mutate(op->cond);
                bankTest -= banked;
                if (test) ++conditions;
                Expr t = mutate(op->t), fv = mutate(op->f);
                --conditions;
                if (c == op->cond && t == op->t && fv == op->f) return op;
                return Select::make(c, t, fv, op->loc);
            }
            Expr visit(const std::shared_ptr<const Load> &op) override {
                // Global loads are safe anywhere (checked or proven inside the tensor); a shared load under a
                // condition may be guarded by it, so it stays where it is.
                // A guarded load that the body also reads unconditionally (hoisted already: the test of a select
                // over decoded fields of the same element) reads nothing new.
                bool guarded = conditions > 0 && op->buffer->scope == Scope::Shared;
                for (auto &h : *loads)
                    if (guarded && (self->selectTestLoads_ || h.fromTest) && structurallyEqual(h.original, underGuards(op, guards)))
                        return Load::make(h.temp, {Expr(loop->var)});
                if (!guarded && candidate(op)) return hoist(op);
                if (Expr g = !guarded ? gather(underGuards(op, guards)) : nullptr) return g;
                return IRMutator::visit(op);
            }
            int conditions = 0;
            int bankTest = 0; ///< inside a select's test that conflictedTest took as vectors
            Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
                ++conditions;
                Expr cond = mutate(op->cond);
                size_t depth = guards.size();
                thenTests(op->cond, guards);
                Stmt then = mutate(op->then);
                guards.resize(depth);
                Stmt otherwise = op->otherwise ? mutate(op->otherwise) : nullptr;
                --conditions;
                if (cond == op->cond && then == op->then && otherwise == op->otherwise) return op;
                return IfThenElse::make(cond, then, otherwise, op->loc);
            }
        } rep;
        rep.self = this;
        rep.loads = &loads;
        rep.candidate = candidate;
        rep.gather = gather;
        rep.loop = &f;
        rep.width = width;
        // The conjuncts of an if's test that are the same for all lanes (lane-free ones, or `base + lane < b` made
        // once per vector by laneFree), read only registers the body leaves alone, and do not always hold.
        rep.thenTests = [&](const Expr &cond, std::vector<Expr> &out) {
            std::vector<Expr> parts;
            conjuncts(cond, parts);
            for (Expr c : parts) {
                if (uses(c, lane)) c = laneFree(c, lane, width);
                if (c && !mentionsAny(c, in.bound) && registerTest(c, in.stored) && !provablyTrue(c, ranges()))
                    out.push_back(c);
            }
        };
        Stmt body = rep.mutate(f.body);

        // Stores to sink: top-level statements of the body, optionally under a lane-free check.
        std::vector<Stmt> stmts;
        if (auto seq = as<Seq>(body)) stmts = seq->stmts;
        else stmts.push_back(body);
        std::vector<Stmt> sunk = sinkStores(stmts, body, f, width, in);
        if (loads.empty() && sunk.empty() && gathers.empty()) return plain(loop, f);

        std::vector<Stmt> out = gathers;
        for (auto &h : loads)
            out.push_back(For::make(f.var, f.min, f.extent, ForKind::Vectorized, 0,
                                    Store::make(h.temp, {Expr(f.var)}, h.original, f.loc), f.loc));
        Stmt rest = For::make(f.var, f.min, f.extent, ForKind::Vectorized, 0, Seq::make(stmts, f.loc), f.loc);
        out.push_back(plain(rest, *as<For>(rest)));
        for (auto &s : sunk) out.push_back(s);
        return Seq::make(std::move(out), f.loc);
    }

  public:
    Buffer temp(DType t, const Expr &extent, const SourceRange &loc) {
        Buffer b = makeBuffer("vec" + std::to_string(counter_++), Scope::Local, t, {extent}, loc);
        temps.push_back(b);
        return b;
    }
};

} // namespace

std::optional<PairConversion> matchPairConversion(const For &f) {
    auto lanes = constInt(f.extent);
    auto st = as<Store>(f.body);
    if (f.forKind != ForKind::Vectorized || !lanes || *lanes < 2 || *lanes % 2 || !st ||
        st->buffer->scope != Scope::Local || st->indices.size() != 1)
        return std::nullopt;
    const DType t = st->buffer->dtype;
    auto c = as<Cast>(st->value);
    if ((t.kind != DType::Float16 && t.kind != DType::BFloat16 && !t.isFloat8()) || !c || c->dtype != t ||
        c->value->dtype.kind != DType::Float32)
        return std::nullopt;
    Expr base = alignedBase(st->indices[0], f.var.get(), 2);
    // Both lanes' values are computed before either is stored: e must not read what the loop writes.
    if (!base || uses(base, f.var.get()) || loads(f.body, st->buffer.get())) return std::nullopt;
    return PairConversion{st, base, *lanes};
}

Program vectorizeAccesses(const Program &p, bool assumeAlignedRows, bool selectTestLoads, bool bankVectorLoads) {
    Program out;
    for (auto &k : p.kernels) {
        Vectorizer v(*k, assumeAlignedRows, selectTestLoads, bankVectorLoads);
        Stmt body = v.mutate(k->body);
        if (body == k->body) {
            out.kernels.push_back(k);
            continue;
        }
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        for (auto &b : v.temps) nk->allocs.push_back(b);
        for (auto &a : v.assumed.made)
            if (std::find(nk->assumptions.begin(), nk->assumptions.end(), a) == nk->assumptions.end())
                nk->assumptions.push_back(a);
        out.kernels.push_back(nk);
    }
    return out;
}

std::optional<AtomicVector> matchAtomicVector(const For &f) {
    auto lanes = constInt(f.extent);
    if (f.forKind != ForKind::Vectorized || !isZero(f.min) || !lanes || (*lanes != 2 && *lanes != 4)) return std::nullopt;
    const VarNode *lane = f.var.get();
    AtomicVector a;
    a.lanes = *lanes;
    Stmt body = f.body;
    if (auto i = as<IfThenElse>(body); i && !i->otherwise && !uses(i->cond, lane)) a.cond = i->cond, body = i->then;
    a.add = as<AtomicAdd>(body);
    if (!a.add || a.add->src || !a.add->value || a.add->dst.ranges.size() != 1) return std::nullopt;
    const Buffer &dst = a.add->dst.buffer;
    if (!dst || dst->scope != Scope::Global || dst->dtype != DType::Float32) return std::nullopt;
    // The lanes' values: registers, or consecutive elements of shared memory (read as they were, under the
    // same test: a region T.atomic_add from a shared tile whose rows are tested against the tensor's length).
    auto reg = as<Load>(a.add->value);
    if (!reg || (reg->buffer->scope != Scope::Local && reg->buffer->scope != Scope::Shared) ||
        reg->buffer->dtype != DType::Float32 || reg->indices.size() != 1)
        return std::nullopt;
    a.base = alignedBase(a.add->dst.ranges[0].min, lane, a.lanes);
    auto r = linearIn(reg->indices[0], lane);
    if (!a.base || uses(a.base, lane) || !r || r->second != 1) return std::nullopt;
    a.regBase = r->first ? r->first : intImm(0, reg->indices[0]->dtype);
    if (reg->buffer->scope == Scope::Shared) { // read as one vector: its start aligned like the lanes
        a.regBase = alignedBase(reg->indices[0], lane, a.lanes);
        if (!a.regBase || uses(a.regBase, lane)) return std::nullopt;
    }
    a.regs = reg->buffer.get();
    return a;
}

} // namespace tilec::passes
