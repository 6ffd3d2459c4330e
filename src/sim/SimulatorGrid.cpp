/// \file
/// T.sync_grid in the CPU simulator: a kernel whose top level holds grid barriers runs in phases, every block
/// running one phase before any block runs the next, each block keeping its registers, shared memory and
/// barrier state from one phase to the next, as a cooperative launch's grid barrier orders them on the GPU
/// (what a block wrote to a tensor before the barrier is what the other blocks read after it). A grid barrier
/// anywhere else is a simulation error, as are asynchronous transfers still in flight where a block reaches it.
#include "sim/Simulator.h"

#include "tilec/LibraryCalls.h"

namespace tilec::simtest {

namespace {

bool isGridSync(const ir::Stmt &s) {
    auto e = ir::as<ir::Evaluate>(s);
    auto c = e ? ir::as<ir::Call>(e->value) : nullptr;
    return c && passes::lib::is(*c, passes::lib::Fn::GridSync);
}

/// Appends the statements of `s` (flattening nested Seqs) to the current phase, starting a new one at each grid
/// barrier.
void cut(const ir::Stmt &s, std::vector<std::vector<ir::Stmt>> &phases) {
    if (auto q = ir::as<ir::Seq>(s)) {
        for (auto &c : q->stmts) cut(c, phases);
        return;
    }
    if (isGridSync(s)) phases.emplace_back();
    else if (s) phases.back().push_back(s);
}

} // namespace

std::vector<ir::Stmt> Simulator::gridPhases() const {
    std::vector<std::vector<ir::Stmt>> cuts(1);
    cut(k_.body, cuts);
    std::vector<ir::Stmt> out;
    for (auto &c : cuts) out.push_back(ir::Seq::make(std::move(c), k_.body ? k_.body->loc : SourceRange{}));
    return out;
}

void Simulator::swapBlock(BlockState &b) {
    std::swap(physicalBlock_, b.physicalBlock);
    vars_.swap(b.vars);
    locals_.swap(b.locals);
    shared_.swap(b.shared);
    comps_.swap(b.comps);
    partials_.swap(b.partials);
    touches_.swap(b.touches);
    groupBarriers_.swap(b.groupBarriers);
    bars_.swap(b.bars);
    tma_.swap(b.tma);
    stores_.swap(b.stores);
    unfenced_.swap(b.unfenced);
    unfencedBy_.swap(b.unfencedBy);
}

void Simulator::runPhases(const std::vector<ir::Stmt> &phases, const int64_t g[3]) {
    if (k_.persistent) throw SimError("T.sync_grid in a persistent kernel");
    std::vector<std::array<int64_t, 3>> blocks;
    for (int64_t z = 0; z < g[2]; ++z)
        for (int64_t y = 0; y < g[1]; ++y)
            for (int64_t x = 0; x < g[0]; ++x) blocks.push_back({x, y, z});
    std::vector<BlockState> state(blocks.size());
    for (size_t p = 0; p < phases.size(); ++p)
        for (size_t b = 0; b < blocks.size(); ++b) {
            if (p == 0) {
                enterBlock(blocks[b]);
            } else {
                swapBlock(state[b]);
                // The grid barrier is a barrier of the block's own threads too.
                ++comps_[0].epoch;
                comps_[0].clock.set(0, comps_[0].clock.at(0) + 1);
            }
            exec(phases[p], std::vector<char>(T_, 1));
            exitBlock(p + 1 < phases.size() ? "reaches the grid barrier" : "exits");
            swapBlock(state[b]);
        }
}

} // namespace tilec::simtest
