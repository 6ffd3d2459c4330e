/// \file
/// T.reduce_* to per-thread partial results, warp shuffles and shared-memory exchange.
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"
#include "tilec/passes/Layout.h"

#include <vector>

namespace tilec::passes {

/// Rewrites every T.reduce_* (one KernelLayouts per kernel, from inferLayouts). A replicated destination:
/// after the statement every thread holds every result (combined with the old value when clear=False). A
/// distributed one (inferLayouts spreads reduction results where holding them whole would not fit): each
/// thread keeps the results its slots hold, straight from its partials where they are its own, else through
/// shared memory. Sums and extrema of float16/bfloat16/float8 accumulate in float32.
///
/// A replicated source is reduced by each thread alone. For a distributed source the compiler works out,
/// by evaluating the layout for every thread, which threads share each result:
/// - each thread folds its own elements of one result into one partial (its register slots are constants);
/// - when the threads sharing a result differ only in some bits of the thread index, the lanes of a warp
///   combine with __shfl_xor_sync over those bits, and the warps through a small shared-memory scratch
///   (every thread reads the partners' values in the same order, so all copies are bit-identical);
/// - when every thread shares every result (whole rows per round: softmax, RMSNorm), each thread ends
///   with all results; otherwise one thread per result publishes it in shared memory for all to read.
/// Any other layout takes a general path: the source is staged in shared memory and each thread reduces
/// some results serially.
ir::Program lowerReductions(const ir::Program &p, const std::vector<KernelLayouts> &layouts, const Target &t);

/// Whether the lowering of `r` exchanges values between threads through shared memory: not for a replicated
/// source, nor for rows of an mma accumulator whose warps do not split the columns (shuffles among the four
/// lanes of a row only: FlashAttention's row statistics); otherwise it may.
bool reductionUsesShared(const ir::Reduce &r, const KernelLayouts &layouts);

/// Whether the reductions of kernel `k` exchange between warps through one shared scratch buffer per dtype,
/// sized for the largest, rather than one each: where the kernel's shared buffers and the reductions' own
/// scratch together exceed what a block of `t` can have (TileLang's MLA decoding then fits), and never in a
/// kernel with warp roles, whose roles could reduce at the same time. insertSyncs then orders all of the
/// kernel's reductions that use shared memory as accesses of one buffer (a barrier between two of them).
bool reductionsShareScratch(const ir::Kernel &k, const KernelLayouts &layouts, const Target &t);

} // namespace tilec::passes
