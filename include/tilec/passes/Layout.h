/// \file
/// How the elements of a fragment (and the iterations of a T.Parallel nest) are spread over the threads
/// of a block. inferLayouts chooses one per fragment and nest; lowerReductions and lowerParallel read it.
///
/// Two kinds exist before tensor cores:
/// - distributed (T threads, vector width V): flatten the shape row-major into elements e; thread
///   `(e / V) % T` owns e, in its local slot `(e / (V*T)) * V + e % V`. A thread has `rounds() * V`
///   slots; when T*V does not divide the element count the last round is partial (predicated).
/// - replicated: every thread holds every element, slot = e (reduction results, small per-row values).
///
/// A distributed layout may also hold each element in several threads (`copies`, a mask of thread-index bits
/// that do not choose the element): the T threads act as T' = T >> popcount(copies) virtual threads, thread t
/// being virtual thread u = the bits of t outside `copies` (virtualThread), and the layout is distributed over
/// the T' virtual threads; the R = T / T' threads of one virtual thread hold copies of its elements (reduction
/// results along a dimension spread over threads of a warp, fragments smaller than the block). Threads with
/// `t & copies` == 0 are the first holders: they store the elements to memory (CopiedLayouts.h).
///
/// Two more come from tensor cores (mma.sync m16n8), for an (M, N) fragment split over warpsM x warpsN warps
/// (warp w: wm = w % warpsM, wn = w / warpsM; each warp owns an (M/warpsM) x (N/warpsN) tile of 16x8 tiles):
/// - mma: slot ((mi*nT + ni)*2 + h)*2 + c of lane l holds row wm*WTM + mi*16 + h*8 + l/4, column
///   wn*WTN + ni*8 + (l%4)*2 + c: the accumulator order of mma.sync, and, with warpsN = 1, the A-operand
///   order of gemm_rs too (stdlib/tilec/mma.cuh: for 16-bit types the instruction's; for 32- and 8-bit ones
///   gemm_rs reads B in that order of K).
///   With `wgmma` (Hopper's warpgroup accumulators: warpsM a multiple of 4, each warpgroup of 4 warps owning
///   M/(warpsM/4) rows) the rows of tile mi are g*WGM + mi*64 + (wm%4)*16 + h*8 + l/4 with g = wm/4: a warp's
///   16-row tiles are 64 rows apart, wgmma's m64 D order (stdlib/tilec/sm90_wgmma.cuh). It is the plain mma
///   order when every warpgroup owns exactly 64 rows.
///   With `opCols` (the column order of mma.sync's tf32 A operand, m16n8k8: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4),
///   a3 (g + 8, t + 4)), for a 32-bit operand-A fragment that no accumulator shares, and the nests that read it
///   by 4-column groups: the columns come in groups of 4, column q*4 + l%4 of group q in lane l, and slot
///   (mi*nQ + q)*2 + h of lane l holds row wm*WTM + mi*16 + h*8 + l/4 (warpsN 1, nQ = N/4 groups: colGroups()),
///   column q*4 + l%4. Column jj*4 + j is then lane j's for every jj, and a tf32 k-step's four A registers are
///   slots 4kk..4kk+3 in the instruction's order (stdlib/tilec/mma.cuh, rs_a_fragment). N need only be a multiple of 4.
///   A block of more warps than warpsM x warpsN (threads a multiple of 32 * warpsM * warpsN) holds copies: warp w
///   holds what warp w % (warpsM * warpsN) does (warpCopies() of each element; a wgmma RS operand A whose rows
///   several warpgroups splitting the columns of the product all read, FullCol's MLA P.V). The first copy stores.
/// - mmaRows: a 1-D fragment of M per-row values of an mma fragment (FlashAttention's row_max): slot mi*2 + h
///   holds row wm*WTM + mi*16 + h*8 + l/4 in every thread of that row (4 lanes, warpsN warps hold copies).
/// - mmaCols: a fragment of N per-column values of an mma fragment (a per-key decay or scale `d[j]` read in a
///   nest over the accumulator or operand A; a (c1, ..., ck) fragment `w[a, b]` read in a nest (i, a, b) over a
///   view of the accumulator as (M, c1, ..., ck), its element the view's column, row-major): slot ni*2 + c holds
///   column wn*WTN + ni*8 + (l%4)*2 + c in every
///   thread of that column (the 8 lanes of a lane%4 class, warpsM warp rows and any further warps hold copies),
///   so a read `d[j]` inside the mma nest is the thread's own register, not an element of a copy of the whole
///   vector indexed by the lane (which the CUDA compiler must put in local memory). With `opCols`, the columns of
///   a nest in the tf32 operand order (below): slot q holds column q*4 + l%4 (the 8 lanes of a lane%4 class and
///   further warps hold copies).
#pragma once

#include "tilec/IR.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tilec::passes {

/// A replicated fragment (every thread holds all of it) larger than this many elements is an error (inferLayouts).
constexpr int64_t kMaxReplicatedElements = 256;

struct Layout {
    enum Kind { Distributed, Replicated, Mma, MmaRows, MmaCols } kind = Distributed;
    std::vector<int64_t> shape;
    int threads = 1; ///< distributed: T
    int vec = 1;     ///< distributed: V; divides the innermost extent
    int64_t copies = 0; ///< distributed: thread-index bits whose threads hold copies (0: one thread per element)
    int warpsM = 1, warpsN = 1; ///< mma, mmaRows
    bool wgmma = false;         ///< mma, mmaRows: wgmma's row order (above)
    bool opCols = false;        ///< mma: the tf32 operand column order (above)

    static Layout distributed(std::vector<int64_t> shape, int threads, int vec, int64_t copies = 0);
    static Layout replicated(std::vector<int64_t> shape);
    /// shape (M, N); needs M % (16*warpsM) == 0 and N % (8*warpsN) == 0.
    static Layout mma(std::vector<int64_t> shape, int threads, int warpsM, int warpsN, bool wgmma = false);
    /// An (M, N) mma layout in the tf32 operand column order (opCols) over warpsM warps by rows, warps beyond
    /// them holding copies; needs M % (16*warpsM) == 0 and N % 4 == 0.
    static Layout mmaOperand(std::vector<int64_t> shape, int threads, int warpsM);
    static Layout mmaRows(int64_t m, int threads, int warpsM, int warpsN, bool wgmma = false);
    /// The columns of an (M, n) mma layout split over warpsM x warpsN warps; needs n % (8*warpsN) == 0. `shape`:
    /// the fragment's (c1, ..., ck), c1*...*ck = n, when it is not 1-D (its elements in row-major order).
    static Layout mmaCols(int64_t n, int threads, int warpsM, int warpsN, bool wgmma = false,
                          std::vector<int64_t> shape = {});
    /// The first row of warp row wm's 16-row tile mi (mma, mmaRows).
    int64_t tileRow(int64_t wm, int64_t mi) const;

    bool isMma() const { return kind == Mma || kind == MmaRows; }
    /// mma: how many warps hold each element (1 unless the block has more warps than warpsM x warpsN).
    int warpCopies() const { return kind == Mma ? threads / (32 * warpsM * warpsN) : 1; }
    /// The thread-index bits whose threads hold copies of the same elements: `copies` (distributed); the warp bits
    /// above the warpsM x warpsN warps of an mma layout with warpCopies() > 1 where both counts are powers of two
    /// (elsewhere 0: the copies then differ in no bit set).
    int64_t copyBits() const;
    /// Distributed: the virtual threads T' the elements are spread over (T when `copies` is 0).
    int vthreads() const;
    int64_t tilesM() const { return shape[0] / warpsM / 16; }      ///< mma, mmaRows: 16-row tiles per warp
    int64_t tilesN() const { ///< mma, mmaCols: 8-column tiles per warp
        TILEC_ASSERT(((kind == Mma && shape.size() >= 2) || kind == MmaCols) && !opCols,
                     "column tiles of a layout that is not mma, or in the operand order");
        return (kind == MmaCols ? elements() : columns()) / warpsN / 8;
    }
    int64_t colGroups() const { ///< mma, mmaCols with opCols: 4-column groups (nQ above)
        TILEC_ASSERT((kind == Mma || kind == MmaCols) && opCols, "column groups of a layout not in the operand order");
        return (kind == MmaCols ? elements() : columns()) / 4;
    }
    /// mma: N, the accumulator's columns. A T.reshape / T.view of an (M, N) accumulator as (M, c1, ..., ck) with
    /// c1*...*ck = N keeps its mma layout over that shape: element (r, c1, ..., ck) is accumulator element (r, c),
    /// c the row-major flattening of (c1, ..., ck) (mmaViewCoords).
    int64_t columns() const;

    int64_t elements() const;
    /// Distributed: rounds of T*V elements, the last one possibly partial. Replicated: 1.
    int64_t rounds() const;
    /// Rounds every thread completes (no predicate needed).
    int64_t fullRounds() const;
    /// Registers one thread needs for the buffer, in elements.
    int64_t slotsPerThread() const;
    bool operator==(const Layout &o) const = default;
    /// Same threads for the same elements (mmaRows layouts differing only in how many warp columns hold
    /// copies of the rows place every row alike).
    bool sameRows(const Layout &o) const {
        return kind == MmaRows && o.kind == MmaRows && shape == o.shape && warpsM == o.warpsM && threads == o.threads &&
               wgmma == o.wgmma;
    }
    /// `distributed over 256 threads, 8-wide, 32 slots per thread` / `replicated, 2 slots per thread`.
    std::string describe() const;
};

/// The layouts chosen for one kernel.
struct KernelLayouts {
    /// Fragments by identity (iteration order is not meaningful; walk Kernel::allocs for stable output).
    std::map<const ir::BufferNode *, Layout> fragments;
    /// T.Parallel nests, by the variable of the nest's outermost loop (loop variables keep their identity
    /// through mutators, statements do not).
    std::map<const ir::VarNode *, Layout> loops;
    /// Each fragment's per-thread register array (a Local buffer of slotsPerThread() elements).
    std::map<const ir::BufferNode *, ir::Buffer> registers;
};

/// The layouts inferLayouts stored on kernel `k` (Kernel::layouts); an internal error before it ran.
const KernelLayouts &layoutsOf(const ir::Kernel &k);

/// The kernel with a thread index variable (T.get_thread_binding's), which layouts are spread by, creating it
/// when absent.
ir::KernelP withThreadIndex(const ir::KernelP &k);

/// How `warpgroups` warpgroups split an (M, N) wgmma accumulator: (wgM, wgN), rows in 64-row slices first
/// (FullCol: columns first, TileLang's rule for wgmma), or {0, 0} when M and N do not divide (N/wgN must also be
/// a multiple of `nStep`, at most 256).
std::pair<int, int> wgmmaWarpgroups(int64_t m, int64_t n, int warpgroups, int nStep = 8,
                                    ir::GemmPolicy policy = ir::GemmPolicy::Auto);

/// The virtual thread (above) of thread `tid` in a distributed layout: `tid` itself when it has no copies.
ir::Expr virtualThread(const Layout &l, const ir::Expr &tid);
/// Thread `tid`'s virtual thread number, numerically.
int64_t virtualThreadOf(const Layout &l, int64_t t);
/// Whether thread `tid` is the first holder of its elements (`tid & copies` == 0); null without copies.
ir::Expr firstHolder(const Layout &l, const ir::Expr &tid);

/// The coordinates (one int32 expression per dimension) of the element a (virtual) thread meets in round
/// `round` at vector lane `lane` of a distributed layout: element `round*T'*V + tid*V + lane`. Each coordinate is
/// simplified with what is known about the layout, so that a coordinate which does not depend on the
/// thread comes out as a function of `round` alone (a constant once the round loop is unrolled), and the
/// innermost one is `base + lane` with base a multiple of V.
std::vector<ir::Expr> elementCoords(const Layout &l, const ir::Expr &round, const ir::Expr &tid, const ir::Expr &lane);

/// The row an mma or mmaRows layout gives slot (mi, h) of thread `tid` (see above), simplified.
ir::Expr mmaRow(const Layout &l, const ir::Expr &tid, const ir::Expr &mi, const ir::Expr &h);
/// The column of slot (ni, c) of thread `tid` in an mma or mmaCols layout.
ir::Expr mmaCol(const Layout &l, const ir::Expr &tid, const ir::Expr &ni, const ir::Expr &c);
/// The column of group q of thread `tid` in an mma layout in the operand order (opCols): q*4 + tid%4.
ir::Expr mmaGroupCol(const Layout &l, const ir::Expr &tid, const ir::Expr &q);
/// The (row, column) of register slot `slot` of thread `tid` in an mma layout, either column order.
std::pair<ir::Expr, ir::Expr> mmaSlotRowCol(const Layout &l, const ir::Expr &tid, int64_t slot);
/// The coordinates in an mma layout's shape (a view's too: Layout::columns) of accumulator element (row, col).
std::vector<ir::Expr> mmaViewCoords(const Layout &l, const ir::Expr &row, const ir::Expr &col);
/// Whether thread `tid` holds the first of the copies of its rows in an mmaRows layout (lane % 4 == 0 and
/// the first warp column): the one that writes them to memory.
ir::Expr mmaRowsOwner(const Layout &l, const ir::Expr &tid);
/// Whether thread `tid` holds the first of the copies of its columns in an mmaCols layout (lane < 4, the first
/// warp row, the first copy of the warps): the one that writes them to memory.
ir::Expr mmaColsOwner(const Layout &l, const ir::Expr &tid);
/// The element (flattened row-major) of slot `slot` in thread `t`, or -1 when the slot holds none:
/// evaluated numerically for every layout kind (reduction planning, tests).
int64_t elementOf(const Layout &l, int64_t t, int64_t slot);

/// Row-major flattening of constant-shape coordinates: sum of coords[d] * stride[d] (int32).
ir::Expr flattenCoords(const std::vector<ir::Expr> &coords, const std::vector<int64_t> &shape);

} // namespace tilec::passes
