/// \file
/// Which thread touches each element of a shared buffer in a T.Parallel nest (src/lower/ThreadOwners.h).
#include "ThreadOwners.h"

#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// Bounds of the enumeration: nests and buffers past these are left unknown (a barrier stays).
constexpr int64_t kMaxIterations = 1 << 16, kMaxElements = 1 << 20;

/// The plain loads and stores of shared buffers in a nest body; a shared buffer used any other way (a tile
/// region, an address handed to the device library) is unknown.
struct SharedAccesses : IRVisitor {
    using IRVisitor::visit;
    struct Access {
        const BufferNode *buffer;
        const std::vector<Expr> *indices;
        bool store;
    };
    std::vector<Access> accesses;
    std::set<const BufferNode *> unknown;
    bool innerLoop = false; ///< a loop inside the nest: its variable is not enumerated
    static bool shared(const Buffer &b) { return b && b->scope == Scope::Shared; }
    void visit(const Load &op) override {
        if (shared(op.buffer)) accesses.push_back({op.buffer.get(), &op.indices, false});
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        if (shared(op.buffer)) accesses.push_back({op.buffer.get(), &op.indices, true});
        IRVisitor::visit(op);
    }
    void visitRegion(const Region &r) override {
        if (shared(r.buffer)) unknown.insert(r.buffer.get());
        IRVisitor::visitRegion(r);
    }
    void visit(const For &op) override {
        innerLoop = true;
        IRVisitor::visit(op);
    }
    void visit(const Call &op) override {
        struct Addressed : IRVisitor {
            using IRVisitor::visit;
            std::set<const BufferNode *> *out;
            void visit(const Load &l) override {
                if (shared(l.buffer)) out->insert(l.buffer.get());
                IRVisitor::visit(l);
            }
        } a;
        a.out = &unknown;
        if (!lib::is(op, lib::Fn::AddressOf) && op.name.rfind("extern:", 0) != 0) return IRVisitor::visit(op);
        a.IRVisitor::visit(op);
    }
};

std::optional<std::vector<int64_t>> constShape(const BufferNode &b) {
    std::vector<int64_t> s;
    int64_t n = 1;
    for (auto &d : b.shape) {
        auto v = constInt(d);
        if (!v || *v < 0 || (n *= std::max<int64_t>(*v, 1)) > kMaxElements) return std::nullopt;
        s.push_back(*v);
    }
    return s;
}

} // namespace

int64_t elementAt(const std::vector<Expr> &indices, const std::vector<int64_t> &shape,
                  const std::map<const VarNode *, int64_t> &values) {
    if (indices.size() != shape.size()) return -1;
    int64_t e = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
        auto v = evalInt(indices[d], values);
        if (!v || *v < 0 || *v >= shape[d]) return -1;
        e = e * shape[d] + *v;
    }
    return e;
}

void nestOwners(const For &outer, const KernelLayouts &layouts, OwnerMap &loads, OwnerMap &stores) {
    auto lit = layouts.loops.find(outer.var.get());
    if (lit == layouts.loops.end()) return;
    const Layout &l = lit->second;
    if (l.kind != Layout::Distributed && l.kind != Layout::Mma) return; // copies in several threads
    if (l.elements() > kMaxIterations) return;
    std::vector<const VarNode *> vars;
    const For *f = &outer;
    for (;;) {
        if (constInt(f->min) != std::optional<int64_t>(0)) return;
        vars.push_back(f->var.get());
        auto inner = as<For>(f->body);
        if (!inner || inner->forKind != ForKind::Parallel || vars.size() == l.shape.size()) break;
        f = inner;
    }
    if (vars.size() != l.shape.size()) return;
    SharedAccesses acc;
    acc.visit(f->body);
    if (acc.innerLoop) return;
    std::map<const BufferNode *, std::vector<int32_t>> owners[2]; // loads, stores
    std::set<const BufferNode *> unknown = acc.unknown;
    std::map<const BufferNode *, std::vector<int64_t>> shapes;
    for (auto &a : acc.accesses)
        if (!shapes.count(a.buffer)) {
            if (auto s = constShape(*a.buffer)) shapes[a.buffer] = *s;
            else unknown.insert(a.buffer);
        }
    std::map<const VarNode *, int64_t> values;
    for (int64_t t = 0; t < l.threads; ++t)
        for (int64_t slot = 0; slot < l.slotsPerThread(); ++slot) {
            int64_t e = elementOf(l, t, slot);
            if (e < 0) continue;
            for (size_t d = vars.size(); d-- > 0; e /= l.shape[d]) values[vars[d]] = e % l.shape[d];
            for (auto &a : acc.accesses) {
                if (unknown.count(a.buffer) || (a.store && (t & l.copies))) continue; // copies: the first holder stores
                const std::vector<int64_t> &shape = shapes[a.buffer];
                int64_t el = elementAt(*a.indices, shape, values);
                if (el < 0) {
                    unknown.insert(a.buffer);
                    continue;
                }
                auto &v = owners[a.store][a.buffer];
                if (v.empty()) {
                    int64_t n = 1;
                    for (int64_t d : shape) n *= d;
                    v.assign(static_cast<size_t>(n), kUntouched);
                }
                int32_t &o = v[static_cast<size_t>(el)];
                o = o == kUntouched || o == t ? static_cast<int32_t>(t) : kSeveral;
            }
        }
    for (int s = 0; s < 2; ++s)
        for (auto &[b, v] : owners[s])
            if (!unknown.count(b)) (s ? stores : loads)[b] = std::make_shared<const std::vector<int32_t>>(std::move(v));
}

Owners combineOwners(const Owners &a, const Owners &b) {
    if (!a || !b || a->size() != b->size()) return nullptr;
    if (a == b) return a;
    auto out = std::make_shared<std::vector<int32_t>>(*a);
    for (size_t i = 0; i < out->size(); ++i) {
        int32_t &o = (*out)[i], n = (*b)[i];
        if (n == kUntouched || o == n) continue;
        o = o == kUntouched ? n : kSeveral;
    }
    return out;
}

bool samePrivateOwners(const Owners &a, const Owners &b) {
    if (!a || !b || a->size() != b->size()) return false;
    for (size_t i = 0; i < a->size(); ++i) {
        int32_t x = (*a)[i], y = (*b)[i];
        if (x == kUntouched || y == kUntouched) continue;
        if (x != y || x == kSeveral) return false;
    }
    return true;
}

int64_t wholeWarpsSatisfying(const ir::Expr &cond, bool negate, const ir::VarNode *tx, int64_t threads) {
    if (!tx || threads % 32 || threads > 1024) return 0;
    int64_t count = 0;
    for (int64_t w = 0; w < threads; w += 32) {
        int64_t inWarp = 0;
        for (int64_t t = w; t < w + 32; ++t) {
            auto c = ir::constInt(ir::simplify(substitute(cond, VarMap{{tx, ir::intImm(t, tx->dtype)}})));
            if (!c) return 0;
            inWarp += (*c != 0) != negate;
        }
        if (inWarp != 0 && inWarp != 32) return 0;
        count += inWarp;
    }
    return count > 0 && count < threads ? count : 0;
}

} // namespace tilec::passes
