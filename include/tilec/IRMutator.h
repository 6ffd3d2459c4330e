/// \file
/// Rewriting traversal of the tile IR (Halide-style): one virtual `visit` per node kind returning the
/// replacement.
#pragma once

#include "tilec/IR.h"

namespace tilec::ir {

/// Rebuilds IR bottom-up.
///
/// `mutate(expr)` / `mutate(stmt)` dispatch on the node kind to the matching `visit` overload, which receives
/// the node as a typed handle and returns its replacement. Every default mutates the children and rebuilds
/// the node (keeping its location) only when a child came back as a different pointer; otherwise it returns
/// the very handle it was given, so an unchanged tree stays shared and callers can test `result == input`.
///
/// What the defaults leave alone: loop variables (a For binds its variable; a pass that renames it overrides
/// visit(For)), and buffers, which are replaced only through `mutateBuffer` (default: the same buffer) at each
/// use: Load, Store, Reduce and every Region (`mutateRegion`). Returning a null Stmt removes the statement:
/// Seq drops it, and a For or an if whose body vanished keeps an empty Seq as its body. A null Expr is never
/// a valid replacement for a present operand. Subclasses that override some overloads add
/// `using IRMutator::visit;`.
class IRMutator {
  public:
    virtual ~IRMutator() = default;

    /// Dispatch; null in, null out.
    Expr mutate(const Expr &e);
    Stmt mutate(const Stmt &s);
    /// A kernel with its grid extents and body mutated (parameters and allocations unchanged); the same
    /// handle when nothing changed.
    KernelP mutate(const KernelP &k);

    /// Default: the buffer through mutateBuffer, every range's min and extent through mutate().
    virtual Region mutateRegion(const Region &r);
    /// Default: `b` itself.
    virtual Buffer mutateBuffer(const Buffer &b) { return b; }

    // expressions
    virtual Expr visit(const std::shared_ptr<const IntImm> &op) { return op; }
    virtual Expr visit(const std::shared_ptr<const FloatImm> &op) { return op; }
    virtual Expr visit(const Var &op) { return op; }
    virtual Expr visit(const std::shared_ptr<const Binary> &op);
    virtual Expr visit(const std::shared_ptr<const Unary> &op);
    virtual Expr visit(const std::shared_ptr<const Select> &op);
    virtual Expr visit(const std::shared_ptr<const Cast> &op);
    virtual Expr visit(const std::shared_ptr<const Call> &op);
    virtual Expr visit(const std::shared_ptr<const Load> &op);

    // statements
    virtual Stmt visit(const std::shared_ptr<const Seq> &op);
    virtual Stmt visit(const std::shared_ptr<const For> &op);
    virtual Stmt visit(const std::shared_ptr<const Store> &op);
    virtual Stmt visit(const std::shared_ptr<const IfThenElse> &op);
    virtual Stmt visit(const std::shared_ptr<const While> &op);
    virtual Stmt visit(const std::shared_ptr<const Evaluate> &op);
    virtual Stmt visit(const std::shared_ptr<const Copy> &op);
    virtual Stmt visit(const std::shared_ptr<const Fill> &op);
    virtual Stmt visit(const std::shared_ptr<const Gemm> &op);
    virtual Stmt visit(const std::shared_ptr<const Reduce> &op);
    virtual Stmt visit(const std::shared_ptr<const AtomicAdd> &op);
    virtual Stmt visit(const std::shared_ptr<const WarpRoles> &op);

  protected:
    /// Each statement mutated, in order; `changed` set when any came back different (a Seq's items).
    std::vector<Stmt> mutateEach(const std::vector<Stmt> &stmts, bool &changed);
    /// True when two regions are the same buffer with the same (pointer-equal) range expressions.
    static bool sameRegion(const Region &a, const Region &b);

  private:
    int depth_ = 0;
};

} // namespace tilec::ir
