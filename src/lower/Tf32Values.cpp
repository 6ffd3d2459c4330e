/// \file
/// Fragments that hold tf32 values only (include/tilec/passes/Tf32Values.h).
#include "tilec/passes/Tf32Values.h"

#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <cstring>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// Whether every value of type `t` is exact in tf32 (11 significant bits, float32's exponent range).
bool narrowType(DType t) {
    switch (t.kind) {
    case DType::Bool:
    case DType::Int8:
    case DType::UInt8:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float8E4M3:
    case DType::Float8E5M2: return true;
    default: return false;
    }
}

class Exactness;

/// The writes of one buffer: every one an element store of a tf32-exact value, and nothing else names it.
class Writes : public IRVisitor {
  public:
    using IRVisitor::visit;
    Writes(const BufferNode *b, Exactness &x) : b_(b), x_(x) {}
    bool ok = true;

    void visit(const Store &op) override;
    void visit(const Call &op) override {
        // a library call given the buffer's address may write it (tilec.address_of(buf[...]))
        if (lib::is(op, lib::Fn::AddressOf) && !op.args.empty())
            if (auto l = as<Load>(op.args[0]); l && l->buffer.get() == b_) ok = false;
        IRVisitor::visit(op);
    }
    void visit(const Copy &op) override { ok = ok && op.dst.buffer.get() != b_, IRVisitor::visit(op); }
    void visit(const Fill &op) override;
    void visit(const Gemm &op) override { ok = ok && op.c.buffer.get() != b_, IRVisitor::visit(op); }
    void visit(const Reduce &op) override { ok = ok && op.dst.get() != b_; }
    void visit(const AtomicAdd &op) override { ok = ok && op.dst.buffer.get() != b_, IRVisitor::visit(op); }

  private:
    const BufferNode *b_;
    Exactness &x_;
};

/// tf32Exact, with the buffers whose writes are being checked.
class Exactness {
  public:
    explicit Exactness(const Kernel &k) : k_(k) {}

    bool buffer(const BufferNode *b) {
        if (!b || (b->scope != Scope::Fragment && b->scope != Scope::Local && b->scope != Scope::Var) ||
            b->dtype.kind != DType::Float32)
            return false;
        for (auto &[view, base] : k_.fragmentViews)
            if (view.get() == b || base.get() == b) return false;
        // A buffer read while its own writes are being checked (a running maximum, `a = max(a, x)`): assumed to
        // hold tf32 values; by induction over the stores, each stores one if the rest of the check passes.
        if (!open_.insert(b).second) return true;
        Writes w(b, *this);
        w.visit(k_.body);
        open_.erase(b);
        return w.ok;
    }

    bool expr(const Expr &e) {
        // an element or a conversion of a type whose every value tf32 represents (not arithmetic in it: code
        // generation may carry a float16 product in float before it rounds)
        if (narrowType(e->dtype))
            return e->kind == NodeKind::Load || e->kind == NodeKind::Cast || e->kind == NodeKind::IntImm ||
                   e->kind == NodeKind::FloatImm;
        if (!e->dtype.isFloat()) { // an integer: a constant below 2048 in magnitude
            auto c = as<IntImm>(e);
            return c && c->value > -2048 && c->value < 2048;
        }
        switch (e->kind) { // float32 or float64 from here on
        case NodeKind::FloatImm: {
            const double v = static_cast<const FloatImm &>(*e).value;
            const float f = (float)v;
            uint32_t bits;
            std::memcpy(&bits, &f, sizeof bits);
            return (double)f == v && (bits & 0x1fffu) == 0;
        }
        case NodeKind::Cast: return expr(static_cast<const Cast &>(*e).value); // to a float type: the value kept
        case NodeKind::Unary: {
            auto &u = static_cast<const Unary &>(*e);
            return u.op == UnaryOp::Neg && expr(u.a);
        }
        case NodeKind::Binary: {
            auto &b = static_cast<const Binary &>(*e);
            return (b.op == BinaryOp::Min || b.op == BinaryOp::Max) && expr(b.a) && expr(b.b);
        }
        case NodeKind::Select: {
            auto &s = static_cast<const Select &>(*e);
            return expr(s.t) && expr(s.f);
        }
        case NodeKind::Call: {
            auto &c = static_cast<const Call &>(*e);
            return c.name == "abs" && c.args.size() == 1 && expr(c.args[0]);
        }
        case NodeKind::Load: return buffer(static_cast<const Load &>(*e).buffer.get());
        default: return false;
        }
    }

  private:
    const Kernel &k_;
    std::set<const BufferNode *> open_;
};

void Writes::visit(const Store &op) {
    if (op.buffer.get() == b_) ok = ok && x_.expr(op.value);
    IRVisitor::visit(op);
}

void Writes::visit(const Fill &op) {
    if (op.dst.buffer.get() == b_) ok = ok && x_.expr(op.value);
    IRVisitor::visit(op);
}

} // namespace

bool holdsTf32Values(const Kernel &k, const BufferNode *frag) {
    Exactness x(k);
    return x.buffer(frag);
}

bool tf32Exact(const Kernel &k, const Expr &e) {
    Exactness x(k);
    return x.expr(e);
}

} // namespace tilec::passes
