/// \file
/// Swizzled shared operand tiles (include/tilec/passes/SwizzleShared.h).
#include "tilec/passes/SwizzleShared.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <map>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// How one buffer is swizzled: its row length and the elements of one tile (one pipeline stage).
struct Swizzle {
    int64_t cols = 0, tileElems = 0;
};

/// The buffers the library is handed as swizzled tiles.
struct Find : IRVisitor {
    using IRVisitor::visit;
    std::map<const BufferNode *, Swizzle> found;
    void visit(const Call &op) override {
        for (const Load *l : swizzledOperands(op)) {
            if (l->buffer->shape.size() < 2) continue;
            auto &shape = l->buffer->shape;
            auto rows = constValue(shape[shape.size() - 2]), cols = constValue(shape.back());
            if (rows && cols) found[l->buffer.get()] = {*cols, *rows * *cols};
        }
        IRVisitor::visit(op);
    }
};

class Apply : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Apply(const std::map<const BufferNode *, Swizzle> &s) : swizzled_(s) {}

    Expr visit(const std::shared_ptr<const Call> &op) override {
        if (lib::is(*op, lib::Fn::AddressOf)) return op; // the library swizzles its own accesses
        return IRMutator::visit(op);
    }
    Stmt visit(const std::shared_ptr<const For> &op) override {
        auto saved = lanes_;
        if (op->forKind == ForKind::Vectorized) lanes_ = op.get();
        Stmt s = IRMutator::visit(op);
        lanes_ = saved;
        return s;
    }
    Expr visit(const std::shared_ptr<const Load> &op) override {
        Expr e = IRMutator::visit(op);
        auto l = as<Load>(e);
        auto it = swizzled_.find(l->buffer.get());
        if (it == swizzled_.end()) return e;
        return Load::make(l->buffer, {map(l->buffer, it->second, l->indices[0])}, l->loc);
    }
    Stmt visit(const std::shared_ptr<const Store> &op) override {
        Stmt s = IRMutator::visit(op);
        auto st = as<Store>(s);
        auto it = swizzled_.find(st->buffer.get());
        if (it == swizzled_.end()) return s;
        return Store::make(st->buffer, {map(st->buffer, it->second, st->indices[0])}, st->value, st->loc);
    }

  private:
    const std::map<const BufferNode *, Swizzle> &swizzled_;
    const For *lanes_ = nullptr; ///< the innermost vectorized loop

    Expr map(const Buffer &b, const Swizzle &sw, const Expr &offset) {
        const int eb = b->dtype.bytes();
        auto swz = [&](Expr off) {
            return lib::call(lib::Fn::Swz, {i32(sw.cols), i32(eb), i32(sw.tileElems), std::move(off)}, {}, DType::Int32);
        };
        if (lanes_) {
            auto width = constValue(lanes_->extent);
            auto lin = linearIn(offset, lanes_->var.get());
            if (width && lin && lin->second == 1 && *width * eb <= 16 && lin->first &&
                knownMultiple(lin->first) % *width == 0)
                return binary(BinaryOp::Add, swz(lin->first), lanes_->var);
        }
        return swz(offset);
    }
};

} // namespace

Program swizzleShared(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Find f;
        f.visit(k->body);
        if (f.found.empty()) {
            out.kernels.push_back(k);
            continue;
        }
        Apply a(f.found);
        out.kernels.push_back(a.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
