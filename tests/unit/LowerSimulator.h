/// \file
/// Runs a lowered kernel (what lower() returns) on the CPU, so the lowering passes are checked for
/// numbers, not just shapes, without a GPU: every block, every thread, in lockstep statement by statement
/// (warp shuffles read the partner's value as of the same statement), with divergence by masks.
///
/// Values are doubles (integers exact below 2^53); stores round to float32 for float buffers, which is what
/// the tests use. Shared memory is watched for races: a thread that reads or writes a shared element that
/// another thread wrote (or, for writes, read) since the last barrier is reported, which checks the
/// barriers insertSyncs placed. A barrier reached with some threads inactive is reported too.
#pragma once

#include "tilec/IR.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/LibraryCalls.h"

#include "ScalarSemantics.h"

#include <array>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tilec::simtest {

struct SimError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// tilec::swz<Cols, ElemBytes> of stdlib/tilec/swizzle.cuh, for tiles of `tileElems` elements.
inline int64_t swizzled(int64_t cols, int64_t eb, int64_t tileElems, int64_t off) {
    int64_t base = off / tileElems * tileElems, o = off % tileElems;
    int64_t per = 16 / eb;
    if (per == 0 || cols % per) return off;
    int64_t row = o / cols, col = o % cols, rowBytes = cols * eb, f = 0;
    if (rowBytes % 128 == 0) f = row & 7;
    else if (rowBytes == 64) f = (row >> 1) & 3;
    else if (rowBytes == 32) f = (row >> 2) & 1;
    return base + row * cols + (col ^ (f * per));
}


class Simulator {
  public:
    /// `tensors`: the data of each tensor parameter, row-major; `scalars`: scalar parameters and T.dynamic
    /// symbols by name.
    Simulator(const ir::Kernel &k, std::map<std::string, std::vector<double> *> tensors,
              std::map<std::string, double> scalars = {})
        : k_(k), tensors_(std::move(tensors)), scalars_(std::move(scalars)) {}

    /// Runs every block of the grid.
    void run() {
        int64_t g[3];
        for (int d = 0; d < 3; ++d) g[d] = (int64_t)evalUniform(k_.grid[d]);
        for (int64_t z = 0; z < g[2]; ++z)
            for (int64_t y = 0; y < g[1]; ++y)
                for (int64_t x = 0; x < g[0]; ++x) block({x, y, z});
    }

    std::vector<std::string> races; ///< one line per detected race (the first few)

  private:
    const ir::Kernel &k_;
    std::map<std::string, std::vector<double> *> tensors_;
    std::map<std::string, double> scalars_;
    int T_ = 0;
    std::vector<std::map<const ir::VarNode *, double>> vars_;           ///< per thread
    std::vector<std::map<const ir::BufferNode *, std::vector<double>>> locals_; ///< per thread
    std::map<const ir::BufferNode *, std::vector<double>> shared_;
    struct Touch {
        int writer = -1, epochW = -1;
        std::vector<int> readers;
        int epochR = -1;
    };
    std::map<const ir::BufferNode *, std::vector<Touch>> touches_;
    int epoch_ = 0;

    void block(std::array<int64_t, 3> idx) {
        T_ = k_.threads;
        vars_.assign(T_, {});
        locals_.assign(T_, {});
        shared_.clear();
        touches_.clear();
        open_.clear();
        pending_.clear();
        epoch_ = 0;
        for (int t = 0; t < T_; ++t) {
            for (int d = 0; d < 3; ++d)
                if (k_.blockIdx[d]) vars_[t][k_.blockIdx[d].get()] = (double)idx[d];
            if (k_.threadIdx) vars_[t][k_.threadIdx.get()] = t;
            for (auto &p : k_.params)
                if (p.kind == ir::Param::Scalar) vars_[t][p.var.get()] = scalars_.at(p.var->name);
            for (auto &s : k_.dynamicSymbols) vars_[t][s.get()] = scalars_.at(s->name);
            for (auto &b : k_.allocs)
                if (b->scope == ir::Scope::Local || b->scope == ir::Scope::Var)
                    locals_[t][b.get()].assign((size_t)std::max<int64_t>(1, b->constElements()), std::nan(""));
        }
        for (auto &b : k_.allocs)
            if (b->scope == ir::Scope::Shared) {
                shared_[b.get()].assign((size_t)b->constElements(), std::nan(""));
                touches_[b.get()].assign((size_t)b->constElements(), Touch{});
            }
        exec(k_.body, std::vector<char>(T_, 1));
    }

    double evalUniform(const ir::Expr &e) {
        std::map<const ir::VarNode *, double> none;
        for (auto &s : k_.dynamicSymbols) none[s.get()] = scalars_.at(s->name);
        vars_.assign(1, none);
        return eval(e, 0);
    }

    static double roundTo(DType t, double v) { return roundToDType(t, v); }

    std::vector<double> &storage(const ir::BufferNode *b, int t) {
        if (b->scope == ir::Scope::Global) {
            auto it = tensors_.find(b->name);
            if (it == tensors_.end()) throw SimError("no data for tensor " + b->name);
            return *it->second;
        }
        if (b->scope == ir::Scope::Shared) return shared_.at(b);
        return locals_[t].at(b);
    }

    void touch(const ir::BufferNode *b, size_t i, int t, bool write) {
        if (b->scope != ir::Scope::Shared) return;
        Touch &x = touches_.at(b)[i];
        auto report = [&](const char *what, int other) {
            if (races.size() < 5)
                races.push_back(std::string(what) + " on " + b->name + "[" + std::to_string(i) + "] by thread " +
                                std::to_string(t) + " after thread " + std::to_string(other));
        };
        if (x.epochW == epoch_ && x.writer != t) report(write ? "write-after-write" : "read-after-write", x.writer);
        if (write) {
            if (x.epochR == epoch_)
                for (int r : x.readers)
                    if (r != t) {
                        report("write-after-read", r);
                        break;
                    }
            x.writer = t;
            x.epochW = epoch_;
        } else {
            if (x.epochR != epoch_) x.readers.clear(), x.epochR = epoch_;
            if (x.readers.size() < 4) x.readers.push_back(t);
        }
    }

    size_t index(const ir::BufferNode *b, const std::vector<ir::Expr> &idx, int t) {
        if (idx.size() != 1) throw SimError("access of " + b->name + " not flattened");
        double i = eval(idx[0], t);
        auto &s = storage(b, t);
        if (!(i >= 0 && i < (double)s.size()))
            throw SimError("out-of-bounds access " + b->name + "[" + std::to_string((int64_t)i) + "] of " +
                           std::to_string(s.size()) + " by thread " + std::to_string(t));
        return (size_t)i;
    }

    double eval(const ir::Expr &e, int t);
    void exec(const ir::Stmt &s, const std::vector<char> &mask);

    // Device library calls (LowerSimulatorLibrary.h).
    struct Landing {
        const ir::BufferNode *buffer;
        size_t index;
        double value;
    };
    std::vector<Landing> open_;                 ///< transfers issued since the last commit
    std::vector<std::vector<Landing>> pending_; ///< committed groups, oldest first
    std::pair<const ir::BufferNode *, int64_t> addressOf(const ir::Expr &e, int t);
    void library(const ir::Call &c, const std::vector<char> &mask);
};

} // namespace tilec::simtest

#include "LowerSimulatorImpl.h"
#include "LowerSimulatorLibrary.h"
