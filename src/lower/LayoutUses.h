/// \file
/// The fragment uses and T.Parallel nests of a kernel, as layout inference (InferLayouts.cpp) links them.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tilec::passes {

struct Nest {
    ir::Var outer;
    std::vector<ir::Var> vars;
    std::vector<int64_t> extents;
    SourceRange loc;
    int memBytes = 0; ///< widest global or shared access inside (an element, or a T.vectorized run of them), lane-invariant loads left out and loads that c lanes share counted as 1/c of their bytes
    int vecCap = 16;  ///< the widest vector (elements) every such access can start aligned (rowAlignment)
    /// Shared and global buffers read (with the first read's place) and stored inside.
    std::map<const ir::BufferNode *, SourceRange> memReads;
    std::set<const ir::BufferNode *> memWrites;
    /// Whether it touches a fragment, and whether it may store into anything but a thread's own T.alloc_local
    /// buffers (a store, an atomic update, or an address handed to a call). A nest that does neither is run
    /// whole by every thread, as TileLang lowers it (LowerTileOp: no thread partition of a loop whose stores all
    /// target "local" buffers and that touches no fragment).
    bool fragmentAccess = false;
    bool nonLocalStore = false;
    bool passesAddress = false; ///< hands an address of shared or global memory to a call
};

/// One access of a fragment.
struct Use {
    const ir::BufferNode *buffer = nullptr;
    SourceRange loc;
    int nest = -1;          ///< the enclosing nest, -1 outside any
    bool exact = false;     ///< indexed by exactly the nest's variables over the whole shape
    bool reduceDst = false; ///< written by a reduction
    bool write = false;     ///< a store (or atomic update)
    bool rowOfNest = false; ///< a 1-D fragment indexed by the nest's first variable (a per-row value)
    bool colOfNest = false; ///< a fragment read at all the nest's variables but the first, whole (a per-column value)
    /// Indexed by `leading` (> 0) expressions the nest's variables do not appear in, then by exactly the nest's
    /// variables over the fragment's remaining dimensions (`lse[k, j]` in a nest over j): each leading index
    /// picks one nest-shaped slice, which the nest's layout can reach when the slices are whole rounds of it.
    /// A read may leave out the nest's first variables (`b[m, h]`, or `d[h]` with leading 0, in a nest over (o, h)).
    int leading = 0;
    int64_t sliceElements = 0; ///< a slice access (> 0): the elements of one slice (the iterations of its variables)
    /// Read at exactly the nest's first variables over the whole (lower-rank) shape, the nest's `trailing` (> 0)
    /// last variables not in the index (`row_max[i, j]` in a nest over i, j, k): a value broadcast along them,
    /// which the nest's layout reaches when each thread's vector holds whole runs of them.
    /// Also (trailing 1) a read by the nest's variables with the last divided by trailElements (`B[i, j // 2]`).
    int trailing = 0;
    int64_t trailElements = 0; ///< trailing > 0: the iterations of the trailing variables per element
    /// Indexed by the nest's variables with the last times `expand` (> 1) plus the variable of a loop over
    /// [0, expand) inside the nest (`out[i, j * 8 + k]` under `for k in T.vectorized(8)`): iteration p's elements
    /// are p * expand ... p * expand + expand - 1, which a distributed layout of expand times the nest's vector
    /// width keeps in the iteration's thread.
    int64_t expand = 0;
    /// A read of a 2-D fragment in a nest over (i, j) at (i, e * S + j), e free of the nest's variables (colGroupOffset,
    /// `x[i, jj * 4 + j]`): S (> 0). A fragment in the tf32 operand order (Layout::opCols) holds every column
    /// e * S + j in the lane of j, so the nest takes that order too (MmaLayouts).
    int64_t colGroupStride = 0;
    const ir::BufferNode *reduceSrc = nullptr; ///< reduceDst: the source and dimension
    int reduceDim = -1;
    std::string indexText;  ///< `(i, 0)` for messages
    std::vector<ir::Expr> indices; ///< the index, over the nest's variables
};

/// One T.gemm: which fragments it ties to the mma layouts.
struct GemmUse {
    const ir::Gemm *op = nullptr;
    const ir::BufferNode *c = nullptr, *aFrag = nullptr; ///< aFrag: A when it is a fragment
    int64_t m = 0, n = 0, k = 0;
};

/// What layout inference needs to know of a kernel's body.
struct LayoutUses {
    std::vector<Nest> nests;
    std::vector<Use> uses;
    std::vector<GemmUse> gemms;
};

/// The nests, fragment uses and T.gemm operands of a body; misplaced nests and reductions are errors. With
/// `broadcastLoadWidths`, a memory load that several lanes share (`s[i, j // 32]`, lanesPerElement) counts in
/// Nest::memBytes with its bytes per lane and in Nest::vecCap with its rows that many lanes wide.
LayoutUses collectLayoutUses(const ir::Stmt &body, DiagnosticEngine &diag, bool broadcastLoadWidths = true);

/// (e, S) where `indices` read a 2-D fragment of `shape` in a nest over (i, j) at (i, e * S + j), i over all of the
/// fragment's rows, S and j's extent W multiples of 4, e free of the nest's variables (`e * S` may be absent: e = 0),
/// so that column group e * S / 4 + j / 4 of the operand order holds the element in the lane of j % 4 (Layout.h:
/// opCols); else {null, 0}. An exact read is not one.
std::pair<ir::Expr, int64_t> colGroupOffset(const std::vector<ir::Expr> &indices, const std::vector<ir::Var> &vars,
                                            const std::vector<int64_t> &extents, const std::vector<ir::Expr> &shape);

/// S where `indices` are the nest's variables, the last times S plus the variable of a loop inside the nest over
/// [0, S) (`innerExtents`), over `b`'s whole shape (Use::expand); else 0.
int64_t expandFactor(const std::vector<ir::Expr> &indices, const Nest &n, const ir::BufferNode &b,
                     const std::map<const ir::VarNode *, int64_t> &innerExtents);

/// Whether `s` is a T.Parallel nest of a thread's own registers (Nest::fragmentAccess and nonLocalStore both
/// false): every thread runs it whole, so it needs no other thread and may run under a thread-dependent `if`.
bool ownRegisterNest(const ir::Stmt &s);

} // namespace tilec::passes
