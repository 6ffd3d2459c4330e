/// \file
/// One analysis of a document for the language server (LspImpl.h): the compiler's own phases — parse,
/// evaluate, check, and the lowering pipeline for every target — with the diagnostic engine's output taken
/// as data instead of text, and what lowering decided of each buffer kept for hover. Code generation and
/// NVRTC do not run: nothing the editor shows needs them.
#include "lsp/LspImpl.h"

#include "eval/ModuleLoader.h"

#include "tilec/Check.h"
#include "tilec/Frontend.h"
#include "tilec/IRPrinter.h"
#include "tilec/Lower.h"
#include "tilec/Parser.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/Layout.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

namespace tilec::lsp {

namespace {

/// Two source locations are the same place (a buffer keeps its alloc's location through lowering).
bool samePlace(const SourceRange &a, const SourceRange &b) {
    return a.file == b.file && a.line == b.line && a.col == b.col;
}

/// What lowering decided: the fragment layouts of each kernel's first lowering (the variant the launcher
/// tries first), by kernel name, as (buffer name, location, description).
struct LoweringFacts {
    struct Layout {
        std::string buffer;
        SourceRange loc;
        std::string description;
    };
    std::map<std::string, std::vector<Layout>> layouts;

    void observe(const char *pass, const ir::Program &p) {
        if (std::strcmp(pass, "inferLayouts") != 0) return;
        for (auto &kp : p.kernels) {
            if (!kp || !kp->layouts) continue;
            const ir::Kernel &k = *kp;
            if (layouts.count(k.name)) continue;
            auto &out = layouts[k.name];
            for (auto &b : k.allocs)
                if (auto it = k.layouts->fragments.find(b.get()); it != k.layouts->fragments.end())
                    out.push_back({b->name, b->loc, it->second.describe()});
        }
    }
    const std::string *layoutOf(const std::string &kernel, const ir::BufferNode &b) const {
        auto it = layouts.find(kernel);
        if (it == layouts.end()) return nullptr;
        for (auto &l : it->second)
            if (l.buffer == b.name && samePlace(l.loc, b.loc)) return &l.description;
        return nullptr;
    }
};

std::string shapeText(const ir::BufferNode &b) {
    std::string s = std::string(b.dtype.name()) + "[";
    for (size_t i = 0; i < b.shape.size(); ++i) s += (i ? ", " : "") + ir::print(b.shape[i]);
    return s + "]";
}

/// The lowered kernel's buffer for the front end's `b` (same name and place), or null.
const ir::BufferNode *loweredBuffer(const ir::Kernel *lowered, const ir::BufferNode &b) {
    if (!lowered) return nullptr;
    for (auto &x : lowered->allocs)
        if (x->name == b.name && samePlace(x->loc, b.loc)) return x.get();
    return nullptr;
}

std::string targetNames(const ir::Kernel &k) {
    std::string s;
    for (auto &t : k.targets) s += (s.empty() ? "" : ", ") + t.name;
    return s;
}

/// The hover's Markdown for buffer `b` of kernel `k`; `lowered` is k's first lowering (null when lowering did
/// not run or failed).
std::string describe(const ir::Kernel &k, const ir::BufferNode &b, const ir::Kernel *lowered, const LoweringFacts &facts) {
    std::string s = "**" + b.name + "**: `" + shapeText(b) + "`, " + toString(b.scope) + " (kernel `" + k.name + "`)";
    if (b.scope == ir::Scope::Shared) {
        if (const ir::BufferNode *lb = loweredBuffer(lowered, b)) {
            int64_t bytes = smem::sharedBytes(lb), one = smem::sharedBytes(&b);
            s += "\n- shared memory: " + std::to_string(bytes) + " bytes";
            if (one > 0 && bytes > one && bytes % one == 0)
                s += " (" + std::to_string(bytes / one) + " pipeline stages of " + std::to_string(one) + ")";
            if (auto at = lowered->shared.offsetOf(lb)) s += " at offset " + std::to_string(*at);
            s += " of the block's " + std::to_string(lowered->shared.bytes) + " on " + targetNames(*lowered);
        } else if (!lowered) {
            s += "\n- shared memory: " + std::to_string(b.constElements() * b.dtype.bytes()) +
                 " bytes (not planned: the kernel did not lower)";
        }
    }
    if (b.scope == ir::Scope::Fragment) {
        if (const std::string *layout = lowered ? facts.layoutOf(k.name, b) : nullptr) s += "\n- layout: " + *layout;
        else if (!lowered) s += "\n- layout: not decided (the kernel did not lower)";
    }
    return s;
}

std::vector<BufferFacts> bufferFacts(const ir::Program &program, const ir::Program *lowered, const LoweringFacts &facts) {
    std::vector<BufferFacts> out;
    for (auto &k : program.kernels) {
        const ir::Kernel *lk = nullptr;
        if (lowered)
            for (auto &x : lowered->kernels)
                if (x->name == k->name) {
                    lk = x.get();
                    break;
                }
        auto add = [&](const ir::Buffer &b) { out.push_back({k->name, b->name, b->loc, describe(*k, *b, lk, facts)}); };
        for (auto &p : k->params)
            if (p.kind == ir::Param::Tensor && p.buffer) add(p.buffer);
        for (auto &b : k->allocs) add(b);
    }
    return out;
}

/// Collects the engine's diagnostics: a note joins the error or warning before it.
struct Collector {
    std::vector<Diagnostic> &out;
    void operator()(Severity s, const SourceRange &r, const std::string &msg) {
        if (s == Severity::Note && !out.empty()) out.back().notes.push_back({r, msg});
        else out.push_back({s, r, msg, {}});
    }
};

std::vector<Target> targetsOf(const Settings &s) {
    std::vector<Target> ts;
    for (auto &a : s.archs)
        if (auto t = Target::parse(a)) ts.push_back(*t);
    if (ts.empty()) ts.push_back(Target::byDefault());
    return ts;
}

/// The front end and the lowering, reporting through `diag`; fills `a` as far as it gets.
void run(Analysis &a, int file, const std::string &path, const Settings &s, DiagnosticEngine &diag) {
    setCurrentPhase("parse");
    auto module = parseModule(file, diag);
    if (!module) return;
    a.module = std::make_shared<const ast::Module>(std::move(*module));

    std::vector<Target> targets = targetsOf(s);
    FrontendOptions fo;
    fo.target = *std::min_element(targets.begin(), targets.end(), [](auto &x, auto &y) { return x.sm < y.sm; });
    fo.mainPath = path;
    fo.importDirs = s.importDirs;
    if (const char *env = std::getenv("TILEC_PATH"))
        for (auto &d : eval::splitSearchPath(env)) fo.importDirs.push_back(d);
    fo.sources = a.sources.get();
    setCurrentPhase("evaluate");
    auto program = evaluateModule(*a.module, fo, diag);
    if (!program || diag.hasErrors()) return;

    // As the driver: the checks against the target with the least shared memory, then every target's lowering.
    const Target &strictest = *std::min_element(targets.begin(), targets.end(), [](auto &x, auto &y) {
        return x.maxSharedPerBlock < y.maxSharedPerBlock;
    });
    setCurrentPhase("check");
    bool ok = true;
    for (auto &k : program->kernels) ok = checkKernel(*k, strictest, diag) && ok;
    a.evaluated = true;
    LoweringFacts facts;
    if (!ok || diag.hasErrors()) {
        a.buffers = bufferFacts(*program, nullptr, facts);
        return;
    }
    PassContext ctx;
    ctx.diag = &diag;
    ctx.observe = [&](const char *pass, const ir::Program &p) { facts.observe(pass, p); };
    ir::Program lowered = lowerVariants(*program, targets, LoweringOptions{}, ctx);
    a.buffers = bufferFacts(*program, diag.hasErrors() ? nullptr : &lowered, facts);
}

} // namespace

Analysis analyze(const std::string &path, const std::string &text, const Settings &s) {
    Analysis a;
    a.sources = std::make_shared<SourceManager>();
    int file = a.sources->add(path.empty() ? "<document>" : path, text);
    std::ostringstream unused;
    DiagnosticEngine diag(*a.sources, unused);
    diag.setErrorLimit(100);
    diag.setConsumer(Collector{a.diagnostics});
    auto internal = [&](const std::string &msg) { a.diagnostics.push_back({Severity::Error, {}, msg, {}}); };
    try {
        run(a, file, path, s, diag);
    } catch (const TooManyErrors &) {
        // the first 100 are shown
    } catch (const InternalError &e) {
        internal(e.what());
    } catch (const std::bad_alloc &) {
        internal(std::string("internal error: in ") + currentPhase() + ": out of memory");
    } catch (const std::exception &e) {
        internal(std::string("internal error: in ") + currentPhase() + ": unexpected exception: " + e.what());
    }
    return a;
}

} // namespace tilec::lsp
