/// \file
/// Scalar parameters (Gen.h: decorateScalarParams): `alpha: T.float32` and `nq: T.int32`, arguments of the C
/// function that the kernel reads as run-time values, in place of some constants of the program's expressions
/// (`alpha`, `T.cast(nq, "float32")`). Their values are in the `# dynamic:` line, which gives the reference and
/// the simulator every run-time value. From a stream of its own, so the rest of a seed's program is what it was.
#include "Gen.h"

#include <functional>

namespace tilec::difffuzz {

void decorateScalarParams(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x5ca1a7)};
    if (!r.coin(0.2)) return;
    static const std::set<std::string> constants{"0.5", "1.0", "2.0", "-1.0", "0.25", "-0.75", "1.5", "3.0", "0.0"};
    const int64_t alpha = r.pick(std::vector<int64_t>{-2, 1, 2, 3}), nq = r.in(-3, 5);
    std::set<std::string> used;
    std::function<void(const GExprP &)> expr = [&](const GExprP &e) {
        if (!e) return;
        for (auto &k : e->kids) expr(k);
        if (!e->op.empty() || !constants.count(e->leaf) || !r.coin(0.4)) return;
        const bool f = r.coin(0.5);
        e->leaf = f ? "alpha" : "T.cast(nq, \"float32\")";
        used.insert(f ? "alpha" : "nq");
    };
    std::function<void(std::vector<GOp> &)> walk = [&](std::vector<GOp> &ops) {
        for (auto &o : ops) {
            // the generator's own model computes what batched and stepped statements store (GenShapes.cpp)
            if (o.kind != GOp::Batched && o.kind != GOp::Stepped) expr(o.value), expr(o.cond);
            walk(o.kids), walk(o.elseKids);
        }
    };
    walk(p.ops);
    if (used.count("alpha")) p.scalarParams["alpha"] = {"float32", alpha};
    if (used.count("nq")) p.scalarParams["nq"] = {"int32", nq};
}

} // namespace tilec::difffuzz
