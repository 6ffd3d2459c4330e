/// \file
/// T.Pipelined loops of explicit warp roles onto rings of num_stages stages (include/tilec/passes/RingWarpRoles.h).
#include "tilec/passes/RingWarpRoles.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Staging.h"

#include <map>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// The marker call of `with T.ws(g)` / T.tma_copy: an IfThenElse whose condition is a call of f.
const IfThenElse *marked(const Stmt &s, lib::Fn f) {
    auto i = as<IfThenElse>(s);
    return i && lib::is(i->cond, f) ? i : nullptr;
}

/// What one pipelined loop of T.ws blocks rings: the TMA tiles and the mbarriers, in the order first seen.
struct Rings {
    std::vector<const BufferNode *> tiles, barriers;
    std::string why; ///< why the loop keeps one buffer; empty when it can be ringed
    void add(std::vector<const BufferNode *> &to, const BufferNode *b) {
        if (std::find(to.begin(), to.end(), b) == to.end()) to.push_back(b);
    }
    /// A barrier operand: `tilec.address_of(bar[c])` with a constant c.
    void barrier(const Expr &addr) {
        const Load *l = addressedLoad(addr);
        if (!l || l->indices.size() != 1 || !constInt(l->indices[0])) return (void)(why = "a barrier named by a run-time index");
        add(barriers, l->buffer.get());
    }
    /// One statement of a T.ws block in the loop.
    void scan(const Stmt &s) {
        if (auto t = marked(s, lib::Fn::TmaCopyOn)) {
            auto c = as<Copy>(t->then);
            const Buffer &dst = c ? c->dst.buffer : Buffer();
            bool whole = dst && dst->scope == Scope::Shared && dst->shape.size() == 2;
            for (size_t d = 0; whole && d < 2; ++d)
                whole = constInt(c->dst.ranges[d].min) == std::optional<int64_t>(0) &&
                        constInt(c->dst.ranges[d].extent) == constInt(dst->shape[d]);
            if (!whole) return (void)(why = "a T.tma_copy that fills part of a buffer");
            add(tiles, dst.get());
            return barrier(as<Call>(t->cond)->args[0]);
        }
        if (isCall(s, lib::Fn::MbarrierWait) || isCall(s, lib::Fn::MbarrierArriveEach)) return barrier(callOf(s)->args[0]);
        if (callsAny(s, {lib::Fn::MbarrierWait, lib::Fn::MbarrierArriveEach, lib::Fn::TmaCopyOn}))
            why = "a barrier operation or T.tma_copy inside a loop or branch of its T.ws block";
    }
};

Rings ringsOf(const For &f) {
    Rings r;
    if (constInt(f.min) != std::optional<int64_t>(0)) return r.why = "the loop does not start at 0", r;
    for (auto &s : Seq::items(f.body)) {
        if (auto ws = marked(s, lib::Fn::WarpGroup)) {
            for (auto &c : Seq::items(ws->then)) r.scan(c);
        } else if (callsAny(s, {lib::Fn::MbarrierWait, lib::Fn::MbarrierArriveEach, lib::Fn::TmaCopyOn, lib::Fn::WarpGroup})) {
            r.why = "a barrier operation or T.ws block inside a loop or branch of the pipelined loop";
        }
    }
    if (r.why.empty() && r.tiles.empty()) r.why = "no T.tma_copy in the loop";
    return r;
}

/// Iteration ko's stage of every ringed buffer: tiles get a leading stage index, barriers stage * count + index;
/// each T.barrier_wait's parity is read at ko // S.
class Ringer : public IRMutator {
  public:
    using IRMutator::visit;
    Ringer(std::map<const BufferNode *, Buffer> tiles, std::map<const BufferNode *, Buffer> bars, const Var &ko, int stages)
        : tiles_(std::move(tiles)), bars_(std::move(bars)), ko_(ko), stages_(stages) {}

    Expr visit(const std::shared_ptr<const Load> &op) override {
        if (auto it = bars_.find(op->buffer.get()); it != bars_.end()) {
            Expr n = intImm(constInt(op->buffer->shape[0]).value_or(1), DType::Int32);
            Expr at = binary(BinaryOp::Add, binary(BinaryOp::Mul, stage(), n), cast(DType::Int32, op->indices[0]));
            return Load::make(it->second, {simplify(at)}, op->loc);
        }
        if (auto it = tiles_.find(op->buffer.get()); it != tiles_.end()) {
            std::vector<Expr> idx{stage()};
            for (auto &i : op->indices) idx.push_back(mutate(i));
            return Load::make(it->second, std::move(idx), op->loc);
        }
        return IRMutator::visit(op);
    }
    Stmt visit(const std::shared_ptr<const Evaluate> &op) override {
        auto c = as<Call>(op->value);
        if (!c || !lib::is(*c, lib::Fn::MbarrierWait) || c->args.size() < 2) return IRMutator::visit(op);
        std::vector<Expr> args;
        for (auto &a : c->args) args.push_back(mutate(a));
        Expr slow = binary(BinaryOp::FloorDiv, ko_, intImm(stages_, ko_->dtype));
        args[1] = substitute(c->args[1], VarMap{{ko_.get(), slow}});
        return Evaluate::make(Call::make(c->dtype, c->name, std::move(args), c->loc), op->loc);
    }
    Stmt visit(const std::shared_ptr<const Copy> &op) override {
        return Copy::make(region(op->src), region(op->dst), op->loc);
    }
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        Region a = region(op->a), b = region(op->b);
        Region e = op->sparse() ? region(op->e) : op->e; // T.gemm_sp's metadata tile is staged like A and B
        if (a.buffer == op->a.buffer && b.buffer == op->b.buffer && e.buffer == op->e.buffer) return op;
        Stmt g = op->withRegions(a, b, op->c);
        return op->sparse() ? as<Gemm>(g)->withMetadata(e) : g;
    }

  private:
    std::map<const BufferNode *, Buffer> tiles_, bars_;
    Var ko_;
    int stages_;
    Expr stage() const { return binary(BinaryOp::FloorMod, ko_, intImm(stages_, ko_->dtype)); }
    Region region(const Region &r) {
        auto it = tiles_.find(r.buffer.get());
        Region out = r;
        for (auto &x : out.ranges) x = Range{mutate(x.min), mutate(x.extent)};
        if (it == tiles_.end()) return out;
        out.buffer = it->second;
        out.ranges.insert(out.ranges.begin(), Range{stage(), intImm(1, DType::Int32)});
        return out;
    }
};

std::string names(const std::vector<const BufferNode *> &bs) {
    std::string out;
    for (auto *b : bs) out += (out.empty() ? "" : ", ") + b->name;
    return out;
}

/// The kernel with its top-level pipelined loop `at` of T.ws blocks ringed, or null (and `why`) when it keeps one buffer.
KernelP ring(const Kernel &k, size_t at, std::string &why) {
    std::vector<Stmt> top = Seq::items(k.body);
    auto f = as<For>(top[at]);
    Rings r = ringsOf(*f);
    if (!r.why.empty()) return why = r.why, nullptr;
    for (size_t i = 0; i < top.size(); ++i) {
        if (i == at) continue;
        for (auto *b : r.tiles)
            if (uses(top[i], b)) return why = "'" + b->name + "' is used outside the loop", nullptr;
        for (auto *b : r.barriers)
            if (!isCall(top[i], lib::Fn::MbarrierInit) && uses(top[i], b))
                return why = "barrier '" + b->name + "' is used outside the loop", nullptr;
    }
    const int S = f->numStages;
    std::map<const BufferNode *, Buffer> tiles, bars;
    auto nk = std::make_shared<Kernel>(k);
    for (auto &b : nk->allocs) {
        if (std::count(r.tiles.begin(), r.tiles.end(), b.get())) b = tiles[b.get()] = ringOf(b, S);
        else if (std::count(r.barriers.begin(), r.barriers.end(), b.get())) {
            auto n = constInt(b->shape.size() == 1 ? b->shape[0] : Expr());
            if (!n) return why = "barrier '" + b->name + "' is not a list of mbarriers", nullptr;
            b = bars[b.get()] = makeBuffer(b->name, b->scope, b->dtype, {intImm(S * *n, DType::Int32)}, b->loc);
        }
    }
    Ringer m(tiles, bars, f->var, S);
    Stmt body = m.mutate(f->body);
    for (auto *b : r.tiles)
        if (uses(body, b)) return why = "'" + b->name + "' is used other than by T.tma_copy and T.gemm", nullptr;
    std::vector<Stmt> out;
    for (size_t i = 0; i < top.size(); ++i) {
        const Load *l = isCall(top[i], lib::Fn::MbarrierInit) ? addressedLoad(callOf(top[i])->args[0]) : nullptr;
        auto it = l ? bars.find(l->buffer.get()) : bars.end();
        if (i == at) {
            out.push_back(For::make(f->var, f->min, f->extent, f->forKind, S, body, f->loc));
        } else if (it == bars.end()) {
            out.push_back(top[i]);
        } else {
            const int64_t n = constInt(l->buffer->shape[0]).value_or(1);
            for (int s = 0; s < S; ++s) {
                std::vector<Expr> args = callOf(top[i])->args;
                args[0] = addressOf(it->second, {simplify(binary(BinaryOp::Add, intImm(s * n, DType::Int32), cast(DType::Int32, l->indices[0])))});
                out.push_back(lib::stmt(lib::Fn::MbarrierInit, std::move(args), top[i]->loc));
            }
        }
    }
    nk->body = Seq::make(std::move(out), k.body->loc);
    why = "rings of " + std::to_string(S) + " stages (" + names(r.tiles) + "; mbarriers " + names(r.barriers) +
          "), barrier parities read at " + f->var->name + " // " + std::to_string(S);
    return nk;
}

bool pipelinedRoles(const Stmt &s) {
    auto f = as<For>(s);
    return f && f->forKind == ForKind::Pipelined && f->numStages >= 2 && callsAny(f->body, {lib::Fn::WarpGroup});
}

} // namespace

Program ringWarpRoles(const Program &p, const SourceManager *sources) {
    Program out;
    for (auto &k : p.kernels) {
        KernelP nk = k;
        // The n-th such loop of the kernel as rewritten so far (ringing one adds mbarrier initialisations above it).
        for (size_t n = 0;; ++n) {
            std::vector<Stmt> top = Seq::items(nk->body);
            size_t i = 0, seen = 0;
            for (; i < top.size(); ++i)
                if (pipelinedRoles(top[i]) && seen++ == n) break;
            if (i == top.size()) break;
            std::string why;
            KernelP ringed = ring(*nk, i, why);
            remark(sources, top[i]->loc, "kernel '" + k->name + "': the T.Pipelined loop of T.ws blocks " +
                                             (ringed ? "runs on " + why : "keeps one buffer and the barriers as written: " + why));
            if (ringed) nk = ringed;
        }
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
