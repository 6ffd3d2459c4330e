/// \file
/// Software pipelining of T.Pipelined loops, and tile transfers (global to shared T.copy of a T.gemm
/// operand) as asynchronous copies (cp.async).
#pragma once

#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

namespace tilec::passes {

/// Rewrites every tile transfer that lowerTileOps kept as a Copy into a call of the device library's
/// `tilec::copy_g2s` (16-, 8- or 4-byte cp.async per thread, the widest the tensor's row length and the
/// tile's origin provably allow; zero-filled outside the tensor; with `v.options.assumeAlignedRows`, the widest a
/// run-time row length could allow, recorded in Kernel::assumptions), and pipelines T.Pipelined loops:
///
/// - the tile transfers at the top level of the loop body whose source regions depend only on the loop
///   variable and values fixed before the loop are hoisted: the transfers of iteration ko + s - 1 are issued
///   at the start of iteration ko into a ring of s copies of their destination buffers (shape (s, R, C),
///   iteration ko using copy ko % s), after a prologue issuing iterations 0 .. s-2;
/// - each iteration starts with `cp.async.wait_group s-2` and one barrier, which together make iteration
///   ko's tiles visible and free the copy the new transfers overwrite (read in iteration ko - 1);
/// - after the loop, `cp.async.wait_group 0`.
///
/// Transfers that are not hoisted (outside pipelined loops, inside conditionals, or depending on values
/// computed in the loop) become a `tilec.copy_g2s_wait` call: issue, commit, wait for them, then
/// insertSyncs treats them as ordinary shared-memory writes. A loop with num_stages < 2, or whose staged
/// buffers are also used outside it, runs serially. A transfer that can use no cp.async (not even 4 bytes per
/// thread: 16-bit or 8-bit elements one by one), even where a run-time row length suits, is a warning through
/// `diag` that says why.
ir::Program pipelineLoops(const ir::Program &p, const Variant &v, DiagnosticEngine &diag);

} // namespace tilec::passes
