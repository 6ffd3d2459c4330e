/// \file
/// Races among the threads of per-thread code where no barrier can order them (insertSyncs runs the check on
/// every kernel): within one statement, and between the branches of a condition on the thread index.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"

#include <functional>

namespace tilec::passes {

/// Per-thread statements (outside T.Parallel nests) run on all of the block's threads at once. A located error
/// (with a note at the other access) where, enumerating the threads and the constant-bound loops around, two
/// threads provably touch one shared element in no order:
///  - one statement stores it from several threads (`s[tx % 16] = tx`; the same value from each of them too: the
///    simulator calls that a race as well);
///  - one statement reads in one thread an element it stores in another (`s[tx % 16] = s[tx % 16] + 1`);
///  - one branch of a condition on the thread index stores it, the other branch reads or stores it.
/// A read counts only for the threads that run it: not in an arm of T.if_then_else that the thread does not take,
/// not in the value of a global store outside the tensor (the contract's guard drops the store and its value);
/// where such a condition cannot be evaluated, the read counts.
/// Accesses whose indices, or thread-dependent conditions whose values, depend on anything but the thread index,
/// the block indices and constant-bound loops are not provably racing and are left alone. `uniform` says which
/// values are the same in every thread (insertSyncs' Uniformity). The block indices take every value in grids of
/// at most 64 blocks; in larger ones their first and last values and those around the constants that the
/// conditions of the access compare with (a race may show in some blocks only).
void checkThreadRaces(const ir::Kernel &k, const std::function<bool(const ir::Expr &)> &uniform, DiagnosticEngine &diag);

} // namespace tilec::passes
