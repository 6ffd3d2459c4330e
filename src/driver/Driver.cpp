/// \file
/// One compilation: reads the input, runs the front end and the pipeline, writes the outputs, and turns
/// every way it can end (user errors, too many errors, internal errors) into the contract's exit codes.
#include "tilec/Driver.h"

#include "driver/DriverImpl.h"
#include "eval/ModuleLoader.h"

#include "tilec/Check.h"
#include "tilec/Codegen.h"
#include "tilec/DiagnosticsFormat.h"
#include "tilec/Frontend.h"
#include "tilec/IRPrinter.h"
#include "tilec/Lower.h"
#include "tilec/OptionValues.h"
#include "tilec/Parser.h"
#include "tilec/Tune.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <fstream>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace tilec {

namespace {

using driver::UsageError;

const std::vector<std::string> kEmitKinds = {"ast", "cubin", "cuda", "header", "ir", "ptx", "torch", "xla-ffi"};

/// `path` as --file-prefix-map rewrites it for the outputs: the last OLD=NEW whose OLD starts it (as gcc's
/// -ffile-prefix-map: a plain string prefix) replaces that start with NEW.
std::string mapPrefix(const std::vector<std::string> &maps, const std::string &path) {
    for (auto m = maps.rbegin(); m != maps.rend(); ++m) {
        std::string from = m->substr(0, m->find('='));
        if (path.compare(0, from.size(), from) == 0) return m->substr(from.size() + 1) + path.substr(from.size());
    }
    return path;
}

/// The extension of a path ("" when it has none).
std::string extensionOf(const std::string &path) {
    auto dot = path.rfind('.');
    auto slash = path.rfind('/');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
    return path.substr(dot);
}

class Compilation {
  public:
    Compilation(const DriverOptions &o, std::ostream &out, std::ostream &err)
        : opts_(o), out_(out), err_(err), diag_(sm_, err) {}

    int run();
    /// An error outside the engine (the command line's, an internal one): printed as `text`, or, with
    /// -fdiagnostics-format=json|sarif, kept as `message` of `phase` for the document finish() writes.
    void driverError(const std::string &text, const std::string &message, const char *phase);
    /// With -fdiagnostics-format=json|sarif: writes the document of every diagnostic.
    void finish();

  private:
    void validateOptions();
    std::string readInput();
    FrontendOptions frontendOptions();
    LoweringOptions loweringOptions() const;
    std::optional<ir::Program> frontEnd(int file, PassContext &ctx, tune::TunedPlan &tuned);
    void writeText(const std::string &path, const std::string &text);
    void writeDepfile(const std::vector<std::string> &outputs);
    bool emits(const char *kind) const {
        return std::find(opts_.emit.begin(), opts_.emit.end(), kind) != opts_.emit.end();
    }

    const DriverOptions &opts_;
    std::ostream &out_, &err_;
    SourceManager sm_;
    DiagnosticEngine diag_;
    std::vector<Target> targets_;
    std::vector<std::string> imported_; ///< the files the input imports (for -MD)
    std::optional<DiagnosticLog> log_;  ///< -fdiagnostics-format=json|sarif
};

void Compilation::driverError(const std::string &text, const std::string &message, const char *phase) {
    if (!log_) {
        err_ << text << "\n";
        return;
    }
    log_->add(EmittedDiagnostic{Severity::Error, SourceRange{}, message, false, phase});
}

void Compilation::finish() {
    if (log_) err_ << log_->render(sm_, TILEC_VERSION_STRING);
}

void Compilation::validateOptions() {
    auto format = parseDiagnosticsFormat(opts_.diagnosticsFormat);
    if (!format) throw UsageError{"unknown -fdiagnostics-format '" + opts_.diagnosticsFormat + "' (known: text, json, sarif)"};
    if (*format != DiagnosticsFormat::Text) {
        log_.emplace(*format);
        diag_.setSink([this](const EmittedDiagnostic &d) { log_->add(d); });
    }
    if (opts_.input.empty()) throw UsageError{"no input file"};
    for (auto &a : opts_.archs) {
        auto t = Target::parse(a);
        if (!t) throw UsageError{"unknown target '" + a + "' in -arch (known: " + Target::knownNames() + ")"};
        // --num-sms: the GPU the lowering's waves (clusters, one-wave causal tiles) and GPU queries assume.
        targets_.push_back(opts_.numSms > 0 ? t->withSmCount(opts_.numSms) : *t);
    }
    if (targets_.empty()) throw UsageError{"-arch needs at least one target"};
    for (auto &k : opts_.emit) {
        if (std::find(kEmitKinds.begin(), kEmitKinds.end(), k) == kEmitKinds.end())
            throw UsageError{"unknown --emit kind '" + k + "' (known: ast, cubin, cuda, header, ir, ptx, torch, xla-ffi)"};
    }
    std::string ext = extensionOf(opts_.output);
    if (!opts_.output.empty()) {
        static const char *const kExts[] = {".cu", ".ptx", ".cubin", ".c", ".o", ".ast", ".ir"};
        if (std::none_of(std::begin(kExts), std::end(kExts), [&](const char *e) { return ext == e; }))
            throw UsageError{"-o " + opts_.output + ": the extension must say what to write (.cu for CUDA C++, .ptx, "
                             ".cubin, .c for C with the binaries embedded, .o for that C compiled, .ast for the typed "
                             "program, .ir for the lowered IR)"};
    }
    if (emits("cubin") && opts_.output.empty())
        throw UsageError{"--emit=cubin needs -o to name the files (cubins are not written to standard output)"};
    for (auto &x : opts_.ptxasOptions)
        if (x.empty()) throw UsageError{"-Xptxas needs an option, e.g. -Xptxas -O3"};
    // Outputs that need NVRTC fail now, before any work, when it is missing.
    if (ext == ".ptx" || ext == ".cubin" || ext == ".c" || ext == ".o" || emits("ptx") || emits("cubin"))
        driver::requireNvrtc(ext == ".ptx" || ext == ".cubin" || ext == ".c" || ext == ".o" ? "-o " + opts_.output
                                                                                            : std::string("--emit=ptx,cubin"));
    if (!opts_.dumpAfter.empty() && opts_.dumpAfter != "all") {
        auto &n = passNames();
        if (std::find(n.begin(), n.end(), opts_.dumpAfter) == n.end()) {
            std::string known;
            for (auto &p : n) known += (known.empty() ? "" : ", ") + p;
            throw UsageError{"unknown pass '" + opts_.dumpAfter + "' in --dump-after (known: all, " + known + ")"};
        }
    }
    if (opts_.errorLimit < 0) throw UsageError{"--error-limit must be 0 (no limit) or positive"};
    if (opts_.numSms < 0) throw UsageError{"--num-sms must be positive"};
    if (!opts_.depfilePath.empty() && !opts_.depfile) throw UsageError{"-MF needs -MD"};
    if (opts_.depPhony && !opts_.depfile) throw UsageError{"-MP needs -MD"};
    if (opts_.depfile && opts_.depfilePath.empty() && opts_.output.empty())
        throw UsageError{"-MD needs -MF PATH or -o PATH to name the depfile"};
    for (auto &m : opts_.filePrefixMaps)
        if (m.find('=') == std::string::npos) throw UsageError{"--file-prefix-map '" + m + "' is not OLD=NEW"};
    if (!opts_.prefix.empty() && !isIdentifier(opts_.prefix))
        throw UsageError{"--prefix '" + opts_.prefix + "' is not a valid C identifier prefix"};
}

std::string Compilation::readInput() {
    std::ostringstream ss;
    if (opts_.input == "-") {
        ss << std::cin.rdbuf();
    } else {
        std::error_code ec;
        if (std::filesystem::is_directory(opts_.input, ec))
            throw UsageError{"input '" + opts_.input + "' is a directory, not a .tile or .py file"};
        errno = 0;
        std::ifstream f(opts_.input, std::ios::binary);
        if (!f) throw UsageError{"cannot open input file '" + opts_.input + "': " + std::strerror(errno ? errno : ENOENT)};
        ss << f.rdbuf();
        if (f.bad()) throw UsageError{"cannot read input file '" + opts_.input + "'"};
    }
    return ss.str();
}

/// The lowering switches of the command line.
LoweringOptions Compilation::loweringOptions() const {
    LoweringOptions o;
    o.tma = !opts_.noTma;
    o.warpSpecialize = !opts_.noWarpSpecialize;
    o.persistent = !opts_.noPersistent;
    o.walkGroup = opts_.walkGroup;
    o.clusters = !opts_.noCluster;
    o.clusterBlocks = opts_.clusterBlocks;
    o.splitK = !opts_.noSplitK;
    o.widenGemmTiles = opts_.widenGemmTiles;
    o.sparseWgmma = !opts_.noSparseWgmma;
    o.sparseWarpRoles = opts_.sparseWarpRoles;
    o.mixedWarpRoles = opts_.mixedWarpRoles;
    o.mmaWarpRoles = opts_.mmaWarpRoles;
    o.splitConditions = !opts_.noSplitConditions;
    o.perElementSplits = opts_.perElementSplits;
    o.skipUnitRescales = opts_.skipUnitRescales;
    o.zeroInitWgmma = opts_.zeroInitWgmma;
    o.pingPong = opts_.pingPong;
    o.intraOverlap = opts_.intraOverlap;
    o.epilogueBuffers = opts_.epilogueBuffers;
    o.oneBlockBounds = opts_.oneBlockBounds;
    o.boundBlocks = opts_.boundBlocks;
    o.occupancyBounds = opts_.occupancyBounds;
    o.sharedReuseBlocks = opts_.sharedReuseBlocks;
    o.bulkStores = !opts_.noBulkStores && !opts_.noTma; // --no-tma: every tile on the threads' own path
    o.bulkStoreRows = opts_.bulkStoreRows;
    o.stmatrixCopies = !opts_.noStmatrixCopies;
    o.broadcastLoadWidths = opts_.broadcastLoadWidths;
    o.selectTestLoads = opts_.selectTestLoads;
    o.bankVectorLoads = opts_.bankVectorLoads;
    return o;
}

FrontendOptions Compilation::frontendOptions() {
    FrontendOptions fo;
    fo.target = *std::min_element(targets_.begin(), targets_.end(),
                                  [](const Target &a, const Target &b) { return a.sm < b.sm; });
    try {
        addDefines(fo, opts_.defines, sm_, diag_);
        addExports(fo, opts_.exports, sm_, diag_);
    } catch (const std::invalid_argument &e) {
        throw UsageError{e.what()};
    }
    fo.kernels = opts_.kernels;
    // The user's modules: next to the input (or in its package), on -I, on TILEC_PATH.
    fo.mainPath = opts_.input == "-" ? "" : opts_.input;
    fo.importDirs = opts_.importDirs;
    if (const char *path = std::getenv("TILEC_PATH"))
        for (auto &d : eval::splitSearchPath(path)) fo.importDirs.push_back(d);
    fo.sources = &sm_;
    fo.importedFiles = &imported_;
    return fo;
}

void Compilation::writeText(const std::string &path, const std::string &text) { driver::writeIfChanged(path, text); }

/// Make syntax: every output is a target; the prerequisites are the files the outputs were made from.
void Compilation::writeDepfile(const std::vector<std::string> &outputs) {
    // The -o file first: ninja takes the depfile's first target for the edge's first output.
    std::vector<std::string> targets = outputs;
    auto primary = std::find(targets.begin(), targets.end(), opts_.output);
    if (primary != targets.end()) std::rotate(targets.begin(), primary, primary + 1);
    if (!opts_.depTarget.empty()) targets = {opts_.depTarget};
    // The device runtime is embedded in tilec: the outputs depend on the input, the modules it imports (beside it,
    // on -I, on TILEC_PATH) and the --tuned tables.
    std::vector<std::string> prerequisites;
    if (opts_.input != "-") prerequisites.push_back(opts_.input);
    for (auto *files : std::initializer_list<const std::vector<std::string> *>{&imported_, &opts_.tuned})
        for (auto &f : *files)
            if (std::find(prerequisites.begin(), prerequisites.end(), f) == prerequisites.end()) prerequisites.push_back(f);
    std::string path = opts_.depfilePath;
    if (path.empty()) path = opts_.output.substr(0, opts_.output.size() - extensionOf(opts_.output).size()) + ".d";
    size_t phonyFrom = !opts_.depPhony ? SIZE_MAX : opts_.input != "-" ? 1 : 0;
    writeText(path, driver::depfileText(targets, prerequisites, phonyFrom));
}

/// The front end: parse, --tuned's configurations, evaluate, check. Nothing when the input has errors (reported).
std::optional<ir::Program> Compilation::frontEnd(int file, PassContext &ctx, tune::TunedPlan &tuned) {
    FrontendOptions fo = frontendOptions();
    if (diag_.hasErrors()) return std::nullopt;

    auto module = ctx.run("parse", [&] { return parseModule(file, diag_); },
                          [](const std::optional<ast::Module> &m) { return m ? ast::dump(*m) : std::string(); });
    if (!module) return std::nullopt;
    remark(nullptr, {}, "parsed " + opts_.input + ": " + std::to_string(module->body.size()) + " top-level statements");

    // --tuned: the tables' configurations as exports; dispatchers replace kernels tuned at several sizes.
    if (!opts_.tuned.empty()) {
        try {
            tuned = tune::planTunedBuild(opts_.tuned, *module, sm_, sm_.text(file), opts_.archs);
        } catch (const std::invalid_argument &e) {
            throw UsageError{e.what()};
        }
        for (auto &w : tuned.warnings) diag_.warning(SourceRange{}, w);
        if (opts_.werror && !tuned.warnings.empty()) return std::nullopt;
        bool filtered = !fo.kernels.empty();
        for (auto &[name, call] : tuned.exports) {
            FrontendOptions::Export ex{name, nullptr, {}};
            ex.call = parseOptionValue(sm_, diag_, call, "--tuned " + name, false, ex.range);
            if (!ex.call) return std::nullopt;
            fo.exports.push_back(std::move(ex));
            if (filtered) fo.kernels.push_back(name); // NAME__cfgK of a kernel --kernel asks for
        }
    }

    auto program = ctx.run("evaluate", [&] { return evaluateModule(*module, fo, diag_); },
                           [](const std::optional<ir::Program> &p) { return p ? ir::print(*p) : std::string(); });
    if (!program || diag_.hasErrors()) return std::nullopt;
    std::erase_if(program->kernels, [&](const ir::KernelP &k) {
        return std::find(tuned.replaced.begin(), tuned.replaced.end(), k->name) != tuned.replaced.end();
    });

    // The checks run once, against the most restrictive target of -arch, so that a target-independent
    // error is not reported once per target.
    const Target &strictest = *std::min_element(targets_.begin(), targets_.end(), [](auto &a, auto &b) {
        return a.maxSharedPerBlock < b.maxSharedPerBlock;
    });
    bool ok = ctx.run("check", [&] {
        bool good = true;
        for (auto &k : program->kernels) good = checkKernel(*k, strictest, diag_) && good;
        return good;
    }, [&](bool) { return ir::print(*program); });
    if (!ok || diag_.hasErrors()) return std::nullopt;
    return program;
}

int Compilation::run() {
    validateOptions();
    diag_.setErrorLimit(opts_.errorLimit);
    diag_.setWarningsAsErrors(opts_.werror);
    diag_.setSuppressWarnings(opts_.noWarnings);
    diag_.setColor(opts_.color == "always" || (opts_.color == "auto" && &err_ == &std::cerr && isatty(2)));
    if (opts_.verbose) setRemarks(true);

    std::string text = readInput();
    int file = sm_.add(opts_.input == "-" ? "<stdin>" : opts_.input, std::move(text));
    PassContext ctx;
    ctx.dumpAfter = opts_.dumpAfter;
    ctx.timePasses = opts_.timePasses;
    ctx.dump = &out_;

    tune::TunedPlan tuned;
    std::optional<ir::Program> program = frontEnd(file, ctx, tuned);
    if (!program) return ExitInputError;

    // What to write: the -o file's kind, every --emit kind, and the header whenever CUDA or C is written or
    // -H names it. Kinds beside -o share its stem; without -o the text kinds go to standard output.
    std::string ext = extensionOf(opts_.output);
    std::string stem = opts_.output.substr(0, opts_.output.size() - ext.size());
    bool wantAst = ext == ".ast" || emits("ast"), wantIr = ext == ".ir" || emits("ir");
    bool wantCuda = ext == ".cu" || emits("cuda");
    bool wantC = ext == ".c", wantObject = ext == ".o";
    bool wantPtx = ext == ".ptx" || emits("ptx"), wantCubin = ext == ".cubin" || emits("cubin");
    bool wantHeader = ext == ".cu" || wantC || wantObject || emits("header") || !opts_.header.empty();
    bool wantDevice = wantC || wantObject || wantPtx || wantCubin;
    bool wantTorch = emits("torch"); // STEM.torch.cpp: PyTorch operators over the header's functions
    bool wantXla = emits("xla-ffi"); // STEM.xla.cpp: XLA FFI handlers (JAX)
    bool wantCode = wantCuda || wantHeader || wantDevice || wantTorch || wantXla || opts_.resourceUsage;
    auto pathFor = [&](const std::string &e) { return opts_.output.empty() ? std::string() : ext == e ? opts_.output : stem + e; };
    std::string headerPath = !opts_.header.empty() ? opts_.header : pathFor(".h");

    std::vector<std::string> outputs;
    // `target`: a target of the depfile (the sidecars are not: a ninja rule declaring its outputs without them
    // would reject a depfile naming them).
    auto emit = [&](const std::string &path, const std::string &text, bool target = true) {
        if (path.empty()) {
            out_ << text;
            return;
        }
        writeText(path, text);
        if (target) outputs.push_back(path);
    };
    if (wantAst) emit(pathFor(".ast"), ir::print(*program));

    // Lowering runs only for outputs that need it, so --emit=ast works on kernels code generation
    // cannot handle yet.
    bool dumpsLowering = !opts_.dumpAfter.empty() && !isFrontEndPhase(opts_.dumpAfter);
    if (wantIr || wantCode || dumpsLowering) {
        ctx.diag = &diag_;
        ir::Program lowered = lowerVariants(*program, targets_, loweringOptions(), ctx);
        if (diag_.hasErrors()) return ExitInputError;
        if (wantIr) emit(pathFor(".ir"), ir::print(lowered));
        if (wantCode) {
            CodegenOptions co;
            co.fastMath = opts_.fastMath;
            co.flushNarrowExp2 = !opts_.noNarrowExp2Flush;
            co.hoistWgmmaA = opts_.hoistWgmmaDescriptors;
            co.opaqueVectorStores = opts_.opaqueVectorStores;
            // Paths written into the outputs, as --file-prefix-map says (files are still written where named).
            co.sourceName = opts_.input == "-" ? "<stdin>" : mapPrefix(opts_.filePrefixMaps, opts_.input);
            co.cudaName = mapPrefix(opts_.filePrefixMaps, pathFor(".cu"));
            co.headerName = mapPrefix(opts_.filePrefixMaps, headerPath);
            co.prefix = opts_.prefix;
            co.targets = targets_;
            co.torch = wantTorch;
            co.xlaFfi = wantXla;
            co.torchNamespace = opts_.prefix.substr(0, opts_.prefix.find_last_not_of('_') + 1); // "" when none: tilec
            for (auto &d : tuned.dispatches) co.torchDispatchers.push_back({d.cName, d.cfgNames});
            setCurrentPhase("codegen");
            auto t0 = std::chrono::steady_clock::now();
            GeneratedCode code = generateCode(lowered, co, diag_);
            if (opts_.timePasses)
                ctx.recordTime("codegen", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            if (diag_.hasErrors()) return ExitInputError;
            tune::addDispatchers(tuned, opts_.prefix, &code.cuda, code.header);
            if (wantCuda) emit(pathFor(".cu"), code.cuda);
            if (wantHeader) emit(headerPath, code.header);
            if (wantTorch) emit(pathFor(".torch.cpp"), code.torch);
            if (wantXla) emit(pathFor(".xla.cpp"), code.xlaFfi);

            // Device code: cubins whenever something embeds or reports them, else only PTX. --resource-usage
            // alone uses NVRTC when it is there and reports without registers when it is not.
            std::string nvrtcMissing;
            const Nvrtc *nvrtc = wantDevice ? &driver::requireNvrtc("-o " + opts_.output) : Nvrtc::get(&nvrtcMissing);
            if (nvrtc && nvrtc->includeDirs().empty() && !wantDevice) nvrtc = nullptr, nvrtcMissing = "no CUDA headers beside NVRTC";
            else if (!nvrtc) nvrtcMissing = "NVRTC not found; searched: " + nvrtcMissing;
            std::optional<driver::DeviceBuild> device;
            if (wantDevice || (opts_.resourceUsage && nvrtc)) {
                std::string deviceName = co.cudaName.empty() ? "tilec-device.cu" : co.cudaName;
                bool cubins = wantCubin || wantC || wantObject || opts_.resourceUsage;
                device = driver::buildDevice(*nvrtc, code, targets_, opts_, deviceName, cubins);
                if (opts_.timePasses) ctx.recordTime("nvrtc", device->milliseconds);
                // -Xptxas -v asks for ptxas's report, as with nvcc.
                for (auto &x : opts_.ptxasOptions)
                    if (x == "-v" || x == "--verbose") {
                        err_ << device->log;
                        break;
                    }
                std::vector<DeviceImage> images;
                // Each PTX or cubin file with its sidecar (PATH.json): entry names, parameters, launch shape.
                auto emitImage = [&](const std::string &path, const DeviceImage &im) {
                    emit(path, im.bytes);
                    if (!path.empty()) emit(path + ".json", generateSidecar(lowered, co, im, device->loweredNames, diag_), false);
                };
                if (wantCubin)
                    for (auto &c : device->cubins) emitImage(driver::cubinPath(stem, c.target, device->cubins.size()), c);
                if (wantPtx) emitImage(pathFor(".ptx"), device->ptx);
                if (wantC || wantObject) {
                    images = device->cubins;
                    images.push_back(device->ptx);
                    setCurrentPhase("codegen");
                    std::string c = generateBinarySource(lowered, co, images, device->loweredNames, diag_);
                    if (diag_.hasErrors()) return ExitInputError;
                    c += tune::dispatchersInC(tuned, opts_.prefix, code.header);
                    if (wantC) emit(opts_.output, c);
                    if (wantObject) {
                        setCurrentPhase("cc");
                        const char *cc = std::getenv("CC");
                        std::string compiler = !opts_.ccbin.empty() ? opts_.ccbin : cc && *cc ? cc : "cc";
                        std::string searched, include = findCudaIncludeDir(&searched);
                        if (include.empty())
                            throw UsageError{"-o " + opts_.output + " needs CUDA's cuda.h to compile the C, which was not "
                                             "found (searched: " + searched + "); set CUDA_HOME"};
                        std::string base = stem.substr(stem.find_last_of('/') + 1);
                        auto t1 = std::chrono::steady_clock::now();
                        driver::compileC(c, base.empty() ? "tilec" : base, opts_.output, compiler, include);
                        if (opts_.timePasses)
                            ctx.recordTime("cc", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
                        outputs.push_back(opts_.output);
                    }
                }
            }
            if (opts_.resourceUsage)
                driver::printResourceUsage(err_, *program, code, targets_, device ? &*device : nullptr, nvrtcMissing);
        }
    }
    if (opts_.depfile) writeDepfile(outputs.empty() ? std::vector<std::string>{opts_.input + ".ast"} : outputs);
    if (opts_.timePasses) ctx.reportTimes(err_);
    return diag_.hasErrors() ? ExitInputError : ExitOk;
}

} // namespace

int runCompiler(const DriverOptions &opts, std::ostream &out, std::ostream &err) {
    Compilation c(opts, out, err);
    int rc = ExitOk;
    try {
        rc = c.run();
    } catch (const UsageError &e) {
        c.driverError("tilec: error: " + e.msg, e.msg, "command-line");
        rc = ExitUsage;
    } catch (const TooManyErrors &) {
        std::string msg = "too many errors emitted, stopping now [--error-limit=" + std::to_string(opts.errorLimit) + "]";
        c.driverError("tilec: fatal error: " + msg, msg, currentPhase());
        rc = ExitInputError;
    } catch (const InternalError &e) {
        c.driverError(e.what(), e.what(), "internal-error");
        rc = ExitInternal;
    } catch (const std::bad_alloc &) {
        std::string msg = std::string("internal error: in ") + currentPhase() + ": out of memory";
        c.driverError(msg, msg, "internal-error");
        rc = ExitInternal;
    } catch (const std::exception &e) {
        std::string msg = std::string("internal error: in ") + currentPhase() + ": unexpected exception: " + e.what();
        c.driverError(msg, msg, "internal-error");
        rc = ExitInternal;
    }
    c.finish();
    return rc;
}

} // namespace tilec
