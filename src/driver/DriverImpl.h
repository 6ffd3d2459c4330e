/// \file
/// Private to src/driver/: the steps of a compilation after code generation (device code through NVRTC, the
/// C compiler for -o x.o, the resource report) and the error the command line's mistakes raise.
#pragma once

#include "tilec/Codegen.h"
#include "tilec/DeviceCompiler.h"
#include "tilec/Driver.h"
#include "tilec/IR.h"

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::driver {

/// A command-line mistake, or an output this installation cannot produce: printed as `tilec: error: ...`, exit 2.
struct UsageError {
    std::string msg;
};

/// NVRTC for the outputs that need it; a UsageError naming the places searched when it is missing.
const Nvrtc &requireNvrtc(const std::string &why);

/// The device code compiled for every target of -arch.
struct DeviceBuild {
    std::vector<Target> targets;              ///< -arch without repeats, in the order given
    std::vector<DeviceImage> cubins;          ///< per target (empty when only PTX was asked for)
    std::vector<std::string> ptxPerTarget;    ///< per target: the PTX its cubin came from
    std::vector<std::vector<PtxasFunctionInfo>> ptxas; ///< per target: ptxas's figures per kernel
    std::string log;                          ///< NVRTC's messages of every compilation, in target order
    DeviceImage ptx;                          ///< the lowest target's PTX (newer devices JIT it unless arch-specific)
    std::vector<std::string> loweredNames;    ///< per kernel of GeneratedCode::kernels
    double milliseconds = 0;                  ///< wall time in NVRTC
};

/// Compiles `code.device` with NVRTC: cubins for every target when `cubins`, else only the lowest target's
/// PTX. Generated code that does not compile is tilec's bug: an InternalError carrying NVRTC's log.
DeviceBuild buildDevice(const Nvrtc &nvrtc, const GeneratedCode &code, const std::vector<Target> &targets,
                        const DriverOptions &opts, const std::string &deviceName, bool cubins);

/// The lowest target (by compute capability; the portable sm_XY before sm_XYa): its PTX runs on the most devices.
const Target &lowestTarget(const std::vector<Target> &targets);

/// The path of target `t`'s cubin beside `stem`: `stem.cubin` with one target, `stem.sm_80.cubin` with several.
std::string cubinPath(const std::string &stem, const Target &t, size_t targetCount);

/// Compiles C source to an object file with `compiler` (a command, split at spaces, e.g. "ccache gcc") as
/// `compiler -c -fPIC -O2 -I<cudaInclude> NAME.c -o NAME.o`, run in a private temporary directory so that
/// the object names the source `baseName.c` whatever the machine. Throws UsageError when the compiler
/// cannot be run, InternalError when it rejects the code.
void compileC(const std::string &source, const std::string &baseName, const std::string &objPath,
              const std::string &compiler, const std::string &cudaInclude);

/// The --resource-usage report of every kernel (docs/INTERFACE.md). `evaluated` is the program before lowering
/// (what the user declared, to tell pipeline copies of a buffer from other shared memory); `device` may be
/// null when NVRTC is unavailable (no registers or instructions then; `why` says so).
void printResourceUsage(std::ostream &os, const ir::Program &evaluated, const GeneratedCode &code,
                        const std::vector<Target> &targets, const DeviceBuild *device, const std::string &why);

/// A make/ninja depfile: `targets: prerequisites`, with spaces, `#` and `$` escaped; then (-MP) an empty
/// rule `prerequisite:` for each prerequisite from index `phonyFrom` on (the input's own is left out, as gcc
/// does), so that a module deleted or renamed does not stop make with "No rule to make target".
std::string depfileText(const std::vector<std::string> &targets, const std::vector<std::string> &prerequisites,
                        size_t phonyFrom = SIZE_MAX);

/// Writes `bytes` to `path` unless the file already holds exactly them, in which case it is not touched (its
/// mtime kept, so make and ninja's restat rebuild nothing that depends on it). Written through a temporary file
/// in the same folder renamed over `path`. Returns whether it wrote; a UsageError when it cannot.
bool writeIfChanged(const std::string &path, std::string_view bytes);

/// The bytes of the file at `path`; a UsageError when it cannot be read.
std::string readFile(const std::string &path);

} // namespace tilec::driver
