/// \file
/// Column reductions of a tensor-core accumulator (src/lower/ReduceMmaColumns.h). In the mma layout
/// (include/tilec/passes/Layout.h) slot ((mi*nT + ni)*2 + h)*2 + c of lane l holds column
/// wn*WTN + ni*8 + (l%4)*2 + c: a thread's columns are its (ni, c) pairs, whatever its rows; the lanes holding
/// the same columns differ in bits 2..4 of the lane; the warps holding them differ in their warp row wm.
#include "ReduceMmaColumns.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {
Expr i32(int64_t v) { return intImm(v, DType::Int32); }
Expr add(Expr a, Expr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, int64_t c) { return binary(BinaryOp::Mul, std::move(a), i32(c)); }
} // namespace

Stmt reduceMmaColumns(const Reduce &op, const Layout &src, const Buffer &srcReg, const Var &tid, const ColumnFold &fold,
                      const EachResult &each) {
    TILEC_ASSERT(src.kind == Layout::Mma && op.dim == 0, "reduceMmaColumns of a layout that is not mma, or of rows");
    const SourceRange &loc = op.loc;
    const int64_t mT = src.tilesM(), nT = src.tilesN(), C = nT * 2, N = src.shape[1];
    Buffer acc = fold.local(op.dst->name + "_partial", C);
    auto store = [&](const Buffer &b, Expr idx, Expr v) { return Store::make(b, {std::move(idx)}, std::move(v), loc); };
    auto load = [](const Buffer &b, Expr idx) { return Load::make(b, {std::move(idx)}); };
    std::vector<Stmt> out;
    // 1. Each thread folds its rows (mi, h) of each of its columns (ni, c) into partial ni*2 + c.
    for (int64_t j = 0; j < C; ++j) out.push_back(store(acc, i32(j), fold.identity()));
    {
        Var mi = makeVar("mi", DType::Int32, loc), h = makeVar("h", DType::Int32, loc);
        Var ni = makeVar("ni", DType::Int32, loc), c = makeVar("c", DType::Int32, loc);
        Expr slot = simplify(add(mul(add(mul(add(mul(mi, nT), ni), 2), h), 2), c));
        Expr part = simplify(add(mul(ni, 2), c));
        Stmt s = store(acc, part, fold.combine(load(acc, part), fold.pre(load(srcReg, slot))));
        s = For::make(c, i32(0), i32(2), ForKind::Unrolled, 0, s, loc);
        s = For::make(ni, i32(0), i32(nT), ForKind::Unrolled, 0, s, loc);
        s = For::make(h, i32(0), i32(2), ForKind::Unrolled, 0, s, loc);
        out.push_back(For::make(mi, i32(0), i32(mT), ForKind::Unrolled, 0, s, loc));
    }
    // 2. The eight lanes of a warp holding the same columns (l % 4 alike), by shuffles.
    for (int b : {4, 8, 16})
        for (int64_t j = 0; j < C; ++j) {
            Expr other = lib::call(lib::Fn::ShflXor, {load(acc, i32(j)), i32(b)}, {}, fold.acc);
            out.push_back(store(acc, i32(j), fold.combine(load(acc, i32(j)), other)));
        }
    // 3. Lanes 0..3 of each warp publish its columns under its warp row; every thread then folds the warp
    //    rows of every column in the same order.
    Buffer scratch = fold.scratch(op.dst->name + "_scratch", (int64_t)src.warpsM * N);
    Expr wm = src.warpsM == 1 ? i32(0) : binary(BinaryOp::FloorMod, binary(BinaryOp::FloorDiv, tid, i32(32)), i32(src.warpsM));
    std::vector<Stmt> publish;
    for (int64_t ni = 0; ni < nT; ++ni)
        for (int64_t c = 0; c < 2; ++c)
            publish.push_back(store(scratch, simplify(add(mul(wm, N), mmaCol(src, tid, i32(ni), i32(c)))),
                                    load(acc, i32(ni * 2 + c))));
    Expr first = binary(BinaryOp::LT, binary(BinaryOp::FloorMod, tid, i32(32)), i32(4));
    out.push_back(IfThenElse::make(first, Seq::make(std::move(publish), loc), nullptr, loc));
    out.push_back(syncThreads(loc));
    Buffer res = fold.local(op.dst->name + "_column", 1);
    out.push_back(each(N, [&](const Expr &o, const std::function<Stmt(Expr)> &put) {
        std::vector<Stmt> one{store(res, i32(0), fold.identity())};
        for (int64_t w = 0; w < src.warpsM; ++w)
            one.push_back(store(res, i32(0), fold.combine(load(res, i32(0)), load(scratch, simplify(add(o, i32(w * N)))))));
        one.push_back(put(load(res, i32(0))));
        return Seq::make(std::move(one), loc);
    }));
    return Seq::make(std::move(out), loc);
}

} // namespace tilec::passes
