/// \file
/// Read-only traversal of the tile IR (Halide-style): one virtual `visit` per node kind.
#pragma once

#include "tilec/IR.h"

namespace tilec::ir {

/// How deeply IR may nest (expressions inside expressions, statements inside statements) before a
/// traversal gives up. The evaluator keeps user programs below this (the evaluator's own limit on
/// expression size is a user error); reaching it is a compiler bug, reported as an internal error rather
/// than a stack overflow. Small enough for sanitizer builds' larger frames within an 8 MiB stack.
constexpr int kMaxIRDepth = 2000;

/// Counts nesting for the lifetime of one recursive step of a traversal (visitor, mutator, printer) and
/// raises an internal error past kMaxIRDepth.
class IRDepthGuard {
  public:
    explicit IRDepthGuard(int &depth);
    ~IRDepthGuard() { --depth_; }
    IRDepthGuard(const IRDepthGuard &) = delete;
    IRDepthGuard &operator=(const IRDepthGuard &) = delete;

  private:
    int &depth_;
};

/// Walks expressions and statements without changing them.
///
/// `visit(expr)` / `visit(stmt)` dispatch on the node kind to the matching `visit(const Node &)` overload;
/// every overload's default visits the node's children in source order (operands, loop bounds then body,
/// regions of tile statements through `visitRegion`), so a subclass overrides only the kinds it cares about
/// and calls the base overload to keep descending. Null handles are skipped. Buffers are not traversed:
/// their shapes belong to the declaration, not to the use. A subclass that overrides some overloads adds
/// `using IRVisitor::visit;` so the dispatching entry points stay visible.
class IRVisitor {
  public:
    virtual ~IRVisitor() = default;

    void visit(const Expr &e);
    void visit(const Stmt &s);
    /// The expressions of a region: every range's min and extent.
    virtual void visitRegion(const Region &r);

    // expressions
    virtual void visit(const IntImm &) {}
    virtual void visit(const FloatImm &) {}
    virtual void visit(const VarNode &) {}
    virtual void visit(const Binary &op);
    virtual void visit(const Unary &op);
    virtual void visit(const Select &op);
    virtual void visit(const Cast &op);
    virtual void visit(const Call &op);
    virtual void visit(const Load &op);

    // statements
    virtual void visit(const Seq &op);
    virtual void visit(const For &op);   ///< min, extent, body (not the loop variable)
    virtual void visit(const Store &op); ///< indices, then value
    virtual void visit(const IfThenElse &op);
    virtual void visit(const While &op);
    virtual void visit(const Evaluate &op);
    virtual void visit(const Copy &op);  ///< src, then dst
    virtual void visit(const Fill &op);  ///< dst, then value
    virtual void visit(const Gemm &op);  ///< a, b, c
    virtual void visit(const Reduce &) {}
    virtual void visit(const AtomicAdd &op); ///< dst, then src or value
    virtual void visit(const WarpRoles &op); ///< producer, then consumer

  private:
    int depth_ = 0;
};

} // namespace tilec::ir
