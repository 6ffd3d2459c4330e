/// \file
/// Dispatch and the default (recursing) visits of IRVisitor.
#include "tilec/IRVisitor.h"

namespace tilec::ir {

IRDepthGuard::IRDepthGuard(int &depth) : depth_(depth) {
    ++depth_;
    if (depth_ > kMaxIRDepth) {
        --depth_; // the destructor will not run for a constructor that throws
        internalError(__FILE__, __LINE__, "IR nested more than " + std::to_string(kMaxIRDepth) + " levels deep");
    }
}

void IRVisitor::visit(const Expr &e) {
    if (!e) return;
    IRDepthGuard guard(depth_);
    switch (e->kind) {
    case NodeKind::IntImm: return visit(*as<IntImm>(e));
    case NodeKind::FloatImm: return visit(*as<FloatImm>(e));
    case NodeKind::Var: return visit(*as<VarNode>(e));
    case NodeKind::Binary: return visit(*as<Binary>(e));
    case NodeKind::Unary: return visit(*as<Unary>(e));
    case NodeKind::Select: return visit(*as<Select>(e));
    case NodeKind::Cast: return visit(*as<Cast>(e));
    case NodeKind::Call: return visit(*as<Call>(e));
    case NodeKind::Load: return visit(*as<Load>(e));
    default: break;
    }
    TILEC_ASSERT(false, "a statement node held as an expression");
}

void IRVisitor::visit(const Stmt &s) {
    if (!s) return;
    IRDepthGuard guard(depth_);
    switch (s->kind) {
    case NodeKind::Seq: return visit(*as<Seq>(s));
    case NodeKind::For: return visit(*as<For>(s));
    case NodeKind::Store: return visit(*as<Store>(s));
    case NodeKind::IfThenElse: return visit(*as<IfThenElse>(s));
    case NodeKind::WarpRoles: return visit(*as<WarpRoles>(s));
    case NodeKind::While: return visit(*as<While>(s));
    case NodeKind::Evaluate: return visit(*as<Evaluate>(s));
    case NodeKind::Copy: return visit(*as<Copy>(s));
    case NodeKind::Fill: return visit(*as<Fill>(s));
    case NodeKind::Gemm: return visit(*as<Gemm>(s));
    case NodeKind::Reduce: return visit(*as<Reduce>(s));
    case NodeKind::AtomicAdd: return visit(*as<AtomicAdd>(s));
    default: break;
    }
    TILEC_ASSERT(false, "an expression node held as a statement");
}

void IRVisitor::visitRegion(const Region &r) {
    for (auto &range : r.ranges) {
        visit(range.min);
        visit(range.extent);
    }
}

void IRVisitor::visit(const Binary &op) {
    visit(op.a);
    visit(op.b);
}

void IRVisitor::visit(const Unary &op) { visit(op.a); }

void IRVisitor::visit(const Select &op) {
    visit(op.cond);
    visit(op.t);
    visit(op.f);
}

void IRVisitor::visit(const Cast &op) { visit(op.value); }

void IRVisitor::visit(const Call &op) {
    for (auto &a : op.args) visit(a);
}

void IRVisitor::visit(const Load &op) {
    for (auto &i : op.indices) visit(i);
}

void IRVisitor::visit(const Seq &op) {
    for (auto &s : op.stmts) visit(s);
}

void IRVisitor::visit(const For &op) {
    visit(op.min);
    visit(op.extent);
    visit(op.body);
}

void IRVisitor::visit(const Store &op) {
    for (auto &i : op.indices) visit(i);
    visit(op.value);
}

void IRVisitor::visit(const IfThenElse &op) {
    visit(op.cond);
    visit(op.then);
    visit(op.otherwise);
}

void IRVisitor::visit(const While &op) {
    visit(op.cond);
    visit(op.body);
}

void IRVisitor::visit(const Evaluate &op) { visit(op.value); }

void IRVisitor::visit(const WarpRoles &op) {
    visit(op.producer);
    visit(op.consumer);
}

void IRVisitor::visit(const Copy &op) {
    visitRegion(op.src);
    visitRegion(op.dst);
}

void IRVisitor::visit(const Fill &op) {
    visitRegion(op.dst);
    visit(op.value);
}

void IRVisitor::visit(const Gemm &op) {
    visitRegion(op.a);
    if (op.sparse()) visitRegion(op.e);
    visitRegion(op.b);
    visitRegion(op.c);
    if (op.liveRowsAt) visit(op.liveRowsAt);
}

void IRVisitor::visit(const AtomicAdd &op) {
    visitRegion(op.dst);
    if (op.src) visitRegion(*op.src);
    visit(op.value);
}

} // namespace tilec::ir
