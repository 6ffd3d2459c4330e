/// \file
/// Fragments whose dimensions after the first all have extent 1, made 1-D (src/lower/SqueezeUnitFragments.cpp).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// Before lowerTileOps, a fragment of shape (M, 1, ..., 1) (TileKernels' pre_norm_fn_bwd_mul:
/// `sqrsum_grad_frag = T.alloc_fragment((token_block, 1))`, copied from a column of a tensor and read as
/// `sqrsum_grad_frag[i, 0]` beside a T.gemm accumulator `x_grad_frag[i, j]`) becomes the fragment of shape (M,) it
/// is: every access drops its trailing indices, every region its trailing ranges. A 1-D fragment read at a
/// T.Parallel's first variable beside a T.gemm result takes that result's per-row layout (each thread holds the
/// rows it computes); the 2-D one was held whole by every thread (128 loads a trip, read at a thread-dependent
/// index: a 608-byte stack frame in local memory). Only fragments whose every mention is a load or store with
/// constant-0 trailing indices, or a region of a T.copy / T.fill / T.atomic_add with trailing ranges [0, 1), are
/// changed; a T.gemm operand, a reduction's source or destination, a view, or a library call's operand keeps its
/// shape.
ir::Program squeezeUnitFragments(const ir::Program &p);

} // namespace tilec::passes
