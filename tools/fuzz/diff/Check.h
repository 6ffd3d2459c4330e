/// \file
/// One program through the whole compiler and both executions: the front end, checks, every lowering pass
/// and code generation; the reference (Reference.h) on the typed program; the simulator
/// (src/sim/Simulator.h) on the lowered kernel, with its race and barrier checks, for sm_80 and,
/// where the program gets warp roles (TMA, mbarriers, wgmma), for sm_90a; then the outputs compared.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tilec/IR.h"

namespace tilec::difffuzz {

struct Outcome {
    enum Kind {
        Ok,                 ///< accepted, simulated without a race, outputs agree
        Rejected,           ///< a located user error (a limit of the compiler; counted, not a failure)
        RejectedAsExpected, ///< the reference has no meaning for it (a divergent tile statement) and tilec said so
        Skipped,            ///< the reference cannot run it (a gap of the generator or the reference)
        Failure,
    } kind = Ok;
    std::string category; ///< Failure: "internal error", "simulator", "race", "mismatch", "accepted"; else a reason
    std::string detail;
    bool warpRoles = false; ///< Ok: the sm_90a lowering had warp roles and was simulated too
    bool wgmma = false;     ///< Ok: the sm_90a lowering issued wgmma without warp roles and was simulated too
    std::map<std::string, std::string> cuda; ///< Ok: the generated .cu per target ("sm_80", "sm_90a")
    int64_t accesses = 0;   ///< checkBig: global accesses the index-width oracle checked
};

inline Outcome outcome(Outcome::Kind k, std::string category, std::string detail = "") {
    Outcome o;
    o.kind = k, o.category = std::move(category), o.detail = std::move(detail);
    return o;
}

/// The `# dynamic: m=37 kk=20` line of a program: the values its T.dynamic symbols take.
std::map<std::string, double> dynamicValues(const std::string &text);

/// The first diagnostic's message without its location and numbers (a reason to count rejections by).
std::string reasonOf(const std::string &diags);

/// An input tensor's `n` elements for data seed `dataSeed`: random values that sums and products keep exact
/// (multiples of 1/4 in [-2, 2]).
std::vector<double> inputTensor(const std::string &name, size_t n, uint64_t dataSeed);

/// A T.StridedTensor's storage: the elements its pointer reaches, 1 + sum((n_d - 1) * s_d) (0 when it has
/// none), and the storage offset of each of its elements in the row-major order of its shape.
int64_t stridedSpan(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides);
std::vector<int64_t> stridedOffsets(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides);

/// An input tensor's elements (row-major) for data seed `dataSeed`: inputTensor's, or with strides inputTensor's
/// values of its storage read through them (elements that share storage are equal).
std::vector<double> inputElements(const std::string &name, const std::vector<int64_t> &shape,
                                  const std::vector<int64_t> &strides, uint64_t dataSeed);

/// The `# strides NAME: s0 s1 ...` lines of a program: its T.StridedTensor parameters' strides, as values.
std::map<std::string, std::vector<int64_t>> stridesOf(const std::string &text);

/// Outputs as a model independent of tilec's front end computes them (Scalar.h), per tensor; NaN elements are
/// not compared.
using Expected = std::map<std::string, std::vector<double>>;

/// The `# expect S: ...` lines of a regression file (what the front-end oracle's model computed for data
/// seed 1), and the line of one tensor's values.
Expected expectedOf(const std::string &text);
std::string expectLine(const std::string &tensor, const std::vector<double> &values);

/// Whether the launcher would run a variant with `k`'s assumptions (Kernel::assumptions: row lengths that are
/// multiples of a vector's bytes) for these T.dynamic sizes; the fuzzer checks such a variant only where it would.
bool assumptionsHold(const ir::Kernel &k, const std::map<std::string, double> &dyn);

/// Every k-th checkProgram also compiles its program a second time over a reshaped heap and fails
/// ("nondeterministic") where the diagnostics or the CUDA differ (0: never; default 8).
void setCompileTwiceEvery(uint64_t k);

/// Runs `text` (a .tile file with one exported kernel) with `-D` `defines`; inputs from inputTensor with
/// `dataSeed`. The reference's outputs must equal `expected` exactly (the front-end oracle: category
/// "front end"), and the simulator's the reference's.
Outcome checkProgram(const std::string &text, const std::map<std::string, std::string> &defines, uint64_t dataSeed,
                     const Expected &expected = {});

/// Every kernel of `text` through the front end, the checks, the lowerings for sm_80 (also assuming aligned
/// rows) and sm_90a, and code generation: Ok with `cuda` per target, Rejected with the diagnostics in
/// `detail`, or a Failure (an internal error). `lowered` receives each lowering, named.
Outcome compileText(const std::string &text, std::vector<std::pair<std::string, ir::Program>> *lowered = nullptr);

/// A program over tensors past 2^31 elements (Gen.h: BigProgram), compiled for sm_80 and sm_90a and checked
/// by the index-width oracle (IndexOracle.h) instead of run; `pastInt64` programs must be refused with
/// "index arithmetic overflows 64 bits", and no other program may be.
Outcome checkBig(const std::string &text, const std::map<std::string, int64_t> &dyn, bool pastInt64, uint64_t seed);

/// Whether nvcc is here (/usr/local/cuda/bin or the PATH).
bool nvccFound();

/// nvcc on generated CUDA (`cuda` per target, as Outcome::cuda): "" when every target compiles, else the
/// first error. `dir` holds the files.
std::string compileWithNvcc(const std::map<std::string, std::string> &cuda, const std::string &dir);

} // namespace tilec::difffuzz
