/// \file
/// The differential fuzzer's reference: the typed tile program as the front end gives it (before any
/// lowering pass), run on the CPU in float64 with tile-level semantics, written independently of the passes.
///
/// Semantics: a tile statement (T.Parallel nest, T.copy, T.fill, T.gemm, T.reduce_*, region T.atomic_add) is
/// one step of the whole block: T.Parallel iterations run in order and never exchange data, T.copy moves every
/// element of the region, T.gemm computes C (+)= op(A) @ op(B) exactly. Other statements (stores, ifs,
/// serial loops outside T.Parallel) run once per thread, each thread with its own alloc_var / alloc_local
/// storage and thread index. Global reads outside a tensor give 0 and global writes outside it do nothing
/// (the contract's run-time guards); any other access outside a buffer is an error of the program. Stores
/// round to the buffer's dtype (float32 and narrower floats to float32, as the simulator does).
/// A tile statement reached by a range of the threads (`if tx < 20:`) is a step of the whole block, as tilec's
/// threadRangeRegions makes it. One reached by another subset of the threads, and T.Parallel iterations that
/// exchange data, have no tile-level meaning: run() throws Undefined, and the compiler must reject the program.
#pragma once

#include "tilec/IR.h"

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace tilec::difffuzz {

/// The program has no meaning (an access outside a local buffer, a construct the reference does not model).
struct RefError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// A program without tile-level meaning, which the compiler must reject: a tile statement under control flow
/// that depends on the thread index, or T.Parallel iterations that exchange data (one reads or stores an
/// element of shared or global memory or a fragment that another one stores).
struct Undefined : std::runtime_error {
    SourceRange loc;
    Undefined(const std::string &what, SourceRange l) : std::runtime_error(what), loc(l) {}
};

class Reference {
  public:
    Reference(const ir::Kernel &k, std::map<std::string, std::vector<double> *> tensors,
              std::map<std::string, double> scalars = {})
        : k_(k), tensors_(std::move(tensors)), scalars_(std::move(scalars)) {}

    /// Runs every block, x fastest (the order the simulator uses, so order-dependent results agree).
    void run();

    /// Global tensors a store of the run reached (also one outside the tensor, which the guard drops).
    const std::set<std::string> &written() const { return written_; }

    /// Rounds v to what a buffer of dtype t holds.
    static double roundTo(DType t, double v);

  private:
    using Mask = std::vector<int>; ///< the active threads
    const ir::Kernel &k_;
    std::map<std::string, std::vector<double> *> tensors_;
    std::map<std::string, double> scalars_;
    std::set<std::string> written_;
    int T_ = 0;
    bool tile_ = false; ///< inside a tile statement: one logical thread (lane 0)
    int iteration_ = -1, iterations_ = 0; ///< the T.Parallel iteration running (-1: none)
    /// Per element a T.Parallel nest touched: the iteration that stored it and the one that read it (-2: several).
    std::unordered_map<const double *, std::pair<int, int>> touched_;
    void touch(const double *element, bool store, const SourceRange &loc);
    std::vector<std::unordered_map<const ir::VarNode *, double>> env_;
    std::map<const ir::BufferNode *, std::vector<double>> block_;                ///< shared and fragments
    std::vector<std::map<const ir::BufferNode *, std::vector<double>>> private_; ///< var / local per thread

    void block(int64_t x, int64_t y, int64_t z);
    std::unordered_map<const ir::BufferNode *, std::vector<int64_t>> shapes_; ///< shapes depend on scalars only
    const std::vector<int64_t> &shapeOf(const ir::BufferNode &b);
    std::vector<double> &storage(const ir::BufferNode &b, int lane);
    /// Flat offset of `idx` in b, or -1 for a global element outside the tensor.
    int64_t offset(const ir::BufferNode &b, const std::vector<int64_t> &idx);
    double load(const ir::BufferNode &b, const std::vector<int64_t> &idx, int lane);
    void store(const ir::BufferNode &b, const std::vector<int64_t> &idx, double v, int lane, bool add = false);

    double eval(const ir::Expr &e, int lane);
    void exec(const ir::Stmt &s, const Mask &m);
    void tileStatement(const ir::Stmt &s, const Mask &m);
    void copyRegions(const ir::Region &src, const ir::Region &dst, bool add);
    void gemm(const ir::Gemm &g);
    void reduce(const ir::Reduce &r);
};

} // namespace tilec::difffuzz
