/// \file
/// The tilec command: parses the command line with CLI11 into DriverOptions and runs the compiler.
///
/// nvcc-style spellings (`-arch=sm_90a`, `-Werror`, `-MD -MF f.d`, `-o`, `-H`, `-DNAME=VALUE`, `-lineinfo`,
/// `-ccbin`) are mapped to CLI11's long options before parsing, because CLI11 only knows one-letter short
/// options. `-Xptxas OPTS` (and `--ptxas-options`) are taken out beforehand: their values start with '-'.
#include "CliDocs.h"

#include "tilec/DiagnosticsFormat.h"
#include "tilec/Driver.h"
#include "tilec/Lsp.h"
#include "tilec/Target.h"
#include "tilec/Tune.h"

#include <CLI/CLI.hpp>

#ifndef TILEC_VERSION_STRING
#define TILEC_VERSION_STRING "unknown"
#endif
#ifndef TILEC_REVISION
#define TILEC_REVISION ""
#endif

#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace {

/// A switch and its negation (--X / --no-X), each setting what it says, the two exclusive.
void addSwitchPair(CLI::App &app, const std::string &on, std::function<void()> setOn, const std::string &onHelp,
                   const std::string &off, std::function<void()> setOff, const std::string &offHelp) {
    auto *a = app.add_flag_callback(on, std::move(setOn), onHelp);
    auto *b = app.add_flag_callback(off, std::move(setOff), offHelp);
    a->excludes(b);
}

/// The options written with one dash though they are long (nvcc's and gcc's spellings).
const std::vector<std::string> kLong = {"arch", "Werror", "MD", "MF", "MT", "MP", "lineinfo", "ccbin", "use_fast_math",
                                        "fdiagnostics-format"};

/// Rewrites the single-dash multi-letter options into their long forms; moves the -Xptxas values (each a
/// comma-separated list, as nvcc takes them) to `ptxas`.
std::vector<std::string> normalizeArgs(int argc, char **argv, std::vector<std::string> &ptxas, bool &missingValue) {
    std::vector<std::string> args;
    bool afterDashDash = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--") afterDashDash = true;
        if (!afterDashDash) {
            bool taken = false;
            for (std::string opt : {"-Xptxas", "--Xptxas", "--ptxas-options"}) {
                if (a == opt) {
                    if (i + 1 >= argc) missingValue = true;
                    else ptxas.push_back(argv[++i]);
                    taken = true;
                } else if (a.rfind(opt + "=", 0) == 0) {
                    ptxas.push_back(a.substr(opt.size() + 1));
                    taken = true;
                }
            }
            if (taken) continue;
        }
        if (!afterDashDash && a.size() > 2 && a[0] == '-' && a[1] != '-') {
            for (const std::string &name : kLong) {
                if (a.compare(1, name.size(), name) == 0 && (a.size() == name.size() + 1 || a[name.size() + 1] == '=')) {
                    a = "-" + a;
                    break;
                }
            }
        }
        args.push_back(a);
    }
    std::reverse(args.begin(), args.end()); // CLI11 takes a reversed vector
    return args;
}

std::vector<std::string> splitCommas(const std::vector<std::string> &v) {
    std::vector<std::string> out;
    for (auto &s : v) {
        size_t b = 0;
        while (b <= s.size()) {
            size_t e = s.find(',', b);
            if (e == std::string::npos) e = s.size();
            if (e > b) out.push_back(s.substr(b, e - b));
            b = e + 1;
        }
    }
    return out;
}

/// The options of `tilec tune` (its own command line, the man page and the completions).
void addTuneOptions(CLI::App &app, tilec::tune::Options &o, std::vector<std::string> &archs) {
    app.option_defaults()->always_capture_default(false);
    app.add_option("input", o.input, "the .tile file")->required();
    app.add_option("--kernel", o.kernel, "the module-level kernel to tune")->required();
    app.add_option("--space", o.space, "the search space: 'block_M=64,128;num_stages=2,3' (default: the factory's "
                                       "@autotune(configs=...))");
    app.add_option("--sizes", o.sizes, "values of the T.dynamic sizes to tune at: 'm=1,16,128,1024,8192'");
    app.add_option("--arch", archs, "targets to build for (default: the local GPU's)")->delimiter(',');
    app.add_option("-o", o.output, "the table to write (NAME.tune.json)")->required();
    app.add_option("-D", o.defines, "override a module-level constant: NAME=VALUE");
    app.add_option("-I", o.importDirs, "look for imported modules in DIR too (repeatable), as for a build");
    app.add_option("--warmup", o.warmup, "untimed runs per configuration and size (default 3)");
    app.add_option("--reps", o.reps, "timed runs per configuration and size; the median counts (default 25)");
    app.add_option("-j,--jobs", o.jobs, "configurations compiled at once (default: the machine's cores)");
    app.add_option("--budget", o.budget, "seconds after which the configurations not yet run are recorded as not_run "
                                         "and the table is written (default: no limit)");
    app.add_option("--tolerance", o.tolerance, "relative tolerance of the output check (default: 8 units of the "
                                               "output type's roundoff)");
    app.add_option("--tilec", o.tilec, "the tilec that compiles the configurations (default: this one)");
    app.add_flag("-v,--verbose", o.verbose, "keep the working files and say where");
}

const char *const kTuneDescription =
    "tilec tune: searches tile configurations on the local GPU and writes the table --tuned reads";

/// A mistake on the command line, found before the compilation starts, in the -fdiagnostics-format the
/// arguments ask for (text when they name none, or an unknown one).
void usageError(int argc, char **argv, const std::string &msg) {
    std::string format = "text";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        for (std::string opt : {"-fdiagnostics-format", "--fdiagnostics-format"}) {
            if (a.rfind(opt + "=", 0) == 0) format = a.substr(opt.size() + 1);
            else if (a == opt && i + 1 < argc) format = argv[i + 1];
        }
    }
    auto f = tilec::parseDiagnosticsFormat(format);
    if (!f || *f == tilec::DiagnosticsFormat::Text) {
        std::cerr << "tilec: error: " << msg << "\n";
        return;
    }
    tilec::SourceManager none;
    tilec::DiagnosticLog log(*f);
    log.add(tilec::EmittedDiagnostic{tilec::Severity::Error, tilec::SourceRange{}, msg, false, "command-line"});
    std::cerr << log.render(none, TILEC_VERSION_STRING);
}

/// Parses the arguments after `tilec SUBCOMMAND` (`-arch` spelled as nvcc spells it). -1 when they parsed, else
/// the exit code (after --help, or a usage error).
int parseSubcommand(CLI::App &app, int argc, char **argv) {
    std::vector<std::string> args;
    for (int i = argc - 1; i >= 2; --i) {
        std::string a = argv[i];
        if (a.rfind("-arch", 0) == 0) a = "-" + a;
        args.push_back(a);
    }
    try {
        app.parse(args);
    } catch (const CLI::Success &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        std::cerr << app.get_name() << ": error: " << e.what() << "\n";
        return tilec::ExitUsage;
    }
    return -1;
}

/// `tilec tune FILE.tile --kernel NAME ...` (include/tilec/Tune.h).
int tuneMain(int argc, char **argv) {
    tilec::tune::Options o;
    CLI::App app{kTuneDescription, "tilec tune"};
    std::vector<std::string> archs;
    addTuneOptions(app, o, archs);
    if (int rc = parseSubcommand(app, argc, argv); rc >= 0) return rc;
    o.archs = splitCommas(archs);
    return tilec::tune::run(o, std::cout, std::cerr);
}

/// `tilec lsp [-arch=LIST] [-I DIR]...`: the language server on standard input and output (include/tilec/Lsp.h).
int lspMain(int argc, char **argv) {
    tilec::LspOptions o;
    CLI::App app{"tilec lsp: a Language Server Protocol server on standard input and output", "tilec lsp"};
    app.option_defaults()->always_capture_default(false);
    std::vector<std::string> archs;
    app.add_option("--arch", archs, std::string("targets whose lowering checks run (default ") + tilec::Target::kDefaultName + ")")->delimiter(',');
    app.add_option("-I", o.importDirs, "look for imported modules in DIR too (repeatable), as for a build");
    app.add_option("--debounce-ms", o.debounceMs, "milliseconds after the last change before a document is analysed (default 200)");
    bool stdio = false;
    app.add_flag("--stdio", stdio, "speak on standard input and output (the only transport; editors pass it)");
    if (int rc = parseSubcommand(app, argc, argv); rc >= 0) return rc;
    if (!archs.empty()) o.archs = splitCommas(archs);
    for (auto &a : o.archs)
        if (!tilec::Target::parse(a)) {
            std::cerr << "tilec lsp: error: unknown target '" << a << "' in -arch (known: " << tilec::Target::knownNames() << ")\n";
            return tilec::ExitUsage;
        }
    return tilec::runLanguageServer(o, std::cin, std::cout, std::cerr);
}

} // namespace

int main(int argc, char **argv) {
    if (argc > 1 && std::string(argv[1]) == "tune") return tuneMain(argc, argv);
    if (argc > 1 && std::string(argv[1]) == "lsp") return lspMain(argc, argv);
    tilec::DriverOptions o;
    CLI::App app{"tilec: ahead-of-time compiler for the tile language", "tilec"};
    app.option_defaults()->always_capture_default(false);
    std::vector<std::string> archs, emit;
    app.add_option("input", o.input, "the .tile file to compile ('-' for standard input)")->required();
    app.add_option("--arch", archs, "targets, comma-separated: " + tilec::Target::knownNames() + " (default " + tilec::Target::kDefaultName + ")")
        ->delimiter(',');
    app.add_option("-o", o.output, "the primary output; its extension picks the kind");
    app.add_option("-H", o.header, "the header's path (default: the output with .h)");
    app.add_option("--emit", emit, "extra outputs: cuda, ptx, cubin, header, ast, ir, torch (PyTorch operators, STEM.torch.cpp), xla-ffi (STEM.xla.cpp)")->delimiter(',');
    app.add_option("-D", o.defines, "override a module-level constant: NAME=VALUE (a Python literal)");
    app.add_option("-I", o.importDirs, "look for imported modules in DIR too (repeatable; after the input's folder)");
    app.add_option("--export", o.exports, "add an exported kernel: NAME=CALL, e.g. 'g=matmul(4096, 4096, 4096)'");
    app.add_option("--kernel", o.kernels, "compile only these exported kernels (repeatable)");
    app.add_option("--prefix", o.prefix, "prefix for every C symbol");
    app.add_flag("--MD", o.depfile, "write a make/ninja depfile");
    app.add_option("--MF", o.depfilePath, "the depfile's path");
    app.add_option("--MT", o.depTarget, "the depfile's target");
    app.add_flag("--MP", o.depPhony, "add an empty rule per dependency to the depfile (as gcc -MP)");
    app.add_flag("--resource-usage", o.resourceUsage, "print each kernel's resources (to standard error)");
    app.add_flag("--no-tma", o.noTma,
                 "No TMA tile loads on any target (TileLang's tl.disable_tma_lower): cp.async pipelines and mma.sync");
    app.add_flag("--no-warp-specialize", o.noWarpSpecialize,
                 "No producer/consumer warp specialization (TileLang's tl.disable_warp_specialized)");
    app.add_flag("--no-persistent", o.noPersistent,
                 "Warp-specialized kernels launch one block per output tile instead of one per SM walking tiles");
    app.add_option("--walk-group", o.walkGroup,
                   "Persistent warp-specialized kernels whose output tiles differ in work (a loop trip count that "
                   "depends on one block index, as causal attention's) walk that index in groups of G consecutive "
                   "values, the group slowest (neighbouring query blocks of one batch and head side by side); "
                   "1: that index slowest; 0: such tiles one block each")
        ->check(CLI::Range(0, 1 << 20))
        ->capture_default_str();
    app.add_flag("--no-cluster", o.noCluster,
                 "Persistent warp-specialized kernels run without thread-block clusters (no TMA multicast of a shared tile)");
    app.add_option("--cluster-blocks", o.clusterBlocks,
                   "Blocks per cluster where tilec clusters a persistent warp-specialized kernel itself: 2 (the default) or 4 "
                   "along one grid dimension, each loading a quarter of the shared tile and multicasting it to the other three")
        ->check(CLI::IsMember({2, 4}));
    app.add_flag("--no-sparse-wgmma", o.noSparseWgmma,
                 "sm_90a: T.gemm_sp stays on mma.sp (warp tiles) instead of wgmma.mma_async.sp over panel-layout tiles");
    using SparseRoles = tilec::LoweringOptions::SparseWarpRoles;
    addSwitchPair(app, "--sparse-warp-roles", [&o] { o.sparseWarpRoles = SparseRoles::All; },
                  "sm_90a: a T.Pipelined loop of T.gemm_sp takes warp roles (TMA producer, wgmma.mma_async.sp consumers) "
                  "also where the producer's threads copy the metadata's narrow rows (by default only where every "
                  "metadata tile is a TMA tile)",
                  "--no-sparse-warp-roles", [&o] { o.sparseWarpRoles = SparseRoles::Off; },
                  "sm_90a: every T.Pipelined loop of T.gemm_sp keeps the cp.async ring");
    addSwitchPair(app, "--mixed-warp-roles", [&o] { o.mixedWarpRoles = true; },
                  "sm_90a: a T.Pipelined loop whose wgmma products sit beside one wgmma cannot take (run on mma.sync over "
                  "the TMA tiles' panels) takes warp roles instead of the cp.async path (the default)",
                  "--no-mixed-warp-roles", [&o] { o.mixedWarpRoles = false; },
                  "sm_90a: such a loop keeps the cp.async path");
    using MmaRoles = tilec::LoweringOptions::MmaWarpRoles;
    addSwitchPair(app, "--mma-warp-roles", [&o] { o.mmaWarpRoles = MmaRoles::All; },
                  "sm_90a: a T.Pipelined loop none of whose products wgmma can take, each one mma.sync can run over the "
                  "TMA tiles' panels (a tf32 GEMM whose B is not K-major), takes warp roles (TMA producer warpgroup, "
                  "mma.sync consumers) instead of the cp.async path, also where every product reads both operands from "
                  "shared memory (by default only loops with a product whose A comes from registers: mHC's pre-norm)",
                  "--no-mma-warp-roles", [&o] { o.mmaWarpRoles = MmaRoles::Off; },
                  "sm_90a: loops of products wgmma cannot take keep the cp.async path, A from registers too");
    app.add_flag("--no-split-k", o.noSplitK,
                 "GEMMs whose output tiles fill at most half of the GPU keep one block per tile (no split of K over "
                 "extra blocks with a workspace and a second, fixed-order reduction launch)");
    addSwitchPair(app, "--widen-gemm-tiles", [&o] { o.widenGemmTiles = true; },
                  "sm_90a: a GEMM written the usual way on 128x128 tiles and 128 threads (one warpgroup) computes two "
                  "tiles side by side in one block of 256 threads, two consumer warpgroups of 64x256 sharing the A "
                  "tile, its ring deepened to the shared memory of the two blocks an SM held (not by default until timed)",
                  "--no-widen-gemm-tiles", [&o] { o.widenGemmTiles = false; },
                  "such GEMMs keep one tile a block on one warpgroup (the default)");
    app.add_flag("--no-split-conditions", o.noSplitConditions,
                 "Loops whose element-wise conditions (a causal mask, a bounds check) hold or fail over the whole tile "
                 "for a range of iterations keep them in every iteration (default: those iterations run without them)");
    addSwitchPair(app, "--per-element-splits", [&o] { o.perElementSplits = true; },
                  "a loop is split on its uniform conditions only where a thread tests one more than once an iteration "
                  "(a mask over its fragment's elements) or the split points are constants (the default)",
                  "--no-per-element-splits", [&o] { o.perElementSplits = false; },
                  "loops are split also where each thread tests their conditions once an iteration (the thread index "
                  "against a bound) at run-time points");
    addSwitchPair(app, "--skip-unit-rescales", [&o] { o.skipUnitRescales = true; },
                  "in-place multiplies of a thread's registers by per-row factors (attention's output rescale) skipped "
                  "where a vote of the warp finds every factor exactly 1.0 (exact; off by default: 2.5 % faster on the seed's "
                  "flash_d128, 3-6 % slower on five of TileLang's attention examples, H100)",
                  "--no-skip-unit-rescales", [&o] { o.skipUnitRescales = false; },
                  "such multiplies run whatever their factors (the default)");
    addSwitchPair(app, "--zero-init-wgmma", [&o] { o.zeroInitWgmma = true; },
                  "a wgmma product right after a clear of its accumulators (attention's scores) overwrites them: "
                  "scale-d 0 in its first k-step, no zeroing instructions (the default)",
                  "--no-zero-init-wgmma", [&o] { o.zeroInitWgmma = false; },
                  "such accumulators are zeroed by the threads, the product accumulates onto them");
    addSwitchPair(app, "--hoist-wgmma-descriptors", [&o] { o.hoistWgmmaDescriptors = true; },
                  "the A descriptors of a consumer's wgmma products on a fixed tile (attention's Q) made once, before "
                  "its loops, and kept in uniform registers (the default; at most 8 a consumer)",
                  "--no-hoist-wgmma-descriptors", [&o] { o.hoistWgmmaDescriptors = false; },
                  "every wgmma product makes its A descriptors where it is issued");
    auto *pingPong = app.add_flag_callback("--pingpong", [&o] { o.pingPong = tilec::Choice::On; },
                 "Hopper attention: two consumer warpgroups take turns issuing their loop's wgmmas (named barriers), "
                 "one's softmax under the other's GEMMs (default: with the overlap, where the head dimension is >= 128)");
    auto *noPingPong = app.add_flag_callback("--no-pingpong", [&o] { o.pingPong = tilec::Choice::Off; },
                 "Hopper attention: no ping-pong turns, whatever the head dimension");
    auto *overlap = app.add_flag_callback("--intra-overlap", [&o] { o.intraOverlap = tilec::Choice::On; },
                 "Hopper attention: each key block's QK^T issued with the previous block's P.V, the softmax under "
                 "that P.V (FlashAttention-3's intra-warpgroup overlap; with turns, both in one turn; default: "
                 "where the head dimension is >= 128 and its accumulators leave a consumer 64 registers)");
    auto *noOverlap = app.add_flag_callback("--no-intra-overlap", [&o] { o.intraOverlap = tilec::Choice::Off; },
                 "Hopper attention: the loop kept in order, whatever the head dimension");
    app.add_flag("--no-narrow-exp2-flush", o.noNarrowExp2Flush,
                 "a float32 exp2 whose value is converted to float16 or float8 stays exp2f (default: one MUFU.EX2 "
                 "without the subnormal range fix, whose results round to zero there either way)");
    pingPong->excludes(noPingPong);
    overlap->excludes(noOverlap);
    app.add_option("--epilogue-buffers", o.epilogueBuffers,
                   "Hopper GEMM epilogue: staging pieces per consumer warpgroup for stmatrix + TMA stores "
                   "(1 or 2; 0: direct stores from registers)")
        ->check(CLI::Range(0, 2));
    app.add_flag("--no-stmatrix-copies", o.noStmatrixCopies,
                 "sm_90+: a tensor-core fragment's T.copy into a 16-bit shared tile stays per-thread stores "
                 "(default: stmatrix of each warp, as TileLang's)");
    addSwitchPair(app, "--broadcast-load-widths", [&o] { o.broadcastLoadWidths = true; },
                  "a load that several lanes of a T.Parallel nest share (`s[i, j // 32]`) narrows the nest's vectors "
                  "by its bytes per lane (the default: a 4-byte block scale leaves byte tiles 16 lanes wide)",
                  "--no-broadcast-load-widths", [&o] { o.broadcastLoadWidths = false; },
                  "such a load narrows the nest's vectors by its element's bytes");
    addSwitchPair(app, "--select-test-loads", [&o] { o.selectTestLoads = true; },
                  "a shared-memory load read by a select's test is loaded as one vector, which the select's arms "
                  "read too",
                  "--no-select-test-loads", [&o] { o.selectTestLoads = false; },
                  "shared-memory loads inside a select stay scalar loads, except where --bank-vector-loads takes them "
                  "(the default)");
    addSwitchPair(app, "--bank-vector-loads", [&o] { o.bankVectorLoads = true; },
                  "a shared-memory load read by a select's test is loaded as one vector where its lanes' elements, read "
                  "one by one, conflict in the banks and the vector would not (the default)",
                  "--no-bank-vector-loads", [&o] { o.bankVectorLoads = false; },
                  "such loads stay element loads whatever their bank conflicts");
    app.add_flag("--bulk-store-rows", o.bulkStoreRows,
                 "sm_90+: a closing T.copy of a tile whose rows lie at a stride in the tensor as one bulk copy a row "
                 "(default: per-thread stores; a contiguous tile is one bulk copy either way)");
    app.add_flag("--no-bulk-stores", o.noBulkStores,
                 "sm_90+: a kernel's closing T.copy of a shared tile to global memory stays per-thread stores "
                 "(default: cp.async.bulk copies issued by single threads, as TileLang's tile stores)");
    addSwitchPair(app, "--one-block-bounds", [&o] { o.oneBlockBounds = true; },
                  "every kernel without a launch bound of its own gets __launch_bounds__(threads, 1), as TileLang's "
                  "kernels (the default)",
                  "--no-one-block-bounds", [&o] { o.oneBlockBounds = false; },
                  "only kernels whose unrolled global loads need the registers get __launch_bounds__(threads, 1)");
    app.add_option("--bound-blocks", o.boundBlocks,
                   "the blocks per SM of the launch bounds tilec gives kernels without one of their own, every such "
                   "kernel (default: see --occupancy-bounds; 1, TileLang's, for the rest): N > 1 caps registers at "
                   "65536 / (N x threads), for timing occupancy")
        ->check(CLI::Range(1, 32));
    addSwitchPair(app, "--occupancy-bounds", [&o] { o.occupancyBounds = true; },
                  "a kernel without tensor-core products names in its launch bound the blocks per SM its shared "
                  "memory allows, up to what an estimate of its registers supports (the default; -v says the figures)",
                  "--no-occupancy-bounds", [&o] { o.occupancyBounds = false; },
                  "launch bounds name 1 block per SM unless --bound-blocks says otherwise");
    addSwitchPair(app, "--shared-reuse-blocks", [&o] { o.sharedReuseBlocks = true; },
                  "a shared buffer no longer used gives its bytes to a later one, with a barrier between, where that "
                  "lets more blocks share an SM (the default; warp roles aside)",
                  "--no-shared-reuse-blocks", [&o] { o.sharedReuseBlocks = false; },
                  "shared buffers reuse bytes across a barrier the program has, or with barriers added only where the "
                  "kernel's shared memory does not fit otherwise");
    app.add_flag("--opaque-vector-stores", o.opaqueVectorStores,
                 "register -> global vector stores of 8 or 16 bytes as one PTX st.global each, which nvcc cannot "
                 "split (default: only stores through T.make_tensor addresses; nvcc folds parameters' offsets)");
    app.add_flag("--use_fast_math,--use-fast-math", o.fastMath,
                 "float math as nvcc's -use_fast_math makes it (TileLang's tl.enable_fast_math): exp, exp2, log, "
                 "sin, pow, ... and float division by CUDA's fast intrinsics, subnormal results flushed to zero");
    app.add_flag("--lineinfo,--generate-line-info", o.lineInfo,
                 "line tables in PTX and cubins, for profilers and compute-sanitizer (they hold absolute paths)");
    app.add_option("--ccbin", o.ccbin, "the C compiler for -o FILE.o (default: $CC, else cc)");
    app.add_option("--tuned", o.tuned, "build the configurations a `tilec tune` table chose (repeatable)");
    app.add_option("--file-prefix-map", o.filePrefixMaps,
                   "OLD=NEW: paths written into the outputs (#line, comments) start with NEW instead of OLD");
    // Only for --help: -Xptxas is taken out of the arguments before CLI11 sees them.
    std::vector<std::string> helpOnly;
    app.add_option("--Xptxas,--ptxas-options", helpOnly, "options for ptxas, comma-separated (-Xptxas -v,-O3)");
    app.add_option("--dump-after", o.dumpAfter, "print the IR after this pass ('all' for every pass)");
    app.add_flag("--time-passes", o.timePasses, "print the time of each pass");
    app.add_flag("-v,--verbose", o.verbose, "log what the compiler does");
    app.add_option("--num-sms", o.numSms, "the SM count build-time GPU queries answer and the Hopper path's wave estimates assume (default: the target's GPU)");
    app.add_option("--error-limit", o.errorLimit, "stop after N errors (0: no limit; default 20)");
    app.add_flag("--Werror", o.werror, "make warnings errors");
    app.add_flag("-w", o.noWarnings, "suppress warnings");
    app.add_option("--fdiagnostics-format", o.diagnosticsFormat,
                   "diagnostics as text (default), json (gcc's layout) or sarif (SARIF 2.1.0), on standard error")
        ->check(CLI::IsMember({"text", "json", "sarif"}));
    app.add_option("--color", o.color, "colour diagnostics: auto, always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    app.set_version_flag("--version", [] {
        std::string r = tilec::versionReport(TILEC_VERSION_STRING, TILEC_REVISION);
        return r.substr(0, r.size() - 1); // CLI11 ends the line
    }, "print the version, the revision and the NVRTC, CUDA headers and driver found, then exit");
    app.footer("Subcommand:\n  tilec tune FILE.tile --kernel NAME -o TABLE [OPTIONS]\n"
               "                              search tile configurations on the local GPU for --tuned "
               "(tilec tune --help)");
    // The man page and completions, made from the options above (and tune's): they list every one.
    tilec::tune::Options tuneOptions;
    std::vector<std::string> tuneArchs;
    CLI::App tuneApp{kTuneDescription, "tilec tune"};
    addTuneOptions(tuneApp, tuneOptions, tuneArchs);
    tilec::cli::DocOptions docs{TILEC_VERSION_STRING, kLong, {}};
    docs.values["--color"] = {"auto", "always", "never"};
    docs.values["--fdiagnostics-format"] = {"text", "json", "sarif"};
    docs.values["--emit"] = {"cuda", "ptx", "cubin", "header", "ast", "ir", "torch", "xla-ffi"};
    for (auto &t : splitCommas({tilec::Target::knownNames()})) docs.values["--arch"].push_back(t.substr(t.find_first_not_of(' ')));
    app.add_flag_callback("--help-man", [&] {
        std::cout << tilec::cli::manPage(app, tuneApp, docs);
        throw CLI::Success();
    }, "print the man page (roff) and exit: tilec --help-man > tilec.1");
    app.add_option_function<std::string>("--completion", [&](const std::string &shell) {
        std::string script = tilec::cli::completion(shell, app, tuneApp, docs);
        if (script.empty()) throw CLI::ValidationError("--completion", "the shell must be bash or zsh");
        std::cout << script;
        throw CLI::Success();
    }, "print the completion script of SHELL (bash or zsh) and exit");

    std::vector<std::string> ptxas;
    bool ptxasMissing = false;
    try {
        app.parse(normalizeArgs(argc, argv, ptxas, ptxasMissing));
    } catch (const CLI::Success &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        usageError(argc, argv, e.what());
        return tilec::ExitUsage;
    }
    if (ptxasMissing) {
        usageError(argc, argv, "-Xptxas needs a value, e.g. -Xptxas -v");
        return tilec::ExitUsage;
    }
    o.ptxasOptions = splitCommas(ptxas);
    if (!archs.empty()) o.archs = splitCommas(archs);
    o.emit = splitCommas(emit);
    return tilec::runCompiler(o, std::cout, std::cerr);
}
