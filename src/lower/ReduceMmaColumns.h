/// \file
/// Column reductions (dim 0) of a T.gemm accumulator in its tensor-core layout (src/lower/ReduceMmaColumns.cpp),
/// for lowerReductions: `T.reduce_sum(acc, col, dim=0)` of an (M, N) mma fragment into N per-column results.
#pragma once

#include "tilec/IR.h"
#include "tilec/passes/Layout.h"

#include <functional>
#include <string>

namespace tilec::passes {

/// How the reduction being lowered folds values, and where its buffers come from (lowerReductions' own).
struct ColumnFold {
    DType acc;                                              ///< the accumulation type
    std::function<ir::Expr()> identity;                        ///< the fold's start value
    std::function<ir::Expr(const ir::Expr &)> pre;             ///< a source element as it enters the fold
    std::function<ir::Expr(const ir::Expr &, const ir::Expr &)> combine;
    std::function<ir::Buffer(const std::string &, int64_t)> local;   ///< a register array of n elements
    std::function<ir::Buffer(const std::string &, int64_t)> scratch; ///< shared memory of n elements
};

/// `body(o, put)` for every result o (of `outputs`, row-major) the thread keeps in its destination, put(value)
/// storing result o there: every result for a replicated destination, only the thread's own slots for a
/// distributed one (lowerReductions' resultLoop).
using ResultBody = std::function<ir::Stmt(const ir::Expr &o, const std::function<ir::Stmt(ir::Expr)> &put)>;
using EachResult = std::function<ir::Stmt(int64_t outputs, const ResultBody &body)>;

/// Each thread folds the rows it holds of each of its columns, the eight lanes sharing those columns combine
/// by shuffles, and the warps (warpsM of them per column) through shared memory, from which each thread
/// reads the columns its destination keeps (`each`), every copy in the same order (bit-identical copies).
/// `src` is an Mma layout.
ir::Stmt reduceMmaColumns(const ir::Reduce &op, const Layout &src, const ir::Buffer &srcReg, const ir::Var &tid,
                          const ColumnFold &fold, const EachResult &each);

} // namespace tilec::passes
