/// \file
/// Which T.gemms run on wgmma together (include/tilec/passes/WgmmaGroups.h): the fragment families that tie
/// products to one instruction, and the closure of explicit warp roles' products that must run on wgmma.
#include "tilec/passes/WgmmaGroups.h"

#include "tilec/LibraryCalls.h"
#include "tilec/passes/HonourProgramWaits.h"

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

/// The products a T.wgmma_gemm issued (the program's wait mark right after them, programWaitsMark): products
/// the program asks to run on wgmma.
struct Asked : IRVisitor {
    using IRVisitor::visit;
    std::set<const Gemm *> found;
    void visit(const Seq &op) override {
        for (size_t i = 0; i + 1 < op.stmts.size(); ++i)
            if (const Gemm *g = as<Gemm>(op.stmts[i]); g && isProgramWaitsMark(op.stmts[i + 1])) found.insert(g);
        IRVisitor::visit(op);
    }
};

/// The closure of products on wgmma: each with the seed that put it there, and the fragment families and shared
/// tiles they hold, through which a product tied to one of them follows it.
struct Closure {
    std::map<const Gemm *, const Gemm *> gemms;
    std::map<const BufferNode *, const Gemm *> families, tiles;
    void take(const Gemm *g, const Gemm *seed, FragmentGroups &groups) {
        gemms[g] = seed;
        if (g->c.buffer) families.emplace(groups.find(g->c.buffer.get()), seed);
        for (const Region *r : sharedOperands(*g)) tiles.emplace(r->buffer.get(), seed);
    }
    /// Takes, to a fixed point, every product sharing a fragment family or a shared tile with one taken.
    void grow(const std::vector<const Gemm *> &products, FragmentGroups &groups) {
        for (bool changed = true; changed;) {
            changed = false;
            for (const Gemm *g : products) {
                if (gemms.count(g)) continue;
                const Gemm *seed = nullptr;
                if (auto f = g->c.buffer ? families.find(groups.find(g->c.buffer.get())) : families.end(); f != families.end())
                    seed = f->second;
                for (const Region *r : sharedOperands(*g))
                    if (auto t = tiles.find(r->buffer.get()); !seed && t != tiles.end()) seed = t->second;
                if (seed) take(g, seed, groups), changed = true;
            }
        }
    }
};

/// Whether wgmma computes every product of `c` (over one warpgroup) from the T.tma_copy tiles and the tiles the
/// threads fill in the panel layout.
bool allOnWgmma(const Closure &c, const std::map<const BufferNode *, const TmaTile *> &tma) {
    std::map<const BufferNode *, TmaTile> own;
    std::map<const BufferNode *, const TmaTile *> tiles = tma;
    for (auto &[g, seed] : c.gemms)
        for (const Region *r : sharedOperands(*g)) {
            if (tma.count(r->buffer.get()) || own.count(r->buffer.get())) continue;
            TmaTile t;
            if (!operandTile(*r, t).empty()) return false;
            own.emplace(r->buffer.get(), t);
        }
    for (auto &[b, t] : own) tiles.emplace(b, &t);
    for (auto &[g, seed] : c.gemms)
        if (!wgmmaCan(*g, tiles, 1)) return false;
    return true;
}

} // namespace

WgmmaNeeds wgmmaNeeds(const std::vector<Stmt> &bodies, const std::map<const BufferNode *, const TmaTile *> &tma) {
    Products products;
    FragmentGroups groups;
    Asked asked;
    for (auto &b : bodies)
        if (b) products.visit(b), groups.visit(b), asked.visit(b);
    for (const Gemm *g : products.found)
        if (aInRegisters(*g)) groups.unite(g->a.buffer.get(), g->c.buffer.get());
    // Seeds that must run on wgmma: the products reading a T.tma_copy tile, and what they tie to it.
    Closure c;
    for (const Gemm *g : products.found)
        for (const Region *r : sharedOperands(*g))
            if (tma.count(r->buffer.get()) && !c.gemms.count(g)) c.take(g, g, groups);
    c.grow(products.found, groups);
    // Seeds the program asks for (T.wgmma_gemm, as TileLang runs it): each with what it ties to, where wgmma
    // computes all of them; else they stay on mma.sync, as a T.wgmma_gemm does where wgmma cannot run it.
    for (const Gemm *g : products.found) {
        if (!asked.found.count(g) || c.gemms.count(g)) continue;
        Closure trial = c;
        trial.take(g, g, groups);
        trial.grow(products.found, groups);
        if (allOnWgmma(trial, tma)) c = std::move(trial);
    }
    WgmmaNeeds out;
    out.gemms = std::move(c.gemms);
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
