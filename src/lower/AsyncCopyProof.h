/// \file
/// lowerAsyncCopies' proof: a walk of a kernel's body that follows which parts of which buffers the T.async_copy
/// groups in flight may still write (destinations) or read (sources), through branches, loops (their first
/// iteration, then a fixed point over the later ones; short loops one iteration at a time) and waits, and reports
/// the first access the program's waits do not provably order after the copy it touches.
#pragma once

#include "tilec/IR.h"

#include <map>
#include <set>
#include <string>

namespace tilec::passes {

/// The Copy of a T.async_copy (the front end's `if (tilec.async_copy_on()) copy`), or null.
const ir::Copy *asyncCopyOf(const ir::Stmt &s);

struct AsyncCopyProof {
    std::string why; ///< the first reason the waits are not proved to cover the copies (empty: proved)
    SourceRange whyAt;
    /// Per CpAsyncWait statement, the destinations of the groups it may retire (on any path, in any iteration).
    std::map<const ir::StmtNode *, std::set<const ir::BufferNode *>> landings;
    bool openAtExit = false;    ///< copies issued since the last commit may be uncommitted at the body's end
    bool pendingAtExit = false; ///< a group (committed or not) may still be in flight at the body's end
};

/// The proof over `k`'s body, starting from `out` (a `why` already set, such as "the kernel synchronises through
/// mbarriers", is kept and the walk stops at once).
AsyncCopyProof proveAsyncCopies(const ir::Kernel &k, AsyncCopyProof out = {});

} // namespace tilec::passes
