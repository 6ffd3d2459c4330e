/// \file
/// Drawing random programs of the model (Gen.h): shapes, dtypes, operations and their expressions.
#include "Gen.h"

#include <functional>

namespace tilec::difffuzz {

namespace {

GExprP leaf(std::string text, std::set<std::string> reads = {}, bool isBool = false) {
    auto e = std::make_shared<GExpr>();
    e->leaf = std::move(text);
    e->reads = std::move(reads);
    e->isBool = isBool;
    return e;
}

GExprP node(std::string op, std::vector<GExprP> kids, bool isBool = false) {
    auto e = std::make_shared<GExpr>();
    e->op = std::move(op);
    e->kids = std::move(kids);
    e->isBool = isBool;
    return e;
}

GOp opOf(GOp::Kind k) {
    GOp o;
    o.kind = k;
    return o;
}

/// Where an expression is evaluated: which index variables exist and what it may read.
enum class Ctx { Tile, Row, Col, Uniform, Thread };

struct Generator {
    Rng r;
    GProgram p;
    int serialDepth = 0;
    std::vector<std::string> tiles2D() const {
        std::vector<std::string> v{"s0", "s1", "f0", "f1"};
        if (p.gemm) v.push_back("acc");
        return v;
    }

    std::string constant() {
        static const std::vector<std::string> cs{"0.5", "1.0", "2.0", "-1.0", "0.25", "-0.75", "1.5", "3.0", "0.0"};
        return r.pick(cs);
    }
    GExprP loopVar() {
        if (serialDepth == 0) return leaf("v[0]", {"v"});
        return leaf("T.cast(it" + std::to_string(r.in(0, serialDepth - 1)) + ", \"float32\")");
    }

    GExprP leafOf(Ctx c) {
        auto tiles = tiles2D();
        switch (c) {
        case Ctx::Tile:
            switch (r.in(0, 9)) {
            case 0: return leaf(constant());
            case 1: return leaf(r.coin(0.5) ? "T.cast(i, \"float32\")" : "T.cast(j, \"float32\")");
            case 2: return leaf("rm[i]", {"rm"});
            case 3: return leaf("rn[j]", {"rn"});
            case 4: return leaf(std::string(r.coin(0.5) ? "A" : "B") + "[by * BM + i, bx * BN + j]");
            case 5: return r.coin(0.5) ? leaf("v[0]", {"v"}) : loopVar();
            case 6:
                if (p.bm == p.bn && r.coin(0.3)) {
                    auto b = r.pick(tiles);
                    return leaf(b + "[j, i]", {b});
                }
                [[fallthrough]];
            default: {
                auto b = r.pick(tiles);
                return leaf(b + "[i, j]", {b});
            }
            }
        case Ctx::Row:
            switch (r.in(0, 5)) {
            case 0: return leaf(constant());
            case 1: return leaf("T.cast(i, \"float32\")");
            case 2: return leaf("A[by * BM + i, bx]");
            case 3: return leaf("v[0]", {"v"});
            default: return leaf("rm[i]", {"rm"});
            }
        case Ctx::Col:
            switch (r.in(0, 5)) {
            case 0: return leaf(constant());
            case 1: return leaf("T.cast(j, \"float32\")");
            case 2: return leaf("B[by, bx * BN + j]");
            case 3: return leaf("v[0]", {"v"});
            default: return leaf("rn[j]", {"rn"});
            }
        case Ctx::Uniform:
            switch (r.in(0, 5)) {
            case 0: return leaf(constant());
            case 1: return leaf(r.coin(0.5) ? "T.cast(bx, \"float32\")" : "T.cast(by, \"float32\")");
            case 2: return leaf("A[by, bx]");
            case 3: return r.coin(0.5) ? leaf("s0[0, 0]", {"s0"}) : leaf("s1[BM - 1, BN - 1]", {"s1"});
            default: return loopVar();
            }
        case Ctx::Thread:
            switch (r.in(0, 4)) {
            case 0: return leaf(constant());
            case 1: return leaf("T.cast(tx, \"float32\")");
            case 2: return leaf("A[tx % " + std::to_string(std::max<int64_t>(p.ra, 1)) + ", bx]");
            case 3: return leaf("v[0]", {"v"});
            default: {
                std::string b = r.coin(0.5) ? "s0" : "s1";
                return leaf(b + "[tx % BM, (tx + by) % BN]", {b});
            }
            }
        }
        return leaf("0.0");
    }

    GExprP cond(Ctx c, int depth) {
        int k = (int)r.in(0, 3);
        if (k == 0 && depth > 0) return node(r.coin(0.5) ? "and" : "or", {cond(c, depth - 1), cond(c, depth - 1)}, true);
        if (k == 1 && c == Ctx::Tile) {
            static const std::vector<std::string> ix{"i < 3", "j >= 2", "(i + j) % 3 == 0", "i != j", "i * 2 < BM"};
            return leaf("(" + r.pick(ix) + ")", {}, true);
        }
        if (k == 2 && c == Ctx::Uniform) return leaf(r.coin(0.5) ? "(bx == 0)" : "(by < 1)", {}, true);
        static const std::vector<std::string> cmp{">", "<", ">=", "<=", "==", "!="};
        return node(r.pick(cmp), {value(c, 1), leaf(constant())}, true);
    }

    GExprP value(Ctx c, int depth) {
        if (depth <= 0 || r.coin(0.3)) return leafOf(c);
        switch (r.in(0, 8)) {
        case 0: return node("+", {value(c, depth - 1), value(c, depth - 1)});
        case 1: return node("-", {value(c, depth - 1), value(c, depth - 1)});
        case 2: return node("*", {value(c, depth - 1), leafOf(c)});
        case 3: return node("max", {value(c, depth - 1), value(c, depth - 1)});
        case 4: return node("min", {value(c, depth - 1), value(c, depth - 1)});
        case 5: return node("abs", {value(c, depth - 1)});
        case 6: return node("neg", {value(c, depth - 1)});
        case 7: return node("ite", {cond(c, 1), value(c, depth - 1), value(c, depth - 1)});
        default: return node("+", {leafOf(c), leafOf(c)});
        }
    }

    GOp load(const std::string &dst) {
        GOp o = opOf(GOp::Load);
        o.dst = dst;
        o.tensor = r.coin(0.5) ? "A" : "B";
        o.dr = r.coin(0.5) ? 0 : r.in(0, 5);
        o.dc = r.coin(0.5) ? 0 : r.in(0, 5);
        o.slice = dst != "rm" && dst != "rn" && r.coin(0.3);
        return o;
    }

    GOp fill(const std::string &dst) {
        GOp o = opOf(GOp::Fill);
        o.dst = dst;
        o.value = leaf(r.coin(0.3) ? "0.0" : constant());
        return o;
    }

    GOp tileOp() {
        auto tiles = tiles2D();
        switch (r.in(0, 2)) {
        case 0: {
            GOp o = opOf(GOp::Parallel);
            o.dst = r.pick(tiles);
            o.value = value(Ctx::Tile, 2);
            return o;
        }
        case 1: return fill(r.pick(tiles));
        default: {
            GOp o = opOf(GOp::TileCopy);
            o.src = r.pick(tiles);
            do o.dst = r.pick(tiles); while (o.dst == o.src);
            o.h = -1;
            return o;
        }
        }
    }

    GOp op(int depth) {
        auto tiles = tiles2D();
        int64_t k = r.in(0, 99);
        if (k < 30) {
            GOp o = opOf(GOp::Parallel);
            int64_t d = r.in(0, 9);
            o.dst = d == 0 ? "rm" : d == 1 ? "rn" : r.pick(tiles);
            Ctx c = o.dst == "rm" ? Ctx::Row : o.dst == "rn" ? Ctx::Col : Ctx::Tile;
            o.value = value(c, 3);
            if (r.coin(0.2)) o.cond = cond(c, 1);
            return o;
        }
        if (k < 40) {
            GOp o = opOf(GOp::TileCopy);
            o.src = r.pick(tiles);
            do o.dst = r.pick(tiles); while (o.dst == o.src);
            o.h = -1;
            if (r.coin(0.5)) {
                o.h = r.in(1, p.bm), o.w = r.in(1, p.bn);
                o.r0 = r.in(0, p.bm - o.h), o.c0 = r.in(0, p.bn - o.w);
                o.r1 = r.in(0, p.bm - o.h), o.c1 = r.in(0, p.bn - o.w);
            }
            return o;
        }
        if (k < 46) return load(r.pick(tiles));
        if (k < 52) {
            GOp o = opOf(GOp::Store);
            o.src = r.in(0, 3) == 0 ? (r.coin(0.5) ? "rm" : "rn") : r.pick(tiles);
            return o;
        }
        if (k < 56) return fill(r.pick(tiles));
        if (k < 68) {
            GOp o = opOf(GOp::Reduce);
            static const std::vector<std::string> kinds{"sum", "max", "min", "abssum", "absmax"};
            o.reduceKind = r.pick(kinds);
            o.src = r.pick(tiles);
            o.dim = (int)r.in(0, 1);
            o.dst = o.dim == 1 ? "rm" : "rn";
            o.clear = r.coin(0.6);
            return o;
        }
        if (k < 72) {
            GOp o = opOf(GOp::AtomicRegion);
            o.src = "rm";
            o.dr = r.in(0, 3);
            return o;
        }
        if (k < 76) {
            GOp o = opOf(GOp::AtomicElem);
            o.src = r.pick(tiles);
            o.dr = r.in(1, 7);
            return o;
        }
        if (k < 82 && depth < 2) {
            GOp o = opOf(GOp::Serial);
            o.n = r.in(1, 3);
            ++serialDepth;
            for (int64_t i = r.in(1, 3); i > 0; --i) o.kids.push_back(op(depth + 1));
            --serialDepth;
            return o;
        }
        if (k < 88 && depth < 2) {
            GOp o = opOf(GOp::IfUniform);
            o.cond = cond(Ctx::Uniform, 1);
            for (int64_t i = r.in(1, 2); i > 0; --i) o.kids.push_back(op(depth + 1));
            if (r.coin(0.4)) o.elseKids.push_back(op(depth + 1));
            return o;
        }
        if (k < 91) {
            GOp o = opOf(GOp::IfThread);
            o.n = r.in(1, p.threads - 1);
            o.alias = r.coin(0.5);
            for (int64_t i = r.in(1, 2); i > 0; --i) o.kids.push_back(tileOp());
            return o;
        }
        if (k < 96) {
            GOp o = opOf(GOp::ScalarThread);
            o.value = value(Ctx::Thread, 2);
            o.n = r.coin(0.5) ? r.in(1, p.threads) : 0;
            return o;
        }
        GOp o = opOf(GOp::SetVar);
        o.value = value(Ctx::Uniform, 2);
        return o;
    }

    void run() {
        static const std::vector<int> threads{32, 64, 128, 128, 256};
        p.threads = r.pick(threads);
        p.gemm = r.coin(0.3);
        p.gx = (int)r.in(1, 2), p.gy = (int)r.in(1, 2);
        if (p.gemm) {
            static const std::vector<int64_t> g{16, 32, 64};
            p.bm = r.pick(g), p.bn = r.pick(g);
            p.bk = r.coin(0.5) ? 16 : 32;
            p.gk = r.in(p.bk, 80);
            p.gm = r.in(p.bm, p.gy * p.bm + 6);
            p.gn = r.in(p.bn, p.gx * p.bn + 6);
        } else {
            static const std::vector<int64_t> t{1, 2, 3, 4, 5, 8, 12, 16, 16, 24, 32, 32, 40, 64};
            do p.bm = r.pick(t), p.bn = r.pick(t); while (p.bm * p.bn > 2048);
        }
        p.bmText = p.bm == 16 ? 32 : 16;
        p.bnText = p.bn == 8 ? 16 : 8;
        // Tensors at least one tile large (a region provably past a tensor is an error), often not a multiple.
        auto extent = [&](int64_t blocks, int64_t tile) { return r.in(tile, blocks * tile + 6); };
        int64_t wide = std::max(p.bm, p.bn);
        p.ra = extent(p.gy, p.bm), p.ca = extent(p.gx, wide), p.rb = extent(p.gy, p.bm), p.cb = extent(p.gx, wide);
        p.ry = extent(p.gy, p.bm), p.cy = extent(p.gx, p.bn);
        p.rn = r.in(wide, p.gx * p.gy * (p.bm + p.bn));
        p.zn = r.in(p.bm + 3, p.bm + 96);
        p.wn = r.in(1, p.gx * p.gy * p.threads);
        if (r.coin(0.25)) {
            p.dynamic = true;
            // Sizes of 0 too (issue 23): every tile of the tensors then lies outside them.
            if (r.coin(0.15)) p.ra = 0;
            if (r.coin(0.15)) p.gk = 0;
            p.rb = p.ry = p.ra;
        }
        if (r.coin(0.2)) p.tileType = "float16";
        if (r.coin(0.2)) p.tileType1 = "float16";
        for (const char *b : {"s0", "s1", "f0", "f1"}) {
            GOp o = r.coin(0.7) ? load(b) : fill(b);
            o.init = true;
            p.ops.push_back(o);
        }
        for (const char *b : {"rm", "rn"}) {
            GOp o = r.coin(0.5) ? load(b) : fill(b);
            o.init = true;
            p.ops.push_back(o);
        }
        GOp v = fill("v");
        v.init = true;
        p.ops.push_back(v);
        if (p.gemm) {
            GOp g = opOf(GOp::Gemm);
            g.init = true;
            g.dst = "acc";
            g.transA = r.coin(0.5), g.transB = r.coin(0.5), g.clearAccum = r.coin(0.2);
            g.stages = (int)r.in(0, 3);
            p.ops.push_back(g);
        }
        for (int64_t i = r.in(1, 8); i > 0; --i) p.ops.push_back(op(0));
        GOp st = opOf(GOp::Store);
        st.src = r.pick(tiles2D());
        p.ops.push_back(st);
    }
};

/// The classes of issue 23 drawn on top of a program from a second stream (so the base programs of a seed stay
/// what they were): kernel names from C/C++ keyword and C library lists, zero-size T.dynamic dimensions,
/// constant indices at and past a buffer's extent, and tile dtypes of every kind a copy converts between.
void decorate(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 23)};
    if (r.coin(0.06)) p.kernelName = r.pick(reservedKernelNames());
    else if (r.coin(0.04)) {
        static const std::vector<std::string> fine{"main_kernel", "exit_", "Malloc", "halfway", "int8_add", "kmain",
                                                   "expf2", "_kernel", "class_", "printf_like", "Free", "tilecs", "custom", "cute",
                                                   "float5", "make_it", "Int32", "cudnn_like", "std_"};
        p.kernelName = r.pick(fine);
    }
    if (p.dynamic && r.coin(0.2)) p.ra = p.rb = p.ry = 0;
    if (p.dynamic && p.gemm && r.coin(0.2)) p.gk = 0;
    if (r.coin(0.15)) {
        static const std::vector<std::string> types{"bfloat16", "float8_e4m3", "float8_e5m2", "int8", "int32", "uint8", "float16", "float64"};
        (r.coin(0.5) ? p.tileType : p.tileType1) = r.pick(types);
    }
    if (p.gemm && r.coin(0.3)) { // issue 23 item 5: bfloat16 global operands copied into float32 shared tiles
        static const std::vector<std::string> g{"float16", "bfloat16"}, sh{"float16", "bfloat16", "float32"};
        p.gemmGlobalType = r.pick(g), p.gemmSharedType = r.pick(sh);
    }
    if (r.coin(0.08)) {
        // v = s[i, j] with one index at or past the extent: past it is a located error, at it is fine
        static const std::vector<std::pair<std::string, bool>> at{{"[BM - 1, BN - 1]", false}, {"[0, BN - 1]", false},
            {"[BM, 0]", true}, {"[0, BN]", true}, {"[BM - 1, BN + 2]", true}, {"[BM + 7, BN - 1]", true}};
        auto [ix, past] = r.pick(at);
        std::string b = r.coin(0.5) ? "s0" : "s1";
        GOp o;
        o.kind = GOp::SetVar;
        o.dst = "v";
        o.value = leaf(b + ix, {b});
        o.value->pastBound = past;
        p.ops.insert(p.ops.end() - 1, o);
    }
    // Sizes of 0 in every dynamic dimension, not only rows and K: the columns of A, B and Y, and GEMM's M and
    // N (nothing is written where an output is empty, and an empty GEMM operand gives exact zeros).
    if (p.dynamic && r.coin(0.3)) {
        p.dynamicCols = true;
        p.cb = p.cy = p.ca = r.coin(0.3) ? 0 : p.ca;
    }
    if (p.dynamic && p.gemm && r.coin(0.3)) {
        p.dynamicMN = true;
        if (r.coin(0.3)) p.gm = 0;
        if (r.coin(0.3)) p.gn = 0;
    }
}

/// Loops whose trip count is 0, or whose start lies past their end, in some blocks and not others (the varlen
/// attention backward of TileLang's attention-sink example: shared tiles loaded before such a loop, atomics after
/// it), and an empty grid: a third grid dimension T.dynamic("nb") of 0, 1 or 2 blocks. From a stream of its own.
void decorateTrips(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x7219)};
    static const std::vector<std::string> starts{"bx", "by", "bx % 2", "(bx + by) % 3", "by * 2"};
    std::function<void(std::vector<GOp> &)> walk = [&](std::vector<GOp> &ops) {
        for (auto &o : ops) {
            if ((o.kind == GOp::Serial || o.kind == GOp::Gemm) && r.coin(0.35)) {
                o.start = r.pick(starts);
                if (o.kind == GOp::Serial) o.n = r.in(0, 2);
            }
            walk(o.kids), walk(o.elseKids);
        }
    };
    walk(p.ops);
    if (p.dynamic && r.coin(0.25)) p.batch = r.in(0, 2);
}

/// Per-thread values that go through a thread's own registers (issue 23): an unconditional W[thread] = expr
/// becomes T.Parallel nests over a T.alloc_local buffer, which every thread runs whole (TileLang does not spread
/// a loop that stores only into "local" buffers and touches no fragment; tilec spread it, and thread t filled
/// only its register t). From a stream of its own.
void decorateRegisters(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x10ca1)};
    std::function<void(std::vector<GOp> &)> walk = [&](std::vector<GOp> &ops) {
        for (auto &o : ops) {
            if (o.kind == GOp::ScalarThread && o.n == 0 && r.coin(0.5)) {
                o.lanes = r.in(1, 8);
                o.lane = r.in(0, o.lanes - 1);
                o.twice = r.coin(0.4);
            }
            walk(o.kids), walk(o.elseKids);
        }
    };
    walk(p.ops);
}

/// Threads exchanging data through shared tiles under a thread-dependent if/else: the else branch reads a
/// shared element and then stores one, per thread, at indices that are a thread's own, another's, or shared by
/// several (the reference runs threads one after another; on the GPU they race unless every exchange has a
/// barrier between, which tilec cannot place inside the branch: it must refuse what it cannot order). From a
/// stream of its own; on unless --no-thread-shared.
void decorateThreadShared(GProgram &p) {
    Generator g{Rng{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x5a7ed)}, p};
    if (!g.r.coin(0.3)) return;
    static const std::vector<std::string> at{"(tx // BN) % BM, tx % BN", "tx % BM, 0", "(tx + 1) % BM, tx % BN",
                                             "(tx + by) % BM, (tx // BM) % BN", "BM - 1 - tx % BM, 0"};
    auto store = [&]() {
        GOp o = opOf(GOp::SharedStore);
        o.dst = g.r.coin(0.5) ? "s0" : "s1";
        o.tensor = g.r.pick(at);
        o.value = g.value(Ctx::Thread, 2);
        return o;
    };
    auto scalar = [&](bool readShared) {
        GOp o = opOf(GOp::ScalarThread);
        std::string b = g.r.coin(0.5) ? "s0" : "s1";
        o.value = readShared ? node("+", {leaf(b + "[" + g.r.pick(at) + "]", {b}), g.value(Ctx::Thread, 1)}) : g.value(Ctx::Thread, 2);
        return o;
    };
    GOp o = opOf(GOp::IfThreadScalar);
    o.n = g.r.in(1, p.threads - 1);
    for (int64_t i = g.r.in(0, 2); i > 0; --i) o.kids.push_back(g.r.coin(0.5) ? store() : scalar(false));
    if (o.kids.empty()) o.kids.push_back(scalar(false));
    o.elseKids = {scalar(true), store()};
    p.ops.insert(p.ops.end() - 1, o);
}

/// Gathers through a name the T.Parallel body binds (`row = ...; tile[i, j] = A[row, ...]`): the vectorized
/// loads of the gather must follow the statement that sets the name (issue 23: TileLang's sparse attention
/// read each key row by the previous row's index). From a stream of its own; static rows of A only (a dynamic
/// m may be 0, and the row is taken modulo it).
void decorateGathers(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x6a7e)};
    if (p.dynamic || p.ra < 1) return;
    std::function<void(std::vector<GOp> &)> walk = [&](std::vector<GOp> &ops) {
        for (auto &o : ops) {
            if (o.kind == GOp::Parallel && o.dst != "rm" && o.dst != "rn" && r.coin(0.3)) {
                o.gather = true;
                GExprP g = leaf("A[row, bx * BN + j]");
                o.value = r.coin(0.5) ? g : node("+", {g, o.value});
            }
            walk(o.kids), walk(o.elseKids);
        }
    };
    walk(p.ops);
}

/// T.Parallel nests over a box of their 2-D tile at a constant corner (GOp::boxH; issue 24: a fragment too big
/// to hold whole, or a T.gemm accumulator, is stored there through a shared copy). Half of them also read the
/// per-row or per-column fragment at the box's own variable (`rn[j]` with j over part of rn: issue 23's seed
/// 200908, a fragment read over a part of its dimension whose lowering took it for a slice and read rn[-r]).
/// From a stream of its own; static extents only (a conditional extent `end` stays as it is).
void decorateBoxes(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0xb0c5)};
    std::function<void(std::vector<GOp> &)> walk = [&](std::vector<GOp> &ops) {
        for (auto &o : ops) {
            if (o.kind == GOp::Parallel && o.dst != "rm" && o.dst != "rn" && o.end.empty() && r.coin(0.25)) {
                o.boxH = r.in(1, p.bm), o.boxW = r.in(1, p.bn);
                o.boxR = r.in(0, p.bm - o.boxH), o.boxC = r.in(0, p.bn - o.boxW);
                if (r.coin(0.5)) o.value = node("+", {r.coin(0.5) ? leaf("rn[j]", {"rn"}) : leaf("rm[i]", {"rm"}), o.value});
            }
            walk(o.kids), walk(o.elseKids);
        }
    };
    walk(p.ops);
}

/// T.Parallel nests over their 2-D tile by S = 2, 4 or 8 elements per iteration (GOp::expand): a fragment they read
/// or store at (i, jq * S + w) is widened to S per thread (TransposeFragments, InferLayouts), a shared or global
/// tile is indexed so. From a stream of its own; whole static tiles only.
void decorateExpansions(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0xe8a4d)};
    std::function<void(std::vector<GOp> &)> walk = [&](std::vector<GOp> &ops) {
        for (auto &o : ops) {
            const int64_t S = r.pick(std::vector<int64_t>{2, 4, 8});
            if (o.kind == GOp::Parallel && o.dst != "rm" && o.dst != "rn" && o.end.empty() && !o.boxH && !o.gather &&
                p.bn % S == 0 && r.coin(0.2))
                o.expand = S;
            walk(o.kids), walk(o.elseKids);
        }
    };
    walk(p.ops);
}

/// T.Pipelined GEMM loops whose start and copy offsets go through scalars set before the loop, once or
/// corrected under an always-true condition (issue 25's LoopInvariants: such loops are now pipelined, and on
/// sm_90a their TMA producer computes the bounds from the scalars' definitions). From a stream of its own.
void decorateScalarBounds(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x5ca1b)};
    std::function<void(std::vector<GOp> &)> walk = [&](std::vector<GOp> &ops) {
        for (auto &o : ops) {
            if (o.kind == GOp::Gemm && r.coin(0.4)) o.scalarBounds = r.coin(0.5) ? 1 : 2;
            walk(o.kids), walk(o.elseKids);
        }
    };
    walk(p.ops);
}

/// T.Pipelined GEMM loops whose copies sit under a condition on the iteration, their K block direct or gathered
/// through a scalar read from GA (issue 25: pipelineLoops issues such copies ahead under the condition, where the
/// body reads their tiles only under it); a pipelined one gets 2 or 3 stages. From a stream of its own.
void decorateGuardedCopies(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x9a2d)};
    std::function<void(std::vector<GOp> &)> walk = [&](std::vector<GOp> &ops) {
        for (auto &o : ops) {
            if (o.kind == GOp::Gemm && r.coin(0.3)) {
                o.guarded = r.coin(0.5) ? 1 : 2;
                if (o.stages > 0) o.stages = (int)r.in(2, 3); // one stage is no pipeline
            }
            walk(o.kids), walk(o.elseKids);
        }
    };
    walk(p.ops);
}

/// GEMM operands whose rows TMA can load (row strides of whole 16 bytes: M, N and K multiples of 8), so that
/// more T.gemm programs get warp roles on sm_90a, which the simulator runs as agents on threads of their own
/// (issue 23's seed 202475: their float16 casts lost the 16-bit rounding there; with random K only 4 of 798
/// accepted programs got warp roles). From a stream of its own.
void decorateTmaRows(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x7a3a)};
    if (!p.gemm || !r.coin(0.5)) return;
    for (int64_t *x : {&p.gm, &p.gn, &p.gk}) *x = (*x + 7) / 8 * 8;
}

/// A few programs become one pipelined T.gemm of TMA-loadable operands at 128 threads, its result copied to Y:
/// the shape that gets warp roles on sm_90a (a producer warpgroup beside the consumers), where the scalar block
/// (and its 16-bit casts, decorateNarrow) runs in the consumers' agents (issue 23's seed 202475: the simulator
/// lost their float16 rounding; the random programs gave warp roles to only 4 of 798 accepted ones). Programs
/// with stepped loops, batched tensors, a batch grid or dynamic sizes stay as they are. From a stream of its own;
/// BM 64 or 128 (then M often ends inside a row tile's first 64-row panel).
void decorateWarpRoles(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x3a9e)};
    if (!r.coin(0.08) || p.vn > 0 || p.xrank > 0 || p.batch >= 0 || p.dynamic) return;
    static const std::vector<int64_t> g{16, 32, 64};
    auto eight = [](int64_t x) { return (x + 7) / 8 * 8; };
    // a third of them in 128-row tiles (two wgmma panels), whose last row tile M may end in the first panel: A
    // loaded in 64-row boxes, those below the block's live rows, and only their panels issued (Gemm::liveRowsAt)
    p.threads = 128, p.gemm = true, p.bm = r.coin(0.33) ? 128 : 64, p.bn = r.pick(g), p.bk = r.coin(0.5) ? 16 : 32;
    p.bmText = 16, p.bnText = p.bn == 8 ? 16 : 8;
    p.gk = eight(r.in(p.bk, 80)), p.gm = eight(r.in(p.bm, p.gy * p.bm + 6)), p.gn = eight(r.in(p.bn, p.gx * p.bn + 6));
    p.ry = r.in(p.bm, p.gy * p.bm + 6), p.cy = r.in(p.bn, p.gx * p.bn + 6);
    p.wn = std::min<int64_t>(p.wn, p.gx * p.gy * p.threads);
    p.gemmGlobalType = p.gemmSharedType = r.coin(0.5) ? "float16" : "bfloat16";
    GOp gemm = opOf(GOp::Gemm), store = opOf(GOp::Store);
    gemm.init = true, gemm.dst = "acc", gemm.stages = (int)r.in(1, 3);
    gemm.transA = r.coin(0.3), gemm.transB = r.coin(0.3);
    store.src = "acc";
    p.ops = {gemm, store};
}

} // namespace

GProgram generate(uint64_t seed, bool threadShared) {
    Generator g{Rng{std::mt19937_64(seed)}, {}};
    g.p.seed = seed;
    g.run();
    decorate(g.p);
    decorateTrips(g.p);
    decorateRegisters(g.p);
    decorateGathers(g.p);
    decorateScalarBounds(g.p);
    decorateGuardedCopies(g.p);
    decorateTmaRows(g.p);
    decorateBoxes(g.p);
    decorateExpansions(g.p);
    decorateExtents(g.p);
    decorateStepped(g.p);
    decorateBatched(g.p);
    if (threadShared) decorateThreadShared(g.p);
    decorateWarpRoles(g.p);
    decorateAsync(g.p);
    decorateWgmma(g.p);
    decorateStrided(g.p);
    decorateScalarParams(g.p);
    decorateWorkspace(g.p);
    decorateSubByte(g.p);
    // Per-thread statements ordered by the author, tile statements by tilec (own stream: the rest of the
    // program is what it was without it). Not where threads exchange data inside a branch on the thread index
    // (IfThreadScalar): no author's barrier can order those, and without one they are the program's own race.
    g.p.authorSyncs = Rng{std::mt19937_64(seed * 0x9e3779b97f4a7c15ull + 0xa07)}.coin(0.25) &&
                      holdsPerThread(g.p.ops) && !holdsKind(g.p.ops, GOp::IfThreadScalar);
    // The front-end oracle's scalar block, from its own stream (Scalar.h); an empty grid writes no S.
    if (Rng{std::mt19937_64(seed * 0x9e3779b97f4a7c15ull + 0x5ca1a)}.coin(0.5) && g.p.batch != 0)
        g.p.scalars = std::make_shared<ScalarBlock>(generateScalars(seed, g.p.scalarContext(1)));
    // 16-bit casts with Python float operands in it (issue 23), judged with 16-bit rounding; float32 tiles, so
    // that the tile outputs' comparison (at float32 precision) is not also at 16-bit rounding.
    if (g.p.scalars && decorateNarrow(*g.p.scalars, seed)) {
        g.p.narrowRounding = true;
        g.p.tileType = g.p.tileType1 = "float32";
    }
    return g.p;
}

} // namespace tilec::difffuzz
