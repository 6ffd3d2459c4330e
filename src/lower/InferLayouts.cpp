/// \file
/// Layout inference (include/tilec/passes/InferLayouts.h): fragments and T.Parallel nests linked by exact
/// indexing form groups (union-find); each group is distributed or replicated.
#include "tilec/passes/InferLayouts.h"

#include "tilec/IRPrinter.h"
#include "tilec/IRVisitor.h"

#include <algorithm>
#include <numeric>

namespace tilec::passes {

using namespace ir;

namespace {

struct Nest {
    Var outer;
    std::vector<Var> vars;
    std::vector<int64_t> extents;
    SourceRange loc;
    int memBytes = 0; ///< widest element of a global or shared access inside
};

/// One access of a fragment.
struct Use {
    const BufferNode *buffer = nullptr;
    SourceRange loc;
    int nest = -1;          ///< the enclosing nest, -1 outside any
    bool exact = false;     ///< indexed by exactly the nest's variables over the whole shape
    bool reduceDst = false; ///< written by a reduction
    bool write = false;     ///< a store (or atomic update)
    std::string indexText;  ///< `(i, 0)` for messages
};

class Collect : public IRVisitor {
  public:
    using IRVisitor::visit;
    explicit Collect(DiagnosticEngine &d) : diag_(d) {}

    std::vector<Nest> nests;
    std::vector<Use> uses;

    void visit(const For &op) override {
        if (op.forKind != ForKind::Parallel) return IRVisitor::visit(op);
        if (current_ >= 0) {
            diag_.error(op.loc, "a T.Parallel loop inside the body of another T.Parallel loop is not supported; "
                                "merge them into one T.Parallel with several extents");
            return;
        }
        Nest n;
        n.outer = op.var;
        n.loc = op.loc;
        const For *f = &op;
        while (true) {
            auto e = constInt(f->extent);
            auto m = constInt(f->min);
            if (!e || !m || *m != 0) {
                diag_.error(f->loc, "T.Parallel needs a constant extent starting at 0");
                return;
            }
            n.vars.push_back(f->var);
            n.extents.push_back(*e);
            auto inner = as<For>(f->body);
            if (!inner || inner->forKind != ForKind::Parallel) break;
            f = inner;
        }
        nests.push_back(n);
        current_ = (int)nests.size() - 1;
        visit(f->body);
        current_ = -1;
    }

    void visit(const Load &op) override {
        access(op.buffer, op.indices, op.loc, false);
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        access(op.buffer, op.indices, op.loc, true);
        IRVisitor::visit(op);
    }
    void visit(const AtomicAdd &op) override {
        std::vector<Expr> idx;
        for (auto &r : op.dst.ranges) idx.push_back(r.min);
        access(op.dst.buffer, idx, op.loc, true);
        IRVisitor::visit(op);
    }
    void visit(const Reduce &op) override {
        if (current_ >= 0) {
            diag_.error(op.loc, "a reduction cannot be inside a T.Parallel loop: every thread takes part in it");
            return;
        }
        if (op.dst && op.dst->scope == Scope::Fragment) {
            Use u;
            u.buffer = op.dst.get();
            u.loc = op.loc;
            u.reduceDst = true;
            uses.push_back(u);
        }
    }

  private:
    DiagnosticEngine &diag_;
    int current_ = -1;

    void access(const Buffer &b, const std::vector<Expr> &indices, const SourceRange &loc, bool write) {
        if (!b) return;
        if (current_ >= 0 && (b->scope == Scope::Global || b->scope == Scope::Shared))
            nests[current_].memBytes = std::max(nests[current_].memBytes, b->dtype.bytes());
        if (b->scope != Scope::Fragment) return;
        Use u;
        u.buffer = b.get();
        u.loc = loc;
        u.nest = current_;
        u.write = write;
        u.indexText = "(";
        for (size_t i = 0; i < indices.size(); ++i) u.indexText += (i ? ", " : "") + print(indices[i]);
        u.indexText += indices.size() == 1 ? ",)" : ")";
        if (current_ >= 0) {
            const Nest &n = nests[current_];
            bool exact = indices.size() == n.vars.size() && b->shape.size() == n.vars.size();
            for (size_t d = 0; exact && d < indices.size(); ++d)
                exact = indices[d] == Expr(n.vars[d]) && constInt(b->shape[d]) == std::optional<int64_t>(n.extents[d]);
            u.exact = exact;
        }
        uses.push_back(u);
    }
};

struct UnionFind {
    std::vector<int> parent;
    int add() {
        parent.push_back((int)parent.size());
        return parent.back();
    }
    int find(int x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    }
    void unite(int a, int b) {
        a = find(a), b = find(b);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
};

std::vector<int64_t> constShape(const BufferNode &b) {
    std::vector<int64_t> s;
    for (auto &e : b.shape) s.push_back(constInt(e).value_or(1));
    return s;
}

KernelLayouts inferKernel(const Kernel &k, DiagnosticEngine &diag) {
    Collect c(diag);
    c.visit(k.body);

    // Nodes: fragments (in allocation order) then nests.
    std::vector<const BufferNode *> frags;
    std::map<const BufferNode *, int> fragNode;
    UnionFind uf;
    for (auto &b : k.allocs)
        if (b && b->scope == Scope::Fragment) {
            fragNode[b.get()] = uf.add();
            frags.push_back(b.get());
        }
    std::vector<int> nestNode;
    for (size_t i = 0; i < c.nests.size(); ++i) nestNode.push_back(uf.add());
    for (auto &u : c.uses)
        if (u.exact && fragNode.count(u.buffer)) uf.unite(fragNode[u.buffer], nestNode[u.nest]);

    // Per group: replicated or not, the widest memory access, the shape.
    struct Group {
        bool replicated = false;
        int memBytes = 0, fragBytes = 0;
        std::vector<int64_t> shape;
        bool hasShape = false;
    };
    std::map<int, Group> groups;
    for (auto &u : c.uses)
        if ((u.reduceDst || !u.exact) && fragNode.count(u.buffer)) groups[uf.find(fragNode[u.buffer])].replicated = true;
    for (auto *f : frags) {
        Group &g = groups[uf.find(fragNode[f])];
        g.fragBytes = std::max(g.fragBytes, f->dtype.bytes());
        if (!g.hasShape) g.shape = constShape(*f), g.hasShape = true;
    }
    for (size_t i = 0; i < c.nests.size(); ++i) {
        Group &g = groups[uf.find(nestNode[i])];
        g.memBytes = std::max(g.memBytes, c.nests[i].memBytes);
        if (!g.hasShape) g.shape = c.nests[i].extents, g.hasShape = true;
    }

    auto layoutOf = [&](const Group &g) {
        if (g.replicated) return Layout::replicated(g.shape);
        int bytes = g.memBytes ? g.memBytes : g.fragBytes ? g.fragBytes : 4;
        int v = std::max(1, 16 / bytes);
        int64_t inner = g.shape.empty() ? 1 : g.shape.back();
        int64_t n = std::accumulate(g.shape.begin(), g.shape.end(), int64_t(1), std::multiplies<>());
        while (v > 1 && inner % v != 0) v /= 2;
        // Small index spaces: keep a quarter of the threads busy rather than vectorize fewer of them.
        while (v > 1 && n / v < k.threads / 4) v /= 2;
        return Layout::distributed(g.shape, k.threads, v);
    };

    KernelLayouts out;
    for (auto *f : frags) {
        Layout l = layoutOf(groups[uf.find(fragNode[f])]);
        if (l.kind == Layout::Replicated && l.elements() > kMaxReplicatedElements) {
            // Name the use that needs every element in every thread, and one that spreads the fragment.
            const Use *need = nullptr, *spread = nullptr;
            for (auto &u : c.uses) {
                if (u.buffer != f) continue;
                if (!need && (u.reduceDst || !u.exact)) need = &u;
                if (!spread && u.exact) spread = &u;
            }
            std::string n = std::to_string(l.elements());
            std::string lim = std::to_string(kMaxReplicatedElements);
            if (need && need->reduceDst) {
                diag.error(need->loc, "fragment '" + f->name + "' receives a reduction here, so every thread would "
                                      "hold all " + n + " of its elements; at most " + lim + " fit in registers");
            } else if (need) {
                diag.error(need->loc, "fragment '" + f->name + "' is indexed here by " + need->indexText +
                                      ", not by the variables of a T.Parallel over its whole shape, so every thread "
                                      "would need all " + n + " of its elements; at most " + lim + " fit in registers");
            }
            if (need && spread)
                diag.note(spread->loc, "elsewhere '" + f->name + "' is spread over the threads, as here");
            l = Layout::distributed(l.shape, k.threads, 1); // keep going with something consistent
        }
        out.fragments[f] = l;
        std::vector<Expr> shape{IntImm::make(DType::Int32, l.slotsPerThread())};
        out.registers[f] = makeBuffer(f->name, Scope::Local, f->dtype, shape, f->loc);
    }
    for (size_t i = 0; i < c.nests.size(); ++i) out.loops[c.nests[i].outer.get()] = layoutOf(groups[uf.find(nestNode[i])]);

    // A copy in every thread cannot be updated by a loop whose iterations are spread over the threads.
    for (auto &u : c.uses) {
        if (!u.write || u.exact || u.nest < 0) continue;
        auto it = out.fragments.find(u.buffer);
        if (it == out.fragments.end() || it->second.kind != Layout::Replicated) continue;
        if (out.loops[c.nests[u.nest].outer.get()].kind != Layout::Distributed) continue;
        diag.error(u.loc, "fragment '" + u.buffer->name + "' has a copy in every thread, but this store indexes it by " +
                              u.indexText + " inside a T.Parallel loop whose iterations are spread over the "
                              "threads, so each copy would get only some of the values");
        diag.note(c.nests[u.nest].loc, "this loop is spread over the threads; write '" + u.buffer->name +
                                           "' in a T.Parallel over its own shape, or reduce into it");
    }
    return out;
}

/// The nests of a body in program order, for the description.
void nestsInOrder(const Stmt &s, std::vector<const For *> &out) {
    struct W : IRVisitor {
        using IRVisitor::visit;
        std::vector<const For *> *out;
        void visit(const For &op) override {
            if (op.forKind == ForKind::Parallel) {
                out->push_back(&op);
                const For *f = &op;
                while (auto inner = as<For>(f->body)) {
                    if (inner->forKind != ForKind::Parallel) break;
                    f = inner;
                }
                return;
            }
            IRVisitor::visit(op);
        }
    } w;
    w.out = &out;
    w.visit(s);
}

} // namespace

std::vector<KernelLayouts> inferLayouts(const Program &p, DiagnosticEngine &diag) {
    std::vector<KernelLayouts> out;
    for (auto &k : p.kernels) out.push_back(k ? inferKernel(*k, diag) : KernelLayouts{});
    return out;
}

std::string describeLayouts(const Program &p, const std::vector<KernelLayouts> &layouts) {
    std::string s;
    for (size_t i = 0; i < p.kernels.size() && i < layouts.size(); ++i) {
        auto &k = p.kernels[i];
        if (!k) continue;
        s += "# layouts of " + k->name + "\n";
        for (auto &b : k->allocs) {
            auto it = layouts[i].fragments.find(b.get());
            if (it != layouts[i].fragments.end()) s += "#   fragment " + b->name + ": " + it->second.describe() + "\n";
        }
        std::vector<const For *> nests;
        nestsInOrder(k->body, nests);
        for (auto *f : nests) {
            auto it = layouts[i].loops.find(f->var.get());
            if (it == layouts[i].loops.end()) continue;
            s += "#   T.Parallel at line " + std::to_string(f->loc.line) + ": " + it->second.describe() + "\n";
        }
    }
    return s;
}

} // namespace tilec::passes
