/// \file
/// Ranges of a block's threads that a condition on the thread index gives (`tx < 128`, `128 <= tx < 256`):
/// shared by threadRangeRegions (tile statements under such a branch) and threadRangeRoles (warp-group roles
/// written as such branches).
#pragma once

#include "tilec/IR.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace tilec::passes::threadranges {

using namespace ir;

/// Threads [lo, hi) of the block.
struct ThreadRange {
    int64_t lo = 0, hi = 0;
    bool operator<(const ThreadRange &o) const { return lo != o.lo ? lo < o.lo : hi < o.hi; }
    bool operator==(const ThreadRange &o) const { return lo == o.lo && hi == o.hi; }
    std::string text() const { return "threads " + std::to_string(lo) + " to " + std::to_string(hi - 1); }
};

/// The range a conjunction of comparisons of the thread index with constants (`tx < 32`, `64 <= tx`, `tx >= 32
/// and tx < 96`) bounds the thread index to, or nullopt (another condition, or no thread at all).
inline std::optional<ThreadRange> rangeOf(const Expr &cond, const VarNode *tx, int64_t threads) {
    ThreadRange r{0, threads};
    std::vector<Expr> todo{cond};
    while (!todo.empty()) {
        Expr e = todo.back();
        todo.pop_back();
        auto b = as<Binary>(e);
        if (!b) return std::nullopt;
        if (b->op == BinaryOp::And) {
            todo.push_back(b->a), todo.push_back(b->b);
            continue;
        }
        auto av = as<VarNode>(b->a), bv = as<VarNode>(b->b);
        bool txLeft = av == tx, txRight = bv == tx;
        auto c = constInt(txLeft ? b->b : b->a);
        if (txLeft == txRight || !c) return std::nullopt;
        BinaryOp op = b->op; // as `tx op c`
        if (txRight)
            op = op == BinaryOp::LT ? BinaryOp::GT : op == BinaryOp::GT ? BinaryOp::LT : op == BinaryOp::LE ? BinaryOp::GE
                 : op == BinaryOp::GE                                    ? BinaryOp::LE
                                                                          : op;
        switch (op) {
        case BinaryOp::LT: r.hi = std::min(r.hi, *c); break;
        case BinaryOp::LE: r.hi = std::min(r.hi, *c + 1); break;
        case BinaryOp::GT: r.lo = std::max(r.lo, *c + 1); break;
        case BinaryOp::GE: r.lo = std::max(r.lo, *c); break;
        default: return std::nullopt;
        }
    }
    if (r.lo >= r.hi) return std::nullopt;
    return r;
}

/// The threads outside `r` when they are a range.
inline std::optional<ThreadRange> complementOf(const ThreadRange &r, int64_t threads) {
    if (r.lo == 0 && r.hi < threads) return ThreadRange{r.hi, threads};
    if (r.hi == threads && r.lo > 0) return ThreadRange{0, r.lo};
    return std::nullopt;
}

/// Whether the warp groups of `body` synchronise through mbarriers (lowerWarpRoles' producer/consumer roles).
inline bool usesMbarriers(const Stmt &body) {
    return callsAny(body, {lib::Fn::MbarrierInit, lib::Fn::MbarrierWait, lib::Fn::MbarrierArriveEach, lib::Fn::TmaCopyOn});
}

} // namespace tilec::passes::threadranges
