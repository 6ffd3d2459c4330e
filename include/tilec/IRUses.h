/// \file
/// Use queries over the tile IR (Halide's ExprUsesVar as the model): does this expression or statement read a
/// variable, touch a buffer, read memory, call a device-library function? One definition each, for every pass,
/// code generation and the printer; a pass that needs more than a yes (the set of buffers, per statement)
/// keeps its own walk.
#pragma once

#include "tilec/IR.h"
#include "tilec/LibraryCalls.h"

#include <initializer_list>

namespace tilec::ir {

/// Does `e` (or `s`) read the variable `v`?
bool uses(const Expr &e, const VarNode *v);
bool uses(const Stmt &s, const VarNode *v);

/// Does `e` (or `s`) touch buffer `b`: load or store an element of it, name it in a tile statement's region,
/// or reduce from or into it?
bool uses(const Expr &e, const BufferNode *b);
bool uses(const Stmt &s, const BufferNode *b);

/// Does `s` load an element of `b` (regions and stores left aside)?
bool loads(const Stmt &s, const BufferNode *b);

/// Does `e` read memory (any load)? False for a null expression.
bool readsMemory(const Expr &e);

/// Does `e` call anything (a call may have effects, or read what a loop writes)? False for a null expression.
bool callsAnything(const Expr &e);

/// Does `s` call one of the device-library functions `fns`?
bool callsAny(const Stmt &s, std::initializer_list<passes::lib::Fn> fns);

/// Does `s` hold a T.gemm?
bool hasGemm(const Stmt &s);

/// Does `e` divide by a constant that is not a power of two (`x / 192`, `x // 192`, `x % 192`)? An unrolled loop's
/// addresses through such a quotient differ by no constant offset.
bool dividesByNonPow2(const Expr &e);

} // namespace tilec::ir
