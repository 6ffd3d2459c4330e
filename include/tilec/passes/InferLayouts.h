/// \file
/// Layout inference: which thread holds which element of each fragment, and which thread runs which
/// iterations of each T.Parallel nest.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"
#include "tilec/passes/Layout.h"

#include <string>
#include <vector>

namespace tilec::passes {

/// Chooses a layout for every fragment and every T.Parallel nest of every kernel and creates each fragment's
/// per-thread register array: the program's kernels with them (Kernel::layouts), their code unchanged.
///
/// A fragment indexed inside a nest by exactly the nest's variables, in order, over its whole shape, shares
/// the nest's layout; fragments and nests linked that way form a group with one layout. A group is
/// distributed (see Layout.h) with the widest vector width that its global and shared accesses can use
/// (16 bytes per thread and access), reduced until it divides the innermost extent. A group is
/// replicated when one of its fragments is the destination of a reduction or is indexed any other way (a
/// subset of a nest's variables, an expression, outside any nest), because then a thread may need any
/// element. Replication of a fragment too large for registers is a located error naming the use that
/// needs it and, in a note, a use that distributes it. With `broadcastLoadWidths`
/// (LoweringOptions::broadcastLoadWidths), a load that several lanes share counts its bytes per lane (LayoutUses.h).
ir::Program inferLayouts(const ir::Program &p, DiagnosticEngine &diag, bool broadcastLoadWidths = true);

/// The layouts as comment lines, in allocation and program order (for --dump-after=inferLayouts).
std::string describeLayouts(const ir::Program &p);

} // namespace tilec::passes
