/// \file
/// T.gemm operands read from a shared copy of their fragment (src/lower/StagedOperands.h).
#include "StagedOperands.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"

#include <map>

namespace tilec::passes {

using namespace ir;

namespace {

/// `for t0, t1... in T.Parallel(shape): dst[t0, t1...] = src[t0, t1...]`.
Stmt copyNest(const Buffer &src, const Buffer &dst, const SourceRange &loc) {
    std::vector<Var> vs;
    std::vector<Expr> idx;
    for (size_t d = 0; d < src->shape.size(); ++d) {
        vs.push_back(makeVar("t" + std::to_string(d), DType::Int32, loc));
        idx.push_back(vs.back());
    }
    Stmt s = Store::make(dst, idx, Load::make(src, idx, loc), loc);
    for (size_t d = vs.size(); d-- > 0;)
        s = For::make(vs[d], intImm(0, DType::Int32), src->shape[d], ForKind::Parallel, 0, s, loc);
    return s;
}

struct Stager : IRMutator {
    using IRMutator::visit;
    const std::set<const Gemm *> &gemms;
    std::map<const BufferNode *, Buffer> copies; ///< fragment -> its shared copy
    std::vector<Buffer> newAllocs;
    explicit Stager(const std::set<const Gemm *> &g) : gemms(g) {}

    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        if (!gemms.count(op.get()) || !op->a.buffer || op->a.buffer->scope != Scope::Fragment) return op;
        const Buffer &frag = op->a.buffer;
        Buffer &shared = copies[frag.get()];
        if (!shared) {
            shared = makeBuffer(frag->name + "_operand", Scope::Shared, frag->dtype, frag->shape, frag->loc);
            newAllocs.push_back(shared);
        }
        Region a = op->a;
        a.buffer = shared;
        return Seq::make({copyNest(frag, shared, op->loc), op->withRegions(a, op->b, op->c)}, op->loc);
    }
};

} // namespace

std::shared_ptr<const Kernel> stageGemmOperands(const std::shared_ptr<const Kernel> &k, const std::set<const Gemm *> &gemms) {
    Stager s(gemms);
    Stmt body = s.mutate(k->body);
    if (body == k->body) return k;
    auto nk = std::make_shared<Kernel>(*k);
    nk->body = body;
    for (auto &b : s.newAllocs) nk->allocs.push_back(b);
    return nk;
}

} // namespace tilec::passes
