/// \file
/// The statements a traced `@T.prim_func` turns into IR: `with` frames (the launch `with T.Kernel(...) as (bx,
/// by)`, T.ws warp groups), loop nests from loop frames, and `if` / `while` on run-time conditions; and the
/// emission of tile statements into the launch's current block. The prim_func, its parameters and the kernel
/// they make are traced in InterpTrace.cpp.
#include "eval/InterpImpl.h"
#include "eval/TileLang.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"

#include <algorithm>

namespace tilec::eval {

namespace {
constexpr size_t kMaxLaunches = 256; ///< T.Kernel launches one prim_func may open

const char *loopName(ir::ForKind k) {
    switch (k) {
    case ir::ForKind::Serial: return "T.serial";
    case ir::ForKind::Parallel: return "T.Parallel";
    case ir::ForKind::Pipelined: return "T.Pipelined";
    case ir::ForKind::Unrolled: return "T.unroll";
    case ir::ForKind::Vectorized: return "T.vectorized";
    case ir::ForKind::Persistent: return "T.Persistent";
    }
    return "loop";
}

std::string describe(const ir::Stmt &s) {
    switch (s->kind) {
    case ir::NodeKind::Copy: return "T.copy";
    case ir::NodeKind::Fill: return "T.fill";
    case ir::NodeKind::Gemm: return "T.gemm";
    case ir::NodeKind::Reduce: return std::string("T.reduce_") + ir::toString(ir::as<ir::Reduce>(s)->reduceKind);
    case ir::NodeKind::AtomicAdd: return "T.atomic_add";
    case ir::NodeKind::Store: return "a store to buffer '" + ir::as<ir::Store>(s)->buffer->name + "'";
    case ir::NodeKind::For: return loopName(ir::as<ir::For>(s)->forKind);
    case ir::NodeKind::IfThenElse: return "an 'if' on a run-time condition";
    case ir::NodeKind::While: return "a 'while' loop on a run-time condition";
    default: return "this statement";
    }
}

} // namespace

void InterpImpl::emit(ir::Stmt s) {
    TILEC_ASSERT(s, "emit of a null statement");
    TraceState *t = trace();
    if (!t) fail(s->loc, describe(s) + " can only be used inside a @T.prim_func");
    if (!t->inLaunch || t->blocks.empty()) fail(s->loc, describe(s) + " must be inside 'with T.Kernel(...)'");
    tl::noteViews(*this, *t, s);
    t->blocks.back().push_back(std::move(s));
}

TraceState &InterpImpl::requireLaunch(const SourceRange &r, const std::string &what) {
    TraceState *t = trace();
    if (!t) fail(r, what + " can only be used inside a @T.prim_func");
    if (!t->inLaunch) fail(r, what + " must be inside 'with T.Kernel(...)'");
    return *t;
}

InterpImpl::Flow InterpImpl::execWith(const ast::Stmt &s) {
    if (s.items.empty()) fail(s.range, "'with' needs a context");
    if (s.items.size() > 1) {
        // `with A as a, B as b:` is `with A as a:` around `with B as b:`, as Python nests them.
        auto inner = std::make_shared<ast::Stmt>(s);
        inner->items.erase(inner->items.begin());
        if (inner->items.front().context) inner->range = SourceRange::span(inner->items.front().context->range, s.range);
        ast::Stmt outer = s;
        outer.items.resize(1);
        outer.body = {inner};
        return execWith(outer);
    }
    const ast::WithItem &item = s.items[0];
    Value c = eval(*item.context);
    if (c.is(VK::Poison)) throw EvalAbort{};
    if (c.is(VK::Frame)) {
        auto &f = c.as<FrameObj>();
        if (f.kind == FrameObj::Kernel) return execLaunch(s, item, f);
        if (f.kind == FrameObj::Attr) return execAttr(s, item, f);
        if (f.kind == FrameObj::WarpGroup) {
            if (item.target) fail(item.target->range, "T.ws binds no name ('with T.ws(g):')");
            return execWarpGroup(s, f);
        }
        fail(item.context->range, std::string(loopName(f.forKind)) + " is used with 'for', not 'with'");
    }
    if (c.is(VK::Opaque)) {
        // e.g. `with torch.no_grad():` in test code: the body still runs.
        if (item.target) assign(*item.target, c, false);
        return execBody(s.body);
    }
    fail(item.context->range, std::string("'with' needs T.Kernel(...) here, not a ") + typeName(c.kind));
}

InterpImpl::Flow InterpImpl::execWarpGroup(const ast::Stmt &s, const FrameObj &f) {
    TraceState *t = trace();
    TILEC_ASSERT(t && t->inLaunch, "a T.ws frame outside T.Kernel");
    Flow flow = Flow::Normal;
    std::vector<ir::Stmt> body;
    {
        Block block(*t);
        flow = execBody(s.body);
        body = block.take();
    }
    // The block's code, under the condition lowerWarpRoles recognises (and removes).
    ir::Expr group = passes::lib::call(passes::lib::Fn::WarpGroup, {ir::intImm(f.warpGroup)}, f.range, DType::Bool);
    emit(ir::IfThenElse::make(group, ir::Seq::make(std::move(body), f.range), nullptr, f.range));
    return flow;
}

InterpImpl::Flow InterpImpl::execLaunch(const ast::Stmt &s, const ast::WithItem &item, const FrameObj &f) {
    TraceState *t = trace();
    if (!t) fail(f.range, "T.Kernel can only be used inside a @T.prim_func");
    if (t->inLaunch) fail(f.range, "T.Kernel cannot be nested inside another T.Kernel");
    if (t->kernel->launchLoc.valid()) {
        // A later launch of the prim_func (split-KV decoding's combine step): a kernel of its own with the same
        // parameters, run after the earlier ones. Far fewer than the cap in any program; it keeps a T.Kernel in
        // an endless loop from tracing launches until the step budget (the crash fuzzer's 10-s timeouts: each
        // launch is a kernel's IR kept to the end), so evaluation stops there, as at the step budget.
        if (t->launches.size() + 1 >= kMaxLaunches) {
            diag_.error(f.range, "the prim_func opens more than " + std::to_string(kMaxLaunches) +
                                     " T.Kernel launches (a launch inside a long or endless loop?)");
            throw BudgetExhausted{};
        }
        const ir::Kernel &prev = *t->kernel;
        auto next = std::make_shared<ir::Kernel>();
        next->name = prev.name;
        next->loc = prev.loc;
        next->funcLoc = prev.funcLoc;
        next->params = prev.params;
        next->tensorLayouts = t->paramLayouts;
        next->threadIdx = ir::makeVar("tx", DType::Int32, f.range);
        next->importedSources = prev.importedSources; // a T.Kernel's prelude went to the kernel traced so far
        t->launches.push_back(t->kernel);
        t->kernel = next;
    }
    ir::Kernel &k = *t->kernel;
    size_t n = f.grid.size();
    TILEC_ASSERT(n <= 3, "T.Kernel frame with a bad grid");

    static const char *axis[] = {"bx", "by", "bz"};
    std::vector<std::string> names = {axis[0], axis[1], axis[2]};
    std::vector<SourceRange> locs(3, f.range);
    const ast::Expr *target = item.target.get();
    if (target) {
        if (target->kind == ast::ExprKind::Name) {
            if (n == 1) {
                names[0] = target->str;
                locs[0] = target->range;
            }
        } else if (target->kind == ast::ExprKind::Tuple || target->kind == ast::ExprKind::List) {
            if (target->elts.size() != n)
                fail(target->range, "T.Kernel has " + plural((int64_t)n, "grid dimension") + " but " +
                                        plural((int64_t)target->elts.size(), "block index", "block indices") +
                                        (target->elts.size() == 1 ? " is" : " are") + " named");
            for (size_t i = 0; i < n; ++i) {
                if (target->elts[i]->kind != ast::ExprKind::Name)
                    fail(target->elts[i]->range, "a block index must be bound to a plain name");
                names[i] = target->elts[i]->str;
                locs[i] = target->elts[i]->range;
            }
        } else {
            fail(target->range, "the block indices of T.Kernel must be bound to names");
        }
    }
    for (size_t i = 0; i < 3; ++i) {
        k.blockIdx[i] = ir::makeVar(names[i], DType::Int32, locs[i]);
        k.grid[i] = i < n ? f.grid[i] : ir::intImm(1);
    }
    k.gridDims = std::max(1, (int)n); // T.Kernel() launches one block: a 1-D grid of 1
    k.threads = f.threads;
    k.clusterDims = f.clusterDims;
    k.clusterLoc = f.clusterLoc;
    trace()->threadDims = f.threadDims;
    k.launchLoc = f.range;
    const std::array<ir::Expr, 3> coords = tl::foldGrid(*this, k, f.range);
    for (size_t i = 0; i < 3; ++i) t->blockCoords[i] = coords[i];
    if (target) {
        if (target->kind == ast::ExprKind::Name) {
            std::vector<Value> idx;
            for (size_t i = 0; i < n; ++i) idx.push_back(Value::ofExpr(coords[i]));
            // TileLang's frame gives its list of block indices (empty for T.Kernel()), one alone as itself
            bindName(target->str, n == 1 ? idx[0] : n == 0 ? Value::list(idx) : Value::tuple(idx), target->range, false);
        } else {
            for (size_t i = 0; i < n; ++i)
                bindName(target->elts[i]->str, Value::ofExpr(coords[i]), target->elts[i]->range, false);
        }
    }

    Restore<bool> launched(t->inLaunch, true);
    Block block(*t);
    Flow flow = execBody(s.body);
    k.body = ir::Seq::make(block.take(), f.range);
    return flow;
}

ir::Expr InterpImpl::keepLoads(const ir::Expr &e, const ir::VarNode *loopVar, const SourceRange &at) {
    struct Keep : ir::IRMutator {
        using ir::IRMutator::visit;
        InterpImpl *in = nullptr;
        const ir::VarNode *loopVar = nullptr;
        SourceRange at;
        ir::Expr visit(const std::shared_ptr<const ir::Load> &op) override {
            if (ir::uses(ir::Expr(op), loopVar)) return ir::IRMutator::visit(op);
            ir::Buffer b = in->newKernelVar("start", op->dtype, at);
            in->emit(ir::Store::make(b, {ir::intImm(0)}, op, at));
            return ir::Load::make(b, {ir::intImm(0)}, op->loc);
        }
    } keep;
    keep.in = this, keep.loopVar = loopVar, keep.at = at;
    return keep.mutate(e);
}

InterpImpl::Flow InterpImpl::execLoopNest(const ast::Stmt &s, const FrameObj &f) {
    std::string what = f.loopVar && f.guard ? "T.Persistent" : loopName(f.forKind); // (a stepped T.serial has no guard)
    TraceState &t = requireLaunch(s.value->range, "a " + what + " loop");
    if (s.targets.empty() || !s.targets[0]) fail(s.range, "malformed for statement");
    const ast::Expr &target = *s.targets[0];
    std::vector<const ast::Expr *> names;
    if (target.kind == ast::ExprKind::Name) {
        names.push_back(&target);
    } else if (target.kind == ast::ExprKind::Tuple || target.kind == ast::ExprKind::List) {
        for (auto &e : target.elts) {
            if (e->kind != ast::ExprKind::Name) fail(e->range, "a loop variable must be a plain name");
            names.push_back(e.get());
        }
    } else {
        fail(target.range, "a loop variable must be a plain name");
    }
    bool persistent = f.loopVar != nullptr; // T.Persistent (and a stepped T.serial): the targets are coordinates
    size_t n = persistent ? f.coords.size() : f.extents.size();
    if (names.size() != n)
        fail(target.range, what + " makes " + plural((int64_t)n, "loop") + " but " +
                               plural((int64_t)names.size(), "loop variable") +
                               (names.size() == 1 ? " is" : " are") + " named");
    if (!s.orelse.empty()) fail(s.range, "'else' after a " + what + " loop is not supported");

    // Sequential loops carry values from one iteration to the next; T.Parallel/T.vectorized iterations are
    // unordered, so nothing is carried there.
    if (f.forKind == ir::ForKind::Serial || f.forKind == ir::ForKind::Unrolled || f.forKind == ir::ForKind::Pipelined) {
        std::vector<std::string> targetNames;
        for (auto *e : names) targetNames.push_back(e->str);
        materializeLoopCarried(s.body, targetNames, s.range);
    }
    std::map<std::string, Value> before = env_->vars;
    charge((int64_t)before.size());
    size_t firstLoopVar = loopVars_.size();
    struct VarsPop {
        std::vector<ir::Var> &vars;
        size_t n;
        ~VarsPop() { vars.resize(n); }
    } varsPop{loopVars_, firstLoopVar};
    std::vector<ir::Var> vars;
    std::vector<std::string> loopNames;
    if (persistent) {
        vars.push_back(f.loopVar);
        loopVars_.push_back(f.loopVar);
    }
    for (size_t i = 0; i < names.size(); ++i) {
        const ast::Expr *e = names[i];
        if (!persistent) {
            vars.push_back(ir::makeVar(e->str, DType::Int32, e->range));
            loopVars_.push_back(vars.back());
        }
        loopNames.push_back(e->str);
        // A stepped T.serial binds its name to start + i * step, start evaluated once before the loop: what
        // start reads (an alloc_var, a tensor element) is kept now, so the name stays an expression of the
        // loop variable (taken as a value read from memory, it was kept in a variable set once before the
        // loop, outside its variable's scope: TileKernels' MoE routing, `T.serial(start + lane, end, 32)`).
        if (persistent && !f.guard) {
            env_->set(e->str, Value::ofExpr(keepLoads(f.coords[i], f.loopVar.get(), e->range)));
            continue;
        }
        // A run-time loop's variable is a new binding of its name, never a store into the kernel variable the
        // name held (a value an enclosing loop carries, or a T.alloc_var): that store would sit before the
        // loop, outside its variable's scope, and the body would read the kernel variable instead.
        Value lv = Value::ofExpr(persistent ? f.coords[i] : vars.back());
        if (auto it = env_->vars.find(e->str); it != env_->vars.end() && it->second.is(VK::Buffer) &&
            it->second.buffer->scope == ir::Scope::Var)
            env_->set(e->str, lv);
        else bindName(e->str, lv, e->range, false);
    }
    ir::Stmt body, init;
    // Only a sequential loop can be left early (a T.Parallel's iterations are threads, a T.Pipelined's stages
    // overlap, a persistent walk's tiles are the grid's).
    const bool exitable = !persistent && (f.forKind == ir::ForKind::Serial || f.forKind == ir::ForKind::Unrolled);
    LoopExitScope exitScope(*this, exitable ? "" : what);
    {
        struct CtlPop {
            std::vector<char> &ctl;
            std::vector<ir::ForKind> &loops;
            size_t n;
            ~CtlPop() {
                ctl.pop_back();
                loops.resize(loops.size() - n);
            }
        } pop{frames_.back().ctl, t.loops, vars.size()};
        frames_.back().ctl.push_back('R');
        t.loops.insert(t.loops.end(), vars.size(), f.forKind);
        Block block(t);
        execBody(s.body);
        body = applyLoopExits(ir::Seq::make(block.take(), s.range), init, s.range);
    }
    checkLoopBindings(before, firstLoopVar, loopNames);
    if (f.guard) body = ir::IfThenElse::make(f.guard, body, nullptr, s.range);
    for (size_t i = vars.size(); i-- > 0;) {
        ir::Expr min = i < f.mins.size() && f.mins[i] ? f.mins[i] : ir::intImm(0);
        body = ir::For::make(vars[i], min, f.extents[i], f.forKind, f.numStages, body, s.range);
    }
    if (init) emit(init);
    emit(body);
    return Flow::Normal;
}

InterpImpl::Flow InterpImpl::execRuntimeIf(const ast::Stmt &s, const ir::Expr &cond) {
    TraceState &t = requireLaunch(s.value->range, "an 'if' on a run-time condition");
    std::vector<ir::Stmt> thenStmts, elseStmts;
    bool exits = false; // a branch may leave the enclosing run-time loop (InterpLoopExit.cpp)
    {
        struct CtlPop {
            std::vector<char> &ctl;
            ~CtlPop() { ctl.pop_back(); }
        } pop{frames_.back().ctl};
        frames_.back().ctl.push_back('I');
        // Each branch starts from the bindings before the if; mergeIfBindings joins them after it.
        std::map<std::string, Value> before = env_->vars;
        charge((int64_t)before.size());
        {
            Block block(t);
            exits = execBody(s.body) == Flow::Exit;
            thenStmts = block.take();
        }
        std::map<std::string, Value> thenVars = std::move(env_->vars);
        env_->vars = std::move(before);
        {
            Block block(t);
            exits |= execBody(s.orelse) == Flow::Exit;
            elseStmts = block.take();
        }
        mergeIfBindings(thenVars, thenStmts, elseStmts, cond, s.range);
    }
    ir::Stmt then = ir::Seq::make(std::move(thenStmts), s.range), otherwise;
    if (!elseStmts.empty())
        otherwise = ir::Seq::make(std::move(elseStmts), s.orelse.empty() ? s.range : s.orelse.front()->range);
    emit(ir::IfThenElse::make(ir::cast(DType::Bool, cond), then, otherwise, s.range));
    return exits ? Flow::Exit : Flow::Normal;
}

InterpImpl::Flow InterpImpl::execRuntimeWhile(const ast::Stmt &s) {
    TraceState &t = requireLaunch(s.value->range, "a 'while' loop on a run-time condition");
    if (!s.orelse.empty()) fail(s.range, "'else' after a while loop on a run-time condition is not supported");
    // Names the body assigns become kernel variables first, so that the condition and the body read what the
    // previous iteration left; the condition is then traced once, as the loop evaluates it before each iteration.
    materializeLoopCarried(s.body, {}, s.range);
    Value c = eval(*s.value);
    if (c.is(VK::Poison)) throw EvalAbort{};
    ir::Expr cond = ir::cast(DType::Bool, runtimeExpr(c, s.value->range));
    std::map<std::string, Value> before = env_->vars;
    charge((int64_t)before.size());
    ir::Stmt body, init;
    LoopExitScope exitScope(*this, "");
    {
        struct CtlPop {
            std::vector<char> &ctl;
            ~CtlPop() { ctl.pop_back(); }
        } pop{frames_.back().ctl};
        frames_.back().ctl.push_back('R');
        Block block(t);
        execBody(s.body);
        body = applyLoopExits(ir::Seq::make(block.take(), s.range), init, s.range);
    }
    checkWhileBindings(before);
    if (init) {
        // A break also ends the loop: its condition is tested only while the flag is clear.
        auto brk = frames_.back().exits.back().brk;
        cond = ir::binary(ir::BinaryOp::And, ir::binary(ir::BinaryOp::EQ, ir::Load::make(brk, {ir::intImm(0)}, s.range), ir::intImm(0), s.range), cond, s.range);
        emit(init);
    }
    emit(ir::While::make(cond, body, s.range));
    return Flow::Normal;
}

} // namespace tilec::eval
