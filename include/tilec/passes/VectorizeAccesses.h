/// \file
/// Vector memory instructions for the lanes of a thread's round.
#pragma once

#include "tilec/IR.h"

#include <optional>

namespace tilec::passes {

/// In every vectorized loop over lane v (made by lowerParallel), moves each global or shared load whose
/// offset is `base + v`, with base a known multiple of the lane count and any bounds check free of v,
/// into a loop of its own that fills a small register array, and likewise each such store (with its check)
/// out of the loop through a register array. Those loops are what code generation turns into 16-byte
/// (or narrower) vector loads and stores; the rest of the body becomes an unrolled loop over registers.
/// A vectorized loop that keeps no such access becomes a plain unrolled loop unless it is a pair
/// conversion (below), so every vectorized loop left afterwards is one of the three patterns code generation
/// (src/codegen/CodegenKernel.cpp) knows:
///   for v: tmp[v] = B[base + v]              (or select(cond, B[base + v], 0))
///   for v: B[base + v] = tmp[v]              (optionally inside `if cond`)
///   for v: R[base + v] = cast(e(v))          (a pair conversion, matchPairConversion)
/// A base pointer's alignment is the launcher's to check; shared buffers are 16-byte aligned.
/// With `assumeAlignedRows` (LoweringOptions::assumeAlignedRows: the wide variant), an offset or a bounds
/// test that is a multiple of the lane count only where some T.dynamic sizes are (a run-time row length, a
/// tensor's run-time extent) counts as one, and those sizes join Kernel::assumptions for the launcher to
/// check. With `selectTestLoads` (LoweringOptions::selectTestLoads), a shared-memory load in a select's test
/// (which every lane evaluates) is hoisted like any other, and the same load in the select's arms reads its vector.
/// With `bankVectorLoads` (LoweringOptions::bankVectorLoads), so is such a load where its lanes' elements, read one
/// by one, conflict in the shared-memory banks and one vector of them a thread would not (src/lower/BankConflicts.h).
ir::Program vectorizeAccesses(const ir::Program &p, bool assumeAlignedRows = false, bool selectTestLoads = false,
                              bool bankVectorLoads = false);

/// A vectorized loop over an even number of lanes v whose body is the one store R[base + v] = cast(e(v)):
/// R a register array of float16, bfloat16 or float8, base a known multiple of 2, e a float32 expression that
/// does not read R. Code generation converts two lanes at once (cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32 /
/// cvt.rn.satfinite.e4m3x2.f32: the same rounding per element as one at a time) straight into one register,
/// which for 16-bit types is also the packed form wgmma and mma read their operands in.
struct PairConversion {
    const ir::Store *store = nullptr;
    ir::Expr base;    ///< the index of lane 0
    int64_t lanes = 0;
};
std::optional<PairConversion> matchPairConversion(const ir::For &f);

/// A vectorized loop over 2 or 4 lanes v whose body is the one atomic addition `T.atomic_add(D[base + v],
/// R[rbase + v])` (optionally under a test free of v): D a float32 tensor, base a known multiple of the lane
/// count, R a register array or a shared buffer (rbase then a known multiple of the lane count too: read as one
/// vector, atomic_add_vector_shared). Code generation adds the lanes with one vector atomic (float2 / float4 on sm_90
/// and later; one by one before), split-K's write of a T.gemm accumulator's column pairs.
struct AtomicVector {
    const ir::AtomicAdd *add = nullptr;
    ir::Expr cond;          ///< may be null
    ir::Expr base, regBase; ///< the indices of lane 0
    const ir::BufferNode *regs = nullptr;
    int64_t lanes = 0;
};
std::optional<AtomicVector> matchAtomicVector(const ir::For &f);

} // namespace tilec::passes
