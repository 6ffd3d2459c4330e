/// \file
/// The roles threadRangeRegions lowered as kernels of their own threads put back into their kernel, as
/// concurrent warp roles.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// threadRangeRegions lowers the branches of a thread-range `if` that may run at once (src/lower/ConcurrentRoles.h)
/// as kernels of their own: each branch's fragments, reductions, copies, T.Pipelined loops and barriers are laid
/// out over its own threads (C from thread 0, the consumer; P after them, the producer), while its kernel holds an
/// empty WarpRoles(C, P) where the `if` was. Once those kernels are per-thread code (after lowerParallel and
/// selectRegisterSlots) this puts each one's body into its WarpRoles and drops the role kernels: the
/// consumer's code as it is (its thread index is threadIdx.x), the producer's with its thread index read as
/// tilec.role_thread(C, P) - C (threadIdx.x, which the analyses know to be C .. C + P - 1) and its partial
/// barriers (bar.sync ids from lib::kFirstPartialBarrier) moved past the consumer's. Code generation makes
/// each role's __syncthreads a named barrier of its threads and passes tile transfers the role's first thread.
/// Their buffers join the kernel's (shared ones placed apart: the roles run at the same top-level statement).
ir::Program joinThreadRoles(const ir::Program &p);

} // namespace tilec::passes
