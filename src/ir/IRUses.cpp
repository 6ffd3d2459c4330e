/// \file
/// The use queries of include/tilec/IRUses.h: one visitor that looks for one kind of use.
#include "tilec/IRUses.h"

#include "tilec/IRVisitor.h"

#include <algorithm>
#include <vector>

namespace tilec::ir {

namespace {

/// Finds one use: of a variable, of a buffer (touched, or only loaded), of memory, of a library call or of a
/// T.gemm, whichever it is set to look for.
struct Finder : IRVisitor {
    using IRVisitor::visit;
    const VarNode *var = nullptr;
    const BufferNode *buffer = nullptr;
    bool onlyLoads = false; ///< with `buffer`: loads of it only
    bool anyLoad = false;
    bool gemm = false;
    std::vector<passes::lib::Fn> fns;
    bool found = false;

    void visit(const VarNode &n) override { found |= &n == var; }
    void visit(const Load &op) override {
        found |= anyLoad || (buffer && op.buffer.get() == buffer);
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        found |= buffer && !onlyLoads && op.buffer.get() == buffer;
        IRVisitor::visit(op);
    }
    void visit(const Reduce &op) override { found |= buffer && !onlyLoads && (op.src.get() == buffer || op.dst.get() == buffer); }
    void visitRegion(const Region &r) override {
        found |= buffer && !onlyLoads && r.buffer.get() == buffer;
        IRVisitor::visitRegion(r);
    }
    void visit(const Gemm &op) override {
        found |= gemm;
        IRVisitor::visit(op);
    }
    void visit(const Call &c) override {
        for (passes::lib::Fn f : fns) found |= passes::lib::is(c, f);
        IRVisitor::visit(c);
    }
};

/// Walks `n` with a finder that `lookFor` has set, and says whether it found the use.
template <class Node, class Set> bool find(const Node &n, Set lookFor) {
    Finder f;
    lookFor(f);
    f.visit(n);
    return f.found;
}

} // namespace

bool uses(const Expr &e, const VarNode *v) { return find(e, [&](Finder &f) { f.var = v; }); }
bool uses(const Stmt &s, const VarNode *v) { return find(s, [&](Finder &f) { f.var = v; }); }
bool uses(const Expr &e, const BufferNode *b) { return find(e, [&](Finder &f) { f.buffer = b; }); }
bool uses(const Stmt &s, const BufferNode *b) { return find(s, [&](Finder &f) { f.buffer = b; }); }
bool loads(const Stmt &s, const BufferNode *b) { return find(s, [&](Finder &f) { f.buffer = b, f.onlyLoads = true; }); }
bool readsMemory(const Expr &e) { return e && find(e, [](Finder &f) { f.anyLoad = true; }); }
bool callsAnything(const Expr &e) {
    struct Calls : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const Call &) override { found = true; }
    } c;
    if (e) c.visit(e);
    return c.found;
}
bool dividesByNonPow2(const Expr &e) {
    struct Find : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const Binary &op) override {
            auto c = as<IntImm>(op.b);
            if ((op.op == BinaryOp::Div || op.op == BinaryOp::FloorDiv || op.op == BinaryOp::FloorMod) && c && c->value > 0 &&
                (c->value & (c->value - 1)))
                found = true;
            IRVisitor::visit(op);
        }
    } f;
    if (e) f.visit(e);
    return f.found;
}
bool hasGemm(const Stmt &s) { return find(s, [](Finder &f) { f.gemm = true; }); }
bool callsAny(const Stmt &s, std::initializer_list<passes::lib::Fn> fns) {
    return find(s, [&](Finder &f) { f.fns.assign(fns.begin(), fns.end()); });
}

} // namespace tilec::ir
