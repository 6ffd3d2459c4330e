/// \file
/// Private to TileLangMmaEmitter.cpp and TileLangLadderEmitter.cpp: the configuration of one of TileLang's
/// intrinsics-level MMA emitters (TensorCoreIntrinEmitter, its ladder-transform subclass, BitBLAS's flavour) and the
/// pieces their methods share.
#pragma once

#include "eval/InterpImpl.h"

#include <array>
#include <optional>
#include <string>

namespace tilec::eval::mma {

/// One emitter's configuration and the sizes TileLang derives from it.
struct Emitter {
    DType a, b, acc;
    bool aT = false, bT = false, mFirst = false;
    int64_t rowWarps = 2, colWarps = 2, rowTiles = 8, colTiles = 8, chunk = 16, reduceK = 1, elemsPerByte = 1;
    ir::Expr threadVar; ///< thread_var, or null for the kernel's thread index
    bool bitblas = false; ///< BitBLAS's (bitblas.tl): n_dim 16, the thread index an argument of each method
    /// TensorCoreIntrinEmitterWithLadderTransform's transform_kind_a / transform_kind_b (TileLang's TransformKind:
    /// 0 none, 1 inter-warp, 2 intra-warp, 3 ldmatrix); -1 for the plain emitter.
    int kindA = -1, kindB = -1;
    int64_t kDim = 16, nDim = 16, warpRows = 1, warpCols = 1, localA = 0, localB = 0, localOut = 0;
    std::string name; ///< the class, for messages

    bool ladder() const { return kindA >= 0; }
};

/// A register array of the emitter's: a T.alloc_local buffer (or an element of one: its index is the base).
struct Regs {
    ir::Buffer buf;
    ir::Expr base;
};

/// The register array argument `a`, checked to hold `need` elements from its base.
Regs regsArg(Interp &in, const Arg &a, const std::string &what, int64_t need, const Emitter &e);

/// (lane, warp_n, warp_m) of the thread: TileLang's extract_thread_binding.
std::array<ir::Expr, 3> threadBinding(Interp &in, const Emitter &e, const SourceRange &at,
                                      std::optional<bool> mFirst = {});

/// The ladder emitter's ldmatrix_a / ldmatrix_b (TileLangLadderEmitter.cpp): its operand tiles in the layout of its
/// transform kind.
Value ladderLoad(InterpImpl &in, const Emitter &e, CallArgs &args, bool isA);

/// The ladder emitter's sizes (TileLang's overrides of _initialize_k_dim, _initialize_micro_size, ...), with its
/// checks as located errors.
void deriveLadder(InterpImpl &in, Emitter &e, const SourceRange &at);

} // namespace tilec::eval::mma
