/// \file
/// Tile transfers waited for in place wait where their tiles are first needed, not right after their issue.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// A run of tile transfers that each wait for themselves (tilec.copy_g2s_wait: a T.copy into shared memory
/// outside a pipelined loop) is issued and committed as it stands, and its wait (cp.async.wait_group 0) moves
/// down its statement list past every statement that mentions none of the run's tiles and holds no barrier,
/// no asynchronous operation or wait, no tile statement that lowers to either (T.gemm, T.reduce, T.copy) and no
/// call of the author's: the loads and register work in between are in flight with the transfers
/// (block_causal_attention's dQ kernel loaded its LSE and Delta rows only after waiting for its Q and dO tiles,
/// two memory round trips where TileLang's synchronous copies take one). Runs after every pass that places
/// barriers, and a wait passes none: each barrier that orders the transfers' writes still follows their wait.
ir::Program sinkTransferWaits(const ir::Program &p);

} // namespace tilec::passes
