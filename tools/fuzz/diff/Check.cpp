/// \file
/// One program through the compiler, the reference and the simulator (Check.h).
#include "Check.h"

#include "LoopHeaders.h"

#include "EvalTestUtil.h"
#include "sim/Simulator.h"
#include "Reference.h"

#include "tilec/Check.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/Codegen.h"
#include "tilec/Lower.h"

#include <cmath>
#include <memory>
#include <random>
#include <sstream>

namespace tilec::difffuzz {

namespace {

std::vector<double> inputData(size_t n, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::vector<double> v(n);
    for (auto &x : v) x = (double)((int64_t)(g() % 17) - 8) / 4;
    return v;
}

/// Where the reference's outputs differ from the front-end oracle's model at all; empty when they agree.
std::string compareExact(const std::map<std::string, std::vector<double>> &ref, const Expected &expected) {
    for (auto &[name, want] : expected) {
        auto it = ref.find(name);
        if (it == ref.end()) return "no output " + name;
        if (it->second.size() != want.size())
            return name + " has " + std::to_string(it->second.size()) + " elements, the model " + std::to_string(want.size());
        for (size_t i = 0; i < want.size(); ++i)
            if (!std::isnan(want[i]) && it->second[i] != want[i])
                return name + "[" + std::to_string(i) + "] = " + std::to_string(it->second[i]) +
                       " in the front end's program, " + std::to_string(want[i]) + " by the generator's own model";
    }
    return "";
}

/// Where outputs differ beyond float32 rounding of the intermediate values; empty when they agree.
std::string compare(const std::string &name, const std::vector<double> &got, const std::vector<double> &want) {
    double scale = 1;
    for (double w : want)
        if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
    for (size_t i = 0; i < got.size(); ++i) {
        double g = got[i], w = want[i];
        if (std::isnan(g) && std::isnan(w)) continue;
        if (g == w) continue;
        double tol = 1e-5 * std::max(std::fabs(w), 1e-2 * scale) + 1e-6;
        if (!(std::fabs(g - w) <= tol))
            return name + "[" + std::to_string(i) + "] = " + std::to_string(g) + ", reference " + std::to_string(w);
    }
    return "";
}

/// Elements of a tensor whose shape holds constants and T.dynamic symbols; -1 otherwise.
int64_t elementsOf(const ir::BufferNode &b, const std::map<std::string, double> &dyn) {
    int64_t n = 1;
    for (auto &e : b.shape) {
        if (auto c = ir::constInt(e)) n *= *c;
        else if (auto v = ir::as<ir::VarNode>(e); v && dyn.count(v->name)) n *= (int64_t)dyn.at(v->name);
        else return -1;
    }
    return n;
}

std::map<std::string, std::vector<double> *> pointers(std::map<std::string, std::vector<double>> &m) {
    std::map<std::string, std::vector<double> *> r;
    for (auto &[n, v] : m) r[n] = &v;
    return r;
}

/// One lowered kernel on the simulator (its interleaving from `seed`), its outputs compared with the
/// reference's; `path` tells which lowering a failure is of.
Outcome simulate(const ir::Kernel &k, std::map<std::string, std::vector<double>> &sim,
                 const std::map<std::string, std::vector<double>> &ref, const std::vector<std::string> &outputs,
                 const std::map<std::string, double> &dyn, uint64_t seed, const std::string &path) {
    simtest::Simulator s(k, pointers(sim), dyn, seed);
    try {
        s.run();
    } catch (const std::exception &e) { // SimError, or an access outside what the simulator holds
        return outcome(Outcome::Failure, "simulator" + path, e.what());
    }
    if (!s.races.empty()) return outcome(Outcome::Failure, "race" + path, s.races[0]);
    for (auto &n : outputs)
        if (auto d = compare(n, sim[n], ref.at(n)); !d.empty()) return outcome(Outcome::Failure, "mismatch" + path, d);
    return outcome(Outcome::Ok, "");
}

} // namespace

/// Whether the launcher would run a variant with these assumptions for these T.dynamic sizes (tensors are
/// allocated aligned here): each assumed row length, a symbol or a constant, times the element size is a
/// multiple of the assumed bytes.
bool assumptionsHold(const ir::Kernel &k, const std::map<std::string, double> &dyn) {
    for (auto &a : k.assumptions) {
        std::optional<int64_t> n = ir::constInt(a.extent);
        if (auto v = ir::as<ir::VarNode>(a.extent); v && dyn.count(v->name)) n = (int64_t)dyn.at(v->name);
        if (!n || (*n * a.tensor->dtype.bytes()) % a.bytes) return false;
    }
    return true;
}

std::vector<double> inputTensor(const std::string &name, size_t n, uint64_t dataSeed) {
    uint64_t h = dataSeed;
    for (char c : name) h = h * 131 + (unsigned char)c;
    return inputData(n, h);
}

Expected expectedOf(const std::string &text) {
    Expected e;
    for (size_t at = text.find("# expect "); at != std::string::npos; at = text.find("# expect ", at + 1)) {
        auto colon = text.find(':', at), end = text.find('\n', at);
        std::string name = text.substr(at + 9, colon - at - 9);
        if ((at > 0 && text[at - 1] != '\n') || colon > end || name.empty() || name.find(' ') != std::string::npos || !std::isupper((unsigned char)name[0])) continue;
        std::istringstream line(text.substr(colon + 1, end - colon - 1));
        std::string v;
        while (line >> v) e[name].push_back(v == "nan" ? std::nan("") : std::stod(v));
    }
    return e;
}

std::string expectLine(const std::string &tensor, const std::vector<double> &values) {
    std::ostringstream s;
    s.precision(17);
    s << "# expect " << tensor << ":";
    for (double v : values) std::isnan(v) ? s << " nan" : s << " " << v;
    return s.str() + "\n";
}

std::map<std::string, double> dynamicValues(const std::string &text) {
    std::map<std::string, double> v;
    auto at = text.find("# dynamic:");
    if (at == std::string::npos) return v;
    std::istringstream line(text.substr(at + 10, text.find('\n', at) - at - 10));
    std::string item;
    while (line >> item)
        if (auto eq = item.find('='); eq != std::string::npos) v[item.substr(0, eq)] = std::stod(item.substr(eq + 1));
    return v;
}

std::string reasonOf(const std::string &diags) {
    auto at = diags.find("error: ");
    if (at == std::string::npos) at = 0;
    else at += 7;
    std::string first = diags.substr(at, diags.find('\n', at) - at);
    std::string r;
    for (char c : first) r += std::isdigit((unsigned char)c) ? '#' : c;
    return r.substr(0, 120);
}

namespace {

/// Whether `k` issues wgmma products (sm_90a's T.gemm or T.wgmma_gemm without warp roles: their groups stay in
/// flight until a wait, the program's or tilec's, which the simulator checks).
bool issuesWgmma(const ir::Kernel &k) {
    struct V : ir::IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const ir::Call &c) override {
            namespace lib = passes::lib;
            found |= lib::is(c, lib::Fn::WgmmaSS) || lib::is(c, lib::Fn::WgmmaRS) || lib::is(c, lib::Fn::WgmmaSpSS);
            IRVisitor::visit(c);
        }
    } v;
    v.visit(k.body);
    return v.found;
}

/// The compiler's part of a check: the front end, checkKernel, the sm_80, wide-row and sm_90a lowerings and
/// their CUDA. `early` is the outcome when the compiler failed; `lowered` is empty when it rejected the program.
struct Compiled {
    evaltest::EvalRun front;
    std::optional<ir::Program> lowered, hopperLowered;
    std::map<std::string, std::string> cuda;
    std::optional<Outcome> early;
    /// What the compiler printed and wrote: a second compilation must reproduce it byte for byte.
    std::string fingerprint() const {
        std::string f = front.diags();
        for (auto &[t, c] : cuda) f += "\n//// " + t + "\n" + c;
        return f;
    }
};

void compile(Compiled &c, const std::string &text, const std::map<std::string, std::string> &defines) {
    // Both lowerings are simulated: sm_80's (cp.async, mma.sync) and, where the program gets warp roles there,
    // sm_90a's (TMA producer, wgmma consumers, mbarriers) under an interleaving drawn from the data seed.
    // Clusters are not simulated (one block at a time): the sm_90a lowering here is the unclustered one.
    const Target target = *Target::parse("sm_80");
    Variant hopper{*Target::parse("sm_90a"), {}};
    hopper.options.clusters = false;
    evaltest::EvalRun &front = c.front;
    try {
        for (auto &[n, v] : defines) front.define(n, v);
        front.run(text, "fuzz.tile");
        if (!front.program || front.diag.hasErrors()) {
            // Every name a generated program reads is defined in it: an undefined one is a generator bug (seed
            // 70000222 read P without declaring it, 0.4 % of a campaign rejected unchecked) or a front-end one.
            const std::string d = front.diags();
            const bool undefined = d.find("undefined name") != std::string::npos;
            return void(c.early = outcome(undefined ? Outcome::Failure : Outcome::Rejected, "front end: " + reasonOf(d), d));
        }
        if (front.program->kernels.size() != 1) return void(c.early = outcome(Outcome::Skipped, "not one kernel"));
        if (!checkKernel(*front.program->kernels[0], target, front.diag)) return;
        PassContext ctx;
        ctx.diag = &front.diag;
        ir::Program p = lower(*front.program, Variant{target, {}}, ctx);
        if (front.diag.hasErrors()) return;
        CodegenOptions o;
        o.sourceName = "fuzz.tile";
        o.cudaName = "fuzz.cu";
        o.headerName = "fuzz.h";
        o.targets = {target};
        c.cuda["sm_80"] = generateCode(p, o, front.diag).cuda;
        // The variant assuming wide rows where a tensor's row length is a run-time value: simulated
        // instead when the launcher would run it (its assumptions hold for this program's sizes).
        Variant wideTarget{target, {}};
        wideTarget.options.assumeAlignedRows = true;
        PassContext wctx;
        wctx.diag = &front.diag;
        ir::Program w = lower(*front.program, wideTarget, wctx);
        if (!front.diag.hasErrors() && !w.kernels[0]->assumptions.empty()) {
            (void)generateCode(w, o, front.diag);
            if (assumptionsHold(*w.kernels[0], dynamicValues(text))) p = std::move(w);
        }
        PassContext hctx;
        hctx.diag = &front.diag;
        ir::Program h = lower(*front.program, hopper, hctx);
        if (!front.diag.hasErrors()) {
            o.targets = {hopper.target};
            c.cuda["sm_90a"] = generateCode(h, o, front.diag).cuda;
            c.hopperLowered = std::move(h);
        }
        if (!front.diag.hasErrors()) c.lowered = std::move(p);
    } catch (const InternalError &e) {
        c.early = outcome(Outcome::Failure, "internal error", e.what());
    } catch (const TooManyErrors &) {
    } catch (const std::exception &e) {
        c.early = outcome(Outcome::Failure, "exception", e.what());
    }
}

/// Holes in the heap before a second compilation: blocks of random sizes allocated and a random half freed, so
/// that the compiler's nodes land at addresses in another order and whatever it orders by address (a map keyed
/// by pointer) iterates otherwise. The other half stays allocated while the object lives.
class HeapHoles {
    std::vector<std::unique_ptr<char[]>> kept_;

  public:
    explicit HeapHoles(uint64_t seed) {
        std::mt19937_64 g(seed);
        std::vector<std::unique_ptr<char[]>> all;
        for (int i = 0; i < 3000; ++i) all.emplace_back(new char[16 + g() % 600]);
        for (auto &b : all)
            if (g() & 1) kept_.push_back(std::move(b));
    }
};

/// The first line where two fingerprints differ, both ways.
std::string firstDifference(const std::string &a, const std::string &b) {
    std::istringstream x(a), y(b);
    std::string l, r;
    for (int line = 1;; ++line) {
        const bool more = (bool)std::getline(x, l), more2 = (bool)std::getline(y, r);
        if (!more && !more2) return "";
        if (!more || !more2 || l != r)
            return "line " + std::to_string(line) + ": '" + l.substr(0, 200) + "' then '" + r.substr(0, 200) + "'";
    }
}

uint64_t twiceEvery = 8, checks = 0;

} // namespace

void setCompileTwiceEvery(uint64_t k) { twiceEvery = k; }

Outcome checkProgram(const std::string &text, const std::map<std::string, std::string> &defines, uint64_t dataSeed,
                     const Expected &expected) {
    Outcome out;
    auto compiled = std::make_unique<Compiled>();
    compile(*compiled, text, defines);
    // Output is deterministic: the same program compiled again over a reshaped heap gives the same text.
    if (twiceEvery && checks++ % twiceEvery == 0) {
        HeapHoles holes(checks * 0x9E3779B97F4A7C15ull + dataSeed);
        auto again = std::make_unique<Compiled>();
        compile(*again, text, defines);
        if (std::string d = firstDifference(compiled->fingerprint(), again->fingerprint()); !d.empty())
            return outcome(Outcome::Failure, "nondeterministic", "a second compilation differs at " + d);
    }
    if (compiled->early) return *compiled->early;
    evaltest::EvalRun &front = compiled->front;
    std::optional<ir::Program> &lowered = compiled->lowered, &hopperLowered = compiled->hopperLowered;
    out.cuda = std::move(compiled->cuda); // the fingerprint above was its last other reader
    // Loop headers re-parsed with C's precedence (LoopHeaders.h): splices the simulator cannot see.
    for (auto &[target, cuda] : out.cuda)
        if (std::string e = checkLoopHeaders(cuda); !e.empty()) return outcome(Outcome::Failure, "loop header", target + ": " + e);
    const ir::Kernel &typed = *front.program->kernels[0];
    const std::map<std::string, double> dyn = dynamicValues(text);
    // 16-bit rounding in the reference and the simulator where the program asks for it (Gen.h: narrowRounding).
    simtest::NarrowRounding narrow(text.find("\n# narrow rounding\n") != std::string::npos);
    for (auto &d : typed.dynamicSymbols)
        if (!dyn.count(d->name)) return outcome(Outcome::Skipped, "no value for T.dynamic '" + d->name + "'");

    // The tensors: inputs random, outputs poisoned with NaN (Z, the target of atomics, zero).
    std::map<std::string, std::vector<double>> ref, sim;
    std::vector<std::string> outputs;
    for (auto &p : typed.params) {
        if (p.kind != ir::Param::Tensor) return outcome(Outcome::Skipped, "scalar parameter");
        int64_t n = elementsOf(*p.buffer, dyn);
        if (n < 0) return outcome(Outcome::Skipped, "a shape the fuzzer cannot size");
        const std::string &name = p.buffer->name;
        bool input = name == "A" || name == "B" || name == "GA" || name == "GB" || name == "NB" || name == "P" || name == "X";
        ref[name] = input ? inputTensor(name, (size_t)n, dataSeed) : std::vector<double>((size_t)n, name == "Z" ? 0.0 : std::nan(""));
        if (!input) outputs.push_back(name);
    }
    sim = ref;
    const std::map<std::string, std::vector<double>> initial = ref;
    bool divergent = false;
    std::string divergentWhat;
    try {
        Reference(typed, pointers(ref), dyn).run();
    } catch (const Undefined &e) {
        divergent = true;
        divergentWhat = e.what();
    } catch (const RefError &e) {
        if (!lowered) return outcome(Outcome::Rejected, reasonOf(front.diags()), front.diags());
        // A variable used outside its binding: the front end's program is ill-scoped (a loop variable read
        // before its loop), whatever the reference models.
        if (std::string(e.what()).rfind("unbound variable", 0) == 0) return outcome(Outcome::Failure, "front end", e.what());
        return outcome(Outcome::Skipped, std::string("reference: ") + e.what());
    }
    if (!lowered) {
        if (divergent) return outcome(Outcome::RejectedAsExpected, reasonOf(front.diags()), front.diags());
        return outcome(Outcome::Rejected, reasonOf(front.diags()), front.diags());
    }
    if (divergent) return outcome(Outcome::Failure, "accepted", "tilec accepted " + divergentWhat);
    if (auto d = compareExact(ref, expected); !d.empty()) return outcome(Outcome::Failure, "front end", d);

    if (auto f = simulate(*lowered->kernels[0], sim, ref, outputs, dyn, 0, ""); f.kind == Outcome::Failure) return f;
    bool roles = false, wgmmaOnly = false;
    if (hopperLowered)
        for (auto &k : hopperLowered->kernels) {
            // warp roles, or wgmma in flight across the block's statements (T.wgmma_gemm and T.wait_wgmma)
            const bool wgmma = !k->producerThreads && issuesWgmma(*k);
            if (!k->producerThreads && !wgmma) continue;
            roles |= !wgmma, wgmmaOnly |= wgmma;
            sim = initial;
            if (auto f = simulate(*k, sim, ref, outputs, dyn, dataSeed, wgmma ? " (sm_90a wgmma)" : " (sm_90a warp roles)");
                f.kind == Outcome::Failure)
                return f;
        }
    out.warpRoles = roles, out.wgmma = wgmmaOnly;
    return out;
}

} // namespace tilec::difffuzz
