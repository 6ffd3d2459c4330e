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

#include <algorithm>
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
    if (l.kind == Layout::Mma && shape.size() >= 2 && shape[0] == l.shape[0] && shape.back() % l.vec == 0) { // the columns split (Layout::columns)
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

/// FullRow (`rows`) / FullCol: as many warps as possible along the rows (columns), the rest along the other
/// dimension, as TileLang's policy does when all of them do not fit (64 rows over 8 warps: 4x2), or {0, 0}.
std::pair<int, int> fullSplit(int warps, int64_t m, int64_t n, bool rows) {
    for (int w = warps; w >= 1; --w) {
        if (warps % w) continue;
        int wm = rows ? w : warps / w, wn = warps / wm;
        if (m % (16 * wm) == 0 && n % (8 * wn) == 0) return {wm, wn};
    }
    return {0, 0};
}

/// (M, N) split over warpsM x warpsN warps with square-most warp tiles, or {0, 0} when no split fits.
std::pair<int, int> balancedSplit(int warps, int64_t m, int64_t n) {
    std::pair<int, int> best{0, 0};
    int64_t bestScore = -1;
    for (int wm = warps; wm >= 1; --wm) {
        if (warps % wm) continue;
        int wn = warps / wm;
        if (m % (16 * wm) || n % (8 * wn)) continue;
        int64_t score = std::llabs(m / wm - n / wn);
        if (bestScore < 0 || score < bestScore) bestScore = score, best = {wm, wn};
    }
    return best;
}

/// The split of `existing`, the layout another T.gemm gave accumulator group of mma.sync product `g` (policy
/// Square or none, its accumulator not read as A), when g can write that layout: every product into one
/// accumulator shares its layout (a wgmma product in a pipelined loop, one on mma.sync after it). wgmma's row
/// order is mma.sync's where each warp owns one 16-row tile (Layout::tileRow).
std::optional<std::pair<int, int>> adoptable(const std::optional<Layout> &existing, const GemmUse &g, int warps) {
    if (!existing || existing->kind != Layout::Mma || g.op->instr == GemmInstr::Wgmma) return std::nullopt;
    if (g.op->policy != GemmPolicy::Auto && g.op->policy != GemmPolicy::Square) return std::nullopt;
    const Layout &l = *existing;
    if (l.shape != std::vector<int64_t>{g.m, g.n} || l.warpsM * l.warpsN != warps || l.warpCopies() != 1) return std::nullopt;
    if (l.wgmma && g.m != 16 * l.warpsM) return std::nullopt;
    return std::pair{l.warpsM, l.warpsN};
}

/// Tensor cores: each T.gemm's accumulator group takes an mma layout (its warp split from the policy, or
/// chosen so that a fragment later read as operand A holds whole rows per warp); an operand-A fragment
/// takes the mma layout of its (M, K); 1-D fragments of per-row values of an mma group (reduction results
/// along dim 1, `x[i]` in a nest over the group) take the mmaRows layout.
/// The products in the order their splits are decided: those whose split is fixed (wgmma, an explicit FullRow /
/// FullCol, an accumulator read as A; `operandOf`: group -> a product reading it as A) first, so that an mma.sync
/// product with policy Square or none into the same accumulator then takes theirs (adoptable).
template <class GroupOfBuffer>
std::vector<const GemmUse *> fixedSplitsFirst(const LayoutUses &c, const std::map<int, const GemmUse *> &operandOf,
                                              GroupOfBuffer groupOf) {
    std::vector<const GemmUse *> order;
    for (int fixedFirst = 1; fixedFirst >= 0; --fixedFirst)
        for (auto &g : c.gemms) {
            const bool flexible = g.op->instr != GemmInstr::Wgmma && operandOf.find(groupOf(g.c)) == operandOf.end() &&
                                  (g.op->policy == GemmPolicy::Auto || g.op->policy == GemmPolicy::Square);
            if (flexible != (fixedFirst == 1)) order.push_back(&g);
        }
    return order;
}

/// The nests of several variables whose only fragment uses are reads of 1-D fragments at their first variable
/// (Use::rowOfNest), with those reads: candidates to run over the rows of per-row values (assignMmaLayouts).
std::map<int, std::vector<const Use *>> rowReadingNests(const LayoutUses &c) {
    std::map<int, std::vector<const Use *>> out;
    std::set<int> other;
    for (auto &u : c.uses) {
        if (u.nest < 0) continue;
        if (u.rowOfNest && !u.write && c.nests[u.nest].vars.size() > 1) out[u.nest].push_back(&u);
        else other.insert(u.nest);
    }
    for (int n : other) out.erase(n);
    return out;
}

/// A nest that reaches fragments only by reads of per-row values at its first variable (`s[h, c] -= mx[h]` over
/// (h, c), mx a T.gemm row maximum; `byRows`, from rowReadingNests) runs in the threads that hold each row: its
/// first variable over their rows, its others whole in each, its memory stores by one copy of the row
/// (LowerParallel).
template <class GroupOfBuffer, class GroupRef, class GroupOfNest>
void followRows(const std::map<int, std::vector<const Use *>> &byRows, GroupOfBuffer groupOf, GroupRef group,
                GroupOfNest nestGroup, DiagnosticEngine &diag) {
    for (auto &[nest, reads] : byRows) {
        std::optional<Layout> l;
        const Use *other = nullptr;
        for (const Use *u : reads) {
            const auto &f = group(groupOf(u->buffer)).mma;
            if (!f || f->kind != Layout::MmaRows || (l && !l->sameRows(*f))) other = other ? other : u;
            else l = f;
        }
        if (other && l) {
            diag.error(other->loc, "fragment '" + other->buffer->name + "' is read here at a row of a T.Parallel whose "
                                   "rows follow the per-row values of a T.gemm result, but is not held in those rows");
            continue;
        }
        if (l) group(nestGroup(nest)).mma = l, group(nestGroup(nest)).replicated = false;
    }
}

template <class GroupOfBuffer, class GroupRef, class GroupOfNest>
void assignMmaLayouts(const Kernel &k, const LayoutUses &c, GroupOfBuffer groupOf, GroupRef group, GroupOfNest nestGroup,
                      DiagnosticEngine &diag) {
    if (c.gemms.empty()) return;
    const int warps = k.threads / 32;
    if (k.threads % 32 != 0) {
        diag.error(c.gemms[0].op->loc, "T.gemm needs a whole number of warps, but the kernel has " +
                                           std::to_string(k.threads) + " threads");
        return;
    }
    std::map<int, const GemmUse *> operandOf; // group -> a gemm reading a fragment of it as operand A
    for (auto &g : c.gemms)
        if (g.aFrag) operandOf.emplace(groupOf(g.aFrag), &g);
    auto assign = [&](int node, const Layout &l, const GemmUse &g, const std::string &what) {
        auto &grp = group(node);
        if (grp.mma && !(*grp.mma == l)) {
            diag.error(g.op->loc, "T.gemm needs " + what + " split over " + std::to_string(l.warpsM) + "x" +
                                      std::to_string(l.warpsN) + " warps, but another T.gemm splits it over " +
                                      std::to_string(grp.mma->warpsM) + "x" + std::to_string(grp.mma->warpsN));
            diag.note(grp.mmaBy->op->loc, "the other T.gemm");
            return;
        }
        grp.mma = l;
        grp.mmaBy = &g;
    };
    for (const GemmUse *gp : fixedSplitsFirst(c, operandOf, groupOf)) {
        const GemmUse &g = *gp;
        const std::string cName = "'" + g.c->name + "'";
        if (g.c->shape.size() != 2) {
            diag.error(g.op->c.loc.valid() ? g.op->c.loc : g.op->loc, "the accumulator of T.gemm must be a 2-D fragment");
            continue;
        }
        int cg = groupOf(g.c);
        auto reader = operandOf.find(cg);
        const bool wgmma = g.op->instr == GemmInstr::Wgmma;
        // A fragment read as A is held in its warps' rows, a copy in each warp column where the warps split the
        // columns too (mma.sync's gemm_rs and wgmma RS alike), so only an accumulator that is itself read as A
        // needs whole rows per warp: its own layout is the operand's.
        const GemmUse *needRows = reader != operandOf.end() ? reader->second : nullptr;
        std::pair<int, int> split;
        const auto adopted = needRows ? std::nullopt : adoptable(group(cg).mma, g, warps);
        if (adopted) {
            split = *adopted;
        } else if (wgmma) { // specializeWarps checked that the warpgroups split it
            auto wg = wgmmaWarpgroups(g.m, g.n, warps / 4, 1, g.op->policy);
            split = {4 * wg.first, wg.second};
        } else switch (g.op->policy) {
        case GemmPolicy::FullRow: split = fullSplit(warps, g.m, g.n, true); break;
        case GemmPolicy::FullCol: split = fullSplit(warps, g.m, g.n, false); break;
        case GemmPolicy::Square: split = balancedSplit(warps, g.m, g.n); break;
        case GemmPolicy::Auto: // whole rows per warp where A is read from registers (no copies of A) if they fit
            split = needRows ? std::pair{warps, 1} : g.aFrag ? fullSplit(warps, g.m, g.n, true) : balancedSplit(warps, g.m, g.n);
            break;
        }
        if (needRows && split.second != 1) {
            diag.error(g.op->loc, std::string("policy ") + toString(g.op->policy) + " splits the columns of " + cName +
                                      " over warps, but T.gemm reads it (or a fragment computed from it) as operand A, "
                                      "which needs whole rows in each warp; use policy=T.GemmWarpPolicy.FullRow");
            if (needRows != &g) diag.note(needRows->op->loc, "read as operand A here");
            continue;
        }
        if (split.first == 0 || g.m % (16 * split.first) || g.n % (8 * split.second)) {
            diag.error(g.op->loc, "T.gemm's " + std::to_string(g.m) + "x" + std::to_string(g.n) + " accumulator " + cName +
                                      " cannot be split into 16x8 tensor-core tiles over " +
                                      (split.first ? std::to_string(split.first) + "x" + std::to_string(split.second)
                                                   : std::to_string(warps)) +
                                      " warps");
            continue;
        }
        assign(cg, adopted ? *group(cg).mma : Layout::mma({g.m, g.n}, k.threads, split.first, split.second, wgmma), g,
               "the accumulator " + cName);
        if (g.aFrag) {
            if (g.aFrag->shape.size() != 2 || g.op->transA || g.m % (16 * split.first) || g.k % 16) {
                diag.error(g.op->a.loc.valid() ? g.op->a.loc : g.op->loc,
                           "operand A of T.gemm from a fragment must be a whole 2-D fragment, not transposed, with "
                           "K a multiple of 16");
                continue;
            }
            // wgmma RS: the A registers of m64k16 are the wgmma accumulator order of (M, K) (sm90_wgmma.cuh); where
            // the warpgroups also split the columns, each warpgroup column holds a copy (Layout::warpCopies)
            assign(groupOf(g.aFrag), Layout::mma({g.m, g.k}, k.threads, split.first, 1, wgmma), g,
                   "operand A '" + g.aFrag->name + "'");
        }
    }
    // Fragments of an mma group can only be reached through nests over the whole group.
    for (auto &u : c.uses) {
        if (u.exact || u.reduceDst) continue;
        auto &grp = group(groupOf(u.buffer));
        if (!grp.mma || grp.mma->kind != Layout::Mma) continue;
        diag.error(u.loc, "fragment '" + u.buffer->name + "' is in the tensor-core layout of a T.gemm, so it can only be "
                          "indexed by the variables of a T.Parallel over its whole shape, not by " + u.indexText);
        diag.note(grp.mmaBy->op->loc, "the T.gemm that fixes its layout");
    }
    // Per-row values: a candidate layout per group from each link; blockers are other non-exact uses.
    std::map<int, std::optional<Layout>> rows;
    std::map<int, const Use *> blocker;
    const std::map<int, std::vector<const Use *>> byRows = rowReadingNests(c);
    for (auto &u : c.uses) {
        int gid = groupOf(u.buffer);
        if (group(gid).mma) continue;
        std::optional<Layout> cand;
        if (u.rowOfNest) {
            auto &ng = group(nestGroup(u.nest));
            if (ng.mma && ng.mma->kind == Layout::Mma)
                cand = Layout::mmaRows(ng.mma->shape[0], k.threads, ng.mma->warpsM, ng.mma->warpsN, ng.mma->wgmma);
            else if (byRows.count(u.nest))
                continue; // the nest follows the fragment's rows (below)
        } else if (u.reduceDst && u.reduceSrc) {
            auto &sg = group(groupOf(u.reduceSrc));
            if (sg.mma && sg.mma->kind == Layout::Mma && u.reduceDim == 1 && u.reduceSrc->shape.size() == 2)
                cand = Layout::mmaRows(sg.mma->shape[0], k.threads, sg.mma->warpsM, sg.mma->warpsN, sg.mma->wgmma);
            else if (sg.mma && !(sg.mma->kind == Layout::Mma && (u.reduceDim == 0 || u.reduceSrc->shape.size() > 2))) {
                diag.error(u.loc, "reducing the tensor-core accumulator '" + u.reduceSrc->name + "' along dim " +
                                      std::to_string(u.reduceDim) + " is not supported; only per-row (dim=1) and per-column "
                                      "(dim=0) reductions of a T.gemm result are");
                continue;
            }
        }
        if (cand && (u.buffer->shape.size() != 1 || constInt(u.buffer->shape[0]) != std::optional<int64_t>(cand->shape[0])))
            cand.reset();
        if (!cand) {
            if ((!u.exact || u.reduceDst) && !blocker.count(gid)) blocker[gid] = &u;
            continue;
        }
        auto &r = rows[gid];
        if (r && !r->sameRows(*cand)) {
            diag.error(u.loc, "fragment '" + u.buffer->name + "' holds per-row values of two T.gemm results whose rows "
                              "are split over the warps differently");
            continue;
        }
        r = cand;
    }
    for (auto &[gid, r] : rows) {
        if (!r) continue;
        auto b = blocker.find(gid);
        if (b != blocker.end()) {
            const Use &u = *b->second;
            diag.error(u.loc, "fragment '" + u.buffer->name + "' holds per-row values of a T.gemm result, so it cannot "
                              "also be " + (u.reduceDst ? std::string("the destination of this reduction")
                                                        : "indexed by " + u.indexText + " here"));
            continue;
        }
        group(gid).mma = r;
        group(gid).replicated = false;
    }
    followRows(byRows, groupOf, group, nestGroup, diag);
}

/// Slice accesses (Use::sliceElements), broadcasts (Use::trailing) and expansions (Use::expand), below.
/// Slice accesses: fragment F's element (c, p) is thread `(p / V) % T`'s, as iteration p of the
/// nest, when both are distributed over the same T threads with the same V and a slice is whole rounds of T*V
/// elements. Narrows the two groups' vector widths until they agree; a slice access that no width allows
/// (or whose nest runs whole in every thread, or in a tensor-core layout) replicates F's group instead.
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
            if (fg.replicated || fg.mma) continue;
            Layout lf = layoutOf(fg), ln = layoutOf(ng);
            const int64_t fMul = u.trailing ? u.trailElements : 1, nMul = u.trailing ? 1 : u.expand;
            if (lf.kind != Layout::Distributed || ln.kind != Layout::Distributed || lf.threads != ln.threads ||
                (u.trailing ? ln.vec % fMul : lf.vec % nMul) != 0 || (u.expand && (lf.copies || ln.copies))) {
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

/// `spreadReductions`: a reduction's destination joins the layout of the nests that index it exactly instead of
/// being held whole in every thread. `overflow` (when given) is set where a fragment is too big to replicate.
KernelLayouts inferKernel(const Kernel &k, DiagnosticEngine &diag, bool spreadReductions, bool *overflow) {
    LayoutUses c = collectLayoutUses(k.body, diag);

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
    struct Group {
        bool replicated = false;
        int memBytes = 0, fragBytes = 0;
        std::vector<int64_t> shape;
        bool hasShape = false;
        std::optional<Layout> mma; ///< an mma or mmaRows layout the group must take
        const GemmUse *mmaBy = nullptr;
        int vecCap = 16;           ///< the widest vector width slice accesses allow (distributed)
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
                     [&](int node) -> auto & { return groups[node]; }, [&](int nest) { return uf.find(nestNode[nest]); }, diag);
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

namespace {

/// The layouts of one kernel. Reduction results are held whole in every thread, unless that leaves a fragment
/// too big to replicate (a nest over a reduction's result reading slices of a fragment, split-KV decoding's
/// combine): then they are spread over the threads like the nests that read them.
KernelLayouts inferLayouts(const Kernel &k, DiagnosticEngine &diag) {
    bool overflow = false;
    diag.hold();
    KernelLayouts whole = inferKernel(k, diag, false, &overflow);
    auto held = diag.endHold();
    if (overflow) return inferKernel(k, diag, true, nullptr);
    for (auto &d : held) diag.report(d.severity, d.range, d.message);
    return whole;
}

} // namespace

Program inferLayouts(const Program &p, DiagnosticEngine &diag) {
    Program out;
    for (auto &k : p.kernels) {
        if (!k) {
            out.kernels.push_back(k);
            continue;
        }
        auto nk = std::make_shared<Kernel>(*k);
        nk->layouts = std::make_shared<const KernelLayouts>(inferLayouts(*k, diag));
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
