/// \file
/// Placeholder until the kernel checks land.
#include "tilec/Check.h"
namespace tilec {
bool checkKernel(const ir::Kernel &, const Target &, DiagnosticEngine &) { return true; }
} // namespace tilec
