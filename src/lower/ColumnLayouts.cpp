/// \file
/// Per-column values of tensor-core fragments (src/lower/ColumnLayouts.h). A 1-D fragment read as `d[j]` in a
/// T.Parallel over an (M, N) mma fragment is needed, in each thread, only at the columns the thread holds there:
/// the mmaCols layout keeps those (2 per 8-column tile) in registers. So does a (c1, ..., ck) fragment read as
/// `w[a, b]` in a nest (i, a, b) over a view of the accumulator as (M, c1, ..., ck): its element (a, b) is the
/// view's column a * c2 + b (fp8_lighting_indexer's weights[bq_i, h_i] over a reshape of the logits' accumulator). Held whole in every thread instead, the read
/// indexes the thread's copy by its lane (`d[ni * 8 + tx % 4 * 2 + c]`), which the CUDA compiler cannot keep in
/// registers: the whole vector goes to local memory, stored on every refill and loaded at every read (mamba's
/// chunk_scan and chunk_state: 512 and 256 bytes of stack per thread). TileLang infers the same layout from the
/// loop's (its parallel op completes a fragment indexed by part of the loop from the loop layout).
#include "ColumnLayouts.h"

#include "tilec/IROperator.h"

#include <functional>
#include <numeric>
#include <set>

namespace tilec::passes {

using namespace ir;

std::map<int, Layout> columnLayouts(const LayoutUses &c, const std::function<int(const BufferNode *)> &groupOf,
                                    const std::function<int(int)> &nestGroup,
                                    const std::function<std::optional<Layout>(int)> &mmaOf) {
    std::map<int, Layout> cols;
    std::set<int> blocked;
    for (auto &u : c.uses) {
        const int gid = groupOf(u.buffer);
        if (gid < 0) continue;
        if (u.reduceDst) { // a reduction's result, or its source: lowerReductions' own layouts
            blocked.insert(gid);
            if (u.reduceSrc && groupOf(u.reduceSrc) >= 0) blocked.insert(groupOf(u.reduceSrc));
            continue;
        }
        if (u.exact) continue;
        std::optional<Layout> cand;
        const std::optional<Layout> nest = u.colOfNest && u.nest >= 0 ? mmaOf(nestGroup(u.nest)) : std::nullopt;
        std::vector<int64_t> shape; // colOfNest: the nest's extents after the first, each a constant
        for (auto &e : u.buffer->shape) shape.push_back(constInt(e).value_or(0));
        const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
        if (nest && nest->kind == Layout::Mma && !nest->opCols && nest->shape.size() >= 2 && nest->columns() == n && n > 0)
            cand = Layout::mmaCols(n, nest->threads, nest->warpsM, nest->warpsN, nest->wgmma, shape);
        if (nest && nest->kind == Layout::Mma && nest->opCols && nest->columns() == n && n % 4 == 0) {
            // a nest in the tf32 operand order: column q*4 + l%4 in slot q (Layout.h)
            cand = Layout::mmaCols(8 * ((n + 7) / 8), nest->threads, nest->warpsM, 1, false);
            cand->shape = shape;
            cand->opCols = true;
        }
        auto it = cols.find(gid);
        if (!cand || (it != cols.end() && !(it->second == *cand))) blocked.insert(gid);
        else cols.emplace(gid, *cand);
    }
    for (int gid : blocked) cols.erase(gid);
    return cols;
}

} // namespace tilec::passes
