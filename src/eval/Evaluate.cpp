/// \file
/// The front end's evaluation entry point (Frontend.h): runs the module in the compile-time interpreter,
/// applies `-D` overrides, and collects the kernels the module exports (module-level prim_func assignments,
/// `--export`, `--kernel`), checking that their names can be C function names.
#include "eval/InterpImpl.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

namespace tilec {
namespace eval {

namespace {

const std::set<std::string> &cKeywords() {
    static const std::set<std::string> k = {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
        "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
        "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary",
        "_Noreturn", "_Static_assert", "_Thread_local"};
    return k;
}

const std::set<std::string> &cxxKeywords() {
    static const std::set<std::string> k = {
        "alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "bool", "catch", "char8_t", "char16_t",
        "char32_t", "class", "compl", "concept", "consteval", "constexpr", "constinit", "const_cast", "co_await",
        "co_return", "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export", "false", "friend",
        "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq",
        "private", "protected", "public", "reinterpret_cast", "requires", "static_assert", "static_cast",
        "template", "this", "thread_local", "throw", "true", "try", "typeid", "typename", "using", "virtual",
        "wchar_t", "xor", "xor_eq"};
    return k;
}

/// Names of the C and C++ standard libraries and of the CUDA runtime that a program including the generated
/// header (or the .cu itself) already has: a kernel's C function of that name would clash with them.
const std::set<std::string> &libraryNames() {
    static const std::set<std::string> k = {
        // <stdlib.h>, <stdio.h>, <string.h>, <assert.h>, <setjmp.h>, <signal.h>, <time.h>, <ctype.h>
        "main", "exit", "_Exit", "abort", "atexit", "at_quick_exit", "quick_exit", "malloc", "calloc", "realloc",
        "free", "aligned_alloc", "system", "getenv", "atoi", "atol", "atoll", "atof", "strtol", "strtoll",
        "strtoul", "strtoull", "strtod", "strtof", "strtold", "rand", "srand", "qsort", "bsearch", "abs", "labs",
        "llabs", "div", "ldiv", "lldiv", "printf", "fprintf", "sprintf", "snprintf", "vprintf", "vfprintf",
        "vsprintf", "vsnprintf", "scanf", "fscanf", "sscanf", "puts", "fputs", "gets", "fgets", "putchar", "getchar",
        "putc", "getc", "fputc", "fgetc", "ungetc", "fopen", "fclose", "fread", "fwrite", "fflush", "fseek", "ftell",
        "rewind", "feof", "ferror", "perror", "remove", "rename", "tmpfile", "tmpnam", "setbuf", "setvbuf",
        "stdin", "stdout", "stderr", "memcpy", "memmove", "memset", "memcmp", "memchr", "strcpy", "strncpy",
        "strcat", "strncat", "strcmp", "strncmp", "strlen", "strchr", "strrchr", "strstr", "strtok", "strerror",
        "strdup", "assert", "setjmp", "longjmp", "signal", "raise", "time", "clock", "difftime", "mktime",
        "isalpha", "isdigit", "isspace", "toupper", "tolower", "errno", "offsetof", "NULL",
        // <math.h> (also CUDA device functions)
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt", "cbrt", "rsqrt", "hypot", "sin",
        "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf",
        "erfc", "tgamma", "lgamma", "ceil", "floor", "trunc", "round", "lround", "llround", "rint", "nearbyint",
        "fmod", "remainder", "fabs", "fmin", "fmax", "fma", "fdim", "frexp", "ldexp", "modf", "copysign", "nan",
        "isnan", "isinf", "isfinite", "signbit", "expf", "logf", "sqrtf", "powf", "fabsf", "fminf", "fmaxf",
        "min", "max",
        // CUDA built-ins and runtime names the generated code uses
        "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "half", "nv_bfloat16", "cudaStream_t",
        "cudaError_t", "CUstream", "CUtensorMap"};
    return k;
}

/// The family of names CUDA's headers declare at global scope that `name` belongs to, or "" (the headers the
/// generated code includes: the runtime's cuda*, the driver's cu*/CU*, cudaTypedefs.h's PFN_*, the vector types
/// and their make_ functions, the fp16/bf16/fp8 types, <stdint.h>'s integer types). By naming convention, not by
/// a list: a new CUDA version's names of the same kind are covered too.
std::string cudaNameFamily(const std::string &name) {
    auto starts = [&](const char *p) { return name.rfind(p, 0) == 0; };
    if (starts("cuda") && name.size() > 4 && std::isupper((unsigned char)name[4])) return "runtime API (cuda...)";
    if (starts("cu") && name.size() > 2 && std::isupper((unsigned char)name[2])) return "driver API (cu...)";
    if (starts("CU") && name.size() > 2 && (std::islower((unsigned char)name[2]) || name[2] == '_'))
        return "driver API types and constants (CU...)";
    if (starts("CUDA") || starts("PFN_")) return "driver API types and constants (CUDA..., PFN_...)";
    if (starts("nv_") || starts("NV_")) return "half- and bfloat16 types (nv_...)";
    std::string base = starts("make_") ? name.substr(5) : name;
    static const char *vec[] = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                                "ulonglong", "float", "double", "half"};
    for (const char *v : vec) {
        std::string t = v;
        if (base.size() == t.size() + 1 && base.rfind(t, 0) == 0 && base.back() >= '1' && base.back() <= '4')
            return "vector types (" + t + "1..4 and make_" + t + "1..4)";
    }
    if (name == "half" || name == "dim3" || name == "size_t" || name == "ptrdiff_t" ||
        name == "intptr_t" || name == "uintptr_t" || name == "intmax_t" || name == "uintmax_t")
        return "built-in types";
    bool macroCase = std::all_of(name.begin(), name.end(), [](char c) { return std::isupper((unsigned char)c) || std::isdigit((unsigned char)c) || c == '_'; });
    for (const char *p : {"INT", "UINT", "SIZE_", "PTRDIFF_", "WCHAR_", "WINT_", "SIG_ATOMIC_"})
        if (macroCase && starts(p)) return "macros of <stdint.h> (INT..., UINT..., SIZE_MAX, ...)";
    for (const char *p : {"int", "uint"})
        for (int bits : {8, 16, 32, 64})
            for (const char *suf : {"_t", "_least", "_fast"}) {
                std::string t = std::string(p) + (std::string(suf) == "_t" ? "" : suf) + std::to_string(bits) + "_t";
                if (name == t) return "integer types of <stdint.h>";
            }
    return "";
}

/// Why `name` cannot be a kernel's C name, or "" when it can.
std::string kernelNameProblem(const std::string &name) {
    bool ok = !name.empty() && name.size() <= 200;
    for (size_t i = 0; ok && i < name.size(); ++i) {
        unsigned char c = name[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        ok = alpha || (i > 0 && c >= '0' && c <= '9');
    }
    std::string shown = name.size() > 60 ? name.substr(0, 60) + "..." : name;
    if (!ok) return "kernel name '" + shown + "' is not a valid C identifier";
    if (cKeywords().count(name)) return "kernel name '" + name + "' is not a valid C identifier (it is a C keyword)";
    if (cxxKeywords().count(name))
        return "kernel name '" + name + "' is not a valid C identifier (it is a C++ keyword)";
    if (libraryNames().count(name))
        return "kernel name '" + name + "' would clash with '" + name +
               "' of the C library or CUDA in any program that includes the header; bind the kernel to another name";
    if (name == "tilec" || name == "std" || name.rfind("tilec_", 0) == 0 || name.rfind("__", 0) == 0 ||
        (name.size() > 1 && name[0] == '_' && std::isupper((unsigned char)name[1])))
        return "kernel name '" + name + "' is reserved (the namespaces 'tilec' and 'std', and names beginning with "
               "'tilec_', '__' or '_' and a capital letter, belong to the implementation)";
    if (std::string family = cudaNameFamily(name); !family.empty())
        return "kernel name '" + name + "' is in CUDA's " + family + ", which the generated code includes; bind "
               "the kernel to another name";
    return "";
}

/// Simple names assigned at module level, including inside module-level if/for/while/with blocks.
void collectAssigned(const ast::Body &body, std::set<std::string> &out, int depth = 0) {
    if (depth > 200) return;
    std::function<void(const ast::Expr &, int)> target = [&](const ast::Expr &t, int d) {
        if (d > 100) return;
        if (t.kind == ast::ExprKind::Name) out.insert(t.str);
        else if (t.kind == ast::ExprKind::Tuple || t.kind == ast::ExprKind::List)
            for (auto &e : t.elts) target(*e, d + 1);
        else if (t.kind == ast::ExprKind::Starred && t.a) target(*t.a, d + 1);
    };
    for (auto &s : body) {
        switch (s->kind) {
        case ast::StmtKind::Assign:
        case ast::StmtKind::AnnAssign:
            for (auto &t : s->targets)
                if (t) target(*t, 0);
            break;
        case ast::StmtKind::If:
        case ast::StmtKind::For:
        case ast::StmtKind::While:
        case ast::StmtKind::With:
            collectAssigned(s->body, out, depth + 1);
            collectAssigned(s->orelse, out, depth + 1);
            break;
        case ast::StmtKind::Match:
            for (auto &c : s->handlers) collectAssigned(c->body, out, depth + 1);
            break;
        default: break;
        }
    }
}

/// The source text of a one-line range (an --export call), shortened for messages.
std::string sourceText(const SourceManager &sm, const SourceRange &r) {
    if (!r.valid() || r.endLine != r.line || r.endCol <= r.col) return "...";
    std::string_view line = sm.line(r.file, r.line);
    if ((size_t)r.col - 1 >= line.size()) return "...";
    std::string s(line.substr((size_t)r.col - 1, (size_t)(r.endCol - r.col)));
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

/// The name of the first @T.prim_func a def's body defines (in nested blocks too), "" if none.
std::string primFuncDefinedIn(const ast::Body &body) {
    for (auto &st : body) {
        if (!st) continue;
        if (st->kind == ast::StmtKind::FunctionDef)
            for (auto &d : st->decorators) {
                const ast::Expr *e = d && d->kind == ast::ExprKind::Call && d->a ? d->a.get() : d.get();
                if (e && (e->kind == ast::ExprKind::Name || e->kind == ast::ExprKind::Attribute) && e->str == "prim_func")
                    return st->name;
            }
        std::string inner = primFuncDefinedIn(st->body);
        if (inner.empty()) inner = primFuncDefinedIn(st->orelse);
        if (!inner.empty()) return inner;
    }
    return "";
}

struct Export {
    std::string name;
    ir::KernelP kernel;
    SourceRange loc;
};

} // namespace

std::optional<ir::Program> InterpImpl::run(const ast::Module &m) {
    char base;
    stackBase_ = &base;
    int errors0 = diag_.errorCount();
    frames_.emplace_back();
    frames_.back().isModule = true;
    frames_.back().moduleBody = &m.body;
    std::vector<Export> exports;
    std::set<std::string> failedExports; // --export calls that failed with their own error
    try {
        std::set<std::string> assigned;
        collectAssigned(m.body, assigned);
        for (auto &d : opts_.defines) {
            if (!assigned.count(d.name)) {
                diag_.error(d.range, "-D " + d.name + ": the file defines no module-level name '" + d.name + "'");
                std::string close = closestName(d.name, std::vector<std::string>(assigned.begin(), assigned.end()));
                if (!close.empty()) diag_.note(d.range, "did you mean '" + close + "'?");
                continue;
            }
            if (!d.value) continue;
            Value v;
            if (d.value->kind == ast::ExprKind::Name) {
                v = Value::str(d.value->str); // `-D dtype=float16`: a bare identifier is a string
            } else {
                try {
                    v = eval(*d.value);
                } catch (EvalAbort &) {
                    v = Value::poison();
                }
            }
            defines_[d.name] = v;
        }

        execBody(m.body);

        for (auto &name : moduleOrder_) {
            auto it = module_->vars.find(name);
            if (it != module_->vars.end() && it->second.is(VK::PrimFunc))
                exports.push_back({name, it->second.kernel, moduleAssignLoc_[name]});
        }
        for (auto &e : opts_.exports) {
            if (!e.call) continue;
            Value v;
            failedExports.insert(e.name);
            try {
                v = eval(*e.call);
            } catch (EvalAbort &) {
                continue;
            }
            if (reportIfFailed(v) || v.is(VK::Poison)) continue;
            // A factory that returns its eager @tilelang.jit kernel (jitted lazily, as sglang's
            // fp8_paged_mqa_logits_kernel(...) does) exports what TileLang compiles on the kernel's first call:
            // its .compile() with no arguments (each T.symbolic / T.const size a run-time one).
            if (v.is(VK::Function) && v.as<FunctionObj>().isEager) {
                CallArgs none;
                none.call = none.callee = e.call->range;
                try {
                    v = compileJit(v, none);
                } catch (EvalAbort &) {
                    continue;
                }
                if (reportIfFailed(v) || v.is(VK::Poison)) continue;
            }
            if (!v.is(VK::PrimFunc)) {
                diag_.error(e.range, "--export '" + e.name + "': '" + sourceText(diag_.sources(), e.call->range) +
                                         "' is a " + typeName(v.kind) + ", not a prim_func");
                continue;
            }
            failedExports.erase(e.name);
            module_->set(e.name, v);
            auto same = std::find_if(exports.begin(), exports.end(), [&](const Export &x) { return x.name == e.name; });
            if (same != exports.end()) *same = {e.name, v.kernel, e.range};
            else exports.push_back({e.name, v.kernel, e.range});
        }
    } catch (BudgetExhausted &) {
        return std::nullopt;
    }

    for (auto &e : exports) {
        std::string problem = kernelNameProblem(e.name);
        if (!problem.empty()) diag_.error(e.loc, problem);
    }
    if (exports.empty() && diag_.errorCount() == errors0) {
        diag_.warning(SourceRange{m.file, 1, 1, 1, 1}, "file exports no kernel");
        // The usual cause: a factory that builds its prim_func and forgets to return it.
        for (const ast::Stmt *def : factoriesReturningNone_) {
            const std::string inner = primFuncDefinedIn(def->body);
            SourceRange at{def->range.file, def->range.line, def->range.col, def->range.line, def->range.col + 4 + (int)def->name.size()};
            diag_.note(at, "'" + def->name + "' returned None" +
                               (inner.empty() ? ": it has no 'return' of the prim_func it makes"
                                              : ": it defines the prim_func '" + inner + "' but has no 'return " + inner + "'"));
        }
    }
    if (!opts_.kernels.empty()) {
        std::vector<Export> kept;
        for (auto &want : opts_.kernels) {
            auto it = std::find_if(exports.begin(), exports.end(), [&](const Export &x) { return x.name == want; });
            if (it == exports.end() && !failedExports.count(want)) { // a failed --export has said why already
                std::string list;
                for (auto &x : exports) list += (list.empty() ? "" : ", ") + x.name;
                diag_.error(SourceRange{}, "--kernel " + want + ": the file exports no kernel named '" + want + "'" +
                                               (list.empty() ? "" : " (it exports " + list + ")"));
            }
        }
        for (auto &x : exports)
            if (std::find(opts_.kernels.begin(), opts_.kernels.end(), x.name) != opts_.kernels.end()) kept.push_back(x);
        exports = std::move(kept);
    }
    if (diag_.errorCount() > errors0) return std::nullopt;

    ir::Program p;
    for (auto &e : exports) {
        // A prim_func with several launches exports them as consecutive parts; the first carries the
        // per-kernel switches (pass_configs) for all.
        auto k = std::make_shared<ir::Kernel>(*e.kernel);
        k->laterLaunches.clear();
        k->name = e.name;
        k->loc = e.loc;
        p.kernels.push_back(k);
        for (auto &later : e.kernel->laterLaunches) {
            auto l = std::make_shared<ir::Kernel>(*later);
            l->name = e.name;
            l->loc = e.loc;
            l->noTma = k->noTma;
            l->noWarpSpecialize = k->noWarpSpecialize;
            l->fastMath = k->fastMath;
            l->noThreadSync = k->noThreadSync;
            p.kernels.push_back(l);
        }
    }
    return p;
}

} // namespace eval

std::optional<ir::Program> evaluateModule(const ast::Module &m, const FrontendOptions &opts, DiagnosticEngine &diag) {
    setCurrentPhase("evaluate");
    eval::InterpImpl interp(opts, diag);
    return interp.run(m);
}

} // namespace tilec
