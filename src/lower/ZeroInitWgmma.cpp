/// \file
/// Accumulator clears folded into the wgmma product after them (include/tilec/passes/ZeroInitWgmma.h).
#include "tilec/passes/ZeroInitWgmma.h"

#include "EachKernel.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"

#include <optional>

namespace tilec::passes {

using namespace ir;

namespace {

/// The accumulators a tilec.wgmma_ss writes, all of them, a thread: its `c` argument and their count, (M / wgM / 64)
/// (N / wgN / 2); none where it leaves some as they are (live rows at run time, or fewer rows than M issued).
std::optional<std::pair<Expr, int64_t>> overwritten(const Call &g) {
    if (!lib::is(g, lib::Fn::WgmmaSS) || lib::optionalArg(g, lib::Fn::WgmmaSS, "live")) return std::nullopt;
    auto c = [&](const char *n) { return constInt(lib::arg(g, lib::Fn::WgmmaSS, n)).value_or(-1); };
    const int64_t M = c("M"), N = c("N"), wgM = c("wgM"), wgN = c("wgN");
    if (M <= 0 || N <= 0 || wgM <= 0 || wgN <= 0 || c("rows") != M) return std::nullopt;
    return std::make_pair(lib::arg(g, lib::Fn::WgmmaSS, "c"), (M / wgM / 64) * (N / wgN / 2));
}

/// Whether `s` is tilec.wgmma_clear of the `count` accumulators at `acc`. Only that clear: it pins the zeros
/// (an empty asm), which keeps ptxas from folding them into the product itself; a plain T.clear nest before a
/// wgmma, ptxas folds already (HGMMA ..., RZ, !UPT), and taking it here only moved its scheduling (the seed's
/// flash in order, cp.async variant: key loop 408 -> 420).
bool clears(const Stmt &s, const Expr &acc, int64_t count) {
    const Call *c = callOf(s);
    return c && lib::is(*c, lib::Fn::WgmmaClear) &&
           constInt(lib::arg(*c, lib::Fn::WgmmaClear, "count")) == std::optional<int64_t>(count) &&
           structurallyEqual(lib::arg(*c, lib::Fn::WgmmaClear, "acc"), acc);
}

/// The clear a product at stmts[j] folds: its index, or none where a statement touching the accumulators other
/// than such a clear comes first (or none does).
std::optional<size_t> foldedClear(const std::vector<Stmt> &stmts, size_t j) {
    const Call *g = callOf(stmts[j]);
    const auto acc = g ? overwritten(*g) : std::nullopt;
    const Load *regs = acc ? addressedLoad(acc->first) : nullptr;
    if (!regs) return std::nullopt;
    for (size_t i = j; i-- > 0;) {
        if (!uses(stmts[i], regs->buffer.get())) continue;
        if (clears(stmts[i], acc->first, acc->second)) return i;
        return std::nullopt;
    }
    return std::nullopt;
}

class Folder : public IRMutator {
  public:
    using IRMutator::visit;

    Stmt visit(const std::shared_ptr<const Seq> &op) override {
        bool changed = false;
        std::vector<Stmt> stmts = mutateEach(op->stmts, changed);
        std::vector<bool> dropped(stmts.size(), false);
        for (size_t j = 0; j < stmts.size(); ++j) {
            const auto i = foldedClear(stmts, j);
            if (!i) continue;
            stmts[j] = lib::stmt(lib::Fn::WgmmaSSInit, callOf(stmts[j])->args, stmts[j]->loc);
            dropped[*i] = changed = true;
        }
        if (!changed) return op;
        std::vector<Stmt> out;
        for (size_t i = 0; i < stmts.size(); ++i)
            if (!dropped[i]) out.push_back(stmts[i]);
        return Seq::make(std::move(out), op->loc);
    }
};

} // namespace

Program zeroInitWgmma(const Program &p) {
    return eachKernel(p, [](const KernelP &k) {
        Folder f;
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = f.mutate(k->body);
        return KernelP(nk);
    });
}

} // namespace tilec::passes
