/// \file
/// Placement of wgmma waits (include/tilec/passes/PlaceWgmmaWaits.h).
#include "tilec/passes/PlaceWgmmaWaits.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LibraryCalls.h"

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

const Call *callOf(const Stmt &s) {
    auto e = as<Evaluate>(s);
    return e ? as<Call>(e->value) : nullptr;
}
bool isCall(const Stmt &s, lib::Fn f) {
    auto c = callOf(s);
    return c && lib::is(*c, f);
}
Stmt wait(int pending, const SourceRange &loc) { return lib::stmt(lib::Fn::WgmmaWait, {i32(pending)}, loc); }

class Placer : public IRMutator {
  public:
    using IRMutator::visit;

    Stmt visit(const std::shared_ptr<const Seq> &op) override {
        std::vector<Stmt> out;
        bool changed = false;
        for (size_t i = 0; i < op->stmts.size(); ++i) {
            const Stmt &s = op->stmts[i];
            if (auto f = as<For>(s)) {
                if (Stmt overlapped = overlap(*f)) {
                    out.push_back(overlapped);
                    out.push_back(wait(0, f->loc));
                    changed = true;
                    continue;
                }
            }
            Stmt m = mutate(s);
            changed |= m != s;
            out.push_back(m);
            bool endsRun = isCall(s, lib::Fn::WgmmaSS) &&
                           (i + 1 == op->stmts.size() || !isCall(op->stmts[i + 1], lib::Fn::WgmmaSS));
            if (endsRun) {
                out.push_back(wait(0, s->loc));
                changed = true;
            }
        }
        if (!changed) return op;
        return Seq::make(std::move(out), op->loc);
    }

    // A lone wgmma as the whole body of a loop or branch.
    Stmt visit(const std::shared_ptr<const Evaluate> &op) override {
        if (!isCall(op, lib::Fn::WgmmaSS)) return op;
        return Seq::make({op, wait(0, op->loc)}, op->loc);
    }

  private:
    /// The consumer loop of specializeWarps with nothing but wgmmas between its barriers, rewritten to keep
    /// one k-block in flight; null when `f` is not one.
    Stmt overlap(const For &f) {
        auto q = as<Seq>(f.body);
        if (!q || q->stmts.size() < 3) return nullptr;
        const auto &b = q->stmts;
        if (!isCall(b.front(), lib::Fn::MbarrierWait) || !isCall(b.back(), lib::Fn::MbarrierArrive)) return nullptr;
        for (size_t i = 1; i + 1 < b.size(); ++i)
            if (!isCall(b[i], lib::Fn::WgmmaSS)) return nullptr;
        // Release the previous iteration's stage once its wgmmas are done: ko - 1 in the arrive's barrier.
        Expr prevIter = simplify(binary(BinaryOp::Sub, f.var, i32(1)));
        const Call &arrive = *callOf(b.back());
        Expr bar = substitute(lib::arg(arrive, lib::Fn::MbarrierArrive, "bar"), VarMap{{f.var.get(), prevIter}});
        std::vector<Stmt> body(b.begin(), b.end() - 1);
        body.push_back(wait(1, f.loc));
        Expr notFirst = simplify(binary(BinaryOp::GT, f.var, f.min));
        body.push_back(IfThenElse::make(notFirst, lib::stmt(lib::Fn::MbarrierArrive, {simplify(bar)}, b.back()->loc),
                                        nullptr, f.loc));
        return For::make(f.var, f.min, f.extent, f.forKind, f.numStages, Seq::make(std::move(body), f.loc), f.loc);
    }
};

} // namespace

Program placeWgmmaWaits(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Placer pl;
        Stmt body = pl.mutate(k->body);
        if (body == k->body) {
            out.kernels.push_back(k);
            continue;
        }
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
