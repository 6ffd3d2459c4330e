/// \file
/// Private to src/eval/: the concrete interpreter. Its methods are spread over topic files:
/// InterpStmt.cpp (statements), InterpAssign.cpp (assignment and unpacking), InterpExpr.cpp (expressions),
/// InterpCall.cpp (calls, argument binding, attributes and methods), InterpTrace.cpp (@T.prim_func
/// tracing: parameters, outputs), InterpTraceFrames.cpp (launch, loops, run-time if), InterpModule.cpp (scopes, imports), Evaluate.cpp (the run:
/// -D, exports, --export, --kernel); Python operators are in Operators.cpp and builtins in PyBuiltins.cpp.
#pragma once

#include "eval/ModuleLoader.h"
#include "tilec/Frontend.h"
#include "tilec/Interp.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tilec::eval {

/// The module an opaque value comes from ("torch" for `torch.float16`), for "which tilec does not
/// evaluate" messages. Stored in Value::obj of VK::Opaque values the interpreter makes.
struct OpaqueObj {
    std::string module;
    /// Where the name it derives from was bound by an import (`from torch import nn`), for messages.
    SourceRange importedAt;
    std::string importedName;
    /// A torch tensor whose shape is known (`torch.randn(m, k, ...)`, and what elementwise arithmetic with
    /// numbers, `.cuda()`, `.half()`, ... make of it): `.shape` answers.
    std::optional<std::vector<int64_t>> shape;
    bool callKeepsShape = false; ///< a shape-keeping method of such a tensor (`x.cuda`): its call has x's shape
};

/// Why a module-level statement was skipped (execModuleStmt); kept in the error values it binds.
struct SkippedStatement {
    int line = 0;
    std::string reason;
};

/// Owns a reference to every tuple, list, dict and scope made while an interpreter runs, so that none is
/// ever freed by a recursive chain of destructors (`x = [x]` a million times would overflow the stack) and
/// the reference cycles Python programs make (a closure stored in its own scope, a list that contains
/// itself) are broken at the end. Unreferenced objects are emptied and freed one by one, newest first.
class ObjectRegistry {
  public:
    ObjectRegistry();
    ~ObjectRegistry();
    ObjectRegistry(const ObjectRegistry &) = delete;
    ObjectRegistry &operator=(const ObjectRegistry &) = delete;
    void add(std::shared_ptr<void> obj, VK kind); ///< kind: Tuple, List, Dict, or Module for an Env
    /// Frees every registered object, referenced or not (the interpreter is done).
    void teardown();

  private:
    struct Entry {
        std::shared_ptr<void> obj;
        VK kind;
    };
    void sweep();
    static void drain(Entry &e, std::vector<Value> &values, std::vector<std::shared_ptr<Env>> &envs);
    std::vector<Entry> objs_;
    size_t nextSweep_ = 4096;
    ObjectRegistry *previous_;
};

// ---- Value helpers (Value.cpp) ----
std::string opaqueModule(const Value &v);
Value makeOpaque(std::string what, std::string module);
/// An opaque value standing for a torch tensor of a known shape (KnownModules.cpp).
Value torchTensor(std::string what, std::vector<int64_t> shape, bool callKeepsShape = false);
/// The known shape of an opaque torch tensor, if any.
const std::vector<int64_t> *torchShape(const Value &v);
/// `x.shape`, `x.size()`, `x.cuda()`, ... of an opaque value: shapes where known, else an opaque value.
Value opaqueAttribute(const Value &base, const std::string &name);
/// An operator with an opaque operand: opaque, with the tensor's shape when the operation keeps it
/// (elementwise with a number or an equal shape; not `@`, not broadcasting).
Value opaqueOperation(const Value &a, const Value &b, bool elementwise);
bool isNumber(const Value &v); ///< Int, Bool or Float
double numberAsDouble(const Value &v);
int64_t intOf(const Value &v); ///< Int or Bool as an integer
/// Python `==` on compile-time values; nullopt when the values nest too deeply to compare. `work` (if
/// given) counts the element comparisons, which the interpreter charges against its step budget.
std::optional<bool> pyEquals(const Value &a, const Value &b, int depth = 0, int64_t *work = nullptr);
bool pyIs(const Value &a, const Value &b);
std::string floatRepr(double d); ///< Python's repr of a float
std::string repr(const Value &v); ///< Python's repr, abbreviated for messages
std::string exactRepr(const Value &v); ///< Python's repr in full (repr(), f-strings), within a list's largest size
std::string str(const Value &v); ///< Python's str()
uint64_t iterateLength(const RangeObj &r); ///< len(range(...)) (InterpExpr.cpp)
/// A new dict / scope, known to the running interpreter's ObjectRegistry.
std::shared_ptr<DictObj> newDict();
std::shared_ptr<Env> newEnv(std::shared_ptr<Env> parent);

// ---- names (Conversions.cpp) ----
/// The candidate closest to `name` within edit distance 2 (and closer than the name's length), or "".
std::string closestName(const std::string &name, const std::vector<std::string> &candidates);
/// "1 dimension" / "3 dimensions".
std::string plural(int64_t n, const std::string &word, const std::string &pluralWord = "");

/// Opens a statement list of a trace for the duration of a scope; take() closes it into one statement.
struct Block {
    TraceState &t;
    bool open = true;
    explicit Block(TraceState &t) : t(t) { t.blocks.emplace_back(); }
    std::vector<ir::Stmt> take() {
        std::vector<ir::Stmt> s = std::move(t.blocks.back());
        t.blocks.pop_back();
        open = false;
        return s;
    }
    ~Block() {
        if (open) t.blocks.pop_back();
    }
};

class InterpImpl;
/// isinstance(v, cls) for a class, one of Python's types (int, str, ...) or a tuple of them (PyBuiltins.cpp).
bool isInstance(InterpImpl &in, const Value &v, const Arg &cls);
/// `base.name`, or `otherwise` when it raises AttributeError (any other error is the program's, reported;
/// InterpClass.cpp).
Value attributeOr(InterpImpl &in, const Value &base, const std::string &name, const SourceRange &at, const Value &otherwise);

/// A module of the user's, by file (InterpImpl::userModules_): made when first imported, run once.
struct LoadedModule {
    Value module;
    enum State { Created, Running, Done } state = Created;
    SourceRange importedAt; ///< the import that ran it
};

// ---- operators (Operators.cpp) ----
/// A value that only exists at run time: an Expr that is not a constant, a point Access (a load), a
/// buffer of scope var (its element).
bool isRuntime(const Value &v);
/// An Expr that is an IntImm/FloatImm becomes the Python number it stands for; other values unchanged.
Value constantOf(const Value &v);
Value binaryOp(InterpImpl &in, ast::BinOpKind op, const Value &a, const Value &b, const SourceRange &r);
Value compareOp(InterpImpl &in, ast::CmpOpKind op, const Value &a, const Value &b, const SourceRange &r);
Value unaryOp(InterpImpl &in, ast::UnaryOpKind op, const Value &a, const SourceRange &r);

// ---- decorators of the tilelang package (InterpModule.cpp, KnownModules.cpp) ----
/// `@tilelang.jit` and `@tilelang.jit(...)`: the function, marked as jit (InterpEager.cpp) with the
/// switches of its pass_configs.
Value jitDecorator();
/// `tilelang.PassConfigKey` (also `tilelang.transform.PassConfigKey`): its members are the key strings.
Value passConfigKeyEnum();
/// `tilelang.compile(prim_func, out_idx=..., pass_configs=...)`: the prim_func, with its pass_configs' switches.
Value tilelangCompile();
/// Whether a jit def is an eager kernel: its body (nested defs apart) opens `with T.Kernel(...)` and it
/// defines no @T.prim_func.
bool isEagerStyle(const ast::Stmt &def);
/// The T.dynamic symbols (Vars) of an expression, appended in order of first appearance (InterpTrace.cpp).
void collectVars(const ir::Expr &e, std::vector<ir::Var> &out, int depth = 0);
/// `@autotune(...)` / `@tilelang.autotune(...)`: its arguments are not evaluated (see execDef).
bool isAutotuneDecorator(const Value &v);

// ---- builtins (PyBuiltins.cpp; object, property, super, getattr, ... in InterpClass.cpp) ----
void addPyBuiltins(Env &env);
void addClassBuiltins(InterpImpl &in, Env &env);
/// Python's exception classes (BaseException, Exception, ValueError, KeyError, ...; InterpExceptions.cpp).
void addExceptionClasses(InterpImpl &in, Env &env);
/// A builtin function (KnownModules.cpp).
Value builtinFunction(const std::string &name, std::function<Value(InterpImpl &, CallArgs &)> fn);
/// The bound method `name` of the str `s` (StrMethods.cpp); nullopt when str has no such method.
std::optional<Value> strMethod(const std::string &s, const std::string &name);
/// A module tilec knows some attributes of; the others are opaque (KnownModules.cpp).
Value partlyKnownModule(const std::string &name, std::map<std::string, Value> attrs);
/// TileLang's pure helper modules (tilelang.language.fp8, tilelang.cuda.intrinsics.sparse_layout and the
/// packages above them; TileLangHelpers.cpp); nullopt for any other name.
std::optional<Value> tileLangHelperModule(InterpImpl &in, const std::string &dotted);
/// The stand-ins for the dataclasses and enum modules (Dataclasses.cpp).
std::optional<Value> dataclassesModule(InterpImpl &in);
std::optional<Value> enumModule(InterpImpl &in);
/// An IntEnum member (or a member of an enum mixed with int, str or float) as its value; v otherwise.
Value plainValue(const Value &v);
/// The name of a value's type for messages: the class of an instance, else typeName.
std::string typeNameOf(const Value &v);
/// An opaque value derived from another (an attribute, a call): the same module and import.
Value deriveOpaque(const Value &from, std::string what);

class InterpImpl final : public Interp {
  public:
    InterpImpl(const FrontendOptions &opts, DiagnosticEngine &diag);
    ~InterpImpl() override;

    DiagnosticEngine &diag() override { return diag_; }
    TraceState *trace() override { return traces_.empty() ? nullptr : traces_.back().get(); }
    void emit(ir::Stmt s) override;
    void step(const SourceRange &r) override {
        if (++steps_ > opts_.stepBudget) budgetExhausted(r);
    }
    int smVersion() const override { return opts_.target.sm; }
    std::string assignTargetName() const override { return assignName_; }

    /// Runs the module and collects its exports (Evaluate.cpp).
    std::optional<ir::Program> run(const ast::Module &m);

    /// Whether this exact error was already reported (an unrolled loop repeats its mistakes).
    bool alreadyReported(const SourceRange &r, const std::string &msg);
    /// Reports an error with a note and abandons the statement.
    [[noreturn]] void failWithNote(const SourceRange &r, const std::string &msg, const SourceRange &noteAt,
                                   const std::string &note);
    /// "'torch.float16' comes from module 'torch', which tilec does not evaluate".
    [[noreturn]] void failOpaque(const Value &v, const SourceRange &r);
    /// An error about what tilec does not evaluate (an opaque value, an unsupported construct, running a
    /// kernel) rather than a mistake Python would report too: a module-level statement that fails with one
    /// is skipped with a warning (execModuleStmt).
    [[noreturn]] void failUnevaluable(const SourceRange &r, const std::string &msg);
    /// An error about a value only known at run time used where a compile-time value is needed.
    [[noreturn]] void failRuntime(const SourceRange &r, const std::string &what);

    // ---- statements (InterpStmt.cpp) ----
    /// Exit: a run-time `break` / `continue` may have happened (its loop's flag is set): what follows in the
    /// loop's body runs only while the flags are clear (InterpLoopExit.cpp).
    enum class Flow { Normal, Break, Continue, Return, Exit };
    Flow execBody(const ast::Body &body);
    Flow exec(const ast::StmtP &sp);
    /// After a statement was abandoned: its assignment targets become `poison` (plain Poison by default; a
    /// message in it names the target as '%s').
    void bindPoison(const ast::Stmt &s, const Value &poison = Value::poison());
    void bindPoisonNested(const ast::Stmt &s, const Value &poison = Value::poison(), int depth = 0);
    /// A statement of the module's own body (not inside a def): one that fails for a reason of its own,
    /// not while tracing a kernel, is skipped with a warning and binds error values instead.
    void execModuleStmt(const ast::StmtP &s);
    Flow execFor(const ast::Stmt &s);
    Flow execWhile(const ast::Stmt &s);

    // ---- break and continue of run-time loops (InterpLoopExit.cpp) ----
    /// `break` / `continue`: of a Python loop, or of a run-time T.serial / T.unroll / while loop, where it sets
    /// the loop's flag (a kernel variable) and the rest of the body runs only while the flags are clear.
    Flow execLoopExit(const ast::Stmt &s);
    /// The statements of `body` from `from` on, after one that may have left the loop: under the guard.
    Flow execGuardedRest(const ast::Body &body, size_t from, const SourceRange &at);
    /// A run-time loop's body with its flags applied: skipped once `break` ran, `continue`'s flag cleared
    /// first; `init` receives the statement that clears the break flag before the loop (or stays null).
    ir::Stmt applyLoopExits(ir::Stmt body, ir::Stmt &init, const SourceRange &at);
    /// Whether `break` / `continue` may leave the innermost run-time loop, and its flags once they do.
    struct LoopExit {
        std::string loop; ///< "T.Parallel", ... for the message; empty: it may be left
        ir::Buffer brk, cont;
    };
    /// Pushes a run-time loop's LoopExit on the current frame for the duration of a scope.
    struct LoopExitScope {
        InterpImpl &in;
        LoopExitScope(InterpImpl &in, std::string refusal);
        ~LoopExitScope();
    };

    // ---- assignment (InterpAssign.cpp) ----
    /// Binds `v` to an assignment target. `assignStmt`: from `NAME = ...` (where -D overrides apply).
    void assign(const ast::Expr &target, const Value &v, bool assignStmt);
    void bindName(const std::string &name, const Value &v, const SourceRange &at, bool assignStmt);
    void execAssign(const ast::Stmt &s);
    void execAugAssign(const ast::Stmt &s);
    /// `buf[...] = v` / `buf[...] op= v`: a Store (InterpAssign.cpp).
    void storeToBuffer(const ir::Buffer &b, const ast::Expr &index, const Value &v, const SourceRange &at,
                       std::optional<ast::BinOpKind> augOp);
    void storeReinterpreted(const ir::Buffer &base, const ir::Buffer &view, const ast::Expr &index, const Value &v,
                            const SourceRange &at, std::optional<ast::BinOpKind> augOp);
    /// Store into element 0 of a buffer of scope var.
    void storeToVar(const ir::Buffer &b, const Value &v, const SourceRange &at);

    // ---- run-time bindings (InterpBindings.cpp) ----
    /// bindName inside a prim_func: stores into a kernel variable the name is bound to, or materializes a
    /// value that reads a buffer into a new one. False when the name is simply (re)bound.
    bool bindRuntime(const std::string &name, const Value &v, const SourceRange &at);
    /// After the branches of a run-time if (env_ holds the else branch's bindings, `thenVars` the then
    /// branch's): each name the branches bind differently becomes a select, a kernel variable stored in both
    /// branches (appended to their statements), or an error value.
    void mergeIfBindings(const std::map<std::string, Value> &thenVars, std::vector<ir::Stmt> &thenStmts,
                         std::vector<ir::Stmt> &elseStmts, const ir::Expr &cond, const SourceRange &at);
    /// After a run-time loop: names it rebound to values of its variables (loopVars_ from firstLoopVar on)
    /// become error values.
    void checkLoopBindings(const std::map<std::string, Value> &before, size_t firstLoopVar,
                           const std::vector<std::string> &loopNames);
    /// After a run-time while loop: names it rebound to run-time values become error values (the value after
    /// the loop is the last iteration's, which the traced expressions do not give).
    void checkWhileBindings(const std::map<std::string, Value> &before);
    /// A kernel variable (scope var) the compiler makes for a name, recorded in materialized_.
    ir::Buffer newKernelVar(const std::string &name, DType t, const SourceRange &at);
    /// `e` with each load that does not depend on `loopVar` kept in a new kernel variable set here (before the loop).
    ir::Expr keepLoads(const ir::Expr &e, const ir::VarNode *loopVar, const SourceRange &at);
    /// The extent `hi - lo` of a buffer slice; a constant when the kernel variables in it, replaced by the
    /// values they were made with (varDefs_), make it one.
    ir::Expr sliceExtent(const ir::Expr &lo, const ir::Expr &hi, const SourceRange &at);
    /// `b` is stored again: its value and those of the variables made from it no longer stand for them.
    void forgetVarDef(const ir::Buffer &b);
    /// Unpacking `a, b = b, a + b`: Python evaluates the whole right side before binding a target, so an item
    /// that reads a kernel variable one of the targets `t` stores into is taken into a new one first.
    void takeUnpackedValues(const ast::Expr &t, std::vector<Value> &items, const SourceRange &at);
    /// Before a run-time loop: names its body assigns that hold a scalar already are moved into kernel
    /// variables, so that reads in the body see the value the previous iteration left (loop-carried values).
    void materializeLoopCarried(const ast::Body &body, const std::vector<std::string> &loopNames,
                                const SourceRange &at);
    /// Poison that reports `msg` where a name bound to it is used (lookupName).
    static Value poisonWithMessage(std::string msg);

    // ---- expressions (InterpExpr.cpp) ----
    Value eval(const ast::Expr &e);
    Value lookupName(const ast::Expr &e);
    /// `buf[...]`: an Access; checks the number of indices.
    Value bufferAccess(const ir::Buffer &b, const ast::Expr &index, const SourceRange &at, bool throughViews = true);
    Value subscript(const Value &base, const ast::Expr &e);
    /// `base[key]` for a computed key (sequences, dicts); `at` locates errors.
    Value getItem(const Value &base, const Value &key, const SourceRange &at);
    /// `base[key] = v` for lists and dicts.
    void setItem(const Value &base, const Value &key, const Value &v, const SourceRange &at);
    /// Python truthiness of a compile-time value; `what` names the use in errors ("condition").
    bool truthy(const Value &v, const SourceRange &r, const char *what = "condition");
    /// The elements a for loop / unpacking / list() sees (ranges are expanded, within a size limit).
    std::vector<Value> iterate(const Value &v, const SourceRange &r);
    /// A run-time value as an IR expression (Expr, point Access, var buffer); Python numbers adopt
    /// `like`'s float type when they are floats.
    ir::Expr runtimeExpr(const Value &v, const SourceRange &r, const ir::Expr &like = nullptr);
    /// An operand of a run-time arithmetic operation or select whose other operand is `other`, as TVM types
    /// it: a Python float is a float32 constant (float64 next to a float64), so a 16- or 8-bit float operand
    /// widens to float32 (`Q_bf16 * 0.0884` is float32 math, its constant not rounded to bfloat16).
    ir::Expr operandExpr(const Value &v, const SourceRange &r, const ir::Expr &other);

    // ---- comprehensions, sets and lambdas (InterpComprehension.cpp) ----
    /// A ListComp/SetComp/DictComp/GeneratorExp, evaluated eagerly in a scope of its own.
    Value evalComprehension(const ast::Expr &e);

    // ---- f-strings and format() (Format.cpp) ----
    Value evalJoinedStr(const ast::Expr &e);
    /// format(v, spec): Python's format mini-language for str/int/bool/float, a class's __format__.
    Value format(const Value &v, const std::string &spec, const SourceRange &at);
    /// str(v) ('s'), repr(v) ('r') or ascii(v) ('a'), with a class's own __str__ / __repr__.
    Value strOf(const Value &v, char conversion, const SourceRange &at);
    /// `fmt.format(*args, **kwargs)`: fields by position, number or name, with .attr and [key].
    Value strFormat(const std::string &fmt, CallArgs &a);
    Value containerRepr(const Value &v, const SourceRange &at);
    std::vector<const void *> reprShown_; ///< the containers containerRepr is showing (a cycle shows as [...])
    Value callUserMethod(const Value &v, const std::string &name, std::vector<Value> args, const SourceRange &at);
    /// A set: the distinct elements in order of first appearance, as a tuple (sets are not a value kind).
    Value makeSet(std::vector<Value> elts, const SourceRange &r);

    // ---- calls and attributes (InterpCall.cpp) ----
    Value evalCall(const ast::Expr &e);
    Value callValue(const Value &callee, CallArgs &args) override;
    Value callFunction(const Value &fn, CallArgs &args);
    Value attribute(const Value &base, const std::string &name, const ast::Expr &e);
    void execDef(const ast::StmtP &s);
    /// `@dec` applied to `v` (a def's function or a class): the call's result; a decorator of a module tilec
    /// does not evaluate leaves `v` as it is.
    Value applyDecorator(const Value &dec, const SourceRange &decAt, const Value &v, const SourceRange &at);
    /// The function a def or lambda makes: its defaults evaluated now, its closure the current scope.
    Value makeFunction(const ast::StmtP &def);
    /// Binds a call's arguments to a user function's parameters in a new scope.
    std::shared_ptr<Env> bindParams(const FunctionObj &f, CallArgs &args);

    // ---- tracing (InterpTrace.cpp) ----
    /// Traces a @T.prim_func. A trace that fails gives a prim_func value without a kernel that holds its
    /// diagnostics (in `obj`): they are reported when it is exported (reportIfFailed).
    Value tracePrimFunc(const Value &fn, const SourceRange &at);
    /// Traces a function's body as a kernel: `params` declares the parameters (inside the trace), `env` is
    /// the scope the body runs in, `eager` is set for an eager kernel (InterpEager.cpp).
    Value traceKernel(const Value &fn, const SourceRange &at, std::shared_ptr<Env> env,
                      std::shared_ptr<EagerTrace> eager, const std::function<void(ir::Kernel &)> &params);
    /// A parameter of kernel `k` from its annotation (T.Tensor(...) or a scalar dtype), bound in `env`.
    void declareSubByteParam(ir::Kernel &k, Env &env, const std::string &name, const TensorTypeObj &ty,
                             const SourceRange &at, const SourceRange &annotationAt);
    void declareParam(ir::Kernel &k, Env &env, const std::string &name, const Value &annotation,
                      const SourceRange &at, const SourceRange &annotationAt);
    /// After a kernel's body: what it returns must be exactly its T.empty outputs (an eager kernel may
    /// also return nothing when it makes none).
    void checkReturnedOutputs(const TraceState &t, bool eager);
    /// After the body: workspaces last among the parameters, the T.dynamic symbols (checked for workspace shapes).
    void finishParams(TraceState &t);
    /// A launch that uses a tensor and a view of it (or two views of one tensor): a located error.
    void checkViews(const ir::Kernel &k);
    /// A launch of several that uses shared memory, a fragment or a local another launch allocated: a
    /// located error (InterpLaunches.cpp, with checkViews and shareParams).
    void checkLaunchLocals(const ir::Kernel &k);
    /// Several launches: each gets the last one's parameters and its part number (views checked first).
    void shareParams(TraceState &t);
    /// For a failed prim_func: reports its held diagnostics and makes `v` Poison; true when it was one.
    bool reportIfFailed(Value &v);
    // the statements of a trace (InterpTraceFrames.cpp; execAttr in InterpStmt.cpp)
    Flow execWith(const ast::Stmt &s);
    Flow execLaunch(const ast::Stmt &s, const ast::WithItem &item, const FrameObj &f);
    Flow execWarpGroup(const ast::Stmt &s, const FrameObj &f);
    /// `with T.attr(reducer, "reduce_scope", ...)`: the body with the reducer open for T.tvm_thread_allreduce.
    Flow execAttr(const ast::Stmt &s, const ast::WithItem &item, const FrameObj &f);
    Flow execLoopNest(const ast::Stmt &s, const FrameObj &f);
    Flow execRuntimeIf(const ast::Stmt &s, const ir::Expr &cond);
    /// A `while` whose condition is a run-time value: one ir::While, its body traced once.
    Flow execRuntimeWhile(const ast::Stmt &s);
    /// The enclosing trace inside `with T.Kernel(...)`; an error naming `what` otherwise.
    TraceState &requireLaunch(const SourceRange &r, const std::string &what);

    // ---- jit functions and eager kernels (InterpEager.cpp) ----
    /// `f.compile(...)` of a jit function: an eager kernel is traced with the arguments (keywords that are
    /// not parameters are its T.const values); a factory is called.
    Value compileJit(const Value &fn, CallArgs &args);
    /// `A: T.Tensor(shape, dtype)` in an eager kernel's body: declares parameter A.
    void declareEagerParam(const ast::Stmt &s);
    /// After an eager kernel's body: T.const values checked, the parameters put in the def's order.
    void finishEager(ir::Kernel &k, const TraceState &t);
    /// A kernel `f` made (a prim_func), with the per-kernel switches of f's pass_configs and its out_idx
    /// (ir::Kernel::outputs; an index out of range is an error at the out_idx argument).
    static Value withPassConfigs(Interp &in, const FunctionObj &f, Value v);

    // ---- scopes and imports (InterpModule.cpp) ----
    void execImport(const ast::Stmt &s);
    /// A module by its absolute dotted name: tilec's stand-in, else the user's file (a package's __init__.py
    /// runs now only when `runPackage`), else an opaque module.
    Value importModule(const std::string &dotted, const SourceRange &at = {}, bool runPackage = true);
    /// The stand-ins for math, itertools, tilelang's helpers, tvm, torch, dataclasses and enum
    /// (KnownModules.cpp); nullopt for a module tilec knows nothing of.
    std::optional<Value> knownModule(const std::string &dotted);
    /// The user's module `dotted` found on the search roots (its packages made on the way), or nullopt.
    std::optional<Value> userModule(const std::string &dotted, const SourceRange &at, bool runPackage);
    /// The module of file `mf`, made once per file and run when first needed.
    Value loadModule(const std::string &name, const ModuleFile &mf, const SourceRange &at, bool runPackage);
    void runModule(LoadedModule &lm, const SourceRange &at);
    /// Runs a package's __init__.py if it has not run yet.
    void runPackage(const Value &pkg, const SourceRange &at);
    bool isRunning(const ModuleObj &m);
    /// `name` of a user module: its global, else (a package) its submodule; nullopt when neither.
    std::optional<Value> userModuleName(const Value &mod, const std::string &name, const SourceRange &at);
    /// "cannot import name ..." / "module ... has no attribute ...", the import cycle noted when there is one.
    [[noreturn]] void failMissingName(const ModuleObj &m, const std::string &name, const SourceRange &at,
                                      bool fromImport);
    void importStar(const Value &m, const SourceRange &at);
    /// An undefined name in a module that did `from OPAQUE import *`: an opaque value of that module.
    std::optional<Value> opaqueStarName(const std::string &name);
    /// The global scope of the module whose code runs now, and one of its string globals ("" if none).
    Env &moduleScope();
    std::string moduleVar(const char *name);

    // ---- exceptions (InterpExceptions.cpp) ----
    /// try / except / else / finally: an exception raised in the body (a `raise`, or an error Python raises
    /// too: a missing key, attribute or name, a bad index or value) is caught by a matching handler, its
    /// diagnostics dropped; tilec's own limits are never caught (they are not exceptions in Python).
    Flow execTry(const ast::Stmt &s);
    // ---- match statements (InterpMatch.cpp)
    Flow execMatch(const ast::Stmt &s);
    bool matchPattern(const ast::Pattern &p, const Value &v, std::vector<std::pair<std::string, Value>> &binds, int depth);
    bool matchClass(const ast::Pattern &p, const Value &v, std::vector<std::pair<std::string, Value>> &binds, int depth);
    void execRaise(const ast::Stmt &s);
    /// Reports an error that is Python exception `type` (KeyError, AttributeError, ...) and abandons the
    /// statement: an enclosing try may catch it. `exc`: the exception object (None: made from the message).
    [[noreturn]] void failPython(const char *type, const SourceRange &r, const std::string &msg, const Value &exc = Value::none());
    std::string pyErrorType_; ///< the Python exception of the error being reported ("": not one)
    Value pyErrorValue_;
    Value handling_;          ///< the exception an except clause handles (a bare `raise` re-raises it)
    int tryDepth_ = 0;

    // ---- classes (InterpClass.cpp, Dataclasses.cpp) ----
    void execClass(const ast::StmtP &s);
    /// Calling a class: an instance (its __init__ run), or an enum's member by value.
    Value callClass(const Value &cls, CallArgs &args);
    /// Attribute of a class or instance (bound methods, properties, class and static methods).
    Value classAttribute(const Value &base, const std::string &name, const SourceRange &at);
    /// `obj.name = v` on an instance or a class (a frozen dataclass refuses).
    void setAttribute(const Value &base, const std::string &name, const Value &v, const SourceRange &at);
    /// `@dataclass` / `@dataclass(frozen=True, ...)` applied to a class.
    Value makeDataclass(const Value &cls, CallArgs &options, const SourceRange &at);
    /// After an enum class's body: its members.
    void makeEnumMembers(ClassObj &c, const SourceRange &at);
    /// The class being built by the innermost `class` statement (its body binds into its namespace).
    std::shared_ptr<ClassObj> classBuild_;
    /// Python's own classes (object, property, staticmethod, classmethod, super, Enum, auto, Field), made once.
    std::shared_ptr<ClassObj> builtinClass(ClassObj::Builtin which);
    std::map<int, std::shared_ptr<ClassObj>> builtinClasses_;
    /// attribute() where no expression names the base (getattr, hasattr).
    Value attributeOf(const Value &base, const std::string &name, const SourceRange &at);

    /// The expression, or an error when it nests deeper than later passes may recurse.
    const ir::Expr &checkedHeight(const ir::Expr &e, const SourceRange &r);
    int heightOf(const ir::Expr &e, int depth);
    static constexpr int kMaxExprHeight = 1000;
    static constexpr int64_t kAbortSteps = 100; ///< what an abandoned statement costs from the budget
    /// Charges work proportional to a size (copying, scanning) against the step budget, so that no
    /// statement does unbounded work for one step.
    void charge(int64_t elements) {
        work_ += elements;
        if (work_ < 8) return;
        steps_ += work_ / 8;
        work_ %= 8;
        if (steps_ > opts_.stepBudget) budgetExhausted(curStmt_ ? curStmt_->range : SourceRange{});
    }
    /// pyEquals, charged; values too deep to compare are unequal.
    bool equal(const Value &a, const Value &b) {
        int64_t work = 0;
        auto r = pyEquals(a, b, 0, &work);
        charge(work);
        return r && *r;
    }

    // ---- state ----
    ObjectRegistry registry_; ///< first member: destroyed last, after the scopes it empties
    /// Per call (and one for the module): the enclosing compile-time loops ('L'), run-time loops ('R') and
    /// run-time ifs ('I'), innermost last, to reject break/continue/return that cannot be traced.
    struct CallFrame {
        std::vector<char> ctl;
        std::vector<LoopExit> exits; ///< one per 'R' in ctl, in the same order
        Value ret;
        SourceRange retAt; ///< the `return` statement that set ret
        bool isModule = false;
        const ast::Body *moduleBody = nullptr; ///< a module's frame: its top-level statements
        /// A method's call: the class that defined it and its first argument (for a zero-argument super()).
        std::shared_ptr<ClassObj> methodClass;
        Value methodSelf;
    };

    const FrontendOptions &opts_;
    DiagnosticEngine &diag_;
    std::shared_ptr<Env> builtins_, module_, env_;
    /// A deque: a loop's CtlScope keeps a reference to its frame's markers while calls push more frames.
    std::deque<CallFrame> frames_;
    std::vector<std::unique_ptr<TraceState>> traces_;
    int64_t steps_ = 0;
    int64_t work_ = 0; ///< charged work not yet converted into steps
    std::string assignName_;
    const ast::Stmt *curStmt_ = nullptr, *curLoop_ = nullptr;
    int nesting_ = 0;
    const char *stackBase_ = nullptr;
    size_t stackLimit_ = 0;
    Value tlModule_;
    std::map<std::string, Value> knownModules_; ///< by dotted name, made on first import
    std::map<std::string, LoadedModule> userModules_; ///< by canonical path of the file (or namespace folder)
    std::vector<std::pair<std::string, SourceRange>> importChain_; ///< modules running, with the import that ran each
    std::vector<std::string> roots_; ///< where absolute imports look: the main file's root, -I, TILEC_PATH
    std::vector<std::shared_ptr<ast::Module>> moduleAsts_;
    std::map<const Env *, std::vector<std::pair<std::string, SourceRange>>> opaqueStars_; ///< `from OPAQUE import *`
    std::map<std::string, Value> defines_; ///< -D values by name
    /// Module-level names in order of first assignment, with the range of their latest assignment.
    std::vector<std::string> moduleOrder_;
    std::map<std::string, SourceRange> moduleAssignLoc_;
    std::set<std::tuple<int, int, int, std::string>> reported_;
    std::set<std::tuple<int, int, int, std::string>> unevaluable_; ///< errors made by failUnevaluable
    /// Heights of recently checked expressions (holding them), so chains built in a loop cost O(1) each.
    std::unordered_map<const ir::ExprNode *, std::pair<ir::Expr, int>> heights_;
    std::deque<const ir::ExprNode *> heightOrder_;
    /// Kernel variables made for plain names (not T.alloc_var): they copy on `y = x` and keep their type.
    std::set<ir::Buffer> materialized_;
    /// The value each of those was made with, while it is the only one ever stored into it (storeToVar
    /// forgets it): `right = left + 64` lets X[left:right] have the extent 64 (sliceExtent).
    std::map<ir::Buffer, ir::Expr> varDefs_;
    bool kernelErrorHeld_ = false; ///< a failed prim_func's errors were reported (execModuleStmt)
    int64_t abandoned_ = 0;        ///< statements abandoned so far (execBody)
    bool ranFactory_ = false;      ///< a kernel factory was called (execModuleStmt)
    /// The defs of kernel factories (FunctionObj::isFactory) a call of which returned None, in call order: the
    /// notes of "file exports no kernel" (Evaluate.cpp).
    std::vector<const ast::Stmt *> factoriesReturningNone_;
    /// The last use of a name bound by a skipped module-level statement: where, and that statement.
    std::shared_ptr<SkippedStatement> lastPoisonCause_;
    SourceRange lastPoisonUse_;
    /// Variables of the run-time loops being traced, outermost first.
    std::vector<ir::Var> loopVars_;

    /// Counts nesting of statements/expressions/calls and guards the native stack.
    struct Nest {
        InterpImpl &in;
        Nest(InterpImpl &in, const SourceRange &r);
        ~Nest() { --in.nesting_; }
    };

  private:
    [[noreturn]] void budgetExhausted(const SourceRange &r);
};

/// Restores a variable on scope exit (exceptions included).
template <class T> struct Restore {
    T &ref;
    T saved;
    explicit Restore(T &r) : ref(r), saved(r) {}
    Restore(T &r, T v) : ref(r), saved(r) { ref = std::move(v); }
    ~Restore() { ref = std::move(saved); }
    Restore(const Restore &) = delete;
    Restore &operator=(const Restore &) = delete;
};

} // namespace tilec::eval
