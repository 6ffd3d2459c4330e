/// \file
/// Placeholder until the interpreter lands.
#include "tilec/Frontend.h"
namespace tilec {
std::optional<ir::Program> evaluateModule(const ast::Module &, const FrontendOptions &, DiagnosticEngine &) {
    return ir::Program{};
}
} // namespace tilec
