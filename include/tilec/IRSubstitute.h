/// \file
/// Substitution over the tile IR: loads of one-element scalars written as the values they hold. One definition
/// for every pass that reads a thread's scalars through their definitions (ParallelRaces' indices,
/// GatherTransfers' named rows, LoopInvariants' kernel scalars).
#pragma once

#include "tilec/IR.h"

#include <map>

namespace tilec::ir {

/// `e` with every load of a buffer that `values` maps written as its value (whatever the load's indices: the
/// buffers are one-element scalars); the same handle where `e` loads none of them. Null in, null out.
Expr replaceLoads(const Expr &e, const std::map<const BufferNode *, Expr> &values);

} // namespace tilec::ir
