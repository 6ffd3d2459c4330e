/// \file
/// Tile transfers proven inside their tensor get their extents as valid counts (include/tilec/passes/FullTileTransfers.h).
#include "tilec/passes/FullTileTransfers.h"

#include "EachKernel.h"
#include "RangeScopedMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"

namespace tilec::passes {

using namespace ir;

namespace {

class FullTiles : public RangeScopedMutator {
  public:
    using RangeScopedMutator::visit;
    explicit FullTiles(const Kernel &k) : RangeScopedMutator(k), tx_(k.threadIdx.get()) {}

    Stmt visit(const std::shared_ptr<const Evaluate> &op) override {
        const Call *c = callOf(op);
        if (!c) return op;
        const lib::Fn f = lib::is(*c, lib::Fn::CopyG2S) ? lib::Fn::CopyG2S : lib::Fn::CopyG2SWait;
        if (!lib::is(*c, f)) return op;
        std::vector<Expr> args = c->args;
        const bool rows = full(args, f, "rows", "validRows"), cols = full(args, f, "cols", "validCols");
        if (!rows && !cols) return op;
        return lib::stmt(f, std::move(args), op->loc);
    }

  private:
    /// Replaces the count `valid` by the extent `extent` where the ranges prove count >= extent; whether it did.
    /// A count that reads the thread index is left alone: a warp role's threads are not the kernel's range.
    bool full(std::vector<Expr> &args, lib::Fn f, const char *extent, const char *valid) {
        const size_t e = lib::argIndex(f, extent), v = lib::argIndex(f, valid);
        std::optional<int64_t> n = constInt(args[e]);
        if (!n || constInt(args[v]) || (tx_ && uses(args[v], tx_))) return false;
        Interval b = boundsOf(args[v], ranges());
        if (!b.lo || *b.lo < *n) return false;
        args[v] = intImm(*n, DType::Int32);
        return true;
    }
    const VarNode *tx_;
};

} // namespace

Program fullTileTransfers(const Program &p) {
    return eachKernel(p, [](const KernelP &k) -> KernelP {
        Stmt body = FullTiles(*k).mutate(k->body);
        if (body == k->body) return k;
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        return nk;
    });
}

} // namespace tilec::passes
