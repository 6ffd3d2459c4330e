/// \file
/// `break` and `continue` of run-time loops (issue 24: `if l_new_topk <= 0: break` in DeepSeek's top-k
/// selector). The kernel has no jump out of a traced loop, so each run-time T.serial / T.unroll / while loop
/// that a `break` or `continue` leaves gets a flag (a kernel variable, one per kind): the statement sets it, the
/// statements after it in the loop's body run only while the flags are clear, a set break flag skips the
/// remaining iterations' bodies (a while loop also stops), and the continue flag is cleared at the start of
/// each iteration. What the loop's iterations compute is then what Python's loop computes. T.Parallel and
/// T.Pipelined loops cannot be left this way (their iterations are threads, or overlapped stages): a located
/// error, as is a `break` under a run-time `if` that would leave a Python loop tilec unrolls.
#include "eval/InterpImpl.h"

#include "tilec/IROperator.h"

namespace tilec::eval {

InterpImpl::LoopExitScope::LoopExitScope(InterpImpl &in, std::string refusal) : in(in) {
    in.frames_.back().exits.push_back({std::move(refusal), nullptr, nullptr});
}

InterpImpl::LoopExitScope::~LoopExitScope() { in.frames_.back().exits.pop_back(); }

InterpImpl::Flow InterpImpl::execLoopExit(const ast::Stmt &s) {
    const bool isBreak = s.kind == ast::StmtKind::Break;
    const std::string what = isBreak ? "'break'" : "'continue'";
    CallFrame &fr = frames_.back();
    bool underIf = false;
    for (auto it = fr.ctl.rbegin(); it != fr.ctl.rend(); ++it) {
        if (*it == 'I') {
            underIf = true;
            continue;
        }
        if (*it == 'L') {
            if (underIf)
                fail(s.range, what + " inside an 'if' on a run-time condition would leave a Python loop, which tilec "
                                     "unrolls at compile time; this is not supported (use T.serial for a run-time loop)");
            return isBreak ? Flow::Break : Flow::Continue;
        }
        TILEC_ASSERT(!fr.exits.empty(), "a run-time loop without its LoopExit");
        LoopExit &e = fr.exits.back();
        if (!e.loop.empty()) fail(s.range, what + " inside a " + e.loop + " loop is not supported");
        ir::Buffer &flag = isBreak ? e.brk : e.cont;
        if (!flag) flag = newKernelVar(isBreak ? "loop_break" : "loop_continue", DType::Int32, s.range);
        emit(ir::Store::make(flag, {ir::intImm(0)}, ir::intImm(1), s.range));
        return Flow::Exit;
    }
    fail(s.range, what + " outside a loop");
}

namespace {

/// `flag == 0` for each flag that exists, joined by &&; null when there is none.
ir::Expr flagsClear(const ir::Buffer &brk, const ir::Buffer &cont, const SourceRange &at) {
    ir::Expr g;
    for (const ir::Buffer &b : {brk, cont}) {
        if (!b) continue;
        ir::Expr clear = ir::binary(ir::BinaryOp::EQ, ir::Load::make(b, {ir::intImm(0)}, at), ir::intImm(0), at);
        g = g ? ir::binary(ir::BinaryOp::And, g, clear, at) : clear;
    }
    return g;
}

} // namespace

InterpImpl::Flow InterpImpl::execGuardedRest(const ast::Body &body, size_t from, const SourceRange &at) {
    if (from >= body.size()) return Flow::Exit;
    TraceState &t = requireLaunch(at, "a run-time 'break' or 'continue'");
    TILEC_ASSERT(!frames_.back().exits.empty(), "a run-time loop exit outside a run-time loop");
    const SourceRange &restAt = body[from]->range;
    ast::Body rest(body.begin() + (std::ptrdiff_t)from, body.end());
    std::vector<ir::Stmt> stmts, none;
    // The rest is traced as the body of `if flags clear:` (a break in it is under a run-time if).
    frames_.back().ctl.push_back('I');
    struct CtlPop {
        std::vector<char> &ctl;
        ~CtlPop() { ctl.pop_back(); }
    } pop{frames_.back().ctl};
    std::map<std::string, Value> before = env_->vars;
    charge((int64_t)before.size());
    {
        Block block(t);
        execBody(rest);
        stmts = block.take();
    }
    // Read after the rest: a break in it may have made the other flag (clear until then).
    const LoopExit &e = frames_.back().exits.back();
    ir::Expr guard = flagsClear(e.brk, e.cont, at);
    TILEC_ASSERT(guard, "a run-time loop exit without a flag");
    std::map<std::string, Value> restVars = std::move(env_->vars);
    env_->vars = std::move(before);
    mergeIfBindings(restVars, stmts, none, guard, restAt);
    // Located at the statement that may leave the loop: where a thread-dependent exit makes the rest divergent.
    if (!stmts.empty() || !none.empty())
        emit(ir::IfThenElse::make(guard, ir::Seq::make(std::move(stmts), restAt),
                                  none.empty() ? nullptr : ir::Seq::make(std::move(none), restAt), at));
    return Flow::Exit;
}

ir::Stmt InterpImpl::applyLoopExits(ir::Stmt body, ir::Stmt &init, const SourceRange &at) {
    const LoopExit &e = frames_.back().exits.back();
    if (e.cont)
        body = ir::Seq::make({ir::Store::make(e.cont, {ir::intImm(0)}, ir::intImm(0), at), body}, at);
    if (e.brk) {
        body = ir::IfThenElse::make(flagsClear(e.brk, nullptr, at), body, nullptr, at);
        init = ir::Store::make(e.brk, {ir::intImm(0)}, ir::intImm(0), at);
    }
    return body;
}

} // namespace tilec::eval
