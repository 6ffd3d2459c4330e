/// \file
/// The stable text form of the IR (`--emit=ast`, `--emit=ir`, `--dump-after`).
#pragma once

#include "tilec/IR.h"

#include <string>

namespace tilec::ir {

std::string print(const Expr &e);
std::string print(const Stmt &s, int indent = 0);
std::string print(const Kernel &k);
std::string print(const Program &p);

} // namespace tilec::ir
