/// \file
/// Whole-kernel semantic checks: declared shared memory against the target's per-block limit, the
/// per-thread register share of fragments and locals, and T.Parallel extents that must be constants.
///
/// These are estimates made before any lowering, meant to turn hopeless kernels into a clear message
/// at the right place. Memory planning and code generation re-check the exact figures later.
#include "tilec/Check.h"

#include "tilec/IRPrinter.h"
#include "tilec/IRVisitor.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

namespace tilec {

using namespace ir;

namespace {

constexpr int64_t kBig = std::numeric_limits<int64_t>::max();

int64_t satMul(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? kBig : r;
}
int64_t satAdd(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? kBig : r;
}
int64_t ceilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/// Bytes of one copy of a buffer; -1 when its shape is not constant.
int64_t bufferBytes(const BufferNode &b) {
    int64_t n = b.constElements();
    return n < 0 ? -1 : satMul(n, b.dtype.bytes());
}

/// `float16[128, 64]`.
std::string typeText(const BufferNode &b) {
    std::string s(b.dtype.name());
    s += "[";
    for (size_t i = 0; i < b.shape.size(); ++i) s += (i ? ", " : "") + print(b.shape[i]);
    return s + "]";
}

/// Walks the body once for what the checks need: the pipeline depth at which each buffer is written by a
/// T.copy from global memory (the buffer then exists once per stage), and the T.Parallel loops whose extent is not a constant.
class BodyScan : public IRVisitor {
  public:
    using IRVisitor::visit;
    std::map<const BufferNode *, int> stages; ///< shared buffers copied into inside a pipelined loop
    std::vector<const For *> dynamicParallel;

    void visit(const For &op) override {
        if (op.forKind == ForKind::Parallel && !as<IntImm>(op.extent)) dynamicParallel.push_back(&op);
        bool pipelined = op.forKind == ForKind::Pipelined;
        if (pipelined) enclosingStages_.push_back(std::max(op.numStages, 1));
        IRVisitor::visit(op);
        if (pipelined) enclosingStages_.pop_back();
    }

    /// An element access at a constant index outside its buffer's constant extent (issue 23: `L[4] = S[64]` on
    /// a (4,) local and a (64,) shared buffer compiled).
    struct OutOfBounds {
        SourceRange loc;
        const BufferNode *buffer;
        size_t dim;
        int64_t index, extent;
    };
    std::vector<OutOfBounds> outOfBounds;

    void visit(const Load &op) override {
        access(op.buffer, op.indices, op.loc);
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        access(op.buffer, op.indices, op.loc);
        IRVisitor::visit(op);
    }

    void visit(const Copy &op) override {
        // The innermost pipelined loop decides how many copies of the destination are in flight; only loads
        // from global memory are asynchronous (a copy from registers is done when it is done).
        if (!enclosingStages_.empty() && op.dst.buffer && op.dst.buffer->scope == Scope::Shared && op.src.buffer &&
            op.src.buffer->scope == Scope::Global) {
            int &s = stages[op.dst.buffer.get()];
            s = std::max(s, enclosingStages_.back());
        }
        IRVisitor::visit(op);
    }

  private:
    std::vector<int> enclosingStages_;

    void access(const Buffer &b, const std::vector<Expr> &idx, const SourceRange &loc) {
        if (!b || idx.size() != b->shape.size()) return;
        for (size_t d = 0; d < idx.size(); ++d) {
            auto i = as<IntImm>(idx[d]);
            auto e = as<IntImm>(b->shape[d]);
            if (i && e && (i->value < 0 || i->value >= e->value))
                outOfBounds.push_back({idx[d]->loc.valid() ? idx[d]->loc : loc, b.get(), d, i->value, e->value});
        }
    }
};

/// The top-level statements (of the body's sequence) from the first to the last that mention each buffer.
std::map<const BufferNode *, std::pair<size_t, size_t>> topLevelLiveness(const Kernel &k) {
    struct Mentions : IRVisitor {
        using IRVisitor::visit;
        std::vector<const BufferNode *> found;
        void visitRegion(const Region &r) override {
            found.push_back(r.buffer.get());
            IRVisitor::visitRegion(r);
        }
        void visit(const Load &op) override { found.push_back(op.buffer.get()), IRVisitor::visit(op); }
        void visit(const Store &op) override { found.push_back(op.buffer.get()), IRVisitor::visit(op); }
        void visit(const Reduce &op) override { found.push_back(op.src.get()), found.push_back(op.dst.get()); }
    };
    std::vector<Stmt> top;
    if (auto q = as<Seq>(k.body)) top = q->stmts;
    else top = {k.body};
    std::map<const BufferNode *, std::pair<size_t, size_t>> live;
    for (size_t i = 0; i < top.size(); ++i) {
        Mentions m;
        m.visit(top[i]);
        for (auto *b : m.found) {
            auto [it, fresh] = live.emplace(b, std::pair{i, i});
            if (!fresh) it->second.second = i;
        }
    }
    return live;
}

/// Shared memory: the alloc_shareds live at once (a buffer no statement mentions takes none: the planner drops
/// it), each rounded up to 16 bytes (the alignment the planner gives each buffer), times the pipeline depth when a
/// T.copy inside a T.Pipelined loop writes it, at the top-level statement where that is most. Buffers whose
/// uses are apart may share memory (planSharedMemory reuses it), so only the largest such sum has to fit.
bool checkSharedMemory(const Kernel &k, const Target &t, const BodyScan &scan, DiagnosticEngine &diag) {
    struct Use {
        const BufferNode *buf;
        int64_t bytes;
        int stages;
        std::pair<size_t, size_t> live;
    };
    auto live = topLevelLiveness(k);
    std::vector<Use> uses;
    std::vector<size_t> points{0};
    for (auto &b : k.allocs) {
        if (!b || b->scope != Scope::Shared) continue;
        int64_t bytes = bufferBytes(*b);
        if (bytes < 0) continue; // a non-constant shape was already reported by the evaluator
        auto it = scan.stages.find(b.get());
        int stages = it == scan.stages.end() ? 1 : it->second;
        auto l = live.find(b.get());
        if (l == live.end()) continue;
        uses.push_back({b.get(), bytes, stages, l->second});
        points.push_back(l->second.first);
    }
    auto liveAt = [](const Use &u, size_t i) { return u.live.first <= i && i <= u.live.second; };
    int64_t total = 0;
    size_t peak = 0;
    for (size_t i : points) {
        int64_t sum = 0;
        for (auto &u : uses)
            if (liveAt(u, i)) sum = satAdd(sum, satMul(satAdd(u.bytes, 15) / 16 * 16, u.stages));
        if (sum > total) total = sum, peak = i;
    }
    std::erase_if(uses, [&](const Use &u) { return !liveAt(u, peak); });
    if (total <= t.maxSharedPerBlock) return true;
    std::string amount = total == kBig ? "more than " + std::to_string(kBig) : std::to_string(total);
    diag.error(k.launchLoc, "kernel '" + k.name + "' declares " + amount + " bytes of shared memory, above the " +
                                std::to_string(t.maxSharedPerBlock) + "-byte limit of " + t.name);
    for (auto &u : uses) {
        std::string msg = "'" + u.buf->name + "' " + typeText(*u.buf) + ": " + std::to_string(u.bytes) + " bytes";
        if (u.stages > 1) msg += " x " + std::to_string(u.stages) + " pipeline stages";
        diag.note(u.buf->loc, msg);
    }
    return false;
}

/// How many times the per-thread register maximum one buffer may need: past it a buffer is an error, below it
/// a warning (ptxas keeps what does not fit in local memory, as TileLang lets it: sparse MLA backward's
/// float32[64, 512] wgmma accumulator over one warpgroup needs 256 registers).
constexpr int64_t kSpillFactor = 4;

/// Registers, per thread: a fragment is spread over the block's threads, so each holds
/// ceil(elements / threads) elements; a local (and a var) is private to each thread, so each holds all of
/// it. A buffer takes ceil(bytes / 4) 32-bit registers. One buffer needing more than the target's per-thread
/// maximum is a warning up to kSpillFactor times it, an error beyond. All of them together needing more is
/// only a warning: ptxas keeps what does not fit in local memory (spills), and TileLang compiles such kernels
/// too (the estimate cannot know which buffers are live at the same time). Nothing is reserved for addresses and temporaries; the
/// exact figure comes from ptxas later (--resource-usage).
bool checkRegisters(const Kernel &k, const Target &t, DiagnosticEngine &diag) {
    struct Use {
        const BufferNode *buf;
        int64_t regs;
    };
    std::vector<Use> uses;
    int64_t threads = std::max(k.threads, 1);
    int64_t limit = t.registersPerThread;
    int64_t total = 0;
    bool ok = true, spilled = false;
    for (auto &b : k.allocs) {
        if (!b || (b->scope != Scope::Fragment && b->scope != Scope::Local && b->scope != Scope::Var)) continue;
        int64_t elems = b->constElements();
        if (elems < 0) continue;
        bool spread = b->scope == Scope::Fragment;
        int64_t perThread = spread ? ceilDiv(elems, threads) : elems;
        int64_t regs = ceilDiv(satMul(perThread, b->dtype.bytes()), 4);
        uses.push_back({b.get(), regs});
        total = satAdd(total, regs);
        if (regs <= limit) continue;
        std::string what = std::string(spread ? "fragment" : b->scope == Scope::Local ? "local buffer" : "variable");
        std::string shape = typeText(*b) + (spread ? " over " + std::to_string(threads) + " threads" : "");
        std::string needs = what + " '" + b->name + "' needs " + std::to_string(regs) + " registers per thread (" +
                            shape + "), more than the " + std::to_string(limit) + " a thread can have";
        spilled = true;
        if (regs <= kSpillFactor * limit) {
            diag.warning(b->loc, needs + ": ptxas keeps what does not fit in local memory (spills, slower; see "
                                         "--resource-usage)");
            continue;
        }
        diag.error(b->loc, needs + ", and more than the " + std::to_string(kSpillFactor * limit) +
                               " tilec lets spill to local memory");
        ok = false;
    }
    // The sum only matters when no single buffer already explains the spills.
    if (spilled || total <= limit) return ok;
    diag.warning(k.launchLoc, "the fragments and locals of kernel '" + k.name + "' need " + std::to_string(total) +
                                  " registers per thread together, more than the " + std::to_string(limit) +
                                  " a thread can have: ptxas will keep some in local memory (spills; see "
                                  "--resource-usage)");
    std::stable_sort(uses.begin(), uses.end(), [](const Use &a, const Use &b) { return a.regs > b.regs; });
    const size_t kShown = 3;
    for (size_t i = 0; i < uses.size() && i < kShown; ++i) {
        auto &b = *uses[i].buf;
        std::string over = b.scope == Scope::Fragment ? " over " + std::to_string(threads) + " threads" : "";
        diag.note(b.loc, "'" + b.name + "' " + typeText(b) + over + ": " + std::to_string(uses[i].regs) +
                             " registers per thread");
    }
    return true;
}

} // namespace

bool checkKernel(const Kernel &k, const Target &t, DiagnosticEngine &diag) {
    BodyScan scan;
    scan.visit(k.body);
    bool ok = true;
    // `T.Parallel(n, m)` is two loops with one location: one message for both.
    std::vector<SourceRange> reported;
    for (auto *loop : scan.dynamicParallel) {
        ok = false;
        auto same = [&](const SourceRange &r) {
            auto &l = loop->loc;
            return r.file == l.file && r.line == l.line && r.col == l.col && r.endLine == l.endLine &&
                   r.endCol == l.endCol;
        };
        if (loop->loc.valid() && std::any_of(reported.begin(), reported.end(), same)) continue;
        reported.push_back(loop->loc);
        diag.error(loop->loc, "T.Parallel extent must be a compile-time constant");
    }
    for (auto &o : scan.outOfBounds) {
        ok = false;
        std::string dim = o.buffer->shape.size() > 1 ? " in dimension " + std::to_string(o.dim) : "";
        diag.error(o.loc, "index " + std::to_string(o.index) + " is out of bounds for '" + o.buffer->name + "' " +
                              typeText(*o.buffer) + dim + " (valid: 0 to " + std::to_string(o.extent - 1) + ")");
    }
    ok &= checkSharedMemory(k, t, scan, diag);
    ok &= checkRegisters(k, t, diag);
    return ok;
}

} // namespace tilec
