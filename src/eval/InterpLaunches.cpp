/// \file
/// The launches of a traced prim_func, checked and joined once its body has run: a launch may use only the
/// shared memory, fragments and locals it allocates itself (each launch is a kernel of its own: what an earlier
/// `with T.Kernel` block allocated does not exist in a later one), a tensor or one view of it, and every
/// launch gets the same parameters (workspaces included) and its part number.
#include "eval/InterpImpl.h"

#include "tilec/IRVisitor.h"

#include <algorithm>

namespace tilec::eval {

namespace {

/// The buffers of one scope class that a kernel body reads or writes, each use with its location: the
/// global tensors (`global`), or the rest (shared memory, fragments, locals).
struct BufferUses : ir::IRVisitor {
    using IRVisitor::visit;
    explicit BufferUses(ir::Scope only) : global(only == ir::Scope::Global) {}
    bool global;
    std::vector<std::pair<const ir::BufferNode *, SourceRange>> uses;
    void use(const ir::Buffer &b, const SourceRange &at) {
        if (b && (b->scope == ir::Scope::Global) == global) uses.push_back({b.get(), at});
    }
    void visitRegion(const ir::Region &r) override {
        use(r.buffer, r.loc);
        IRVisitor::visitRegion(r);
    }
    void visit(const ir::Load &op) override {
        use(op.buffer, op.loc);
        IRVisitor::visit(op);
    }
    void visit(const ir::Store &op) override {
        use(op.buffer, op.loc);
        IRVisitor::visit(op);
    }
    void visit(const ir::Reduce &op) override {
        use(op.src, op.loc);
        use(op.dst, op.loc);
    }
};

} // namespace

void InterpImpl::checkLaunchLocals(const ir::Kernel &k) {
    // The launches of one prim_func are separate kernels: an earlier launch's shared memory, fragments and
    // locals are gone when a later one runs (and a later launch's do not exist yet in an earlier one).
    BufferUses u(ir::Scope::Shared);
    u.visit(k.body);
    std::vector<const ir::BufferNode *> reported;
    for (auto &use : u.uses) {
        const ir::BufferNode *b = use.first;
        const SourceRange &at = use.second;
        bool mine = std::any_of(k.allocs.begin(), k.allocs.end(), [&](const ir::Buffer &a) { return a.get() == b; });
        if (mine || std::find(reported.begin(), reported.end(), b) != reported.end()) continue;
        reported.push_back(b);
        diag_.error(at, "'" + b->name + "' (T.alloc_" + ir::toString(b->scope) +
                            ") is used in a 'with T.Kernel' launch that does not allocate it: each launch of a "
                            "prim_func is a kernel of its own, and the shared memory, fragments and locals of "
                            "one do not exist in another (pass data between launches through a tensor or a "
                            "T.alloc_global workspace)");
        diag_.note(b->loc, "'" + b->name + "' is allocated here, in another launch");
    }
    // A T.make_tensor tensor of a run-time address is read through a variable of the launch that made it.
    BufferUses g(ir::Scope::Global);
    g.visit(k.body);
    for (auto &[b, at] : g.uses) {
        bool param = std::any_of(k.params.begin(), k.params.end(), [&](const ir::Param &p) { return p.buffer.get() == b; });
        if (param || k.addressOf(b) || std::find(reported.begin(), reported.end(), b) != reported.end()) continue;
        reported.push_back(b);
        diag_.error(at, "'" + b->name + "' (T.make_tensor of a run-time address) is used in a 'with T.Kernel' launch "
                            "that did not make it: its address is a variable of the launch that did (make it again here)");
        diag_.note(b->loc, "'" + b->name + "' is made here, in another launch");
    }
}

void InterpImpl::checkViews(const ir::Kernel &k) {
    // The passes take distinct tensors for distinct memory: a kernel may use a tensor or one view of it.
    BufferUses u(ir::Scope::Global);
    u.visit(k.body);
    for (auto &p : k.params) {
        if (!p.viewOf) continue;
        const SourceRange *mine = nullptr;
        for (auto &[b, at] : u.uses)
            if (b == p.buffer.get()) mine = &at;
        if (!mine) continue;
        for (auto &[b, at] : u.uses) {
            bool other = b == p.viewOf.get();
            for (auto &q : k.params)
                other |= q.viewOf == p.viewOf && q.buffer.get() == b && q.buffer != p.buffer;
            if (other) {
                diag_.error(at, "kernel '" + k.name + "' uses '" + b->name + "' here and view '" + p.buffer->name +
                                    "' of the same memory: a kernel may use a tensor or one view of it, not both");
                diag_.note(*mine, "the view is used here");
                return;
            }
        }
    }
}

void InterpImpl::shareParams(TraceState &t) {
    if (!t.launches.empty()) {
        for (auto &l : t.launches) checkLaunchLocals(*l);
        checkLaunchLocals(*t.kernel);
    }
    for (auto &l : t.launches) checkViews(*l);
    checkViews(*t.kernel);
    // Every launch takes the same arguments: the last one's parameters (all workspaces included).
    size_t n = t.launches.size() + 1;
    for (size_t i = 0; i < t.launches.size(); ++i) {
        ir::Kernel &l = *t.launches[i];
        l.params = t.kernel->params;
        l.dynamicSymbols = t.kernel->dynamicSymbols;
        l.outputs = t.kernel->outputs;
        l.part = (int)i;
        l.parts = (int)n;
    }
    t.kernel->part = (int)n - 1;
    t.kernel->parts = (int)n;
}

} // namespace tilec::eval
