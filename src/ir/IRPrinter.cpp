/// \file
/// Placeholder until the printer lands.
#include "tilec/IRPrinter.h"
namespace tilec::ir {
std::string print(const Expr &) { return "?"; }
std::string print(const Stmt &, int) { return "?"; }
std::string print(const Kernel &k) { return "kernel " + k.name + "\n"; }
std::string print(const Program &p) { std::string s; for (auto &k : p.kernels) s += print(*k); return s; }
} // namespace tilec::ir
