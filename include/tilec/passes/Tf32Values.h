/// \file
/// Which float fragments hold only values that tf32 represents exactly (their tensor-core operands need no rounding).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// mma.sync reads a float operand as tf32 (1 sign, 8 exponent and 10 fraction bits), and the device library rounds
/// every float it hands the instruction (cvt.rna.tf32.f32: two instructions per element and k-step, mHC's 128 per
/// thread and stage for A alone). A value with its low 13 fraction bits clear is its own rounding. This says
/// whether every value fragment `frag` of kernel `k` can hold is such a value, from the statements that write it:
/// only element stores (no tile statement, library call or T.gemm writes it, and no T.view / T.reshape names it)
/// whose values are tf32-exact (`tf32Exact`). Uninitialized elements are no concern: rounding leaves garbage garbage.
bool holdsTf32Values(const ir::Kernel &k, const ir::BufferNode *frag);

/// Whether expression `e` of kernel `k` is a value tf32 represents exactly: an element or a conversion of a type
/// whose every value is one (float16, bfloat16, float8, 8-bit integers, bool; not arithmetic in such a type, which
/// code generation may carry in float), a float conversion of such a value, a constant with its low 13 fraction bits
/// clear (an integer below 2048 in magnitude), the negation, minimum, maximum, absolute value or choice of such
/// values, or an element of a float fragment, local or variable that holdsTf32Values (through chains of such
/// buffers; one read while its own writes are checked, as in `a = max(a, x)`, counts as holding them, which
/// induction over its stores proves).
bool tf32Exact(const ir::Kernel &k, const ir::Expr &e);

} // namespace tilec::passes
