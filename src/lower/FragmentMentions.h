/// \file
/// What passes that change a fragment's shape need to know of its mentions: which buffers a statement uses as
/// tile operands rather than through element loads and stores, and a rewrite that puts new buffers in place of
/// old ones (squeezeUnitFragments, growIndexedFragments).
#pragma once

#include "tilec/IRMutator.h"
#include "tilec/IRVisitor.h"

#include <map>
#include <set>

namespace tilec::passes {

/// Collects in `operands` every buffer mentioned as a tile operand: a region (of a copy, fill or atomic add), a
/// T.gemm or reduction operand, or a library or extern call's operand. A pass that takes some regions as element
/// accesses overrides visitRegion.
struct OperandMentions : ir::IRVisitor {
    using IRVisitor::visit;
    std::set<const ir::BufferNode *> operands;

    void visitRegion(const ir::Region &r) override {
        operands.insert(r.buffer.get());
        IRVisitor::visitRegion(r);
    }
    void visit(const ir::Gemm &op) override {
        for (auto *r : {&op.a, &op.b, &op.c}) operands.insert(r->buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const ir::Reduce &op) override { operands.insert(op.src.get()), operands.insert(op.dst.get()); }
    void visit(const ir::Call &op) override {
        struct Loaded : IRVisitor {
            using IRVisitor::visit;
            std::set<const ir::BufferNode *> *out;
            void visit(const ir::Load &l) override { out->insert(l.buffer.get()), IRVisitor::visit(l); }
        } loaded;
        if (op.name.rfind("tilec.", 0) == 0 || op.name.rfind("extern:", 0) == 0) { // a library or extern call's operands
            loaded.out = &operands;
            loaded.IRVisitor::visit(op);
        }
        IRVisitor::visit(op);
    }
};

/// Replaces the buffers of `to`'s keys by their values wherever they are mentioned (accesses are unchanged).
struct BufferSwap : ir::IRMutator {
    using IRMutator::visit;
    std::map<const ir::BufferNode *, ir::Buffer> to;
    ir::Buffer mutateBuffer(const ir::Buffer &b) override {
        auto it = to.find(b.get());
        return it == to.end() ? b : it->second;
    }
};

} // namespace tilec::passes
