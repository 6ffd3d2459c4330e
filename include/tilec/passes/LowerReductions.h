/// \file
/// T.reduce_* to per-thread partial results, warp shuffles and shared-memory exchange.
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"

#include <vector>

namespace tilec::passes {

/// Rewrites every T.reduce_* (by the layouts inferLayouts stored on its kernel). A replicated destination:
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
ir::Program lowerReductions(const ir::Program &p, const Target &t);

} // namespace tilec::passes
