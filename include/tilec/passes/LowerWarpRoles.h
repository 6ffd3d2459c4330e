/// \file
/// TileLang's explicit warp specialization (T.ws blocks, T.alloc_barrier, T.barrier_wait / T.barrier_arrive,
/// T.tma_copy) lowered onto the warp roles of specializeWarps.
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"

namespace tilec {
class DiagnosticEngine;
}

namespace tilec::passes {

/// A kernel whose code the user split into `with T.ws(g)` blocks becomes WarpRoles (IR.h): the warp group
/// whose blocks hold T.tma_copy loads, mbarrier operations and one thread's stores (T.ptx_cp_async copies,
/// assignments that read no fragment) only is the producer (the one with T.tma_copy where one has them), the
/// other one the consumer (its threads become the kernel's own 128 threads: layouts, T.gemm and barriers count them). Each
/// role runs the kernel's loops and branches with its own blocks in them, serially (a T.Pipelined loop of
/// T.ws blocks was made a ring of its stages by ringWarpRoles, or keeps the user's single buffer). Semantics kept as TileLang
/// defines them:
///
/// - T.alloc_barrier(counts): one mbarrier per count, initialised by thread 0 before a block barrier;
/// - T.barrier_wait(bar, parity) / T.mbarrier_wait_parity: every thread of the role waits for the phase;
/// - T.barrier_arrive(bar) / T.mbarrier_arrive: every thread of the role arrives once;
/// - T.tma_copy(src, dst, barrier=bar): the role's first thread announces the tile's bytes on `bar`
///   (expect_tx, no arrival) and issues the TMA load, which completes them there. Its destination (a whole
///   2-D shared buffer, or one stage [s, :, :] of a 3-D one, or whole swizzle panels of its columns: a PanelPart,
///   loaded at its first panel) is stored in the TMA panel layout: a T.gemm reading it (or such parts of it) runs
///   on wgmma, with the products tied to it (wgmmaNeeds: their tiles the threads fill in the
///   panel layout, fenced before the wgmma), and the consumer's own loads, stores and copies of it index that
///   layout (the producer fencing before it reloads such a tile);
///
/// - code before the first T.ws block (what every group runs): the consumer runs it, then arrives on an
///   mbarrier of tilec's own (prologue_done) that the producer waits for before it runs the code's register
///   (T.alloc_var / T.alloc_local) assignments and its own blocks;
///   Mbarrier operations there every role runs itself and T.tma_copy one producer thread issues for all: the
///   producer runs them and the register assignments before them in order, then waits for the hand-over;
/// - the producer may assign registers, and a T.tma_copy position may read them;
/// - the thread index in a role is threadIdx.x as TileLang launched it: the consumer (threads 0..127 of the
///   lowered kernel) reads tx + 128 * its group, the producer (128..255) tilec.role_thread + 128 * (its group
///   - 1), a value whose range [128, 255] the analyses know.
///
/// Explicit TMA is honoured on every sm_90a lowering (--no-tma and tl.disable_tma_lower concern tilec's
/// own T.copy lowering). What tilec cannot honour is a located error: other targets, threads other than 256
/// (two warp groups), a statement between or after the T.ws blocks outside them (or, before them, mbarrier
/// operations and T.tma_copy inside loops or branches, atomics and calls outside T.Parallel nests, the thread
/// index read other than by a register assignment), T.ws(a, b), a T.ws block inside another, other work in
/// the producer (a store into or read of a T.tma_copy tile among it), other reads of a TMA tile, a T.gemm on TMA tiles that wgmma cannot do, a tile TMA cannot
/// load, barriers without T.ws.
ir::Program lowerWarpRoles(const ir::Program &p, const Target &t, DiagnosticEngine &diag);

} // namespace tilec::passes
