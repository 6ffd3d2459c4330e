/// \file
/// TileLang's `@tilelang.jit` beyond returning the factory: its `pass_configs` (two of them per-kernel
/// lowering switches), `.compile(...)`, and the eager kernels of TileLang 0.1.10 on, a jit function whose body
/// is the kernel:
///
///     @tilelang.jit
///     def matmul(A, B, block_M, block_N, block_K):
///         M, N, K = T.const("M, N, K")      # sizes: .compile(M=1024, ...) gives them (else run-time sizes)
///         A: T.Tensor((M, K), T.float16)    # declares parameter A
///         C = T.empty((M, N), T.float16)    # an output parameter
///         with T.Kernel(...): ...
///         return C
///
///     gemm = matmul.compile(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32)
///
/// The body is traced like a @T.prim_func's (traceKernel); the parameters are the def's tensor and scalar
/// parameters in the def's order, then the T.empty outputs in the order they are made.
#include "eval/InterpImpl.h"
#include "eval/TileLang.h"


#include <algorithm>
#include <functional>

namespace tilec::eval {

namespace {

/// TileLang's pass configuration keys (tilelang/transform/pass_config.py, PassConfigKey). Four are lowering
/// switches tilec honours per kernel; the others tune TileLang's own passes, which tilec does not have: none
/// changes what a kernel computes, so they are accepted (a note under -v).
enum class PassEffect { NoTma, NoWarpSpecialize, FastMath, NoThreadSync, None };
struct PassConfigKey {
    const char *name; ///< the PassConfigKey member
    const char *key;  ///< its string
    PassEffect effect;
};
constexpr PassConfigKey kPassConfigKeys[] = {
    {"TL_DISABLE_TMA_LOWER", "tl.disable_tma_lower", PassEffect::NoTma},
    {"TL_DISABLE_WARP_SPECIALIZED", "tl.disable_warp_specialized", PassEffect::NoWarpSpecialize},
    {"TL_SIMPLIFY", "tl.Simplify", PassEffect::None},
    {"TL_SIMPLIFY_TRANSITIVELY_PROVE_INEQUALITIES", "transitively_prove_inequalities", PassEffect::None},
    {"TL_SIMPLIFY_CONVERT_BOOLEAN_TO_AND_OF_ORS", "convert_boolean_to_and_of_ors", PassEffect::None},
    {"TL_SIMPLIFY_APPLY_CONSTRAINTS_TO_BOOLEAN_BRANCHES", "apply_constraints_to_boolean_branches", PassEffect::None},
    {"TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_PROVE_CONDITIONAL", "propagate_knowns_to_prove_conditional", PassEffect::None},
    {"TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_SIMPLIFY_EXPRESSIONS", "propagate_knowns_to_simplify_expressions", PassEffect::None},
    {"TL_SIMPLIFY_ENABLE_LET_INLINE", "enable_simplify_let_inline", PassEffect::None},
    {"TL_DISABLE_DATA_RACE_CHECK", "tl.disable_data_race_check", PassEffect::None},
    {"TL_DISABLE_PRELOWER_SEMANTIC_CHECK", "tl.disable_prelower_semantic_check", PassEffect::None},
    {"TL_ENABLE_FAST_MATH", "tl.enable_fast_math", PassEffect::FastMath},
    {"TL_PTXAS_REGISTER_USAGE_LEVEL", "tl.ptxas_register_usage_level", PassEffect::None},
    {"TL_DEVICE_COMPILE_FLAGS", "tl.device_compile_flags", PassEffect::None},
    {"TL_CONFIG_INDEX_BITWIDTH", "tl.config_index_bitwidth", PassEffect::None},
    {"TL_DISABLE_SAFE_MEMORY_ACCESS", "tl.disable_safe_memory_legalize", PassEffect::None},
    {"TL_DISABLE_VECTORIZE_256", "tl.disable_vectorize_256", PassEffect::None},
    {"TL_ENABLE_ASYNC_COPY", "tl.enable_async_copy", PassEffect::None},
    {"TL_ENABLE_LOWER_LDGSTG", "tl.enable_lower_ldgstg", PassEffect::None},
    {"TL_ENABLE_LOWER_LDGSTG_PREDICATED", "tl.enable_lower_ldgstg_predicated", PassEffect::None},
    {"TL_ENABLE_VECTORIZE_PLANNER_VERBOSE", "tl.enable_vectorize_planner_verbose", PassEffect::None},
    {"TL_DISABLE_WGMMA", "tl.disable_wgmma", PassEffect::None},
    {"TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS", "tl.debug_merge_shared_memory_allocations", PassEffect::None},
    {"TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE", "tl.enable_aggressive_shared_memory_merge", PassEffect::None},
    {"TL_DISABLE_SHARED_MEMORY_REUSE", "tl.disable_shared_memory_reuse", PassEffect::None},
    {"TL_DISABLE_SHUFFLE_ELECT", "tl.disable_shuffle_elect", PassEffect::None},
    {"TL_DISABLE_LOOP_UNSWITCHING", "tl.disable_loop_unswitching", PassEffect::None},
    {"TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE", "tl.loop_unswitching_allow_non_trivial_else", PassEffect::None},
    {"TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS", "tl.if_stmt_binding_inline_replayable_binds", PassEffect::None},
    {"TL_DISABLE_THREAD_STORAGE_SYNC", "tl.disable_thread_storage_sync", PassEffect::NoThreadSync},
    {"TL_FORCE_LET_INLINE", "tl.force_let_inline", PassEffect::None},
    {"TL_AST_PRINT_ENABLE", "tl.ast_print_enable", PassEffect::None},
    {"TL_LAYOUT_VISUALIZATION_ENABLE", "tl.layout_visualization_enable", PassEffect::None},
    {"TL_LAYOUT_VISUALIZATION_FORMATS", "tl.layout_visualization_formats", PassEffect::None},
    {"TL_STORAGE_REWRITE_DETECT_INPLACE", "tl.storage_rewrite_detect_inplace", PassEffect::None},
    {"TL_DISABLE_OUT_OF_BOUND_WARNING", "tl.disable_out_of_bound_warning", PassEffect::None},
    {"TL_ENABLE_DUMP_IR", "tl.enable_dump_ir", PassEffect::None},
    {"TL_DUMP_IR_DIR", "tl.dump_ir_path", PassEffect::None},
    {"TL_PASS_PROFILE", "tl.pass_profile", PassEffect::None},
    {"TL_PASS_PROFILE_THRESHOLD_MS", "tl.pass_profile_threshold_ms", PassEffect::None},
    {"TIR_ENABLE_EQUIV_TERMS_IN_CSE", "tir.enable_equiv_terms_in_cse_tir", PassEffect::None},
    {"TIR_DISABLE_CSE", "tirx.disable_cse_tir", PassEffect::None},
    {"TIR_SIMPLIFY", "tirx.Simplify", PassEffect::None},
    {"TIR_DISABLE_STORAGE_REWRITE", "tirx.disable_storage_rewrite", PassEffect::None},
    {"TIR_DISABLE_VECTORIZE", "tirx.disable_vectorize", PassEffect::None},
    {"TIR_USE_ASYNC_COPY", "tirx.use_async_copy", PassEffect::None},
    {"TIR_ENABLE_DEBUG", "tirx.enable_debug", PassEffect::None},
    {"TIR_MERGE_STATIC_SMEM", "tirx.merge_static_smem", PassEffect::None},
    {"TIR_ADD_LOWER_PASS", "tirx.add_lower_pass", PassEffect::None},
    {"TIR_NOALIAS", "tirx.noalias", PassEffect::None},
    {"CUDA_KERNELS_OUTPUT_DIR", "cuda.kernels_output_dir", PassEffect::None},
};

/// Reads `pass_configs={...}` into the function's switches; unknown keys are a warning at the dict.
void readPassConfigs(Interp &in, const Arg &a, FunctionObj &f) {
    if (a.value.is(VK::None)) return;
    if (!a.value.is(VK::Dict)) in.fail(a.range, std::string("pass_configs must be a dict, not a ") + typeName(a.value.kind));
    for (auto &[k, v] : a.value.as<DictObj>().items) {
        std::string key = k.is(VK::Str) ? k.s : k.is(VK::Opaque) ? k.s : repr(k);
        auto it = std::find_if(std::begin(kPassConfigKeys), std::end(kPassConfigKeys),
                               [&](const PassConfigKey &c) { return key == c.key; });
        if (it == std::end(kPassConfigKeys)) {
            in.warn(a.range, "unknown pass config '" + key + "' is ignored");
            continue;
        }
        if (it->effect == PassEffect::None) {
            remark(&in.diag().sources(), a.range, "pass config '" + key + "' tunes a TileLang pass tilec does not have; "
                                                              "ignored (it does not change what the kernel computes)");
            continue;
        }
        bool on = in.toBool({v, a.range}, "a pass config's value");
        bool &flag = it->effect == PassEffect::NoTma          ? f.noTma
                     : it->effect == PassEffect::FastMath     ? f.fastMath
                     : it->effect == PassEffect::NoThreadSync ? f.noThreadSync
                                                              : f.noWarpSpecialize;
        flag |= on;
        const char *as = it->effect == PassEffect::NoTma          ? "as --no-tma for this kernel"
                         : it->effect == PassEffect::FastMath     ? "as --use_fast_math for this kernel"
                         : it->effect == PassEffect::NoThreadSync ? "no automatic barriers between its per-thread statements"
                                                                  : "as --no-warp-specialize for this kernel";
        remark(&in.diag().sources(), a.range,
               "pass config '" + key + "' = " + (on ? "True" : "False") + ": " + (on ? as : "no effect"));
    }
}

/// Reads `out_idx=` (an int, a list or tuple of ints, or None) into the function's outIdx.
void readOutIdx(Interp &in, const Arg &a, FunctionObj &f) {
    f.outIdx.clear();
    f.hasOutIdx = !a.value.is(VK::None);
    f.outIdxLoc = a.range;
    if (!f.hasOutIdx) return;
    if (a.value.is(VK::List) || a.value.is(VK::Tuple)) {
        for (auto &e : in.toSequence(a, "out_idx")) f.outIdx.push_back(in.toInt(e, "an out_idx entry"));
    } else {
        f.outIdx.push_back(in.toInt(a, "out_idx"));
    }
}

/// Reads the jit options tilec honours: pass_configs and out_idx.
void readJitOptions(Interp &in, const CallArgs &options, FunctionObj &f) {
    for (auto &[name, arg] : options.kw) {
        if (name == "pass_configs") readPassConfigs(in, arg, f);
        if (name == "out_idx") readOutIdx(in, arg, f);
    }
}

/// The jit function with its switches (a copy: the undecorated def stays as it was).
Value markJit(Interp &in, const Value &fn, const CallArgs *options) {
    if (!fn.is(VK::Function)) return fn;
    auto g = std::make_shared<FunctionObj>(fn.as<FunctionObj>());
    g->isJit = true;
    g->isEager = isEagerStyle(*g->def);
    if (options) readJitOptions(in, *options, *g);
    return Value::object(VK::Function, g);
}

/// The names `NAME: annotation` (without a value) declares in a body, nested defs apart.
void annotatedNames(const ast::Body &body, std::set<std::string> &out, int depth = 0) {
    if (depth > 100) return;
    for (auto &s : body) {
        if (s->kind == ast::StmtKind::FunctionDef) continue;
        if (s->kind == ast::StmtKind::AnnAssign && !s->value && !s->targets.empty() && s->targets[0] &&
            s->targets[0]->kind == ast::ExprKind::Name)
            out.insert(s->targets[0]->str);
        annotatedNames(s->body, out, depth + 1);
        annotatedNames(s->orelse, out, depth + 1);
    }
}

} // namespace

Value jitDecorator() {
    auto b = std::make_shared<BuiltinObj>();
    b->name = "tilelang.jit";
    b->fn = [](Interp &in, CallArgs &a) {
        if (a.pos.size() == 1 && a.kw.empty()) return markJit(in, a.pos[0].value, nullptr);
        // @tilelang.jit(out_idx=..., pass_configs=...): the options are read here; the decorator they make
        // applies them.
        auto opts = std::make_shared<CallArgs>(a);
        auto d = std::make_shared<BuiltinObj>();
        d->name = "tilelang.jit(...)";
        d->fn = [opts](Interp &in2, CallArgs &b2) {
            if (b2.pos.size() != 1) return Value::none();
            return markJit(in2, b2.pos[0].value, opts.get());
        };
        return Value::object(VK::Builtin, d);
    };
    return Value::object(VK::Builtin, b);
}

Value passConfigKeyEnum() {
    auto m = std::make_shared<ModuleObj>();
    m->name = "tilelang.PassConfigKey";
    m->opaque = true; // a member tilec does not know is an unknown key where pass_configs reads it
    for (auto &c : kPassConfigKeys) m->attrs[c.name] = Value::str(c.key);
    return Value::object(VK::Module, m);
}

Value tilelangCompile() {
    auto b = std::make_shared<BuiltinObj>();
    b->name = "tilelang.compile";
    b->fn = [](Interp &in, CallArgs &a) -> Value {
        if (a.pos.empty()) in.fail(a.call, "tilelang.compile needs the prim_func to compile");
        if (!a.pos[0].value.is(VK::PrimFunc))
            in.fail(a.pos[0].range, std::string("tilelang.compile takes a prim_func, not a ") + typeName(a.pos[0].value.kind));
        FunctionObj switches;
        readJitOptions(in, a, switches);
        return InterpImpl::withPassConfigs(in, switches, a.pos[0].value);
    };
    return Value::object(VK::Builtin, b);
}

bool isEagerStyle(const ast::Stmt &def) {
    bool launch = false, primFunc = false;
    std::function<void(const ast::Body &, int)> scan = [&](const ast::Body &body, int depth) {
        if (depth > 100) return;
        for (auto &s : body) {
            if (s->kind == ast::StmtKind::FunctionDef) {
                for (auto &d : s->decorators)
                    if (d && (d->kind == ast::ExprKind::Attribute || d->kind == ast::ExprKind::Name) && d->str == "prim_func")
                        primFunc = true;
                continue;
            }
            if (s->kind == ast::StmtKind::With)
                for (auto &i : s->items)
                    if (i.context && i.context->kind == ast::ExprKind::Call && i.context->a &&
                        i.context->a->kind == ast::ExprKind::Attribute &&
                        (i.context->a->str == "Kernel" || i.context->a->str == "ClusterKernel"))
                        launch = true;
            scan(s->body, depth + 1);
            scan(s->orelse, depth + 1);
        }
    };
    scan(def.body, 0);
    return launch && !primFunc;
}

Value InterpImpl::withPassConfigs(Interp &in, const FunctionObj &f, Value v) {
    if (!v.is(VK::PrimFunc) || !v.kernel || (!f.noTma && !f.noWarpSpecialize && !f.fastMath && !f.noThreadSync && !f.hasOutIdx))
        return v;
    auto k = std::make_shared<ir::Kernel>(*v.kernel);
    k->noTma |= f.noTma;
    k->noWarpSpecialize |= f.noWarpSpecialize;
    k->fastMath |= f.fastMath;
    k->noThreadSync |= f.noThreadSync;
    if (f.hasOutIdx) {
        // TileLang's rule: positions among the prim_func's parameters, negative ones from the end.
        const int64_t n = std::count_if(k->params.begin(), k->params.end(), [](auto &p) { return p.argument(); });
        std::vector<size_t> outputs;
        for (int64_t i : f.outIdx) {
            const int64_t at = i < 0 ? i + n : i;
            if (at < 0 || at >= n)
                in.fail(f.outIdxLoc, "out_idx " + std::to_string(i) + " is out of range: prim_func '" + k->name + "' has " +
                                         std::to_string(n) + " parameters");
            if (k->params[(size_t)at].kind != ir::Param::Tensor)
                in.fail(f.outIdxLoc, "out_idx " + std::to_string(i) + " names scalar parameter '" + k->params[(size_t)at].name() +
                                         "' of prim_func '" + k->name + "': only a tensor can be an output");
            if (std::find(outputs.begin(), outputs.end(), (size_t)at) == outputs.end()) outputs.push_back((size_t)at);
        }
        std::sort(outputs.begin(), outputs.end());
        k->outputs = std::move(outputs);
    }
    v.kernel = k;
    return v;
}

Value InterpImpl::compileJit(const Value &fn, CallArgs &args) {
    auto &f = fn.as<FunctionObj>();
    if (!f.isEager) return callFunction(fn, args); // a factory: .compile(...) is the call
    for (auto &a : args.pos)
        if (a.value.is(VK::Poison)) return a.value;
    for (auto &a : args.kw)
        if (a.second.value.is(VK::Poison)) return a.second.value;
    const ast::Stmt &def = *f.def;
    auto eager = std::make_shared<EagerTrace>();
    std::set<std::string> given;
    size_t positional = 0;
    for (auto &p : def.params) {
        if (p.kind != ast::Param::Normal) continue;
        if (positional++ < args.pos.size()) given.insert(p.name);
    }
    CallArgs bound;
    bound.call = args.call;
    bound.callee = args.callee;
    bound.pos = args.pos;
    for (auto &kw : args.kw) {
        auto p = std::find_if(def.params.begin(), def.params.end(), [&](const ast::Param &x) {
            return x.name == kw.first && (x.kind == ast::Param::Normal || x.kind == ast::Param::KwOnly);
        });
        if (p == def.params.end()) {
            eager->consts[kw.first] = kw.second; // a T.const value (checked once the body has run)
        } else {
            bound.kw.push_back(kw);
            given.insert(kw.first);
        }
    }
    // The tensor (and scalar) parameters: annotated in the body (`A: T.Tensor(...)`) or in the signature with
    // T.Tensor / a dtype. Until declared they are an error where used.
    std::set<std::string> annotated;
    annotatedNames(def.body, annotated);
    std::vector<std::pair<const ast::Param *, Value>> signature;
    for (size_t i = 0; i < def.params.size(); ++i) {
        const ast::Param &p = def.params[i];
        if (given.count(p.name) || f.hasDefault[i] || (p.kind != ast::Param::Normal && p.kind != ast::Param::KwOnly))
            continue;
        if (!annotated.count(p.name) && p.annotation) {
            Restore<std::shared_ptr<Env>> scope(env_, f.closure);
            Value a = eval(*p.annotation);
            if (!a.is(VK::TensorType) && !isPointerAnnotation(a) && !(a.is(VK::DType) && a.dtype != DType::Void)) continue;
            signature.push_back({&p, a});
        } else if (!annotated.count(p.name)) {
            continue; // a missing argument: bindParams says so
        }
        eager->tensorParams.insert(p.name);
        bound.kw.push_back({p.name, {poisonWithMessage("tensor parameter '" + p.name + "' of '" + def.name + "' is used before its annotation ('" +
                                                       p.name + ": T.Tensor(shape, dtype)')"),
                                     p.range}});
    }
    for (auto &p : def.params) eager->params.push_back(p.name);
    auto env = bindParams(f, bound);
    ranFactory_ = true;
    Value v = traceKernel(fn, args.call, env, eager, [&](ir::Kernel &k) {
        for (auto &[p, a] : signature) {
            try {
                declareParam(k, *env_, p->name, a, p->range, p->annotation->range);
            } catch (EvalAbort &) {
                env_->set(p->name, Value::poison());
            }
        }
    });
    return withPassConfigs(*this, f, v);
}

void InterpImpl::declareEagerParam(const ast::Stmt &s) {
    TraceState &t = *trace();
    const ast::Expr &target = *s.targets[0];
    Value a = eval(*s.annotation);
    if (a.is(VK::Poison)) throw EvalAbort{};
    bool declares = a.is(VK::TensorType) || isPointerAnnotation(a) || (a.is(VK::DType) && a.dtype != DType::Void);
    if (!declares) return; // `x: int`: a Python type hint, nothing at compile time
    const std::string fname = t.kernel->name;
    if (target.kind != ast::ExprKind::Name || !t.eager->tensorParams.count(target.str)) {
        std::string name = target.kind == ast::ExprKind::Name ? target.str : "...";
        bool param = std::count(t.eager->params.begin(), t.eager->params.end(), name) > 0;
        fail(target.range, param ? "'" + name + "' is given to " + fname + ".compile(...), so it is not a tensor parameter here"
                                 : "'" + name + "' is not a parameter of '" + fname +
                                       "': an annotation such as '" + name + ": T.Tensor(shape, dtype)' declares one of its parameters");
    }
    if (t.inLaunch) fail(s.range, "parameter '" + target.str + "' must be declared before 'with T.Kernel(...)'");
    for (auto &p : t.kernel->params)
        if (p.name() == target.str)
            failWithNote(target.range, "parameter '" + target.str + "' is declared twice", p.loc, "declared here first");
    declareParam(*t.kernel, *env_, target.str, a, target.range, s.annotation->range);
}

void InterpImpl::finishEager(ir::Kernel &k, const TraceState &t) {
    const EagerTrace &eager = *t.eager;
    for (auto &[var, at] : eager.runtimeConsts)
        if (std::find(k.dynamicSymbols.begin(), k.dynamicSymbols.end(), var) == k.dynamicSymbols.end())
            diag_.error(at, "T.const '" + var->name + "' has no value: give it to " + k.name + ".compile(" + var->name +
                                "=...); a T.const that .compile(...) leaves out is a run-time size, and must then be a "
                                "dimension of a tensor parameter");
    for (auto &[name, arg] : eager.consts)
        if (!eager.constsUsed.count(name))
            diag_.error(arg.range, k.name + ".compile() got an unexpected keyword argument '" + name +
                                       "': it is neither a parameter of '" + k.name + "' nor a T.const it declares");
    // The def's order, then the T.empty outputs in the order they were made.
    auto rank = [&](const ir::Param &p) {
        auto out = std::find(t.outputs.begin(), t.outputs.end(), p.buffer);
        if (p.kind == ir::Param::Tensor && out != t.outputs.end())
            return eager.params.size() + (size_t)(out - t.outputs.begin());
        return (size_t)(std::find(eager.params.begin(), eager.params.end(), p.name()) - eager.params.begin());
    };
    std::stable_sort(k.params.begin(), k.params.end(), [&](auto &a, auto &b) { return rank(a) < rank(b); });
}

} // namespace tilec::eval
