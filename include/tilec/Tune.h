/// \file
/// Autotuning (`tilec tune`) and its configuration table (`--tuned FILE.tune.json`).
///
/// `tilec tune FILE.tile --kernel NAME` re-instantiates the kernel's factory with every configuration of a
/// search space (keyword arguments), compiles, runs, checks and times each on the local GPU, and writes a
/// table. `tilec FILE.tile --tuned NAME.tune.json` builds what the table chose: the best configuration, or,
/// for a kernel tuned at several values of a `T.dynamic` size, one kernel per distinct best configuration
/// (`NAME__cfg0`, `NAME__cfg1`, ...) behind a generated launch function `NAME` that picks by the run-time size.
///
/// The CPU side (space, table, selection, dispatch) is here and in src/tune/; the GPU side in
/// src/tune/TuneRun.cpp and src/tune/CudaDriver.cpp.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilec {

namespace ast {
struct Module;
}
class SourceManager;

namespace tune {

/// One configuration: keyword arguments of the factory, each value the text of a Python expression
/// ("128", "None", "True"), in the order the space names them.
using Config = std::vector<std::pair<std::string, std::string>>;

/// `block_M=64,128;num_stages=2,3` as the cartesian product, first dimension slowest. Values are split at
/// commas outside brackets and quotes, so `shape=(64, 32),(128, 64)` has two values. Throws
/// std::invalid_argument with a message for a malformed space.
std::vector<Config> parseSpace(const std::string &text);

/// `--sizes 'm=1,16,128;n=4096'`: per T.dynamic symbol, its values. At most one symbol may have several
/// values (the one the launch function dispatches on). Throws std::invalid_argument.
struct Sizes {
    std::vector<std::pair<std::string, std::vector<int64_t>>> symbols;
    /// The symbol with several values ("" when none has).
    std::string dispatchSymbol() const;
    /// Every point to tune at: one map symbol -> value per value of the dispatch symbol (one point when none).
    std::vector<std::map<std::string, int64_t>> points() const;
};
Sizes parseSizes(const std::string &text);

/// The exported kernel's instantiation as the module writes it: `NAME = callee(args..., kw=...)`.
struct Instantiation {
    std::string callee;                                   ///< the callee's source text ("matmul")
    std::vector<std::string> args;                        ///< positional arguments' source text
    std::vector<std::pair<std::string, std::string>> keywords; ///< keyword arguments' source text
};
/// Finds the module-level `name = CALL` (the last one). nullopt when there is none.
std::optional<Instantiation> findInstantiation(const ast::Module &m, const SourceManager &sm, const std::string &name);

/// The call's text with `config` applied: keywords it names replace the call's own, others are appended.
std::string callText(const Instantiation &inst, const Config &config);

/// The search space of an `@autotune(configs=...)` / `@tilelang.autotune(configs=...)` decorator on the
/// module-level factory `callee`: a list of dict literals, or a module-level name bound to one. nullopt when the
/// factory has no such decorator; throws std::invalid_argument when `configs=` is not something tilec can read.
std::optional<std::vector<Config>> decoratorSpace(const ast::Module &m, const SourceManager &sm,
                                                  const std::string &callee);

/// What the local GPU and software were when the table was made.
struct Environment {
    std::string gpuName;
    int smCount = 0;
    int ccMajor = 0, ccMinor = 0;
    int driverVersion = 0;       ///< cuDriverGetVersion: 13000 for 13.0
    std::string nvrtcVersion;    ///< "13.0"
    int smClockKHz = 0, memoryClockKHz = 0;
    std::string tilecVersion;
};

/// One configuration at one size.
struct Result {
    Config config;
    std::map<std::string, int64_t> size; ///< the T.dynamic values (empty for a kernel without any)
    std::string status;                  ///< "ok", "compile_error", "resource_limit", "launch_error",
                                         ///< "mismatch", "fault", "not_run"
    double ms = 0;                       ///< median time (status ok)
    std::string detail;                  ///< why, for the other statuses; the check's figures for ok
};

/// A `tilec tune` table (format version 1: docs in README "Autotuning").
struct Table {
    std::string file;                 ///< the .tile file as given
    std::string fileHash;             ///< fnv1a64 of its bytes, hex
    std::string kernel;
    std::string call;                 ///< the default instantiation's text
    std::vector<std::string> archs;   ///< -arch of the tuning run
    Environment env;
    std::string space;                ///< where the space came from (the --space text or "decorator")
    std::string dispatchSymbol;       ///< "" unless tuned at several values of a T.dynamic size
    uint64_t seed = 0;                ///< of the random inputs
    int warmup = 0, reps = 0;
    double seconds = 0;               ///< the whole tuning run
    std::vector<Result> results;
};

std::string writeTable(const Table &t);
/// Throws std::invalid_argument naming what is wrong.
Table readTable(const std::string &json);

/// FNV-1a, 64 bit, as 16 hex digits: the table's check that the file is the one it was tuned on.
std::string fileHash(const std::string &bytes);

/// The choice: per bucket of the dispatch symbol, the best "ok" configuration. A bucket covers the
/// sizes above the previous tuned size up to and including its own; the last one also everything above.
/// One entry (upTo unset) for a table without a dispatch symbol.
struct Choice {
    std::optional<int64_t> upTo;
    Config config;
    double ms = 0;
};
/// Throws std::invalid_argument when a size (or the whole table) has no working configuration.
std::vector<Choice> selectBest(const Table &t);

/// The configuration with the smallest total time over every size where all of them ran ("ok"): what a single,
/// undispatched build would pick. nullopt when no configuration worked at every size.
std::optional<Config> singleBest(const Table &t);

/// Differences between the table and this build, each a sentence for a warning: another file version,
/// tuned for another target than any of `archs`.
std::vector<std::string> mismatches(const Table &t, const std::string &fileBytes, const std::vector<std::string> &archs);

// ---- dispatch (src/tune/TuneDispatch.cpp) ----

/// The name of the internal kernel of configuration index k: `NAME__cfgK`.
std::string configKernelName(const std::string &kernel, size_t k);

/// One parameter of a generated launch function, as the header declares it.
struct CParam {
    std::string type; ///< "const void*", "int64_t", "cudaStream_t"
    std::string name;
};
/// The parameters of `cName`'s declaration in a generated header. Throws std::invalid_argument when absent.
std::vector<CParam> launchParameters(const std::string &header, const std::string &cName);
/// The parameters of the header's declaration `RET NAME(...)` at the start of a line (none for `(void)`);
/// nullopt when it has no such declaration.
std::optional<std::vector<CParam>> declaredParameters(const std::string &header, const std::string &ret,
                                                      const std::string &name);

/// The dispatcher of a tuned dynamic-size kernel: `cName` (with the prefix) calls `cfgNames[i]` for sizes up
/// to `upTo[i]` (the last without bound), and the queries/load/unload forward to all of them.
struct Dispatch {
    std::string cName;
    std::string symbol;                 ///< the T.dynamic parameter it switches on
    std::vector<std::string> cfgNames;  ///< launch functions (with the prefix), one per bucket, may repeat
    std::vector<std::optional<int64_t>> upTo;
};
/// The header's declarations of the dispatcher (same parameters as cfgNames[0]); where its configurations have
/// T.alloc_global workspaces, NAME_workspace_bytes and NAME_with_workspace too, which forward like NAME.
std::string dispatchDeclarations(const Dispatch &d, const std::string &header);
/// Its definitions: C when `cxx` is false (binary mode), else C++ with extern "C" linkage (the .cu).
std::string dispatchDefinitions(const Dispatch &d, const std::string &header, bool cxx);
/// The header with the declarations inserted before its closing `extern "C"` block / include guard.
std::string insertIntoHeader(const std::string &header, const std::string &declarations);

// ---- --tuned (src/tune/TunedBuild.cpp) ----

/// What a build with `--tuned` tables changes: exports that re-instantiate the tuned kernels, kernels
/// replaced by a dispatcher (not built under their own name), the dispatchers, and warnings.
struct TunedPlan {
    std::vector<std::pair<std::string, std::string>> exports; ///< NAME, CALL (as for --export)
    std::vector<std::string> replaced;  ///< kernels whose name the dispatcher takes
    std::vector<Dispatch> dispatches;   ///< names without --prefix
    std::vector<std::string> warnings;
};
/// Reads the tables and plans the build of `m` (the file `fileBytes`) for `archs`. Throws
/// std::invalid_argument naming the table for a table that cannot be used.
TunedPlan planTunedBuild(const std::vector<std::string> &tablePaths, const ast::Module &m, const SourceManager &sm,
                         const std::string &fileBytes, const std::vector<std::string> &archs);
/// The dispatchers with `prefix`, added to the .cu (`cuda`, may be null) and to `header`.
void addDispatchers(const TunedPlan &p, const std::string &prefix, std::string *cuda, std::string &header);
/// Binary mode: the dispatchers' definitions in C, to append to the generated C file. `header` is the generated
/// header (before or after addDispatchers).
std::string dispatchersInC(const TunedPlan &p, const std::string &prefix, const std::string &header);

// ---- the command (src/tune/TuneRun.cpp) ----

struct Options {
    std::string input;
    std::string kernel;
    std::string space;             ///< --space ("" : the decorator's)
    std::string sizes;             ///< --sizes
    std::vector<std::string> archs; ///< -arch (default: the local GPU's)
    std::string output;            ///< -o
    std::vector<std::string> defines, exports; ///< -D, --export as for a build
    std::vector<std::string> importDirs;       ///< -I as for a build
    int warmup = 3, reps = 25;
    int jobs = 0;                  ///< parallel compilations (0: the machine's cores)
    double budget = 0;             ///< --budget: seconds after which configurations not yet run are "not_run" (0: none)
    double tolerance = 0;          ///< 0: by the output dtype
    std::string tilec;             ///< the tilec executable for the compilations ("" : this process's)
    bool verbose = false;
};

/// Runs `tilec tune`; returns an ExitCode (2 without a GPU or for a bad command line).
int run(const Options &o, std::ostream &out, std::ostream &err);

} // namespace tune
} // namespace tilec
