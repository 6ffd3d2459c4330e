/// \file
/// Conditional loop extents (Gen.h: decorateExtents): the class of session 14's hang, a trip count
/// `T.if_then_else(q_is_noisy, bx + 2, bx - 1)` that code generation spliced bare after `s < `. T.serial and the
/// GEMM's T.Pipelined / T.serial end at run-time conditionals (T.if_then_else, Python's `a if c else b` on block
/// indices, nested, inside %, T.min and T.max, after a run-time start); T.Parallel extents are trace-time
/// conditionals (nested, chained) over BM and BN. The simulator runs the lowered IR, so the splice itself is
/// checked by the loop-header oracle (LoopHeaders.h) on the generated CUDA. From a stream of its own, so the
/// base programs of a seed stay what they were.
#include "Gen.h"

#include <functional>

namespace tilec::difffuzz {

namespace {

/// Ends of a T.serial loop: small trip counts (0 to 4) that differ between blocks (bx < gx <= 2, by < gy <= 2).
const std::vector<std::string> &serialEnds() {
    static const std::vector<std::string> v{
        "T.if_then_else(bx < 2, bx + 2, bx - 1)", // session 14's hang
        "T.if_then_else(bx < 1, 3, 1)",
        "T.if_then_else(by == 0, bx + 2, bx)",
        "2 if bx == 0 else 3",
        "(bx + 2 if by == 0 else bx - 1) % 4",
        "T.max(T.if_then_else(bx > 0, 1, 2), by)",
        "T.if_then_else(bx < 1, 2, 1) * 2 - 1",
        "T.min(2, T.if_then_else(by < 1, bx + 1, 3))",
        "(1 if bx + by > 0 else 2) + (1 if by < 1 else 0)",
        "1 if bx > 0 else 2 if by > 0 else 3",
        "T.if_then_else(bx == by, 1, 0) + T.if_then_else(bx != by, 3, 1)",
        "(3 if BM > 8 else 1)",
    };
    return v;
}

/// Ends of the GEMM's K loop, never past T.ceildiv(K, BK) (KT), sometimes below it or 0 in some blocks.
std::vector<std::string> gemmEnds(const std::string &kt) {
    return {"T.if_then_else(by == 0, " + kt + ", " + kt + " - 1)",
            kt + " if bx < 1 else T.min(" + kt + ", 1)",
            "T.if_then_else(bx + by > 0, " + kt + ", T.max(" + kt + " - 1, 0))",
            "(" + kt + " if BM >= BN else " + kt + ")",
            "T.min(" + kt + ", T.if_then_else(bx < 1, 1, 2) * " + kt + ")"};
}

/// T.Parallel extents: a shared tile's rows or columns in part, a fragment's whole shape, as Python
/// conditionals the front end folds at trace time.
std::string parallelExtent(Rng &r, const std::string &dst) {
    if (dst == "rm") return r.pick(std::vector<std::string>{"(BM if BN > 0 else 1)", "BM if BM > 1 else BM"});
    if (dst == "rn") return r.pick(std::vector<std::string>{"(BN if BM > 0 else 1)", "BN if BN > 1 else 1 if BM > 0 else BN"});
    if (dst == "s0" || dst == "s1")
        return r.pick(std::vector<std::string>{"(BM if BN > 4 else BM - 1 if BM > 1 else BM), BN",
                                               "BM, (BN - 1 if BN > 1 else BN)",
                                               "(BM // 2 if BM > 1 else 1), BN if BM > 0 else 1",
                                               "BM - (1 if BM > 2 else 0), BN"});
    return r.pick(std::vector<std::string>{"(BM if BN > 0 else 1), BN", "BM, BN if BM > 0 else 1"});
}

} // namespace

void decorateExtents(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0xe47e)};
    const std::string kt = "T.ceildiv(" + std::string(p.dynamic ? "kk" : std::to_string(p.gk)) + ", BK)";
    std::function<void(std::vector<GOp> &)> walk = [&](std::vector<GOp> &ops) {
        for (auto &o : ops) {
            if (o.kind == GOp::Serial && r.coin(0.35)) o.end = r.pick(serialEnds());
            if (o.kind == GOp::Gemm && r.coin(0.3)) o.end = r.pick(gemmEnds(kt));
            if (o.kind == GOp::Parallel && r.coin(0.15)) o.end = parallelExtent(r, o.dst);
            walk(o.kids), walk(o.elseKids);
        }
    };
    walk(p.ops);
}

} // namespace tilec::difffuzz
