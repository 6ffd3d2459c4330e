/// \file
/// The `tilec tune` command (include/tilec/Tune.h): what to tune from the file and the options, the
/// configurations built in parallel (TuneCompile.cpp) while the GPU runs the ones already built, in order
/// (TuneMeasure.cpp), a progress line, the table sorted by time, and the JSON table.
#include "tilec/Tune.h"

#include "tune/TuneImpl.h"
#include "eval/ModuleLoader.h"

#include "tilec/DeviceCompiler.h"
#include "tilec/Driver.h"
#include "tilec/Frontend.h"
#include "tilec/OptionValues.h"
#include "tilec/Parser.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#ifndef TILEC_VERSION_STRING
#define TILEC_VERSION_STRING "unknown"
#endif

namespace tilec::tune {

namespace {

struct Usage {
    std::string msg;
};

std::string configLabel(const Config &c) {
    if (c.empty()) return "default";
    std::string s;
    for (auto &[k, v] : c) s += (s.empty() ? "" : " ") + k + "=" + v;
    return s;
}

std::string sizeLabel(const std::map<std::string, int64_t> &size, const std::string &symbol) {
    if (symbol.empty()) return "";
    return symbol + "=" + std::to_string(size.at(symbol));
}

/// The tilec target for the local GPU: its own compute capability, else the newest below it (PTX JIT).
std::string localArch(int cc) {
    if (auto t = Target::forDevice(cc)) return t->name;
    throw Usage{"the local GPU (compute capability " + std::to_string(cc / 10) + "." + std::to_string(cc % 10) +
                ") is older than tilec's lowest target, " + Target::known().front().name};
}

std::string selfExecutable() {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, (size_t)n) : "tilec";
}

/// The tensor and scalar parameters of the kernel, then its T.dynamic sizes (the launch function's order).
std::vector<ParamSpec> paramSpecs(const ir::Kernel &k) {
    std::vector<ParamSpec> out;
    for (auto &p : k.params) {
        ParamSpec s;
        s.name = p.name();
        s.tensor = p.kind == ir::Param::Tensor;
        if (s.tensor) {
            s.dtype = p.buffer->dtype;
            for (auto &d : p.buffer->shape) {
                if (auto v = ir::constInt(d)) s.dims.push_back(std::to_string(*v));
                else if (auto *var = ir::as<ir::VarNode>(d)) s.dims.push_back(var->name);
                else throw Usage{"tensor " + s.name + " of " + k.name + " has a shape expression that tilec tune cannot "
                                 "size (only constants and plain T.dynamic symbols)"};
            }
        } else {
            s.dtype = p.var->dtype;
        }
        out.push_back(std::move(s));
    }
    for (auto &v : k.dynamicSymbols) {
        ParamSpec s;
        s.name = v->name;
        s.tensor = false;
        s.dynamic = true;
        s.dtype = DType::Int64;
        out.push_back(std::move(s));
    }
    return out;
}

class Tuner {
  public:
    Tuner(const Options &o, std::ostream &out, std::ostream &err) : o_(o), out_(out), err_(err), diag_(sm_, err) {}
    int run();

  private:
    void frontEnd();
    void buildAll();
    void measure();
    void report();
    void progress(size_t done, size_t total);

    const Options &o_;
    std::ostream &out_, &err_;
    SourceManager sm_;
    DiagnosticEngine diag_;
    std::string text_;
    Instantiation inst_;
    std::vector<Config> configs_;   ///< [0] is the default
    std::string spaceOrigin_;
    Sizes sizes_;
    std::vector<std::map<std::string, int64_t>> points_;
    std::vector<ParamSpec> params_;
    bool prepared_ = false; ///< the GPU's tensors exist (made once the first library's header is known)
    Table table_;
    BuildSetup setup_;
    std::unique_ptr<Bench> bench_;
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();

    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<std::optional<Built>> built_;
    std::vector<std::thread> workers_;
};

void Tuner::frontEnd() {
    std::ifstream f(o_.input, std::ios::binary);
    if (!f) throw Usage{"cannot open input file '" + o_.input + "'"};
    std::ostringstream ss;
    ss << f.rdbuf();
    text_ = ss.str();
    int file = sm_.add(o_.input, text_);
    auto module = parseModule(file, diag_);
    if (!module) throw ExitInputError;
    auto inst = findInstantiation(*module, sm_, o_.kernel);
    if (!inst)
        throw Usage{o_.input + " has no module-level '" + o_.kernel + " = factory(...)' to re-instantiate with each "
                    "configuration"};
    inst_ = *inst;
    try {
        if (!o_.space.empty()) {
            configs_ = parseSpace(o_.space);
            spaceOrigin_ = o_.space;
        } else if (auto d = decoratorSpace(*module, sm_, inst_.callee)) {
            configs_ = *d;
            spaceOrigin_ = "@autotune(configs=...) of " + inst_.callee;
        } else {
            throw Usage{"no search space: give --space 'block_M=64,128;num_stages=2,3' (the factory " + inst_.callee +
                        " has no @autotune(configs=...) decorator)"};
        }
        if (!o_.sizes.empty()) sizes_ = parseSizes(o_.sizes);
    } catch (const std::invalid_argument &e) {
        throw Usage{e.what()};
    }
    configs_.insert(configs_.begin(), Config{}); // the default instantiation, the reference

    // The kernel's parameters, from the default instantiation evaluated here.
    FrontendOptions fo;
    fo.kernels = {o_.kernel};
    // The user's modules, found as a build finds them (Driver.cpp).
    fo.mainPath = o_.input;
    fo.importDirs = o_.importDirs;
    if (const char *path = std::getenv("TILEC_PATH"))
        for (auto &d : eval::splitSearchPath(path)) fo.importDirs.push_back(d);
    fo.sources = &sm_;
    auto t = o_.archs.empty() ? std::optional<Target>(Target::byDefault()) : Target::parse(o_.archs.front());
    if (!t) throw Usage{"unknown target '" + o_.archs.front() + "' in -arch"};
    fo.target = *t;
    try {
        addDefines(fo, o_.defines, sm_, diag_); // as tilec's -D
    } catch (const std::invalid_argument &e) {
        throw Usage{e.what()};
    }
    if (diag_.hasErrors()) throw ExitInputError;
    auto program = evaluateModule(*module, fo, diag_);
    if (!program || diag_.hasErrors() || program->kernels.empty()) throw ExitInputError;
    const ir::Kernel &k = *program->kernels.front();
    params_ = paramSpecs(k);
    for (auto &symbol : sizes_.symbols) {
        const std::string &name = symbol.first; // clang 14 lets no lambda capture a structured binding
        bool known = std::any_of(k.dynamicSymbols.begin(), k.dynamicSymbols.end(), [&](auto &v) { return v->name == name; });
        if (!known) throw Usage{"--sizes names '" + name + "', which is not a T.dynamic size of " + o_.kernel};
    }
    for (auto &v : k.dynamicSymbols)
        if (std::none_of(sizes_.symbols.begin(), sizes_.symbols.end(), [&](auto &s) { return s.first == v->name; }))
            throw Usage{o_.kernel + " has the T.dynamic size '" + v->name + "': give the sizes to tune at, e.g. --sizes '" +
                        v->name + "=1,16,128,1024,8192'"};
    points_ = sizes_.points();
}

void Tuner::buildAll() {
    built_.assign(configs_.size(), std::nullopt);
    size_t jobs = o_.jobs > 0 ? (size_t)o_.jobs : std::max(1u, std::thread::hardware_concurrency());
    auto next = std::make_shared<std::atomic<size_t>>(0);
    for (size_t w = 0; w < std::min(jobs, configs_.size()); ++w)
        workers_.emplace_back([this, next] {
            for (size_t i; (i = (*next)++) < configs_.size();) {
                Built b = buildConfig(setup_, i, callText(inst_, configs_[i]));
                std::lock_guard<std::mutex> lock(mu_);
                built_[i] = std::move(b);
                cv_.notify_all();
            }
        });
}

void Tuner::progress(size_t done, size_t total) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const Result *best = nullptr;
    for (auto &r : table_.results)
        if (r.status == "ok" && r.size == points_.back() && (!best || r.ms < best->ms)) best = &r;
    char buf[512];
    std::snprintf(buf, sizeof buf, "tune: %zu/%zu configurations, best %s%s%s, %.1f s", done, total,
                  best ? (std::to_string(best->ms).substr(0, 7) + " ms").c_str() : "-", best ? " (" : "",
                  best ? (configLabel(best->config) + ")").c_str() : "", elapsed);
    bool tty = &err_ == &std::cerr && ::isatty(2);
    err_ << (tty ? "\r\033[K" : "") << buf << (tty && done < total ? "" : "\n") << std::flush;
}

void Tuner::measure() {
    for (size_t k = 0; k < configs_.size(); ++k) {
        Built b;
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return built_[k].has_value(); });
            b = *built_[k];
        }
        auto record = [&](size_t point, const std::string &status, const std::string &detail, double ms) {
            table_.results.push_back(Result{configs_[k], points_[point], status, ms, detail});
        };
        if (bench_->dead()) {
            for (size_t p = 0; p < points_.size(); ++p) record(p, "not_run", "an earlier configuration faulted the GPU", 0);
            continue;
        }
        double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
        if (o_.budget > 0 && elapsed > o_.budget) {
            char why[64];
            std::snprintf(why, sizeof why, "--budget %g s was spent", o_.budget);
            for (size_t p = 0; p < points_.size(); ++p) record(p, "not_run", why, 0);
            continue;
        }
        if (b.status != "ok") {
            for (size_t p = 0; p < points_.size(); ++p) record(p, b.status, b.detail, 0);
            progress(k + 1, configs_.size());
            continue;
        }
        void *h = ::dlopen(b.library.c_str(), RTLD_NOW | RTLD_LOCAL);
        auto entry = h ? reinterpret_cast<Bench::Entry>(::dlsym(h, "tilec_tune_entry")) : nullptr;
        if (!entry) {
            const char *e = ::dlerror();
            for (size_t p = 0; p < points_.size(); ++p) record(p, "compile_error", std::string("dlopen: ") + (e ? e : "?"), 0);
            if (h) ::dlclose(h);
            continue;
        }
        if (!prepared_) {
            // The first library built: whether each tensor is written, and the C types of the scalars.
            auto cparams = launchParameters(b.header, o_.kernel);
            if (cparams.size() != params_.size() + 1)
                throw std::runtime_error("internal error: in tune: the launch function has " +
                                         std::to_string(cparams.size()) + " parameters, expected " +
                                         std::to_string(params_.size() + 1));
            for (size_t i = 0; i < params_.size(); ++i) {
                params_[i].cType = cparams[i].type;
                params_[i].written = params_[i].tensor && cparams[i].type.rfind("const", 0) != 0;
            }
            bench_->prepare(params_, points_);
            prepared_ = true;
        }
        auto statusString = reinterpret_cast<Bench::StatusString>(::dlsym(h, "tilec_status_string"));
        auto lastError = reinterpret_cast<Bench::LastError>(::dlsym(h, "tilec_last_cuda_error"));
        for (size_t p = 0; p < points_.size(); ++p) {
            if (bench_->dead()) {
                record(p, "not_run", "an earlier run faulted the GPU", 0);
                continue;
            }
            auto r = bench_->run(entry, statusString, lastError, p, !bench_->hasReference(p));
            record(p, r.status, r.detail, r.ms);
        }
        if (!bench_->dead()) {
            if (auto unload = reinterpret_cast<int (*)()>(::dlsym(h, (o_.kernel + "_unload").c_str()))) unload();
            ::dlclose(h);
        }
        progress(k + 1, configs_.size());
    }
}

void Tuner::report() {
    std::string sym = table_.dispatchSymbol;
    for (size_t p = 0; p < points_.size(); ++p) {
        std::vector<const Result *> ok, failed;
        double defaultMs = 0;
        for (auto &r : table_.results) {
            if (r.size != points_[p]) continue;
            (r.status == "ok" ? ok : failed).push_back(&r);
            if (r.config.empty() && r.status == "ok") defaultMs = r.ms;
        }
        std::stable_sort(ok.begin(), ok.end(), [](auto *a, auto *b) { return a->ms < b->ms; });
        out_ << "\n" << o_.kernel << (sym.empty() ? "" : " at " + sizeLabel(points_[p], sym)) << ": " << ok.size()
             << " configurations ran, " << failed.size() << " did not\n";
        out_ << "  rank         ms  vs default  configuration\n";
        for (size_t i = 0; i < ok.size() && i < 20; ++i) {
            char line[128];
            std::snprintf(line, sizeof line, "  %4zu  %9.5f  %9s  ", i + 1, ok[i]->ms,
                          defaultMs > 0 ? (std::to_string(defaultMs / ok[i]->ms).substr(0, 5) + "x").c_str() : "-");
            out_ << line << configLabel(ok[i]->config) << "\n";
        }
        if (ok.size() > 20) out_ << "  ... " << ok.size() - 20 << " more in the table\n";
        for (size_t i = 0; i < failed.size() && i < 8; ++i)
            out_ << "  " << failed[i]->status << ": " << configLabel(failed[i]->config) << ": " << failed[i]->detail << "\n";
        if (failed.size() > 8) out_ << "  ... " << failed.size() - 8 << " more failures in the table\n";
    }
    if (sym.empty()) return;
    // Dispatch per bucket against the one configuration that is best over all sizes together.
    auto single = singleBest(table_);
    if (!single) return;
    out_ << "\nper-" << sym << " dispatch vs the single best configuration (" << configLabel(*single) << "):\n";
    out_ << "  " << sym << "          best ms   single ms   speed-up  best configuration\n";
    for (auto &pt : points_) {
        const Result *best = nullptr, *one = nullptr;
        for (auto &r : table_.results) {
            if (r.size != pt || r.status != "ok") continue;
            if (!best || r.ms < best->ms) best = &r;
            if (r.config == *single) one = &r;
        }
        if (!best || !one) continue;
        char line[160];
        std::snprintf(line, sizeof line, "  %-10lld  %9.5f  %10.5f  %8.3fx  ", (long long)pt.at(sym), best->ms, one->ms,
                      one->ms / best->ms);
        out_ << line << configLabel(best->config) << "\n";
    }
}

int Tuner::run() {
    if (o_.input.empty()) throw Usage{"tilec tune needs the .tile file"};
    if (o_.kernel.empty()) throw Usage{"tilec tune needs --kernel NAME (the module-level kernel to tune)"};
    if (o_.output.empty()) throw Usage{"tilec tune needs -o NAME.tune.json"};
    if (o_.reps < 1 || o_.warmup < 0) throw Usage{"--reps must be at least 1 and --warmup at least 0"};
    frontEnd();

    // The GPU: without one there is nothing to measure.
    std::string why;
    const CudaDriver *cuda = CudaDriver::get(&why);
    if (!cuda) throw Usage{"tilec tune measures on the local GPU, and there is none: " + why};
    // Fresh inputs every run; 32 bits, so that the table's number holds it exactly.
    uint64_t seed = (uint64_t)std::chrono::system_clock::now().time_since_epoch().count() & 0xFFFFFFFFu;
    try {
        bench_ = std::make_unique<Bench>(*cuda, o_.warmup, o_.reps, seed, o_.tolerance);
    } catch (const std::runtime_error &e) {
        throw Usage{std::string("tilec tune measures on the local GPU, which is not usable: ") + e.what()};
    }

    setup_.tilec = o_.tilec.empty() ? selfExecutable() : o_.tilec;
    setup_.input = o_.input;
    setup_.kernel = o_.kernel;
    setup_.archs = o_.archs.empty() ? std::vector<std::string>{localArch(bench_->computeCapability())} : o_.archs;
    setup_.defines = o_.defines;
    setup_.importDirs = o_.importDirs;
    const char *cc = std::getenv("CC");
    setup_.cc = cc && *cc ? cc : "cc";
    std::string searched;
    setup_.cudaInclude = findCudaIncludeDir(&searched);
    if (setup_.cudaInclude.empty()) throw Usage{"tilec tune needs CUDA's cuda.h (searched: " + searched + "); set CUDA_HOME"};
    const char *tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/tilec-tune-XXXXXX";
    if (!::mkdtemp(dir.data())) throw Usage{"cannot create a temporary directory " + dir};
    setup_.dir = dir;

    table_.file = o_.input;
    table_.fileHash = fileHash(text_);
    table_.kernel = o_.kernel;
    table_.call = callText(inst_, {});
    table_.archs = setup_.archs;
    table_.env = bench_->environment();
    table_.env.tilecVersion = TILEC_VERSION_STRING;
    table_.space = spaceOrigin_;
    table_.dispatchSymbol = sizes_.dispatchSymbol();
    table_.seed = seed;
    table_.warmup = o_.warmup;
    table_.reps = o_.reps;
    err_ << "tune: " << o_.kernel << " of " << o_.input << ": " << configs_.size() << " configurations (the default and "
         << configs_.size() - 1 << " of the space) x " << points_.size() << " size" << (points_.size() > 1 ? "s" : "")
         << " on " << table_.env.gpuName << ", " << setup_.archs.front() << "\n";

    buildAll();
    try {
        measure();
    } catch (...) {
        for (auto &w : workers_) w.join();
        throw;
    }
    for (auto &w : workers_) w.join();
    table_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();

    std::ofstream f(o_.output, std::ios::binary);
    f << writeTable(table_);
    if (!f) throw Usage{"cannot write '" + o_.output + "'"};
    report();
    if (!o_.verbose) {
        // The working files (C, cubins, libraries, logs) go; -v keeps them for a look.
        std::error_code ec;
        std::filesystem::remove_all(setup_.dir, ec);
        if (ec) err_ << "tune: could not remove " << setup_.dir << ": " << ec.message() << "\n";
    } else {
        err_ << "tune: working files in " << setup_.dir << "\n";
    }
    bool any = std::any_of(table_.results.begin(), table_.results.end(), [](auto &r) { return r.status == "ok"; });
    out_ << "\nwrote " << o_.output << " (" << table_.seconds << " s)\n";
    return any ? ExitOk : ExitInputError;
}

} // namespace

int run(const Options &o, std::ostream &out, std::ostream &err) {
    Tuner t(o, out, err);
    try {
        return t.run();
    } catch (const Usage &u) {
        err << "tilec tune: error: " << u.msg << "\n";
        return ExitUsage;
    } catch (ExitCode c) {
        return c;
    } catch (const TooManyErrors &) {
        return ExitInputError;
    } catch (const std::exception &e) {
        err << "internal error: in tune: " << e.what() << "\n";
        return ExitInternal;
    }
}

} // namespace tilec::tune
