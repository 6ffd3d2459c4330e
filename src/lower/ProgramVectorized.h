/// \file
/// How a loop the program wrote as T.vectorized reaches vectorizeAccesses. From lowerParallel on, the
/// vectorized loop kind means the lanes of a T.Parallel round, so lowerTileOps makes the program's own
/// T.vectorized loops unrolled; it marks them with this stage count (unused by unrolled loops), and
/// vectorizeAccesses turns their memory accesses into vector ones where reordering the lanes cannot matter.
/// A pass that rebuilds such a loop without the mark only loses that vectorization.
#pragma once

namespace tilec::passes {

inline constexpr int kProgramVectorized = -1;
/// The same for T.ptx_cp_async's copy loop (TileLangIntrinsics.cpp), which asyncPtxCopies may make one cp.async.
inline constexpr int kPtxCpAsync = -2;
/// Whether an unrolled loop's stage count is one of those marks.
inline bool programVectorized(int numStages) { return numStages == kProgramVectorized || numStages == kPtxCpAsync; }

} // namespace tilec::passes
