/// \file
/// Layout inference (include/tilec/passes/InferLayouts.h): fragments and T.Parallel nests linked by exact
/// indexing form groups (union-find); each group is distributed or replicated.
#include "tilec/passes/InferLayouts.h"

#include "tilec/IRPrinter.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "ColumnLayouts.h"
#include "CopiedLayouts.h"
#include "LayoutUses.h"
#include "MmaLayouts.h"
#include "StagedOperands.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

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

/// `l` over `shape` (as many elements): the same thread and slot for each row-major element. Distributed and
/// replicated layouts place elements by their row-major position alone; a tensor-core layout keeps its rows and
/// may split its columns into several dimensions.
std::optional<Layout> reshaped(const Layout &l, const std::vector<int64_t> &shape) {
    if (shape == l.shape) return l;
    if (std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>()) != l.elements()) return std::nullopt;
    if (l.kind == Layout::Replicated) return Layout::replicated(shape);
    if (l.kind == Layout::Distributed && !shape.empty() && shape.back() % l.vec == 0)
        return Layout::distributed(shape, l.threads, l.vec, l.copies);
    if (l.kind == Layout::Mma && !l.opCols && shape.size() >= 2 && shape[0] == l.shape[0] && shape.back() % l.vec == 0) { // the columns split (Layout::columns)
        Layout v = l;
        v.shape = shape;
        return v;
    }
    return std::nullopt;
}

/// The vector width (a power of two, at most `widest`) that gives the busiest of `threads` the fewest rounds (vector
/// accesses) over `n` elements and, among those, the fewest elements: 256 floats over 128 threads 2-wide in all of
/// them, not 4-wide in half (fn_normw_merge_bwd: each busy thread had twice the bytes to wait for); 64 floats
/// one each in 64 threads; 768 floats still 4-wide in 2 rounds (2-wide would take 3 accesses per thread, and
/// 384 floats 1-wide 3 where 4-wide takes 1); 8192 4-wide in 16 rounds.
int busiestThreadWidth(int64_t n, int threads, int widest) {
    auto rounds = [&](int v) { return (n + (int64_t)threads * v - 1) / ((int64_t)threads * v); };
    int best = widest;
    for (int v = widest / 2; v >= 1; v /= 2) best = rounds(v) <= rounds(best) ? v : best;
    return best;
}

/// A group's layout `l` over fragment `f`'s own shape: a group may join fragments of one element count and
/// different shapes (a (1, 1, 512) fragment stored through its flat view next to a (128, 4) one).
Layout overOwnShape(const Layout &l, const BufferNode &f) {
    auto own = reshaped(l, constShape(f));
    return own ? *own : l;
}

/// Slice accesses (Use::sliceElements), broadcasts (Use::trailing) and expansions (Use::expand), below.
/// Slice accesses: fragment F's element (c, p) is thread `(p / V) % T`'s, as iteration p of the
/// nest, when both are distributed over the same T threads with the same V and a slice is whole rounds of T*V
/// elements. Narrows the two groups' vector widths until they agree; a slice access that no width allows
/// (or whose nest runs whole in every thread, or in a tensor-core layout) replicates F's group instead.
/// Whether group `g`'s vector width may be raised to `want` elements (a power of two up to 16 that its
/// innermost extent and every slice access allow).
template <class Group> bool widens(const Group &g, int64_t want) {
    return want <= 16 && (want & (want - 1)) == 0 && !g.view && g.vecCap >= want && g.hasShape && !g.shape.empty() &&
           g.shape.back() % want == 0 && g.vecWant <= want;
}

template <class Groups, class GroupOfBuffer, class GroupOfNest, class LayoutOf>
void agreeOnSlices(const LayoutUses &c, Groups &groups, GroupOfBuffer groupOf, GroupOfNest nestGroup, LayoutOf layoutOf) {
    for (bool changed = true; changed;) {
        changed = false;
        for (auto &u : c.uses) {
            if (!u.sliceElements) continue;
            auto &fg = groups[groupOf(u.buffer)];
            auto &ng = groups[nestGroup(u.nest)];
            if (u.write && fg.replicated && !ng.replicated && !ng.mma) { // a store into a copy in every thread: each
                ng.replicated = changed = true;                          // thread runs the nest whole
                continue;
            }
            if (fg.replicated || fg.mma) continue;
            Layout lf = layoutOf(fg), ln = layoutOf(ng);
            int v = std::min(lf.vec, ln.vec);
            while (v > 1 && u.sliceElements % ((int64_t)v * lf.threads) != 0) v /= 2;
            bool fits = lf.kind == Layout::Distributed && ln.kind == Layout::Distributed && lf.threads == ln.threads &&
                        u.sliceElements % ((int64_t)v * lf.threads) == 0;
            if (!fits) {
                fg.replicated = true;
                changed = true;
            } else if (lf.vec != v || ln.vec != v) {
                fg.vecCap = std::min(fg.vecCap, v);
                ng.vecCap = std::min(ng.vecCap, v);
                changed = true;
            }
        }
        // Broadcasts (Use::trailing): the nest's element p = q * S + s (S the trailing iterations) holds F's
        // element q in the same thread when F's vector width times S is the nest's: each thread's vector of the
        // nest then covers whole runs of S iterations of its own elements of F. Expansions (Use::expand): iteration
        // p's S elements p * S + w are F's slots lane * S + w of the iteration's round in its thread when F's
        // vector width is S times the nest's. Both: F's width times fMul is the nest's times nMul.
        for (auto &u : c.uses) {
            if (!u.trailing && !u.expand) continue;
            auto &fg = groups[groupOf(u.buffer)];
            auto &ng = groups[nestGroup(u.nest)];
            // An expansion's store into a fragment replicated here (its widths disagree below: `f[i, jq * 4 + w]`
            // where a copy at an odd column caps f's width at 2) runs whole in every thread, each filling its own
            // copy, as joinExpansionStores has the nests of fragments replicated before do.
            if (u.expand && u.write && fg.replicated && !ng.replicated && !ng.mma) {
                ng.replicated = changed = true;
                continue;
            }
            if (fg.replicated || fg.mma) continue;
            Layout lf = layoutOf(fg), ln = layoutOf(ng);
            const int64_t fMul = u.trailing ? u.trailElements : 1, nMul = u.trailing ? 1 : u.expand;
            const bool sameKind = lf.kind == Layout::Distributed && ln.kind == Layout::Distributed && lf.threads == ln.threads;
            // An expansion of S elements per iteration that F's width does not hold: F's group is widened to S
            // where its shape allows (each thread then holds the S elements of its iterations: `loc[j] = f[y * 8
            // + j]`, TileKernels' packing of 8 values into 3 words), rather than held whole in every thread.
            if (u.expand && sameKind && !lf.copies && !ln.copies && lf.vec % nMul != 0 && widens(fg, nMul)) {
                fg.vecWant = (int)nMul;
                changed = true;
                continue;
            }
            if (!sameKind || (u.trailing ? ln.vec % fMul : lf.vec % nMul) != 0 || (u.expand && (lf.copies || ln.copies))) {
                fg.replicated = true;
                changed = true;
            } else if (lf.vec * fMul != ln.vec * nMul) {
                const bool fWider = lf.vec * fMul > ln.vec * nMul;
                (fWider ? fg.vecCap : ng.vecCap) = (int)(fWider ? ln.vec * nMul / fMul : lf.vec * fMul / nMul);
                changed = true;
            }
        }
    }
}

/// Fragment `f`, whose layout `l` would hold more elements in every thread than registers can: an error at the
/// use that needs every element in every thread, and a note at one that spreads the fragment (uses of its views
/// (`baseOf`: view to base) count as its own).
void reportTooBigToReplicate(const LayoutUses &c, const BufferNode *f, const Layout &l,
                             const std::map<const BufferNode *, const BufferNode *> &baseOf, DiagnosticEngine &diag) {
    auto isOf = [&](const BufferNode *use) {
        auto b = baseOf.find(use);
        return use == f || (b != baseOf.end() && b->second == f);
    };
    const Use *need = nullptr, *spread = nullptr;
    for (auto &u : c.uses) {
        if (!isOf(u.buffer)) continue;
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
}

/// The races and lost updates of nests that run whole in every thread (or in several), and of copies in every
/// thread updated by nests spread over the threads, once `out` holds every layout: located errors.
void checkWholeNests(const LayoutUses &c, KernelLayouts &out, DiagnosticEngine &diag) {
    // A nest that every thread runs whole (or several threads, for copies of rows) stores each element of
    // shared or global memory from one thread only; the other threads' reads of what it stores would race.
    for (auto &n : c.nests) {
        auto kind = out.loops[n.outer.get()].kind;
        if (kind != Layout::Replicated && kind != Layout::MmaRows && kind != Layout::MmaCols) continue;
        for (auto &[b, loc] : n.memReads) {
            if (!n.memWrites.count(b)) continue;
            diag.error(loc, "this T.Parallel runs whole in every thread (a fragment it uses is held whole by every "
                            "thread, or its rows by several), and one thread stores each element of '" +
                                b->name + "', so the other threads' reads of '" + b->name + "' race with its stores");
            diag.note(n.loc, "read '" + b->name + "' in a T.Parallel of its own before this one, or give this loop a "
                             "fragment spread over the threads");
            break;
        }
    }
    // A copy in every thread cannot be updated by a loop whose iterations are spread over the threads.
    for (auto &u : c.uses) {
        if (!u.write || u.exact || u.nest < 0) continue;
        auto it = out.fragments.find(u.buffer);
        if (it == out.fragments.end() || (it->second.kind != Layout::Replicated && it->second.kind != Layout::MmaRows &&
                                           it->second.kind != Layout::MmaCols))
            continue;
        auto nestKind = out.loops[c.nests[u.nest].outer.get()].kind;
        if (nestKind != Layout::Distributed && nestKind != Layout::Mma) continue;
        diag.error(u.loc, "fragment '" + u.buffer->name + "' has a copy in every thread, but this store indexes it by " +
                              u.indexText + " inside a T.Parallel loop whose iterations are spread over the "
                              "threads, so each copy would get only some of the values");
        diag.note(c.nests[u.nest].loc, "this loop is spread over the threads; write '" + u.buffer->name +
                                           "' in a T.Parallel over its own shape, or reduce into it");
    }
}

/// An expansion's stores (`F[i, jq * S + w]`) into a fragment held whole in every thread: each thread must fill its
/// own copy, as a nest storing it exactly does, so the nest joins the fragment's group and runs whole in every
/// thread (a spread nest would leave each copy only its thread's iterations). Joining may make other fragments'
/// groups replicated, so to a fixed point. `replicated(node)` is a group's flag.
void joinExpansionStores(const LayoutUses &c, UnionFind &uf, std::map<const BufferNode *, int> &fragNode,
                         const std::vector<int> &nestNode, const std::function<bool &(int)> &replicated) {
    for (bool changed = true; changed;) {
        changed = false;
        for (auto &u : c.uses) {
            if (!u.write || !u.expand || u.nest < 0 || !fragNode.count(u.buffer)) continue;
            int f = uf.find(fragNode[u.buffer]), n = uf.find(nestNode[u.nest]);
            if (f == n || !replicated(f)) continue;
            uf.unite(f, n);
            replicated(uf.find(f)) = true;
            changed = true;
        }
    }
}

/// `spreadReductions`: a reduction's destination joins the layout of the nests that index it exactly instead of
/// being held whole in every thread. `overflow` (when given) is set where a fragment is too big to replicate. A nest
/// run whole in every thread runs over its own extents (an expansion's are not its fragment's shape). `stageA`
/// (when given): assignMmaLayouts' products to read operand A from a shared copy (then the layouts are not final).
KernelLayouts inferKernel(const Kernel &k, DiagnosticEngine &diag, bool spreadReductions, bool *overflow,
                          std::set<const Gemm *> *stageA, bool broadcastLoadWidths) {
    LayoutUses c = collectLayoutUses(k.body, diag, broadcastLoadWidths);

    // Nodes: fragments (in allocation order) then nests.
    std::vector<const BufferNode *> frags;
    std::map<const BufferNode *, int> fragNode;
    UnionFind uf;
    for (auto &b : k.allocs)
        if (b && b->scope == Scope::Fragment) {
            fragNode[b.get()] = uf.add();
            frags.push_back(b.get());
        }
    // A view of a fragment (Kernel::fragmentViews) is its base's node: the same elements, another shape.
    std::map<const BufferNode *, const BufferNode *> baseOf;
    for (auto &[view, base] : k.fragmentViews)
        if (fragNode.count(base.get())) fragNode[view.get()] = fragNode[base.get()], baseOf[view.get()] = base.get();
    std::vector<int> nestNode;
    for (size_t i = 0; i < c.nests.size(); ++i) nestNode.push_back(uf.add());
    for (auto &u : c.uses)
        if (u.exact && fragNode.count(u.buffer)) uf.unite(fragNode[u.buffer], nestNode[u.nest]);

    // Per group: replicated or not, the widest memory access, the shape.
    struct Group : MmaGroup { // replicated, mma, mmaBy (MmaLayouts.h)
        int memBytes = 0, fragBytes = 0;
        std::vector<int64_t> shape;
        bool hasShape = false;
        int vecCap = 16;           ///< the widest vector width slice accesses allow (distributed)
        int vecWant = 0;           ///< an expansion's width the group's vector width is raised to (agreeOnSlices)
        std::optional<Layout> copied; ///< a layout with copies (CopiedLayouts.h)
        bool view = false;         ///< a view of one of its fragments exists
    };
    std::map<int, Group> groups;
    // A reduction's result is spread over the threads where something broadcasts it along a nest's trailing
    // variables and every other use is one a distributed layout serves (agreeOnSlices decides whether the
    // layouts can agree), else it is held whole in every thread.
    std::set<const BufferNode *> spreadable;
    for (auto &u : c.uses)
        if (u.trailing) spreadable.insert(u.buffer);
    for (auto &u : c.uses)
        if (!u.exact && !u.sliceElements && !u.trailing && !u.expand && !u.reduceDst) spreadable.erase(u.buffer);
    for (auto &u : c.uses)
        if ((u.reduceDst ? !spreadReductions && !spreadable.count(u.buffer) : !u.exact && !u.sliceElements && !u.trailing && !u.expand) &&
            fragNode.count(u.buffer))
            groups[uf.find(fragNode[u.buffer])].replicated = true;
    // A nest that indexes no fragment exactly but stores to one otherwise (`sinks[i] = Sinks[h]` into a copy in
    // every thread) runs whole in every thread, each filling its own copy; an expansion's stores stay spread, and so
    // do a slice's (`acc[s, h] += x[h]` in a nest over h: the slice is the nest's shape, agreeOnSlices places it).
    std::set<int> exactNests;
    for (auto &u : c.uses)
        if (u.exact && u.nest >= 0) exactNests.insert(u.nest);
    for (auto &u : c.uses)
        if (u.write && !u.exact && !u.expand && !u.sliceElements && u.nest >= 0 && !exactNests.count(u.nest))
            groups[uf.find(nestNode[u.nest])].replicated = true;
    joinExpansionStores(c, uf, fragNode, nestNode, [&](int node) -> bool & { return groups[node].replicated; });
    for (auto *f : frags) {
        Group &g = groups[uf.find(fragNode[f])];
        g.fragBytes = std::max(g.fragBytes, f->dtype.bytes());
        if (!g.hasShape) g.shape = constShape(*f), g.hasShape = true;
    }
    for (size_t i = 0; i < c.nests.size(); ++i) {
        Group &g = groups[uf.find(nestNode[i])];
        // A nest of a thread's own registers (it stores only into T.alloc_local buffers and touches no
        // fragment: `for v in T.Parallel(8): w_local[v] *= s`) is the thread's own loop: every thread runs it whole.
        if (!c.nests[i].fragmentAccess && !c.nests[i].nonLocalStore) g.replicated = true;
        g.memBytes = std::max(g.memBytes, c.nests[i].memBytes);
        g.vecCap = std::min(g.vecCap, c.nests[i].vecCap);
        if (!g.hasShape) g.shape = c.nests[i].extents, g.hasShape = true;
    }
    // A view's layout is its base's over the view's shape: the vector width must divide its innermost extent too.
    for (auto &[view, base] : k.fragmentViews) {
        if (!baseOf.count(view.get())) continue;
        Group &g = groups[uf.find(fragNode[view.get()])];
        g.view = true;
        int64_t inner = constInt(view->shape.back()).value_or(1);
        while (g.vecCap > 1 && inner % g.vecCap != 0) g.vecCap /= 2;
    }
    assignMmaLayouts(k, c, [&](const BufferNode *b) { return uf.find(fragNode.at(b)); },
                     [&](int node) -> MmaGroup & { return groups[node]; }, [&](int nest) { return uf.find(nestNode[nest]); }, diag, stageA);
    // Per-column values of the mma groups (ColumnLayouts.h), where nothing else fixed the group's layout.
    for (auto &[gid, l] : columnLayouts(c, [&](const BufferNode *b) { return fragNode.count(b) ? uf.find(fragNode.at(b)) : -1; },
                                        [&](int nest) { return uf.find(nestNode[nest]); },
                                        [&](int id) { return groups[id].mma; }))
        if (Group &g = groups[gid]; !g.mma && !g.view) g.mma = l, g.replicated = false;

    auto maxVec = [&](const Group &g) {
        int bytes = g.memBytes ? g.memBytes : g.fragBytes ? g.fragBytes : 4;
        return std::min(g.vecCap, std::max(1, 16 / bytes));
    };
    auto layoutOf = [&](const Group &g) {
        if (g.mma) return *g.mma;
        if (g.copied) return *g.copied;
        if (g.replicated) return Layout::replicated(g.shape);
        int v = maxVec(g);
        int64_t inner = g.shape.empty() ? 1 : g.shape.back();
        int64_t n = std::accumulate(g.shape.begin(), g.shape.end(), int64_t(1), std::multiplies<>());
        if (g.vecWant && g.vecWant <= g.vecCap && inner % g.vecWant == 0) return Layout::distributed(g.shape, k.threads, g.vecWant);
        while (v > 1 && inner % v != 0) v /= 2;
        return Layout::distributed(g.shape, k.threads, busiestThreadWidth(n, k.threads, v));
    };

    agreeOnSlices(c, groups, [&](const BufferNode *b) { return uf.find(fragNode.at(b)); },
                  [&](int nest) { return uf.find(nestNode[nest]); }, layoutOf);
    // Groups that would be held whole by every thread, or by a few threads, held in copies instead.
    std::map<int, CopyGroup> copyGroups;
    for (auto &[id, g] : groups) copyGroups[id] = CopyGroup{layoutOf(g), g.view || g.mma, maxVec(g)};
    for (auto &[id, l] : chooseCopiedLayouts(c, k.threads, copyGroups,
                                             [&](const BufferNode *b) { return fragNode.count(b) ? uf.find(fragNode.at(b)) : -1; },
                                             [&](int nest) { return uf.find(nestNode[nest]); }))
        groups[id].copied = l;

    // A float8 A of wgmma RS is held in the accumulator order, which is not wgmma's 8-bit A order: its register
    // array has room for the m64k32 image the device library issues from (sm90_wgmma.cuh, float8_a_image).
    std::set<const BufferNode *> withImage;
    for (auto &g : c.gemms)
        if (g.aFrag && g.op->instr == GemmInstr::Wgmma && g.aFrag->dtype.isFloat8()) withImage.insert(g.aFrag);
    KernelLayouts out;
    for (auto *f : frags) {
        Layout l = overOwnShape(layoutOf(groups[uf.find(fragNode[f])]), *f);
        if (l.kind == Layout::Replicated && l.elements() > kMaxReplicatedElements) {
            if (overflow) *overflow = true;
            reportTooBigToReplicate(c, f, l, baseOf, diag);
            l = Layout::distributed(l.shape, k.threads, 1); // keep going with something consistent
        }
        out.fragments[f] = l;
        std::vector<Expr> shape{IntImm::make(DType::Int32, l.slotsPerThread() * (withImage.count(f) ? 2 : 1))};
        out.registers[f] = makeBuffer(f->name, Scope::Local, f->dtype, shape, f->loc);
    }
    for (auto &[view, base] : k.fragmentViews) {
        if (!baseOf.count(view.get())) continue;
        const Layout &bl = out.fragments.at(base.get());
        auto l = reshaped(bl, constShape(*view));
        if (!l) {
            diag.error(view->loc, "'" + view->name + "' is a T.reshape / T.view of '" + base->name + "', which is " +
                                      (bl.isMma() ? "in the tensor-core layout of a T.gemm" : bl.describe()) +
                                      ": tile primitives can only take a view of a fragment spread in row-major order");
            l = Layout::replicated(constShape(*view)); // keep going with something consistent
        }
        out.fragments[view.get()] = *l;
        out.registers[view.get()] = out.registers.at(base.get());
    }
    for (size_t i = 0; i < c.nests.size(); ++i) {
        Layout l = layoutOf(groups[uf.find(nestNode[i])]);
        if (l.kind == Layout::Replicated) l = Layout::replicated(c.nests[i].extents);
        out.loops[c.nests[i].outer.get()] = reshaped(l, c.nests[i].extents).value_or(l); // a nest over a view's shape
    }

    checkWholeNests(c, out, diag);
    return out;
}

/// The nests of a body in program order, for the description.
void nestsInOrder(const Stmt &s, std::vector<const For *> &out) {
    struct W : IRVisitor {
        using IRVisitor::visit;
        std::vector<const For *> *out;
        void visit(const For &op) override {
            if (op.forKind == ForKind::Parallel) return out->push_back(&op); // the nest's inner loops are its own
            IRVisitor::visit(op);
        }
    } w;
    w.out = &out;
    w.visit(s);
}

} // namespace

namespace {

/// The layouts of one kernel, and the kernel they lay out. Reduction results are held whole in every thread, unless
/// that leaves a fragment too big to replicate (a nest over a reduction's result reading slices of a fragment,
/// split-KV decoding's combine): then they are spread over the threads like the nests that read them. A T.gemm
/// whose operand-A fragment another product's accumulator split lays out otherwise than operand A's layout
/// (whole rows per warp) reads it from a shared copy (stageGemmOperands: the kernel returned is then `k` with
/// those copies), and the kernel is laid out again.
std::pair<std::shared_ptr<const Kernel>, KernelLayouts> inferLayouts(std::shared_ptr<const Kernel> k, DiagnosticEngine &diag,
                                                                    bool broadcastLoadWidths) {
    for (;;) {
        bool overflow = false;
        std::set<const Gemm *> stage;
        diag.hold();
        KernelLayouts whole = inferKernel(*k, diag, false, &overflow, &stage, broadcastLoadWidths);
        auto held = diag.endHold();
        if (!stage.empty()) {
            auto staged = stageGemmOperands(k, stage);
            TILEC_ASSERT(staged != k, "inferLayouts: T.gemm operands to stage, but none was");
            k = staged;
            continue;
        }
        if (overflow) return {k, inferKernel(*k, diag, true, nullptr, nullptr, broadcastLoadWidths)};
        for (auto &d : held) diag.report(d.severity, d.range, d.message);
        return {k, whole};
    }
}

} // namespace

Program inferLayouts(const Program &p, DiagnosticEngine &diag, bool broadcastLoadWidths) {
    Program out;
    for (auto &k : p.kernels) {
        if (!k) {
            out.kernels.push_back(k);
            continue;
        }
        auto [laid, layouts] = inferLayouts(k, diag, broadcastLoadWidths);
        auto nk = std::make_shared<Kernel>(*laid);
        nk->layouts = std::make_shared<const KernelLayouts>(std::move(layouts));
        out.kernels.push_back(std::move(nk));
    }
    return out;
}

std::string describeLayouts(const Program &p) {
    std::string s;
    for (auto &k : p.kernels) {
        if (!k || !k->layouts) continue;
        const KernelLayouts &layouts = *k->layouts;
        s += "# layouts of " + k->name + "\n";
        for (auto &b : k->allocs) {
            auto it = layouts.fragments.find(b.get());
            if (it != layouts.fragments.end()) s += "#   fragment " + b->name + ": " + it->second.describe() + "\n";
        }
        for (auto &[view, base] : k->fragmentViews) {
            auto it = layouts.fragments.find(view.get());
            if (it != layouts.fragments.end())
                s += "#   view " + view->name + " of " + base->name + ": " + it->second.describe() + "\n";
        }
        std::vector<const For *> nests;
        nestsInOrder(k->body, nests);
        for (auto *f : nests) {
            auto it = layouts.loops.find(f->var.get());
            if (it == layouts.loops.end()) continue;
            s += "#   T.Parallel at line " + std::to_string(f->loc.line) + ": " + it->second.describe() + "\n";
        }
    }
    return s;
}

} // namespace tilec::passes
