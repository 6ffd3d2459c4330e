/// \file
/// What a T.Pipelined loop reads the same at every iteration, so that its transfers can be issued ahead
/// (pipelineLoops' cp.async stages) or by another thread (specializeWarps' TMA producer): variable-length
/// attention's `K[kv_start + k * block_N : ...]`, where `kv_start = cu_seqlens_k[bz]` is a scalar the kernel
/// set before the loop, and `for k in T.Pipelined(T.ceildiv(kv_len, block_N))`.
#pragma once

#include "tilec/IR.h"

#include <map>
#include <set>
#include <vector>

namespace tilec::passes {

/// The buffers whose elements do not change while `loop` runs: local and var buffers (each thread's own) that
/// nothing in the loop writes, and global tensors that nothing in `kernelBody` writes.
std::set<const ir::BufferNode *> loopInvariantBuffers(const ir::For &loop, const ir::Stmt &kernelBody);

/// The buffers `s` may write: stores, tile-statement destinations, reductions, atomics, and anything whose address
/// a call is handed (T.call_extern, atomics returning the old value).
std::set<const ir::BufferNode *> writtenBuffers(const ir::Stmt &s);

/// Does `e` read only elements of `buffers` (no load of anything else)?
bool readsOnly(const ir::Expr &e, const std::set<const ir::BufferNode *> &buffers);

/// The scalars a kernel sets once at its top level before the statement `top[at]` (a local or var buffer of
/// one element, stored to by exactly one top-level statement ahead of `at` and only read elsewhere), and what
/// each holds in terms of the kernel's inputs.
class KernelScalars {
  public:
    KernelScalars(const std::vector<ir::Stmt> &top, size_t at, const ir::Stmt &kernelBody, const ir::Var &threadIdx);

    /// `e` with each load of such a scalar replaced by its definition: an expression every thread of the block
    /// (the producer too) computes alike. Null where the result would still read anything but global tensors
    /// the kernel never writes, depend on the thread index, or call a function.
    /// With `replayed`, it may also read scalars that top-level statements ahead of `at` compute from such values
    /// through loops and several stores (TileLang's grouped GEMM: `g = 0; for i in range(G): g = if_then_else(by
    /// >= offsets[i], i, g)`): whoever evaluates the result must first run replay().
    ir::Expr uniform(const ir::Expr &e, bool replayed = false) const;

    /// The statements, in order, that compute the replayed scalars the results of uniform() so far read (and
    /// those they read in turn): to be run by another thread (the producer) before it evaluates them.
    std::vector<ir::Stmt> replay() const;

  private:
    std::map<const ir::BufferNode *, ir::Expr> defs_; ///< scalar -> its definition, already uniform
    std::set<const ir::BufferNode *> inputs_;         ///< global tensors the kernel never writes
    std::vector<std::pair<ir::Stmt, std::set<const ir::BufferNode *>>> replayable_; ///< statement, scalars it writes
    std::set<const ir::BufferNode *> replayed_;       ///< the scalars replayable_ writes
    mutable std::set<const ir::BufferNode *> used_;   ///< replayed scalars uniform() results read
    ir::Var threadIdx_;
    ir::Expr substitute(const ir::Expr &e) const;
    void findReplayable(const std::vector<ir::Stmt> &top, size_t at);
};

} // namespace tilec::passes
