/// \file
/// Warp-group roles written as branches on the thread index (`if tx < 128: ... else: ...`, FlashMLA's and
/// vertical-slash attention's way of writing TileLang's T.ws) made T.ws blocks, for lowerWarpRoles.
#pragma once

#include "tilec/IR.h"

namespace tilec {
class DiagnosticEngine;
}

namespace tilec::passes {

/// TileLang's `with T.ws(g):` is `if 128 g <= tx < 128 (g + 1):`; its users write either. In a kernel whose
/// warp groups synchronise through mbarriers (T.alloc_barrier, T.barrier_wait / T.mbarrier_wait_parity,
/// T.barrier_arrive / T.mbarrier_arrive, T.tma_copy), an `if` whose condition bounds the thread index to one
/// warp group's 128 threads (`tx < 128`, `tx >= 128`, `128 <= tx and tx < 256`, constants only), with an `else`
/// (or `elif` chain) whose threads are again one warp group each, becomes one T.ws block per branch: the same
/// program, which lowerWarpRoles then lowers (or rejects, located, where it cannot honour it: three roles of
/// threads=384, code all groups run together, the thread index read inside a role). An `if` on another range
/// (`tx < 64`, `tx == 0`) whose branches hold mbarrier operations or T.tma_copy is a located error; another
/// is left as it is, and with it the errors later passes give it.
ir::Program threadRangeRoles(const ir::Program &p, DiagnosticEngine &diag);

} // namespace tilec::passes
