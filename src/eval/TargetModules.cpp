/// \file
/// TileLang's target queries and TVM's target objects, as pure functions of the target they are given.
///
/// A target is a `tvm.target.Target(...)` object, a spec string (`"cuda"`, `"cuda -arch=sm_80"`,
/// `"hip -mcpu=gfx950"`) or a dict (`{"kind": "cuda", "arch": "sm_90a"}`). A CUDA target that names no arch
/// is the one tilec compiles for (-arch), as TileLang fills in the GPU it detects; the queries of "the current
/// target" (`determine_target()`, `get_target_compute_version()` without a target) answer -arch too. A target
/// of another kind answers as TileLang answers for it (`target_is_gfx950(Target("hip -mcpu=gfx950"))` is True):
/// what a program picks by asking is its own business; tilec still compiles the kernel for -arch. An opaque
/// target (from a module tilec does not evaluate) gives an opaque answer.
#include "eval/TargetModules.h"

#include <cctype>

namespace tilec::eval {

namespace {

using Attrs = std::map<std::string, Value>;

/// What the queries read of a target.
struct TargetDesc {
    std::string kind;                 ///< cuda, hip, rocm, metal, llvm, c, webgpu
    std::string arch;                 ///< CUDA: sm_90a
    std::string mcpu;                 ///< ROCm: gfx950
    std::vector<std::string> keys;    ///< extra keys (-keys=...)
    bool isCuda() const { return kind == "cuda"; }
    bool isRocm() const { return kind == "hip" || kind == "rocm"; }
    /// The compute capability times ten of a CUDA target's arch ("sm_90a" -> 90), as TileLang reads it.
    int sm() const {
        int v = 0;
        for (size_t i = 3; i < arch.size() && std::isdigit((unsigned char)arch[i]) && v < 100000; ++i) v = v * 10 + (arch[i] - '0');
        return v;
    }
};

const char *const kKinds[] = {"cuda", "hip", "rocm", "metal", "llvm", "c", "webgpu"};

void setOption(InterpImpl &in, const SourceRange &r, TargetDesc &d, const std::string &key, const std::string &value) {
    if (key == "arch") {
        if (value.rfind("sm_", 0) != 0 || value.size() < 5 || !std::isdigit((unsigned char)value[3]))
            in.fail(r, "target arch '" + value + "' is not of the form sm_XY (sm_80, sm_90a)");
        d.arch = value;
    } else if (key == "mcpu") {
        d.mcpu = value.substr(0, value.find(':')); // gfx942:sramecc+:xnack- -> gfx942, as TileLang normalizes it
    } else if (key == "keys") {
        for (size_t p = 0; p <= value.size();) {
            size_t c = value.find(',', p);
            if (c == std::string::npos) c = value.size();
            if (c > p) d.keys.push_back(value.substr(p, c - p));
            p = c + 1;
        }
    } // other options (-max_num_threads, -thread_warp_size, ...) do not change the queries' answers
}

void setKind(InterpImpl &in, const SourceRange &r, TargetDesc &d, const std::string &kind) {
    for (const char *k : kKinds)
        if (kind == k) {
            d.kind = kind;
            return;
        }
    in.fail(r, "unknown target kind '" + kind + "' (tilec knows cuda, hip, rocm, metal, llvm, c and webgpu)");
}

/// `"hip -mcpu=gfx950"`: a kind, then -key=value options.
TargetDesc parseSpec(InterpImpl &in, const SourceRange &r, const std::string &spec) {
    TargetDesc d;
    std::vector<std::string> words;
    for (size_t p = 0; p < spec.size();) {
        while (p < spec.size() && std::isspace((unsigned char)spec[p])) ++p;
        size_t e = p;
        while (e < spec.size() && !std::isspace((unsigned char)spec[e])) ++e;
        if (e > p) words.push_back(spec.substr(p, e - p));
        p = e;
    }
    if (words.empty()) in.fail(r, "an empty target string");
    setKind(in, r, d, words[0]);
    for (size_t i = 1; i < words.size(); ++i) {
        const std::string &w = words[i];
        size_t eq = w.find('=');
        if (w.size() < 2 || w[0] != '-' || eq == std::string::npos)
            in.fail(r, "target option '" + w + "' is not of the form -key=value");
        setOption(in, r, d, w.substr(w[1] == '-' ? 2 : 1, eq - (w[1] == '-' ? 2 : 1)), w.substr(eq + 1));
    }
    return d;
}

/// The target a value describes; nullopt for an opaque one. A CUDA target without an arch is -arch.
std::optional<TargetDesc> describe(InterpImpl &in, const Arg &a, const std::string &fname) {
    const Value &v = a.value;
    if (v.is(VK::Poison)) throw EvalAbort{};
    if (v.is(VK::Opaque)) return std::nullopt;
    TargetDesc d;
    if (v.is(VK::Str)) {
        d = parseSpec(in, a.range, v.s);
    } else if (v.is(VK::Dict) || (v.is(VK::Module) && v.as<ModuleObj>().name == "tvm.target.Target")) {
        std::vector<std::pair<std::string, Value>> fields;
        if (v.is(VK::Dict)) {
            for (auto &[k, x] : v.as<DictObj>().items)
                if (k.is(VK::Str)) fields.emplace_back(k.s, x);
        } else {
            auto &attrs = v.as<ModuleObj>().attrs;
            fields.emplace_back("kind", attrs.at("kind").as<ModuleObj>().attrs.at("name"));
            for (auto &[k, x] : attrs.at("attrs").as<DictObj>().items) fields.emplace_back(k.s, x);
        }
        for (auto &[k, x] : fields) {
            if (k == "keys" && (x.is(VK::List) || x.is(VK::Tuple))) {
                for (auto &e : x.elements())
                    if (e.is(VK::Str)) d.keys.push_back(e.s);
                continue;
            }
            if (!x.is(VK::Str)) continue;
            if (k == "kind") setKind(in, a.range, d, x.s);
            else setOption(in, a.range, d, k, x.s);
        }
        if (d.kind.empty()) in.fail(a.range, "a target dict needs a 'kind'");
    } else {
        in.fail(a.range, fname + " needs a target (a tvm.target.Target, a string such as \"cuda\" or a dict), got " +
                             typeNameOf(v));
    }
    if (d.isCuda() && d.arch.empty()) d.arch = in.opts_.target.name;
    return d;
}

/// The `tvm.target.Target` object of `d`: `.kind.name`, `.arch` / `.mcpu`, `.attrs`, `.keys`.
Value targetObject(const TargetDesc &d) {
    Attrs attrs;
    attrs["kind"] = partlyKnownModule("tvm.target.TargetKind", {{"name", Value::str(d.kind)}});
    auto dict = std::make_shared<DictObj>();
    if (!d.arch.empty()) dict->items.emplace_back(Value::str("arch"), Value::str(d.arch)), attrs["arch"] = Value::str(d.arch);
    if (!d.mcpu.empty()) dict->items.emplace_back(Value::str("mcpu"), Value::str(d.mcpu)), attrs["mcpu"] = Value::str(d.mcpu);
    attrs["attrs"] = Value::object(VK::Dict, dict);
    std::vector<Value> keys;
    for (auto &k : d.keys) keys.push_back(Value::str(k));
    keys.push_back(Value::str(d.isCuda() ? "cuda" : d.isRocm() ? "rocm" : d.kind));
    if (d.isCuda() || d.isRocm() || d.kind == "metal" || d.kind == "webgpu") keys.push_back(Value::str("gpu"));
    attrs["keys"] = Value::list(std::move(keys));
    return partlyKnownModule("tvm.target.Target", std::move(attrs));
}

bool startsWith(const std::string &s, const char *p) { return s.rfind(p, 0) == 0; }

/// `f(target, ...)`: `answer` of the target's description (an opaque target gives an opaque answer).
void query(Attrs &m, const std::string &mod, const std::string &name, std::vector<std::string> extra,
           std::function<Value(InterpImpl &, const TargetDesc &, std::vector<std::optional<Arg>> &)> answer) {
    std::string fname = mod + "." + name;
    extra.insert(extra.begin(), "target");
    m[name] = builtinFunction(fname, [fname, extra, answer](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, fname, extra);
        auto d = describe(in, *x[0], fname);
        if (!d) return deriveOpaque(x[0]->value, fname + "(...)");
        return answer(in, *d, x);
    });
}

void cudaRange(Attrs &m, const std::string &mod, const std::string &name, int lo, int hi) {
    query(m, mod, name, {}, [lo, hi](InterpImpl &, const TargetDesc &d, auto &) {
        return Value::boolean(d.isCuda() && d.sm() >= lo && d.sm() < hi);
    });
}

int rocmWarpSize(const TargetDesc &d) { return d.isRocm() && startsWith(d.mcpu, "gfx9") ? 64 : 32; }

/// The CUDA queries (tilelang.cuda.target; tilelang.utils.target before 0.1.13).
void addCudaQueries(Attrs &m, const std::string &mod) {
    query(m, mod, "target_is_cuda", {}, [](InterpImpl &, const TargetDesc &d, auto &) { return Value::boolean(d.isCuda()); });
    cudaRange(m, mod, "target_is_volta", 70, 75);
    cudaRange(m, mod, "target_is_turing", 75, 80);
    cudaRange(m, mod, "target_is_ampere", 80, 90);
    cudaRange(m, mod, "target_is_hopper", 90, 100);
    cudaRange(m, mod, "target_is_sm100", 100, 111);
    cudaRange(m, mod, "target_is_sm120", 120, 130);
    cudaRange(m, mod, "target_has_ldmatrix", 75, 1 << 30);
    cudaRange(m, mod, "target_has_bulk_copy", 90, 1 << 30);
    cudaRange(m, mod, "target_has_tmem", 100, 111);
    query(m, mod, "target_has_stmatrix", {"is_m16n8?"}, [](InterpImpl &in, const TargetDesc &d, auto &x) {
        bool m16n8 = x[1] && in.toBool(*x[1], "is_m16n8");
        return Value::boolean(d.isCuda() && d.sm() >= (m16n8 ? 100 : 90));
    });
    query(m, mod, "target_has_async_copy", {}, [](InterpImpl &, const TargetDesc &d, auto &) {
        if (d.isCuda()) return Value::boolean(d.sm() >= 80);
        // CDNA from gfx94x on
        bool cdna = d.isRocm() && startsWith(d.mcpu, "gfx9") && d.mcpu.size() >= 5 && std::isdigit((unsigned char)d.mcpu[3]) &&
                    std::isdigit((unsigned char)d.mcpu[4]);
        return Value::boolean(cdna && std::stoi(d.mcpu.substr(3, 2)) >= 94);
    });
    m["check_cuda_availability"] = builtinFunction(mod + ".check_cuda_availability", [](InterpImpl &, CallArgs &) { return Value::boolean(true); });
}

/// The ROCm queries (tilelang.rocm.target).
void addRocmQueries(Attrs &m, const std::string &mod) {
    query(m, mod, "target_is_hip", {}, [](InterpImpl &, const TargetDesc &d, auto &) { return Value::boolean(d.isRocm()); });
    query(m, mod, "target_is_cdna", {}, [](InterpImpl &, const TargetDesc &d, auto &) {
        return Value::boolean(d.isRocm() && startsWith(d.mcpu, "gfx9"));
    });
    query(m, mod, "target_is_rdna", {}, [](InterpImpl &, const TargetDesc &d, auto &) {
        return Value::boolean(d.isRocm() && (startsWith(d.mcpu, "gfx11") || startsWith(d.mcpu, "gfx12")));
    });
    query(m, mod, "target_is_gfx950", {}, [](InterpImpl &, const TargetDesc &d, auto &) {
        return Value::boolean(d.isRocm() && d.mcpu.find("gfx950") != std::string::npos);
    });
    query(m, mod, "target_get_rdna_generation", {}, [](InterpImpl &, const TargetDesc &d, auto &) {
        if (!d.isRocm()) return Value::integer(0);
        return Value::integer(startsWith(d.mcpu, "gfx11") ? 11 : startsWith(d.mcpu, "gfx12") ? 12 : 0);
    });
    query(m, mod, "target_get_warp_size", {}, [](InterpImpl &, const TargetDesc &d, auto &) { return Value::integer(rocmWarpSize(d)); });
    std::string getMcpu = mod + ".target_get_mcpu";
    m["target_get_mcpu"] = builtinFunction(getMcpu, [getMcpu](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, getMcpu, {"target"});
        if (x[0]->value.is(VK::None)) return Value::none();
        auto d = describe(in, *x[0], getMcpu);
        if (!d) return deriveOpaque(x[0]->value, getMcpu + "(...)");
        return startsWith(d->mcpu, "gfx") ? Value::str(d->mcpu) : Value::none();
    });
    m["check_hip_availability"] = builtinFunction(mod + ".check_hip_availability", [](InterpImpl &, CallArgs &) { return Value::boolean(false); });
}

/// determine_target, determine_fp8_type (tilelang.backend.target; tilelang.utils.target before 0.1.13).
void addDetermineTarget(Attrs &m, const std::string &mod) {
    std::string fname = mod + ".determine_target";
    m["determine_target"] = builtinFunction(fname, [fname](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, fname, {"target?", "return_object?"});
        bool object = x[1] && in.toBool(*x[1], "return_object");
        Arg spec = x[0] ? *x[0] : Arg{Value::str("auto"), a.call};
        if (spec.value.is(VK::Str) && spec.value.s == "auto") spec.value = Value::str("cuda");
        if (!object && (spec.value.is(VK::Str) || spec.value.is(VK::Dict))) {
            (void)describe(in, spec, fname); // a bad spec is an error, as TileLang validates it
            return spec.value;
        }
        auto d = describe(in, spec, fname);
        return d ? targetObject(*d) : deriveOpaque(spec.value, fname + "(...)");
    });
    for (const char *name : {"determine_fp8_type", "determine_torch_fp8_type"}) {
        std::string f = mod + "." + name;
        m[name] = builtinFunction(f, [f](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, f, {"fp8_format?"});
            std::string fmt = x[0] ? in.toStr(*x[0], "fp8_format") : "e4m3";
            if (fmt != "e4m3" && fmt != "e5m2") in.fail(x[0]->range, "Unsupported FP8 format: " + fmt);
            return Value::ofDType(fmt == "e4m3" ? DType::Float8E4M3 : DType::Float8E5M2);
        });
    }
}

Value targetConstructor() {
    return builtinFunction("tvm.target.Target", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "tvm.target.Target", {"target", "host?"});
        auto d = describe(in, *x[0], "tvm.target.Target");
        return d ? targetObject(*d) : deriveOpaque(x[0]->value, "tvm.target.Target(...)");
    });
}

/// A compute version "9.0" (or a (major, minor) tuple where TileLang takes one).
std::pair<int64_t, int64_t> computeVersion(InterpImpl &in, const Arg &a, bool tuple) {
    if (tuple && (a.value.is(VK::Tuple) || a.value.is(VK::List))) {
        auto e = in.toSequence(a, "compute version");
        if (e.size() != 2) in.fail(a.range, "a compute version tuple is (major, minor)");
        return {in.toInt(e[0], "major"), in.toInt(e[1], "minor")};
    }
    std::string v = in.toStr(a, "compute version");
    auto dot = v.find('.');
    bool ok = dot != std::string::npos && dot > 0 && dot + 1 < v.size() && v.size() < 12 &&
              v.find_first_not_of("0123456789.") == std::string::npos && v.find('.', dot + 1) == std::string::npos;
    if (!ok) in.fail(a.range, "compute version " + repr(a.value) + " is not MAJOR.MINOR");
    return {std::stoll(v.substr(0, dot)), std::stoll(v.substr(dot + 1))};
}

std::string versionOf(const TargetDesc &d) { return std::to_string(d.sm() / 10) + "." + std::to_string(d.sm() % 10); }

/// `tilelang.contrib.nvcc`'s queries (compute versions, features of a target).
Value nvccModule(InterpImpl &) {
    Attrs m;
    const std::string N = "tilelang.contrib.nvcc";
    m["get_target_compute_version"] = builtinFunction(N + ".get_target_compute_version", [N](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, N + ".get_target_compute_version", {"target?"});
        Arg t = x[0] && !x[0]->value.is(VK::None) ? *x[0] : Arg{Value::str("cuda"), a.call};
        auto d = describe(in, t, N + ".get_target_compute_version");
        if (!d) return deriveOpaque(t.value, N + ".get_target_compute_version(...)");
        if (!d->isCuda()) in.fail(t.range, "get_target_compute_version needs a CUDA target, got kind '" + d->kind + "'");
        return Value::str(versionOf(*d));
    });
    m["parse_compute_version"] = builtinFunction(N + ".parse_compute_version", [N](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, N + ".parse_compute_version", {"compute_version"});
        auto [major, minor] = computeVersion(in, *x[0], false);
        return Value::tuple({Value::integer(major), Value::integer(minor)});
    });
    m["get_target_arch"] = builtinFunction(N + ".get_target_arch", [N](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, N + ".get_target_arch", {"compute_version"});
        auto [major, minor] = computeVersion(in, *x[0], true);
        return Value::str(std::to_string(major * 10 + minor) + (major >= 9 ? "a" : ""));
    });
    auto version = [&](const char *name, std::function<bool(int64_t, int64_t)> f) {
        std::string fname = N + "." + name;
        m[name] = builtinFunction(fname, [fname, f](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, fname, {"compute_version"});
            auto [major, minor] = computeVersion(in, *x[0], false);
            return Value::boolean(f(major, minor));
        });
    };
    version("have_fp16", [](int64_t M, int64_t m) { return (M == 5 && m >= 3) || M >= 6; });
    version("have_int8", [](int64_t M, int64_t) { return M >= 6; });
    version("have_bf16", [](int64_t M, int64_t) { return M >= 8; });
    version("have_fp8", [](int64_t M, int64_t m) { return (M == 8 && m >= 9) || M >= 9; });
    query(m, N, "have_tma", {}, [](InterpImpl &, const TargetDesc &d, auto &) { return Value::boolean(d.isCuda() && d.sm() >= 90); });
    query(m, N, "have_pdl", {}, [](InterpImpl &, const TargetDesc &d, auto &) { return Value::boolean(d.isCuda() && d.sm() >= 90); });
    query(m, N, "have_mbarrier", {}, [](InterpImpl &, const TargetDesc &d, auto &) { return Value::boolean(d.isCuda() && d.sm() >= 90); });
    query(m, N, "is_hopper", {}, [](InterpImpl &, const TargetDesc &d, auto &) { return Value::boolean(d.isCuda() && d.sm() == 90); });
    return partlyKnownModule(N, std::move(m));
}

} // namespace

std::optional<Value> targetModule(InterpImpl &in, const std::string &dotted) {
    Attrs m;
    if (dotted == "tilelang.contrib.nvcc") return nvccModule(in);
    if (dotted == "tilelang.cuda.target") addCudaQueries(m, dotted);
    else if (dotted == "tilelang.rocm.target") addRocmQueries(m, dotted);
    else if (dotted == "tilelang.metal.target")
        query(m, dotted, "target_is_metal", {}, [](InterpImpl &, const TargetDesc &d, auto &) { return Value::boolean(d.kind == "metal"); });
    else if (dotted == "tilelang.backend.target") addDetermineTarget(m, dotted);
    else if (dotted == "tilelang.utils.target") { // TileLang before 0.1.13: every query in one module
        addCudaQueries(m, dotted);
        addRocmQueries(m, dotted);
        query(m, dotted, "target_is_metal", {}, [](InterpImpl &, const TargetDesc &d, auto &) { return Value::boolean(d.kind == "metal"); });
        addDetermineTarget(m, dotted);
        m["check_metal_availability"] = builtinFunction(dotted + ".check_metal_availability", [](InterpImpl &, CallArgs &) { return Value::boolean(false); });
    } else if (dotted == "tvm.target") m["Target"] = targetConstructor();
    else if (dotted == "tilelang.rocm" || dotted == "tilelang.metal" || dotted == "tilelang.backend") {
    } // packages whose submodules are reached as attributes (a module's unknown attribute tries `dotted.NAME`)
    else return std::nullopt;
    return partlyKnownModule(dotted, std::move(m));
}

} // namespace tilec::eval
