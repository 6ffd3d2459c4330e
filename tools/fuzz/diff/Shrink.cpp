/// \file
/// Smaller variants of a program of the model, for greedy shrinking of failures (Gen.h).
#include "Gen.h"

#include <functional>

namespace tilec::difffuzz {

namespace {

/// Every list of operations in q (the top level, then loop and if bodies), in a fixed order.
void containers(std::vector<GOp> &ops, std::vector<std::vector<GOp> *> &out) {
    out.push_back(&ops);
    for (auto &o : ops) {
        containers(o.kids, out);
        containers(o.elseKids, out);
    }
}

std::vector<std::vector<GOp> *> containersOf(GProgram &q) {
    std::vector<std::vector<GOp> *> v;
    containers(q.ops, v);
    return v;
}

int countNodes(const GExprP &e) {
    int n = 1;
    for (auto &k : e->kids) n += countNodes(k);
    return n;
}

/// e with its node number `target` (pre-order) replaced by `with(node)`; null `with` result: unchanged.
GExprP replaceNode(const GExprP &e, int &counter, int target, const std::function<GExprP(const GExprP &)> &with) {
    if (counter++ == target) {
        GExprP r = with(e);
        return r ? r : e;
    }
    bool changed = false;
    std::vector<GExprP> kids;
    for (auto &k : e->kids) {
        kids.push_back(replaceNode(k, counter, target, with));
        changed |= kids.back() != k;
    }
    if (!changed) return e;
    auto c = std::make_shared<GExpr>(*e);
    c->kids = std::move(kids);
    return c;
}

GExprP constantLeaf() {
    auto e = std::make_shared<GExpr>();
    e->leaf = "1.0";
    return e;
}

} // namespace

std::vector<GProgram> shrinkCandidates(const GProgram &p) {
    std::vector<GProgram> out;
    GProgram probe = p;
    auto cs = containersOf(probe);
    // Remove one operation (initializations only once nothing else reads their buffer).
    for (size_t c = 0; c < cs.size(); ++c)
        for (size_t i = 0; i < cs[c]->size(); ++i) {
            GProgram q = p;
            auto qc = containersOf(q);
            GOp &o = (*qc[c])[i];
            if (o.init) {
                std::set<std::string> used;
                GProgram rest = q;
                auto rc = containersOf(rest);
                rc[c]->erase(rc[c]->begin() + (long)i);
                used = rest.buffersUsed();
                if (used.count(o.dst)) continue;
            }
            qc[c]->erase(qc[c]->begin() + (long)i);
            out.push_back(std::move(q));
        }
    // The front-end oracle's scalar block: gone, or a statement less.
    if (p.scalars) {
        GProgram q = p;
        q.scalars = nullptr;
        out.push_back(std::move(q));
        for (auto &b : shrinkScalars(*p.scalars)) {
            GProgram r = p;
            r.scalars = std::make_shared<ScalarBlock>(std::move(b));
            out.push_back(std::move(r));
        }
    }
    // No workspace; a pointer table's tensor a T.ptr parameter instead.
    if (!p.workspace.empty()) {
        GProgram q = p;
        q.workspace.clear();
        out.push_back(std::move(q));
    }
    for (auto &[name, st] : p.strided)
        if (st.table) {
            GProgram q = p;
            q.strided[name].table = false;
            out.push_back(std::move(q));
        }
    // A T.StridedTensor back to a T.Tensor (its T.dynamic strides gone with it).
    for (auto &[name, st] : p.strided) {
        GProgram q = p;
        for (auto &t : st.text) q.strideSymbols.erase(t);
        q.strided.erase(name);
        out.push_back(std::move(q));
    }
    // Replace a loop or an if by its body.
    for (size_t c = 0; c < cs.size(); ++c)
        for (size_t i = 0; i < cs[c]->size(); ++i) {
            if ((*cs[c])[i].kids.empty()) continue;
            GProgram q = p;
            auto qc = containersOf(q);
            std::vector<GOp> body = (*qc[c])[i].kids;
            qc[c]->erase(qc[c]->begin() + (long)i);
            qc[c]->insert(qc[c]->begin() + (long)i, body.begin(), body.end());
            out.push_back(std::move(q));
        }
    // Simpler expressions: a node replaced by one of its operands of the same kind, or a value by 1.0.
    for (size_t c = 0; c < cs.size(); ++c)
        for (size_t i = 0; i < cs[c]->size(); ++i)
            for (int which = 0; which < 2; ++which) {
                const GOp &o = (*cs[c])[i];
                const GExprP &e = which ? o.cond : o.value;
                if (!e) continue;
                if (which && o.kind == GOp::Parallel) {
                    GProgram q = p;
                    (*containersOf(q)[c])[i].cond = nullptr;
                    out.push_back(std::move(q));
                }
                int n = countNodes(e);
                for (int t = 0; t < n; ++t)
                    for (int kid = -1; kid < 3; ++kid) {
                        int counter = 0;
                        GExprP r = replaceNode(e, counter, t, [&](const GExprP &x) -> GExprP {
                            if (kid < 0) return x->isBool || (x->op.empty() && x->leaf == "1.0") ? nullptr : constantLeaf();
                            if (kid >= (int)x->kids.size() || x->kids[kid]->isBool != x->isBool) return nullptr;
                            return x->kids[kid];
                        });
                        if (r == e) continue;
                        GProgram q = p;
                        GOp &qo = (*containersOf(q)[c])[i];
                        (which ? qo.cond : qo.value) = r;
                        out.push_back(std::move(q));
                    }
            }
    // Smaller launches, tiles and tensors; plainer options.
    auto variant = [&](auto &&change) {
        GProgram q = p;
        change(q);
        out.push_back(std::move(q));
    };
    if (p.gx > 1) variant([](GProgram &q) { q.gx = 1; });
    if (p.gy > 1) variant([](GProgram &q) { q.gy = 1; });
    if (p.threads > 32) variant([](GProgram &q) { q.threads /= 2; });
    int64_t step = p.gemm ? 16 : 1;
    if (p.bm > step) variant([&](GProgram &q) { q.bm = std::max(step, q.bm / 2 / step * step); });
    if (p.bn > step) variant([&](GProgram &q) { q.bn = std::max(step, q.bn / 2 / step * step); });
    for (int64_t GProgram::*m : {&GProgram::ra, &GProgram::ca, &GProgram::rb, &GProgram::cb, &GProgram::ry,
                                 &GProgram::cy, &GProgram::rn, &GProgram::zn, &GProgram::wn, &GProgram::gk,
                                 &GProgram::gm, &GProgram::gn})
        if (p.*m > 1) variant([&](GProgram &q) {
            q.*m = (q.*m + 1) / 2;
            if (q.dynamic) q.rb = q.ry = q.ra;
            if (q.dynamicCols) q.cb = q.cy = q.ca;
        });
    if (p.dynamic) variant([](GProgram &q) { q.dynamic = q.dynamicCols = q.dynamicMN = false, q.batch = -1; });
    if (p.batch >= 0) variant([](GProgram &q) { q.batch = -1; });
    if (p.dynamicCols) variant([](GProgram &q) { q.dynamicCols = false; });
    if (p.dynamicMN) variant([](GProgram &q) { q.dynamicMN = false; });
    if (p.tileType != "float32") variant([](GProgram &q) { q.tileType = "float32"; });
    if (p.tileType1 != "float32") variant([](GProgram &q) { q.tileType1 = "float32"; });
    for (size_t c = 0; c < cs.size(); ++c)
        for (size_t i = 0; i < cs[c]->size(); ++i) {
            const GOp &o = (*cs[c])[i];
            auto opVariant = [&](auto &&change) {
                GProgram q = p;
                change((*containersOf(q)[c])[i]);
                out.push_back(std::move(q));
            };
            if (o.stages > 0) opVariant([](GOp &x) { x.stages = 0; });
            if (o.async) opVariant([](GOp &x) { x.async = 0; });
            if (o.wgmma) opVariant([](GOp &x) { x.wgmma = 0; });
            if (o.transA) opVariant([](GOp &x) { x.transA = false; });
            if (o.transB) opVariant([](GOp &x) { x.transB = false; });
            if (o.dr || o.dc) opVariant([](GOp &x) { x.dr = x.dc = 0; });
            if (o.slice) opVariant([](GOp &x) { x.slice = false; });
            if (o.kind == GOp::Serial && o.n > 1) opVariant([](GOp &x) { x.n = 1; });
            if (!o.start.empty()) opVariant([](GOp &x) { x.start.clear(); });
            if (!o.end.empty()) opVariant([](GOp &x) { x.end.clear(); });
            if (o.kind == GOp::TileCopy && o.h >= 0) opVariant([](GOp &x) { x.h = -1; });
        }
    return out;
}

} // namespace tilec::difffuzz
