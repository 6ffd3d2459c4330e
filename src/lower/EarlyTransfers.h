/// \file
/// A serial loop's tile transfers issued together (pipelineLoops): the global -> shared transfers that its body
/// names one after another, each issued and waited for where it is named (one round trip to memory and a barrier
/// each), issued at once as one cp.async group as early in the iteration as their sources allow and waited for once,
/// just before the first statement that uses any of them.
#pragma once

#include "tilec/IR.h"

#include <optional>
#include <vector>

namespace tilec::passes {

/// Which top-level statements of a serial loop's body (`top`, before its transfers are lowered) are issued
/// together, and where.
struct TransferGroup {
    size_t issueAt = 0;         ///< the group is issued just before this statement
    size_t waitAt = 0;          ///< the first statement from issueAt on, not of the group, that names any of its tiles
    std::vector<size_t> copies; ///< the group's transfers (top-level Copies), in body order
};

/// The transfers of `top` that can be issued together, or nothing where that saves no round trip. The first
/// transfer that can move fixes the place: just after the last statement before it that writes what its source
/// reads (an index the iteration computes) or that is opaque (an extern call, a barrier of any kind, an
/// asynchronous call), else the top of the iteration. A transfer can move where nothing before it in the
/// iteration names its tile (no read of the previous iteration's data, no write of its own: the tile's content at
/// the issue point is dead) and something after it does (the wait has a place); a later one joins where it can
/// move, fills another tile, and nothing from the group's place to it writes what its source reads. A transfer
/// under a condition (not at the top level) stays where it is.
/// The group is formed only where it saves a round trip to memory: its transfers stood in two or more runs
/// (transfers back to back already share one wait), or one of them moves up past a statement that reads global
/// memory. A group that would only move its wait down past statements that do not use it (or its issue up past
/// statements that touch no memory) is not formed: that saves no round trip.
std::optional<TransferGroup> earlyTransfers(const std::vector<ir::Stmt> &top);

} // namespace tilec::passes
