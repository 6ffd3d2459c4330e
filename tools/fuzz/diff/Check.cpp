/// \file
/// One program through the compiler, the reference and the simulator (Check.h).
#include "Check.h"

#include "HostChecks.h"
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
#include <optional>
#include <random>
#include <set>
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

/// The shape of a tensor whose dimensions are constants and T.dynamic symbols; nullopt otherwise.
std::optional<std::vector<int64_t>> dimsOf(const ir::BufferNode &b, const std::map<std::string, double> &dyn) {
    std::vector<int64_t> d;
    for (auto &e : b.shape) {
        if (auto c = ir::constInt(e)) d.push_back(*c);
        else if (auto v = ir::as<ir::VarNode>(e); v && dyn.count(v->name)) d.push_back((int64_t)dyn.at(v->name));
        else return std::nullopt;
    }
    return d;
}

/// A T.StridedTensor as the simulator holds it: its storage, the storage offset of each element (row-major),
/// and the storage's initial values (an output's storage outside its elements a sentinel nothing may change).
struct View {
    std::vector<int64_t> offsets;
    std::vector<double> initial;
};
using Views = std::map<std::string, View>;
constexpr double outsideElements = -7777.25;

/// Where the simulator changed an output's storage outside its elements, or "".
std::string outsideView(const std::string &name, const std::vector<double> &storage, const View &v) {
    std::vector<bool> element(storage.size());
    for (int64_t o : v.offsets) element[(size_t)o] = true;
    for (size_t i = 0; i < storage.size(); ++i)
        if (!element[i] && !(storage[i] == v.initial[i]))
            return name + "'s storage element " + std::to_string(i) + ", outside its elements (T.StridedTensor), = " +
                   std::to_string(storage[i]);
    return "";
}

std::map<std::string, std::vector<double> *> pointers(std::map<std::string, std::vector<double>> &m) {
    std::map<std::string, std::vector<double> *> r;
    for (auto &[n, v] : m) r[n] = &v;
    return r;
}

/// The `# pointer table: NAME ...` line of a program: the tensors whose addresses the pointer table TP holds, entry
/// 2e and 2e + 1 the address of the e-th (Gen.h: Strides::table), which tableAddress gives.
std::vector<std::string> pointerTable(const std::string &text) {
    std::vector<std::string> out;
    const size_t at = text.find("\n# pointer table:");
    if (at == std::string::npos) return out;
    std::istringstream line(text.substr(at + 17, text.find('\n', at + 1) - at - 17));
    for (std::string n; line >> n;) out.push_back(n);
    return out;
}
int64_t tableAddress(size_t entry) { return (int64_t)(entry + 1) << 20; }

/// One lowered kernel on the simulator, with its races.
Outcome simulateOne(const ir::Kernel &k, std::map<std::string, std::vector<double>> &sim, const std::map<std::string, double> &dyn,
                    uint64_t seed, const std::string &path, const std::vector<std::string> &table) {
    simtest::Simulator s(k, pointers(sim), dyn, seed);
    for (size_t e = 0; e < table.size(); ++e) s.addresses[tableAddress(e)] = &sim.at(table[e]);
    try {
        s.run();
    } catch (const std::exception &e) { // SimError, or an access outside what the simulator holds
        return outcome(Outcome::Failure, "simulator" + path, e.what());
    }
    if (!s.races.empty()) return outcome(Outcome::Failure, "race" + path, s.races[0]);
    return outcome(Outcome::Ok, "");
}


/// The lowered kernels of one export (its launches, in order) on the simulator (its interleaving from `seed`),
/// its outputs then compared with the reference's; `path` tells which lowering a failure is of. T.make_tensor
/// tensors of the pointer table `table` are found at their addresses.
Outcome simulate(const std::vector<const ir::Kernel *> &ks, std::map<std::string, std::vector<double>> &sim,
                 const std::map<std::string, std::vector<double>> &ref, const std::vector<std::string> &outputs,
                 const Views &views, const std::map<std::string, double> &dyn, uint64_t seed, const std::string &path,
                 const std::vector<std::string> &table) {
    for (const ir::Kernel *k : ks)
        if (auto f = simulateOne(*k, sim, dyn, seed, path, table); f.kind == Outcome::Failure) return f;
    for (auto &n : outputs) {
        std::vector<double> elements = sim[n];
        if (auto v = views.find(n); v != views.end()) { // a T.StridedTensor: its elements, and nothing else changed
            if (auto d = outsideView(n, sim[n], v->second); !d.empty()) return outcome(Outcome::Failure, "mismatch" + path, d);
            elements.clear();
            for (int64_t o : v->second.offsets) elements.push_back(sim[n][(size_t)o]);
        }
        if (auto d = compare(n, elements, ref.at(n)); !d.empty()) return outcome(Outcome::Failure, "mismatch" + path, d);
    }
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
    if (name == "U") { // the bytes of a packed int4 / uint4 tensor (GenSubByte.cpp): every nibble, int8 as torch passes
        std::mt19937_64 g(h);
        std::vector<double> v(n);
        for (auto &x : v) x = (double)(int8_t)(uint8_t)(g() & 255);
        return v;
    }
    return inputData(n, h);
}

int64_t stridedSpan(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides) {
    int64_t last = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 0) return 0;
        last += (shape[d] - 1) * strides[d];
    }
    return last + 1;
}

std::vector<int64_t> stridedOffsets(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides) {
    std::vector<int64_t> out{0};
    for (size_t d = 0; d < shape.size(); ++d) {
        std::vector<int64_t> next;
        next.reserve(out.size() * (size_t)shape[d]);
        for (int64_t o : out)
            for (int64_t i = 0; i < shape[d]; ++i) next.push_back(o + i * strides[d]);
        out = std::move(next);
    }
    return out;
}

std::vector<double> inputElements(const std::string &name, const std::vector<int64_t> &shape,
                                  const std::vector<int64_t> &strides, uint64_t dataSeed) {
    if (strides.empty()) {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return inputTensor(name, (size_t)n, dataSeed);
    }
    const std::vector<double> storage = inputTensor(name, (size_t)stridedSpan(shape, strides), dataSeed);
    std::vector<double> v;
    for (int64_t o : stridedOffsets(shape, strides)) v.push_back(storage[(size_t)o]);
    return v;
}

std::map<std::string, std::vector<int64_t>> stridesOf(const std::string &text) {
    std::map<std::string, std::vector<int64_t>> out;
    for (size_t at = text.find("# strides "); at != std::string::npos; at = text.find("# strides ", at + 1)) {
        if (at > 0 && text[at - 1] != '\n') continue;
        auto colon = text.find(':', at), end = text.find('\n', at);
        if (colon > end) continue;
        std::istringstream line(text.substr(colon + 1, end - colon - 1));
        auto &v = out[text.substr(at + 10, colon - at - 10)];
        for (int64_t x; line >> x;) v.push_back(x);
    }
    return out;
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
        // one export: one kernel, or its launches (T.alloc_global workspaces between them)
        if (front.program->kernels.size() != (size_t)front.program->kernels[0]->parts)
            return void(c.early = outcome(Outcome::Skipped, "not one export"));
        for (auto &k : front.program->kernels)
            if (!checkKernel(*k, target, front.diag)) return;
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

    // The tensors: inputs random, outputs poisoned with NaN (Z, the target of atomics, zero). `ref` holds each
    // tensor's elements in row-major order, `sim` its storage: a T.StridedTensor's (a `# strides` line) spans
    // its strides, its elements read and written through them (Views).
    std::map<std::string, std::vector<double>> ref, sim;
    std::vector<std::string> outputs;
    std::set<std::string> inputs;
    Views views;
    const auto strides = stridesOf(text);
    const std::vector<std::string> table = pointerTable(text);
    // The tensor parameters (workspaces too), then the T.make_tensor tensors of the pointer table.
    std::vector<const ir::BufferNode *> tensors;
    for (auto &p : typed.params) {
        if (p.kind == ir::Param::Tensor) tensors.push_back(p.buffer.get());
        else if (!dyn.count(p.var->name)) // a scalar parameter: its value in the `# dynamic:` line
            return outcome(Outcome::Skipped, "no value for scalar parameter '" + p.var->name + "'");
    }
    for (auto &k : front.program->kernels)
        for (auto &a : k->addressedTensors)
            if (std::find(table.begin(), table.end(), a.tensor->name) != table.end()) tensors.push_back(a.tensor.get());
    for (const ir::BufferNode *b : tensors) {
        const std::string &name = b->name;
        if (ref.count(name)) continue; // a launch's own T.make_tensor of a tensor another launch made
        auto dims = dimsOf(*b, dyn);
        if (!dims) return outcome(Outcome::Skipped, "a shape the fuzzer cannot size");
        bool input = name == "A" || name == "U" || name == "B" || name == "GA" || name == "GB" || name == "NB" || name == "P" || name == "X";
        auto st = strides.find(name);
        if (st != strides.end() && st->second.size() != dims->size())
            return outcome(Outcome::Skipped, "a `# strides` line of the wrong rank for " + name);
        const std::vector<int64_t> noStrides, &s = st == strides.end() ? noStrides : st->second;
        const double poison = name == "Z" ? 0.0 : std::nan("");
        int64_t n = 1;
        for (int64_t d : *dims) n *= d;
        ref[name] = input ? inputElements(name, *dims, s, dataSeed) : std::vector<double>((size_t)n, poison);
        if (name == "TP") // the pointer table: entries 2e and 2e + 1 the e-th tensor's address
            for (int64_t e = 0; e < n; ++e) ref[name][(size_t)e] = (double)tableAddress((size_t)e / 2);
        auto asStored = [&](std::vector<double> &v) { // uint4's bytes are uint8 (inputTensor draws int8)
            if (b->dtype.kind == tilec::DType::UInt8)
                for (auto &x : v) x = x < 0 ? x + 256 : x;
        };
        asStored(ref[name]);
        if (input || name == "TP") inputs.insert(name);
        else outputs.push_back(name);
        if (s.empty()) {
            sim[name] = ref[name];
            continue;
        }
        View &v = views[name];
        v.offsets = stridedOffsets(*dims, s);
        v.initial = input ? inputTensor(name, (size_t)stridedSpan(*dims, s), dataSeed)
                          : std::vector<double>((size_t)stridedSpan(*dims, s), outsideElements);
        if (!input)
            for (int64_t o : v.offsets) v.initial[(size_t)o] = poison;
        asStored(v.initial);
        sim[name] = v.initial;
    }
    for (auto &n : table)
        if (!ref.count(n)) return outcome(Outcome::Skipped, "no T.make_tensor tensor " + n + " of the pointer table");
    const std::map<std::string, std::vector<double>> initial = sim;
    bool divergent = false;
    std::string divergentWhat;
    std::vector<std::set<std::string>> written; // per launch
    try {
        for (auto &k : front.program->kernels) { // the export's launches in order
            Reference reference(*k, pointers(ref), dyn);
            reference.run();
            written.push_back(reference.written());
        }
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
    // The launch function's null-pointer and overlap checks, which the simulator never runs (HostChecks.h).
    for (auto &[target, cuda] : out.cuda)
        for (size_t i = 0; i < written.size(); ++i)
            if (std::string e = checkLaunchArguments(cuda, *front.program->kernels[i], dyn, strides, inputs, written[i]); !e.empty())
                return outcome(Outcome::Failure, "launch check", target + ": " + e);
    for (auto &[target, cuda] : out.cuda) // the workspaces' sizes (the last launch's parameters hold them all)
        if (std::string e = checkWorkspaceBytes(cuda, *front.program->kernels.back(), dyn); !e.empty())
            return outcome(Outcome::Failure, "workspace size", target + ": " + e);

    auto all = [](const ir::Program &p) {
        std::vector<const ir::Kernel *> ks;
        for (auto &k : p.kernels) ks.push_back(k.get());
        return ks;
    };
    if (auto f = simulate(all(*lowered), sim, ref, outputs, views, dyn, 0, "", table); f.kind == Outcome::Failure) return f;
    bool roles = false, wgmmaOnly = false;
    if (hopperLowered) {
        for (auto &k : hopperLowered->kernels) {
            // warp roles, or wgmma in flight across the block's statements (T.wgmma_gemm and T.wait_wgmma)
            const bool wgmma = !k->producerThreads && issuesWgmma(*k);
            roles |= k->producerThreads && !wgmma, wgmmaOnly |= wgmma;
        }
        sim = initial;
        if (roles || wgmmaOnly)
            if (auto f = simulate(all(*hopperLowered), sim, ref, outputs, views, dyn, dataSeed,
                                  wgmmaOnly && !roles ? " (sm_90a wgmma)" : " (sm_90a warp roles)", table);
                f.kind == Outcome::Failure)
                return f;
    }
    out.warpRoles = roles, out.wgmma = wgmmaOnly;
    return out;
}

} // namespace tilec::difffuzz
