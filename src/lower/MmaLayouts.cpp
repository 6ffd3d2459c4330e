/// \file
/// Tensor-core layouts of inferLayouts' fragment groups (src/lower/MmaLayouts.h).
#include "MmaLayouts.h"

#include "tilec/passes/Arith.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

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

/// The split of `g`'s accumulator its instruction and policy choose (`needRows`: its accumulator is read as operand
/// A), or {0, 0} when none fits.
std::pair<int, int> policySplit(const GemmUse &g, int warps, bool needRows) {
    if (g.op->instr == GemmInstr::Wgmma) { // specializeWarps checked that the warpgroups split it
        auto wg = wgmmaWarpgroups(g.m, g.n, warps / 4, 1, g.op->policy);
        return {4 * wg.first, wg.second};
    }
    switch (g.op->policy) {
    case GemmPolicy::FullRow: return fullSplit(warps, g.m, g.n, true);
    case GemmPolicy::FullCol: return fullSplit(warps, g.m, g.n, false);
    case GemmPolicy::Square: return balancedSplit(warps, g.m, g.n);
    case GemmPolicy::Auto: // whole rows per warp where A is read from registers (no copies of A) if they fit
        return needRows ? std::pair{warps, 1} : g.aFrag ? fullSplit(warps, g.m, g.n, true) : balancedSplit(warps, g.m, g.n);
    }
    return {0, 0};
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

/// What gives accumulator `g` (read as operand A) whole rows in each warp: FullRow where it does, else fewer warps
/// (its M rows hold at most M/16 warps, M/64 warpgroups on wgmma) or the operand from shared memory.
std::string wholeRowsAdvice(const GemmUse &g, int warps, bool wgmma) {
    const int rowWarps = wgmma ? 4 * wgmmaWarpgroups(g.m, g.n, warps / 4, 1, GemmPolicy::FullRow).first
                               : fullSplit(warps, g.m, g.n, true).first;
    if (rowWarps == warps && g.op->policy != GemmPolicy::FullRow) return "use policy=T.GemmWarpPolicy.FullRow";
    const int64_t most = wgmma ? 4 * (g.m / 64) : g.m / 16;
    return "its " + std::to_string(g.m) + " rows give whole rows to at most " + std::to_string(most) + " warps" +
           (wgmma ? " (16 rows each, in warpgroups of 4)" : " (16 rows each)") + " whatever the policy, but the kernel "
           "has " + std::to_string(warps) + "; run it with " + std::to_string(32 * most) + " threads, give the T.gemm " +
           "more rows, or stage the operand through shared memory (T.copy it into a T.alloc_shared buffer and pass that "
           "to T.gemm)";
}

/// Whether mma.sync product `g` may take any split of its warps (policy Square or none, its accumulator not read as
/// operand A; `operandOf`: group -> a product reading it as A), as opposed to one its policy or instruction fixes.
bool flexibleSplit(const GemmUse &g, const std::map<int, const GemmUse *> &operandOf,
                   const std::function<int(const BufferNode *)> &groupOf) {
    return g.op->instr != GemmInstr::Wgmma && operandOf.find(groupOf(g.c)) == operandOf.end() &&
           (g.op->policy == GemmPolicy::Auto || g.op->policy == GemmPolicy::Square);
}

/// The products in the order their splits are decided: those whose split is fixed (wgmma, an explicit FullRow /
/// FullCol, an accumulator read as A; `operandOf`: group -> a product reading it as A) first, so that an mma.sync
/// product with policy Square or none into the same accumulator then takes theirs (adoptable).
std::vector<const GemmUse *> fixedSplitsFirst(const LayoutUses &c, const std::map<int, const GemmUse *> &operandOf,
                                              const std::function<int(const BufferNode *)> &groupOf) {
    std::vector<const GemmUse *> order;
    for (int fixedFirst = 1; fixedFirst >= 0; --fixedFirst)
        for (auto &g : c.gemms) {
            if (flexibleSplit(g, operandOf, groupOf) != (fixedFirst == 1)) order.push_back(&g);
        }
    return order;
}

/// The accumulator groups that per-row values link (a 1-D fragment group written by a dim-1 reduction of one
/// accumulator and read at the rows of a nest over another: FlashAttention's row maximum scaling the output),
/// as classes of two or more groups: their rows must be split over the warps alike (mmaRows::sameRows).
std::vector<std::set<int>> rowLinkedAccumulators(const LayoutUses &c, const std::function<int(const BufferNode *)> &groupOf,
                                                 const std::function<int(int)> &nestGroup) {
    std::map<int, int64_t> rowsOf; // accumulator group -> its rows
    for (auto &g : c.gemms) rowsOf[groupOf(g.c)] = g.m;
    std::map<int, std::set<int>> byRowGroup; // per-row fragment group -> the accumulator groups it links
    for (auto &u : c.uses) {
        if (u.buffer->shape.size() != 1) continue;
        int acc = -1;
        if (u.rowOfNest && u.nest >= 0) acc = nestGroup(u.nest);
        else if (u.reduceDst && u.reduceSrc && u.reduceDim == 1 && u.reduceSrc->shape.size() == 2) acc = groupOf(u.reduceSrc);
        auto rows = rowsOf.find(acc);
        if (rows != rowsOf.end() && constInt(u.buffer->shape[0]) == std::optional<int64_t>(rows->second))
            byRowGroup[groupOf(u.buffer)].insert(acc);
    }
    std::vector<std::set<int>> classes; // merged while two share a group
    for (auto &[rowGroup, linked] : byRowGroup) {
        std::set<int> merged = linked;
        for (auto it = classes.begin(); it != classes.end();) {
            bool meets = false;
            for (int a : *it) meets = meets || merged.count(a);
            if (!meets) { ++it; continue; }
            merged.insert(it->begin(), it->end());
            it = classes.erase(it);
        }
        classes.push_back(std::move(merged));
    }
    classes.erase(std::remove_if(classes.begin(), classes.end(), [](const std::set<int> &s) { return s.size() < 2; }),
                  classes.end());
    return classes;
}

/// Warp rows for the flexible mma.sync products (flexibleSplit) of each class of row-linked accumulators
/// (rowLinkedAccumulators) whose own splits differ, by accumulator group: the warp rows of the class's one fixed
/// split where it has one (`fixedRows`: a product -> the warp rows of its own split), else the most warp rows that
/// fit every product of the class (64x64 scores and 64x256 outputs over 4 warps, on their own 2x2 and 1x4: 4x1
/// both), so that the per-row reductions combine as few warps as they can (none where each warp holds whole rows,
/// as wgmma's split does) and need the least reduction scratch. A class that a wgmma product or no common count
/// fits keeps its own splits (the error is then at the per-row value that links them).
std::map<int, int> commonRowSplits(const LayoutUses &c, int warps, const std::map<int, const GemmUse *> &operandOf,
                                   const std::function<int(const BufferNode *)> &groupOf,
                                   const std::function<int(int)> &nestGroup,
                                   const std::function<int(const GemmUse &)> &fixedRows) {
    std::map<int, int> out;
    for (const std::set<int> &cls : rowLinkedAccumulators(c, groupOf, nestGroup)) {
        std::set<int> fixed, own; // the fixed products' warp rows; every product's own
        std::vector<const GemmUse *> flexible;
        bool wgmma = false; // its rows are in wgmma's order, which no mma.sync split shares (Layout::sameRows)
        for (auto &g : c.gemms) {
            if (!cls.count(groupOf(g.c))) continue;
            if (flexibleSplit(g, operandOf, groupOf)) flexible.push_back(&g);
            else fixed.insert(fixedRows(g));
            own.insert(fixedRows(g));
            wgmma = wgmma || g.op->instr == GemmInstr::Wgmma;
        }
        if (flexible.empty() || fixed.size() > 1 || own.size() == 1 || wgmma) continue; // own.size() 1: they agree
        int best = 0; // the most warp rows that fit every product
        for (int wm = warps; wm >= 1 && !best; --wm) {
            if (warps % wm || (!fixed.empty() && wm != *fixed.begin())) continue;
            bool fits = true;
            for (const GemmUse *g : flexible) fits = fits && g->m % (16 * wm) == 0 && g->n % (8 * (warps / wm)) == 0;
            if (fits) best = wm;
        }
        if (!best) continue;
        for (const GemmUse *g : flexible) out[groupOf(g->c)] = best;
    }
    return out;
}

/// The nests of several variables whose only fragment uses are reads of 1-D fragments at their first variable
/// (Use::rowOfNest), over all of the fragment's rows (the nest's first extent its length: a nest over fewer rows
/// cannot take the rows' layout, whose threads hold rows it does not run), with those reads: candidates to run
/// over the rows of per-row values (assignMmaLayouts).
std::map<int, std::vector<const Use *>> rowReadingNests(const LayoutUses &c) {
    std::map<int, std::vector<const Use *>> out;
    std::set<int> other;
    for (auto &u : c.uses) {
        if (u.nest < 0) continue;
        const Nest &n = c.nests[u.nest];
        const bool allRows = !n.extents.empty() && constInt(u.buffer->shape[0]) == std::optional<int64_t>(n.extents[0]);
        if (u.rowOfNest && !u.write && n.vars.size() > 1 && allRows) out[u.nest].push_back(&u);
        else other.insert(u.nest);
    }
    for (int n : other) out.erase(n);
    return out;
}

/// A nest that reaches fragments only by reads of per-row values at its first variable (`s[h, c] -= mx[h]` over
/// (h, c), mx a T.gemm row maximum; `byRows`, from rowReadingNests) runs in the threads that hold each row: its
/// first variable over their rows, its others whole in each, its memory stores by one copy of the row
/// (LowerParallel).
void followRows(const std::map<int, std::vector<const Use *>> &byRows, const std::function<int(const BufferNode *)> &groupOf,
                const std::function<MmaGroup &(int)> &group, const std::function<int(int)> &nestGroup, DiagnosticEngine &diag) {
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

/// Layout::mmaOperand, in wgmma's rows where `wgmma` (Layout::wgmma: tile mi of warp w at mi*64 + (w%4)*16 in its
/// warpgroup's rows): then slots 4(mi*KT + kk)..+3 are the four A registers of a tf32 wgmma RS's m64k8 step kk
/// (KT = K/8), per warp the m16n8k8 order (sm90_wgmma.cuh, wgmma_gemm_rs_fragment).
Layout operandOrder(std::vector<int64_t> shape, int threads, int warpsM, bool wgmma) {
    TILEC_ASSERT(!wgmma || warpsM % 4 == 0, "an operand order in wgmma rows over warps that are not warpgroups");
    Layout l = Layout::mmaOperand(std::move(shape), threads, warpsM);
    l.wgmma = wgmma;
    return l;
}

/// The groups whose operand-A fragments take the tf32 operand column order (Layout::opCols): read as A only by
/// products of 32-bit A (mma.sync's m16n8k8 and wgmma's m64k8 registers: per warp the same order), and holding no
/// accumulator (whose order is the instruction's C order).
std::set<int> operandOrderGroups(const LayoutUses &c, const std::function<int(const BufferNode *)> &groupOf) {
    std::set<int> out, other;
    for (auto &g : c.gemms) {
        other.insert(groupOf(g.c));
        if (!g.aFrag) continue;
        const bool tf32 = g.aFrag->dtype.bytes() == 4 && g.aFrag->dtype.isFloat();
        (tf32 ? out : other).insert(groupOf(g.aFrag));
    }
    for (int o : other) out.erase(o);
    return out;
}

/// A nest over (i, j) reading a fragment in the operand order at (i, e * S + j) (Use::colGroupStride) runs in that
/// order over its own (M, W): iteration (i, j) in the lane that holds column e * S + j for every e. Returns the
/// reads whose nests took (or already had) that layout.
std::set<const Use *> followColumnGroups(const LayoutUses &c, const std::function<int(const BufferNode *)> &groupOf,
                                         const std::function<MmaGroup &(int)> &group, const std::function<int(int)> &nestGroup) {
    std::set<const Use *> out;
    for (auto &u : c.uses) {
        if (!u.colGroupStride || u.nest < 0) continue;
        const auto &f = group(groupOf(u.buffer)).mma;
        if (!f || f->kind != Layout::Mma || !f->opCols) continue;
        const Layout want = operandOrder(c.nests[u.nest].extents, f->threads, f->warpsM, f->wgmma);
        MmaGroup &ng = group(nestGroup(u.nest));
        if (ng.mma && !(*ng.mma == want)) continue;
        ng.mma = want, ng.replicated = false;
        out.insert(&u);
    }
    return out;
}

/// Whether every product reading a fragment of group `gid` as operand A can read it from a shared copy instead
/// (mma.sync, dense: wgmma's operands and the metadata of sparse products are laid out by earlier passes); then
/// they are added to `stageA`.
bool stageReaders(const LayoutUses &c, const std::function<int(const BufferNode *)> &groupOf, int gid,
                  std::set<const Gemm *> &stageA) {
    std::vector<const Gemm *> readers;
    for (auto &g : c.gemms) {
        if (!g.aFrag || groupOf(g.aFrag) != gid) continue;
        if (g.op->instr != GemmInstr::Auto || g.op->sparse()) return false;
        readers.push_back(g.op);
    }
    stageA.insert(readers.begin(), readers.end());
    return !readers.empty();
}

} // namespace

void assignMmaLayouts(const Kernel &k, const LayoutUses &c, const std::function<int(const BufferNode *)> &groupOf,
                      const std::function<MmaGroup &(int)> &group, const std::function<int(int)> &nestGroup,
                      DiagnosticEngine &diag, std::set<const Gemm *> *stageA) {
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
    const std::map<int, int> rowSplits = commonRowSplits(c, warps, operandOf, groupOf, nestGroup, [&](const GemmUse &g) {
        return policySplit(g, warps, operandOf.count(groupOf(g.c)) > 0).first;
    });
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
        const auto common = rowSplits.find(cg);
        if (adopted) split = *adopted;
        else if (common != rowSplits.end()) split = {common->second, warps / common->second};
        else split = policySplit(g, warps, needRows != nullptr);
        if (needRows && split.second != 1) {
            // the accumulator keeps its policy's split; the products reading it as A read a shared copy of it
            if (stageA && stageReaders(c, groupOf, cg, *stageA)) continue;
            diag.error(g.op->loc, std::string("policy ") + toString(g.op->policy) + " splits the columns of " + cName +
                                      " over warps, but T.gemm reads it (or a fragment computed from it) as operand A, "
                                      "which needs whole rows in each warp; " + wholeRowsAdvice(g, warps, wgmma));
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
            // wgmma RS: m64k16's A registers are the wgmma accumulator order of (M, K), tf32's m64k8 the operand
            // order in wgmma rows (operandOrder); warpgroups splitting the columns each hold a copy (warpCopies)
            const int ag = groupOf(g.aFrag);
            const Layout al = operandOrderGroups(c, groupOf).count(ag) ? operandOrder({g.m, g.k}, k.threads, split.first, wgmma)
                                                                       : Layout::mma({g.m, g.k}, k.threads, split.first, 1, wgmma);
            // a fragment another product's accumulator split lays out otherwise: read from a shared copy
            if (stageA && group(ag).mma && !(*group(ag).mma == al) && stageReaders(c, groupOf, ag, *stageA)) continue;
            assign(ag, al, g, "operand A '" + g.aFrag->name + "'");
        }
    }
    const std::set<const Use *> byGroups = followColumnGroups(c, groupOf, group, nestGroup); // stay in registers
    // Fragments of an mma group can only be reached through nests over the whole group.
    for (auto &u : c.uses) {
        if (u.exact || u.reduceDst || byGroups.count(&u)) continue;
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

} // namespace tilec::passes
