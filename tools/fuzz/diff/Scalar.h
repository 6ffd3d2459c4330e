/// \file
/// The front-end oracle of the differential fuzzer (issue 23): a block of scalar code over per-thread kernel
/// variables that the generator both prints, in one of several surface forms that must mean the same, and runs
/// itself on its own model (independently of tilec's interpreter). The reference and the simulator run the
/// program as tilec's front end gives it, so a front end that evaluates the Python-like surface wrongly (an
/// `a = b` of two T.alloc_var variables read as an alias, Python's floor division folded as C's, a name merged
/// wrongly after a run-time `if`, a loop unrolled at trace time with the wrong bindings) gives both of them the
/// same wrong program; this model does not share it.
///
/// The block: kernel variables x0..x3 (float32 or int32; T.alloc_var, T.alloc_var(init=), T.alloc_local((1,))),
/// plain Python names t0.. (values taken at assignment, as Python has them; swapped as a tuple), statements
/// assigning them from expressions over constants, bx, by, the thread index, loop variables and elements of A
/// (floor division and modulo, bitwise operators and shifts, chained comparisons, `not`), run-time and
/// compile-time ifs, loops (T.serial, T.unroll, Python range unrolled while tracing; with a start, or stepping
/// down) and bodies moved into a @T.macro or a plain helper function. Each thread then writes its variables to S. Every surface form is
/// chosen per node by a `form` the generator draws, so a shrunk program keeps its forms.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tilec::difffuzz {

struct SExpr;
using SExprP = std::shared_ptr<SExpr>;

/// An expression of the scalar block; `isInt` says int32 (else float32; comparisons are bool and isInt false).
struct SExpr {
    /// Narrow: `T.cast(kids[0], "bfloat16") op c` (id 1: "float16"; form 1: `c op T.cast(...)`), op + - *, with
    /// a Python float c that 16 bits do not hold: TVM computes it in float32 with a float32 constant (issue 23).
    enum Kind { Const, Var, Temp, Index, Input, Bin, Cast, Select, Abs, Not, Chain, Narrow } kind = Const;
    bool isInt = false, isBool = false;
    double c = 0;          ///< Const: the value; Input: the column offset
    int id = 0;            ///< Var / Temp: which; Index: -1 bx, -2 by, -3 tx, d >= 0 the loop variable of depth d
    std::string op;        ///< Bin: + - * // % & | ^ << >> max min < <= > >= == != and or; Chain: "op1 op2"
    std::vector<SExprP> kids;
    int form = 0;          ///< which surface form print() uses
};

struct SStmt {
    enum Kind { Assign, Let, If, Loop, Call, Swap } kind = Assign;
    int id = 0;              ///< Assign: the variable; Let: the name t<id>; Call: the helper h<id>; Swap: t<id>, t<id2>
    int id2 = 0;
    SExprP e;                ///< Assign / Let: the value; If: the condition
    std::vector<SStmt> body, orelse;
    int64_t n = 0;           ///< Loop: trip count
    int64_t start = 0;       ///< Loop: the first value (the last one when `reverse`: a step of -1)
    bool reverse = false;
    int form = 0;            ///< Assign: x = e / x[0] = e / x += ...; Loop: T.serial / range / T.unroll; Call: macro or def
};

struct ScalarBlock {
    std::vector<bool> varInt;   ///< per variable x<i>: int32 (else float32)
    std::vector<int> varAlloc;  ///< 0: T.alloc_var, 1: T.alloc_var(init=), 2: T.alloc_local((1,))
    std::vector<double> init;   ///< the value each variable starts with
    std::vector<SStmt> stmts;
    int temps = 0;              ///< how many names t<i> it uses
};

/// What the block reads of the program around it.
struct ScalarContext {
    int gx = 1, gy = 1, threads = 32;
    int64_t rowsA = 0, colsA = 0; ///< A's shape (rows may be a T.dynamic value of 0)
    std::function<double(int64_t)> a; ///< A's element at a flat offset
};

/// A random block (depth and sizes small), drawn from `seed`.
ScalarBlock generateScalars(uint64_t seed, const ScalarContext &c);

/// The block's text: `defs` receives the module-level helpers (macros, functions) it calls, `body` the kernel
/// statements (the allocations first, then the statements, then the stores into S) indented by `indent` levels.
void printScalars(const ScalarBlock &b, const ScalarContext &c, int indent, std::string &defs, std::string &body);

/// Elements of S the block writes.
int64_t scalarOutputs(const ScalarBlock &b, const ScalarContext &c);

/// S as the generator's own model computes it: NaN where the model's exact value is not exactly what float32
/// or int32 holds (the element is not compared).
std::vector<double> runScalars(const ScalarBlock &b, const ScalarContext &c);

/// Smaller variants of the block (each statement dropped, each body flattened), for shrinking.
std::vector<ScalarBlock> shrinkScalars(const ScalarBlock &b);

/// Wraps values assigned to float variables in Narrow expressions (16-bit casts with a Python float operand),
/// from a stream of its own; true when it wrapped any (the program then needs 16-bit rounding: GProgram's
/// narrowRounding).
bool decorateNarrow(ScalarBlock &b, uint64_t seed);

} // namespace tilec::difffuzz
