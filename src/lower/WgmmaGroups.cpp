/// \file
/// Which T.gemms run on wgmma together (include/tilec/passes/WgmmaGroups.h): the fragment families that tie
/// products to one instruction, and the closure of explicit warp roles' products that must run on wgmma.
#include "tilec/passes/WgmmaGroups.h"

#include "tilec/LibraryCalls.h"

namespace tilec::passes {

using namespace ir;

const BufferNode *FragmentGroups::find(const BufferNode *b) {
    auto it = parent.emplace(b, b).first;
    return it->second == b ? b : it->second = find(it->second);
}

void FragmentGroups::visit(const For &op) {
    inUnit(op.forKind == ForKind::Parallel, [&] { IRVisitor::visit(op); });
}
void FragmentGroups::visit(const Store &op) {
    inUnit(true, [&] { add(op.buffer), IRVisitor::visit(op); });
}
void FragmentGroups::visit(const Load &op) { add(op.buffer), IRVisitor::visit(op); }
void FragmentGroups::visit(const Copy &op) {
    inUnit(true, [&] { add(op.src.buffer), add(op.dst.buffer), IRVisitor::visit(op); });
}
void FragmentGroups::visit(const AtomicAdd &op) {
    inUnit(true, [&] {
        add(op.dst.buffer);
        if (op.src) add(op.src->buffer);
        IRVisitor::visit(op);
    });
}
void FragmentGroups::visit(const Reduce &op) {
    inUnit(true, [&] { add(op.src), add(op.dst); });
}

void FragmentGroups::add(const Buffer &b) {
    if (unit_ && b && b->scope == Scope::Fragment) unit_->push_back(b.get());
}

template <class F> void FragmentGroups::inUnit(bool opens, F walk) {
    if (!opens || unit_) return walk();
    std::vector<const BufferNode *> unit;
    unit_ = &unit;
    walk();
    unit_ = nullptr;
    for (size_t i = 1; i < unit.size(); ++i) unite(unit[0], unit[i]);
}

namespace {

struct Products : IRVisitor {
    using IRVisitor::visit;
    std::vector<const Gemm *> found;
    void visit(const Gemm &g) override {
        if (!g.sparse()) found.push_back(&g);
    }
};

/// The shared buffers `g` reads as operands.
std::vector<const Region *> sharedOperands(const Gemm &g) {
    std::vector<const Region *> out;
    for (const Region *r : {&g.a, &g.b})
        if (r->buffer && r->buffer->scope == Scope::Shared) out.push_back(r);
    return out;
}

} // namespace

WgmmaNeeds wgmmaNeeds(const std::vector<Stmt> &bodies, const std::map<const BufferNode *, const TmaTile *> &tma) {
    Products products;
    FragmentGroups groups;
    for (auto &b : bodies)
        if (b) products.visit(b), groups.visit(b);
    for (const Gemm *g : products.found)
        if (aInRegisters(*g)) groups.unite(g->a.buffer.get(), g->c.buffer.get());
    WgmmaNeeds out;
    // Seeds: the products reading a T.tma_copy tile. Then, to a fixed point, the products sharing a fragment
    // family (through the accumulator) or a shared tile with one already on wgmma take it from that one.
    std::map<const BufferNode *, const Gemm *> families, tiles; // -> the seed that put them on wgmma
    auto take = [&](const Gemm *g, const Gemm *seed) {
        out.gemms[g] = seed;
        if (g->c.buffer) families.emplace(groups.find(g->c.buffer.get()), seed);
        for (const Region *r : sharedOperands(*g)) tiles.emplace(r->buffer.get(), seed);
    };
    for (const Gemm *g : products.found)
        for (const Region *r : sharedOperands(*g))
            if (tma.count(r->buffer.get()) && !out.gemms.count(g)) take(g, g);
    for (bool changed = !out.gemms.empty(); changed;) {
        changed = false;
        for (const Gemm *g : products.found) {
            if (out.gemms.count(g)) continue;
            const Gemm *seed = nullptr;
            if (auto f = g->c.buffer ? families.find(groups.find(g->c.buffer.get())) : families.end(); f != families.end())
                seed = f->second;
            for (const Region *r : sharedOperands(*g))
                if (auto t = tiles.find(r->buffer.get()); !seed && t != tiles.end()) seed = t->second;
            if (seed) take(g, seed), changed = true;
        }
    }
    // The operands the threads fill: tiles in the panel layout where wgmma can read them so.
    for (auto &[g, seed] : out.gemms)
        for (const Region *r : sharedOperands(*g)) {
            if (tma.count(r->buffer.get())) continue;
            TmaTile t;
            if (std::string why = operandTile(*r, t); !why.empty()) out.why.emplace(g, why);
            else out.threadTiles.emplace(r->buffer.get(), t);
        }
    return out;
}

std::set<const BufferNode *> genericAccesses(const std::vector<Stmt> &bodies) {
    struct Uses : IRVisitor {
        using IRVisitor::visit;
        std::set<const BufferNode *> found;
        void use(const Buffer &b) {
            if (b && b->scope == Scope::Shared) found.insert(b.get());
        }
        void visit(const Load &op) override { use(op.buffer), IRVisitor::visit(op); }
        void visit(const Store &op) override { use(op.buffer), IRVisitor::visit(op); }
        void visit(const Copy &op) override { use(op.src.buffer), use(op.dst.buffer), IRVisitor::visit(op); }
        void visit(const Fill &op) override { use(op.dst.buffer), IRVisitor::visit(op); }
        void visit(const Reduce &op) override { use(op.src), use(op.dst); }
        void visit(const AtomicAdd &op) override {
            use(op.dst.buffer);
            if (op.src) use(op.src->buffer);
            IRVisitor::visit(op);
        }
        void visit(const Gemm &) override {} // wgmma's operands: the async proxy (an mma.sync's read no TMA tile)
        void visit(const IfThenElse &op) override { // a group's own T.tma_copy (its marker): the async proxy too
            if (!lib::is(op.cond, lib::Fn::TmaCopyOn)) IRVisitor::visit(op);
        }
    } uses;
    for (auto &b : bodies)
        if (b) uses.visit(b);
    return uses.found;
}

std::string whyNotWgmma(const WgmmaNeeds &needs, const Gemm &g, const std::map<const BufferNode *, const TmaTile *> &tma) {
    if (auto why = needs.why.find(&g); why != needs.why.end()) return "here: " + why->second;
    std::map<const BufferNode *, const TmaTile *> tiles = tma;
    for (auto &[b, t] : needs.threadTiles) tiles.emplace(b, &t);
    if (wgmmaCan(g, tiles, 1)) return "";
    for (const Region *r : sharedOperands(g)) // a part of a tile that is not whole panels
        if (auto t = tiles.find(r->buffer.get()); t != tiles.end()) {
            std::string why;
            if (!panelPart(*r, t->second->swizzle, &why)) return std::string("here: its operand ") + (r == &g.a ? "A" : "B") + " " + why;
        }
    return "(its operands whole tiles, or whole swizzle panels of their columns, of matching shapes; float16 / "
           "bfloat16, or K-major tf32, float8, int8)";
}

} // namespace tilec::passes
