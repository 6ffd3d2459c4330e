/// \file
/// The pipeline: every phase and pass from the syntax tree to the lowered program, in order, in one place
/// (src/lower/Lower.cpp). `--dump-after=NAME` prints the IR after a pass, `--time-passes` times each one.
#pragma once

#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace tilec {

/// Options and bookkeeping shared by the passes of one compilation.
struct PassContext {
    std::string dumpAfter; ///< a pass name, or "all"
    bool timePasses = false;
    std::ostream *dump = nullptr; ///< where --dump-after writes
    DiagnosticEngine *diag = nullptr; ///< user errors found while lowering (required by lower())
    std::vector<std::pair<std::string, double>> times; ///< (pass, milliseconds), in order
    /// When set, lower() calls it after each pass with the program the pass made (its kernels carry the fragment
    /// layouts from inferLayouts on): what lowering decided, for the language server's hover.
    std::function<void(const char *pass, const ir::Program &)> observe;
    /// Runs `fn` as the pass `name`: sets the current phase for internal errors, times it, and dumps `text()`
    /// afterwards when asked to; text is only computed when it is printed.
    template <class F, class D> auto run(const char *name, F &&fn, D &&text) -> decltype(fn());
    void reportTimes(std::ostream &os) const;
    void recordTime(const char *name, double ms) { times.emplace_back(name, ms); }
    bool wantsDump(const char *name) const { return dumpAfter == "all" || dumpAfter == name; }
};

struct PassState; ///< what the passes of one lowering share (src/lower/Lower.cpp)

/// One row of the pipeline's table (src/lower/Lower.cpp): a front-end phase that the driver runs (no `run`),
/// or a lowering pass, run by lower() when `enabled` says so for the variant's switches.
struct Pass {
    const char *name;                                   ///< what --dump-after and --time-passes call it
    bool (*enabled)(const LoweringOptions &) = nullptr;
    ir::Program (*run)(const ir::Program &, PassState &) = nullptr;
    bool stopsOnError = false; ///< lowering ends after this pass when the program has errors by then
    /// Lines --dump-after prints before the IR: what a pass decided that the IR does not show (inferLayouts: the
    /// layouts it found; planSharedMemory: the buffers' offsets).
    std::string (*notes)(const ir::Program &, const PassState &) = nullptr;
};

/// The pipeline, front-end phases first, then the lowering passes in the order they run.
const std::vector<Pass> &pipeline();

/// The names --dump-after accepts, in pipeline order (front-end phases first).
const std::vector<std::string> &passNames();

/// Whether `name` is a front-end phase (parse, evaluate, check: run before any lowering).
bool isFrontEndPhase(const std::string &name);

/// Lowers the checked program for one variant (a target and its switches) by running the passes in order.
ir::Program lower(ir::Program p, const Variant &v, PassContext &ctx);

/// Lowers the program once per target of `targets` with `options` (and, where a lowering needs TMA, once
/// more without it: the variant the launcher runs when run-time pointers or strides break TMA's rules; and
/// where a lowering assumed run-time row lengths and base pointers suit wide tile transfers, once more without
/// that: the variant for arguments that break the assumptions), then merges lowerings that came out identical
/// (src/lower/LowerVariants.cpp). The result holds every kernel's variants next to each other, each naming its
/// targets (Kernel::targets), in the order the launcher tries them. A diagnostic that several lowerings report
/// is reported once; the result is empty after an error.
ir::Program lowerVariants(const ir::Program &program, const std::vector<Target> &targets,
                          const LoweringOptions &options, PassContext &ctx);

} // namespace tilec

#include "tilec/LowerImpl.h"
