/// \file
/// The spliced-expression oracle: code generation builds a loop header by splicing printed expressions into
/// `for (T v = INIT; v < END; ++v)`, and a splice without the parentheses C's precedence needs is wrong code
/// the simulator cannot see (it runs the lowered IR, not the text): session 14's hang, an extent
/// `bx < 2 ? bx + 2 : bx - 1` printed bare, made `s < bx < 2 ? ...` mean `((s < bx) < 2) ? ...`, true forever.
/// Every `for` header of the generated CUDA is re-parsed here with C's own precedence (a parser of its own,
/// not the printer's table): INIT must be one expression, the condition a comparison whose left operand is the
/// loop variable itself, the step an update of that variable. And a condition must not read an array that the
/// loop's body stores into: C evaluates it again every trip, while a loop's bounds are read once where it starts
/// (`q < st[0]` over a body that changes st ran fewer trips than the simulator's loop).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tilec::difffuzz {

/// "" when every `for` header of `cuda` parses as its splices mean; else the first header that does not, and why.
std::string checkLoopHeaders(const std::string &cuda);

/// C's parse of one expression, as a fully parenthesized string (`a < b ? c : d` gives `((a < b) ? c : d)`);
/// "" when it is not one expression. For the self-test.
std::string parenthesizeC(const std::string &expr);

/// C's value of one integer expression of the generated host code (literals, `vars`, arithmetic, comparisons,
/// `?:`, casts, tilec_floordiv64 / tilec_floormod64) in int64_t arithmetic; nullopt when it is not one or
/// reads something else. For the launch functions' checks (HostChecks.h).
std::optional<int64_t> evaluateC(const std::string &expr, const std::map<std::string, int64_t> &vars);

/// The arguments of `expr` when it is one call of `fn`, each as a parenthesized expression; else nullopt.
std::optional<std::vector<std::string>> callArguments(const std::string &expr, const std::string &fn);

} // namespace tilec::difffuzz
