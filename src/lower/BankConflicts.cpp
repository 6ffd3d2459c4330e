/// \file
/// Shared-memory bank conflicts of one warp's element accesses (src/lower/BankConflicts.h).
#include "BankConflicts.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <algorithm>
#include <set>

namespace tilec::passes::banks {

using namespace ir;

constexpr int kLanes = 32, kBanks = 32, kWordBytes = 4, kWavefrontBytes = kBanks * kWordBytes;

bool rowSwizzleActive(int64_t cols, int64_t eb) {
    return eb > 0 && 16 % eb == 0 && cols % (16 / eb) == 0 && (cols * eb % 128 == 0 || cols * eb == 64 || cols * eb == 32);
}

int64_t rowSwizzled(int64_t cols, int64_t eb, int64_t tileElems, int64_t off) {
    if (!rowSwizzleActive(cols, eb) || tileElems <= 0) return off;
    auto swz = [&](int64_t o) {
        const int64_t row = o / cols, rowBytes = cols * eb;
        const int64_t x = rowBytes % 128 == 0 ? row & 7 : rowBytes == 64 ? (row >> 1) & 3 : (row >> 2) & 1;
        return o ^ (x * (16 / eb));
    };
    if (tileElems / cols % 8 == 0) return swz(off);
    return off / tileElems * tileElems + swz(off % tileElems);
}

namespace {

/// `offset` with the thread's variables at `values`, tilec.swz and tilec.swz_split calls evaluated (rowSwizzled:
/// swz_split(a, b) is swz of a + b).
std::optional<int64_t> evalOffset(const Expr &offset, const std::map<const VarNode *, int64_t> &values) {
    struct Fold : IRMutator {
        using IRMutator::visit;
        const std::map<const VarNode *, int64_t> &values;
        bool failed = false;
        explicit Fold(const std::map<const VarNode *, int64_t> &v) : values(v) {}
        Expr visit(const std::shared_ptr<const Call> &op) override {
            const bool split = lib::is(*op, lib::Fn::SwzSplit);
            if (!split && !lib::is(*op, lib::Fn::Swz)) return IRMutator::visit(op);
            const lib::Fn f = split ? lib::Fn::SwzSplit : lib::Fn::Swz;
            auto c = [&](const char *n) { return constValue(lib::arg(*op, f, n)); };
            auto cols = c("cols"), eb = c("elemBytes"), tile = c("tileElems");
            auto at = [&](const char *n) { return evalInt(mutate(lib::arg(*op, f, n)), values); };
            auto off = split ? at("runtime") : at("offset");
            auto fixed = split ? at("fixed") : std::optional<int64_t>(0);
            if (!cols || !eb || !tile || !off || !fixed) return failed = true, Expr(op);
            return intImm(rowSwizzled(*cols, *eb, *tile, *off + *fixed), op->dtype);
        }
    } fold(values);
    Expr e = fold.mutate(offset);
    return fold.failed ? std::nullopt : evalInt(e, values);
}

} // namespace

std::optional<WarpAccess> firstWarp(const ir::Expr &offset, const ir::VarNode *tx, std::map<const ir::VarNode *, int64_t> values,
                                    int bytes) {
    if (!tx || bytes <= 0) return std::nullopt;
    WarpAccess a;
    a.bytes = bytes;
    for (int lane = 0; lane < kLanes; ++lane) {
        values[tx] = lane;
        auto o = evalOffset(offset, values);
        if (!o || *o < 0) return std::nullopt;
        a.offsets.push_back(*o);
    }
    return a;
}

int64_t wavefronts(const WarpAccess &a, int elemBytes, const std::function<int64_t(int64_t)> &map) {
    std::set<int64_t> words[kBanks];
    const int elems = std::max(1, a.bytes / elemBytes);
    for (int64_t o : a.offsets)
        for (int e = 0; e < elems; ++e) {
            const int64_t word = map(o + e) * elemBytes / kWordBytes;
            words[word % kBanks].insert(word);
        }
    size_t most = 0;
    for (auto &w : words) most = std::max(most, w.size());
    return (int64_t)most;
}

int64_t idealWavefronts(const WarpAccess &a) {
    return std::max<int64_t>(1, ((int64_t)a.offsets.size() * a.bytes + kWavefrontBytes - 1) / kWavefrontBytes);
}

bool issuesVectors(const For &f) {
    if (as<AtomicAdd>(f.body)) return true;
    Stmt s = f.body;
    if (auto i = as<IfThenElse>(s); i && !i->otherwise) s = i->then;
    auto st = as<Store>(s);
    if (!st) return false;
    if (st->buffer->scope != Scope::Local) return true; // registers (or a constant) into memory
    Expr v = st->value;
    if (auto sel = as<Select>(v)) v = sel->t;
    auto l = as<Load>(v);
    return l && l->buffer->scope != Scope::Local; // memory into registers
}

namespace {

/// The shared accesses of a kernel's body (sharedAccessCosts).
struct Costs : IRVisitor {
    using IRVisitor::visit;
    explicit Costs(const Kernel &k) : tx_(k.threadIdx.get()) {}
    std::vector<AccessCost> out;
    void visit(const For &op) override {
        auto savedValues = values_;
        const For *savedLanes = lanes_;
        if (auto m = constValue(op.min)) values_[op.var.get()] = *m;
        else values_.erase(op.var.get());
        if (op.forKind == ForKind::Vectorized) lanes_ = &op;
        IRVisitor::visit(op);
        values_ = std::move(savedValues), lanes_ = savedLanes;
    }
    void visit(const Load &op) override {
        access(op.buffer, op.indices, false);
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        access(op.buffer, op.indices, true);
        IRVisitor::visit(op);
    }

  private:
    const VarNode *tx_;
    std::map<const VarNode *, int64_t> values_;
    const For *lanes_ = nullptr;
    void access(const Buffer &b, const std::vector<Expr> &idx, bool store) {
        if (b->scope != Scope::Shared || idx.size() != 1) return;
        const int eb = b->dtype.bytes();
        int bytes = eb;
        if (lanes_ && issuesVectors(*lanes_)) { // the lanes at once where they are consecutive elements
            auto lin = linearIn(idx[0], lanes_->var.get());
            auto width = constValue(lanes_->extent);
            if (lin && width && lin->second == 1) bytes = (int)(*width * eb);
        }
        for (auto &c : out)
            if (c.buffer == b.get() && c.store == store && c.bytes == bytes && structurallyEqual(c.index, idx[0])) return;
        auto a = firstWarp(idx[0], tx_, values_, bytes);
        if (!a) return;
        out.push_back({b.get(), store, idx[0], bytes, wavefronts(*a, eb, [](int64_t o) { return o; }), idealWavefronts(*a)});
    }
};

} // namespace

std::vector<AccessCost> sharedAccessCosts(const Kernel &k) {
    Costs c(k);
    c.visit(k.body);
    return c.out;
}

} // namespace tilec::passes::banks
