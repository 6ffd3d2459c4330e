/// \file
/// T.Pipelined loops of explicit warp roles (T.ws blocks synchronised by T.alloc_barrier mbarriers) pipelined
/// as TileLang pipelines them: the single-buffered hand-over the user wrote becomes a ring of num_stages stages.
#pragma once

#include "tilec/IR.h"

namespace tilec {
class SourceManager;
}

namespace tilec::passes {

/// A kernel whose top-level `for ko in T.Pipelined(n, num_stages=S)` (S >= 2, from 0) holds T.ws blocks
/// is rewritten, before lowerWarpRoles, into the ring the user would write by hand
/// (tests/gpu/gemm_warp_roles.tile's ws_ring_gemm): each whole 2-D shared buffer a T.tma_copy in the loop
/// loads becomes S copies (shape (S, R, C); iteration ko loads and reads copy ko % S), each mbarrier the loop
/// waits on, arrives at or loads onto becomes S mbarriers (iteration ko uses those of stage ko % S, each
/// initialised as the original), and each T.barrier_wait's parity is the user's expression with ko // S for
/// ko: the protocol the user wrote for one buffer (every barrier completes one phase per iteration) then
/// holds per stage, so the producer loads iteration ko + 1 while the consumer computes iteration ko (the
/// producer of ko waits for the consumer of ko - S instead of ko - 1). TileLang 0.1.x does the same
/// (its software pipelining versions the loop's buffers and barriers alike).
///
/// The loop is left as it was (one buffer, the user's parities) when any of this does not hold: the loop is
/// nested in another, starts elsewhere than 0, a buffer or barrier it rings is used outside it (other than the
/// barrier's T.alloc_barrier), a barrier operation or T.tma_copy sits inside a loop or branch of its T.ws
/// block, a barrier is named by a run-time index, or a T.tma_copy fills part of a buffer. With -v a remark
/// says which path the loop took (through `sources`, which may be null).
ir::Program ringWarpRoles(const ir::Program &p, const SourceManager *sources);

} // namespace tilec::passes
