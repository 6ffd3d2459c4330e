/// \file
/// Shared by the LowerSim*Test.cpp files: a .tile source lowered for a target (LowerTestUtil.h's LowerRun), its
/// kernels run on the CPU simulator (src/sim/Simulator.h) over tensors whose float64 references the tests compute
/// (compared by SimTestUtil.h's expectNear), either as a clean run (a simulator error or a race is a test failure)
/// or caught (what the run reported, for the mutations the simulator must report); and what the tests ask of
/// lowered kernels: the warp-specialized kernel, its library calls, its call statements rewritten by role.
#pragma once

#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tilec::simtest {

using Tensors = std::map<std::string, std::vector<double> *>;
using Scalars = std::map<std::string, double>;

/// examples/PATH at v0.1.13 from the git checkout TILELANG_SRC names; empty without one (the examples are not
/// copied into this project).
inline std::string tilelangExample(const std::string &path) {
    const char *src = std::getenv("TILELANG_SRC");
    if (!src) return "";
    std::string cmd = "git -C '" + std::string(src) + "' show v0.1.13:examples/" + path + " 2>/dev/null";
    std::string out;
    if (FILE *p = popen(cmd.c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        pclose(p);
    }
    return out;
}

/// `src` (as "t.tile") lowered for `arch`.
inline lowertest::LowerRun &lowerFor(lowertest::LowerRun &r, const std::string &src, const char *arch = "sm_80") {
    return r.run(src, "t.tile", *Target::parse(arch));
}

/// `src` (as `file`) lowered for `arch` into r, and its kernel `name`, or where `name` is empty its only one; null
/// (a test failure with the diagnostics) where it was not lowered or has no such kernel.
inline const ir::Kernel *loweredKernel(lowertest::LowerRun &r, const std::string &src, const char *arch, const std::string &name = "",
                                       const std::string &file = "t.tile") {
    r.run(src, file, *Target::parse(arch));
    const ir::Kernel *k = !r.lowered ? nullptr
                          : !name.empty() ? r.kernel(name)
                          : r.lowered->kernels.size() == 1 ? r.lowered->kernels[0].get()
                                                           : nullptr;
    if (!k) ADD_FAILURE() << "no kernel '" << name << "' lowered for " << arch << ": " << r.diags();
    return k;
}

/// Every kernel of a lowering run in order on the same tensors, each a clean run (simulate()).
inline void runAll(const lowertest::LowerRun &r, const Tensors &tensors, const Scalars &scalars = {}) {
    ASSERT_TRUE(r.lowered) << r.diags();
    for (auto &k : r.lowered->kernels) simulate(*k, tensors, scalars);
}

/// Runs every launch of exported kernel `name`, in order, on the same memory (workspaces included): each a
/// clean run, its part number its place, `expectedLaunches` of them.
inline void runLaunches(const lowertest::LowerRun &r, const std::string &name, const Tensors &tensors, int expectedLaunches,
                        const Scalars &scalars = {}) {
    ASSERT_TRUE(r.lowered) << r.diags();
    int launches = 0;
    for (auto &k : r.lowered->kernels) {
        if (k->name != name) continue;
        EXPECT_EQ(k->part, launches);
        ++launches;
        SCOPED_TRACE("launch " + std::to_string(launches));
        simulate(*k, tensors, scalars);
    }
    EXPECT_EQ(launches, expectedLaunches);
}

/// What one run reported, and how its output compared with the reference (filled by the caller).
struct Outcome {
    std::string error;               ///< a SimError (a deadlock, a misuse), empty when it ran through
    std::vector<std::string> races;
    int64_t switches = 0;            ///< agent resumptions
    int wrong = 0;                   ///< output elements differing from the reference
    std::string firstWrong;
    /// Counts element `what` wrong unless `ok`, keeping the first one's description.
    void check(bool ok, const std::function<std::string()> &what) {
        if (!ok && wrong++ == 0) firstWrong = what();
    }
};

/// Any failure: an error, a race or a wrong element.
inline bool anyFailure(const Outcome &o) { return !o.error.empty() || !o.races.empty() || o.wrong; }

/// Runs one kernel under the interleaving of `seed`, keeping what it reports instead of failing the test.
inline Outcome runCaught(const ir::Kernel &k, const Tensors &tensors, const Scalars &scalars = {}, uint64_t seed = 0) {
    Outcome o;
    Simulator s(k, tensors, scalars, seed);
    try {
        s.run();
    } catch (const SimError &e) {
        o.error = e.what();
    }
    o.races = s.races;
    o.switches = s.agentSwitches;
    return o;
}

/// One run of `k` under interleaving `seed` on the tensors of `io`, its output `out` filled with NaN first and then
/// compared with `want` element by element (relative 1e-3, absolute below 1).
inline Outcome runChecked(const ir::Kernel &k, std::map<std::string, std::vector<double>> &io, const std::string &out,
                          const std::vector<double> &want, uint64_t seed) {
    Tensors ptrs;
    for (auto &[n, v] : io) ptrs[n] = &v;
    std::vector<double> &got = io[out];
    got.assign(got.size(), std::nan(""));
    Outcome o = runCaught(k, ptrs, {}, seed);
    for (size_t e = 0; e < want.size(); ++e)
        o.check(std::fabs(got[e] - want[e]) <= 1e-3 * std::max(1.0, std::fabs(want[e])),
                [&] { return out + "[" + std::to_string(e) + "] = " + std::to_string(got[e]) + ", expected " + std::to_string(want[e]); });
    return o;
}

/// The warp-specialized kernel of a lowering (the one with producer threads); null when there is none.
inline const ir::Kernel *warpRoles(const lowertest::LowerRun &r) {
    const ir::Kernel *roles = nullptr;
    if (r.lowered)
        for (auto &k : r.lowered->kernels)
            if (k->producerThreads) roles = k.get();
    return roles;
}

/// The library calls of a kernel, by function. A wgmma_ss_init (zeroInitWgmma's product that overwrites its
/// accumulators) counts under WgmmaSS too: a product over shared tiles either way.
inline std::map<passes::lib::Fn, int> callCounts(const ir::Kernel &k) {
    struct V : ir::IRVisitor {
        using ir::IRVisitor::visit;
        std::map<passes::lib::Fn, int> n;
        void visit(const ir::Call &c) override {
            if (auto *i = passes::lib::find(c.name)) ++n[i->fn];
            if (passes::lib::is(c, passes::lib::Fn::WgmmaSSInit)) ++n[passes::lib::Fn::WgmmaSS];
            ir::IRVisitor::visit(c);
        }
    } v;
    v.visit(k.body);
    return v.n;
}

/// Where a statement stands in a kernel of warp roles.
enum class Role { Outside, Producer, Consumer };
using CallRewrite = std::function<ir::Stmt(const ir::Evaluate &, const ir::Call &, Role)>;

/// The kernel with each library-call statement passed through `f` with its role, in program order (the producer
/// before the consumers); `f` returns the replacement (null: removed).
inline std::shared_ptr<ir::Kernel> rewriteCalls(const ir::Kernel &k, CallRewrite f) {
    struct M : ir::IRMutator {
        using IRMutator::visit;
        CallRewrite f;
        Role role = Role::Outside;
        ir::Stmt visit(const std::shared_ptr<const ir::Evaluate> &op) override {
            auto c = ir::as<ir::Call>(op->value);
            return c ? f(*op, *c, role) : ir::Stmt(op);
        }
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
            role = Role::Producer;
            ir::Stmt p = mutate(op->producer);
            role = Role::Consumer;
            ir::Stmt c = mutate(op->consumer);
            role = Role::Outside;
            return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, p, c, op->loc);
        }
    } m;
    m.f = std::move(f);
    auto out = std::make_shared<ir::Kernel>(k);
    out->body = m.mutate(k.body);
    return out;
}

/// The statement `e` unchanged (a rewrite's answer for the calls it keeps).
inline ir::Stmt same(const ir::Evaluate &e) { return ir::Evaluate::make(e.value, e.loc); }

/// The barrier calls (any call whose name has "sync") in a statement.
inline int countSyncs(const ir::Stmt &s) {
    struct Count : ir::IRVisitor {
        using IRVisitor::visit;
        int n = 0;
        void visit(const ir::Call &op) override {
            n += op.name.find("sync") != std::string::npos;
            IRVisitor::visit(op);
        }
    } c;
    c.visit(s);
    return c.n;
}

/// The tests (if conditions and selects) in a statement.
inline int countConditions(const ir::Stmt &s) {
    struct Count : ir::IRVisitor {
        using IRVisitor::visit;
        int n = 0;
        void visit(const ir::IfThenElse &op) override { ++n, IRVisitor::visit(op); }
        void visit(const ir::Select &op) override { ++n, IRVisitor::visit(op); }
    } c;
    c.visit(s);
    return c.n;
}

/// The widest vectorized loop (its lane count) that loads or stores buffer `name`; 0 when none does.
inline int64_t vectorLanes(const ir::Stmt &s, const std::string &name) {
    struct Find : ir::IRVisitor {
        using IRVisitor::visit;
        const std::string *name;
        int64_t lanes = 0, widest = 0;
        void visit(const ir::For &op) override {
            int64_t saved = lanes;
            if (op.forKind == ir::ForKind::Vectorized) lanes = ir::constInt(op.extent).value_or(0);
            IRVisitor::visit(op);
            lanes = saved;
        }
        void visit(const ir::Load &op) override {
            if (op.buffer->name == *name) widest = std::max(widest, lanes);
            IRVisitor::visit(op);
        }
        void visit(const ir::Store &op) override {
            if (op.buffer->name == *name) widest = std::max(widest, lanes);
            IRVisitor::visit(op);
        }
    } f;
    f.name = &name;
    f.visit(s);
    return f.widest;
}

/// The pending counts of the kernel's cp.async waits, in program order.
inline std::vector<int64_t> cpAsyncWaits(const ir::Kernel &k) {
    std::vector<int64_t> n;
    rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, Role) {
        if (passes::lib::is(c, passes::lib::Fn::CpAsyncWait))
            n.push_back(*ir::constInt(passes::lib::arg(c, passes::lib::Fn::CpAsyncWait, "pending")));
        return same(e);
    });
    return n;
}

/// `k` with every cp.async wait leaving one group more in flight (a stage read before it lands, for the simulator
/// to see).
inline std::shared_ptr<ir::Kernel> withLaterWaits(const ir::Kernel &k) {
    namespace lib = passes::lib;
    return rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, Role) -> ir::Stmt {
        if (!lib::is(c, lib::Fn::CpAsyncWait)) return same(e);
        const int64_t pending = *ir::constInt(lib::arg(c, lib::Fn::CpAsyncWait, "pending"));
        return lib::stmt(lib::Fn::CpAsyncWait, {ir::intImm(pending + 1)}, e.loc);
    });
}

/// `run` (one run under an interleaving) free of errors, races and wrong elements under each of `seeds`.
inline void expectClean(const std::function<Outcome(uint64_t)> &run, std::initializer_list<uint64_t> seeds) {
    for (uint64_t seed : seeds) {
        Outcome o = run(seed);
        EXPECT_FALSE(anyFailure(o)) << "seed " << seed << ": " << o.error << (o.races.empty() ? "" : o.races[0]) << o.firstWrong;
    }
}

/// The targets and stage counts the pipeline tests lower for: sm_80 and sm_90a, 2 and 3 stages each.
inline std::vector<std::pair<const char *, int>> pipelineVariants() { return {{"sm_80", 2}, {"sm_80", 3}, {"sm_90a", 2}, {"sm_90a", 3}}; }

/// The kernel without the barriers just before a pipeline's refills (a sync followed by the conditional transfer
/// of the next iteration's tile); `removed` says how many.
inline std::shared_ptr<ir::Kernel> withoutRefillBarriers(const ir::Kernel &k, int &removed) {
    struct M : ir::IRMutator {
        using IRMutator::visit;
        int removed = 0;
        static bool isSync(const ir::Stmt &s) {
            auto e = ir::as<ir::Evaluate>(s);
            auto c = e ? ir::as<ir::Call>(e->value) : nullptr;
            return c && passes::lib::is(*c, passes::lib::Fn::Sync);
        }
        static bool refills(const ir::Stmt &s) {
            auto i = ir::as<ir::IfThenElse>(s);
            if (!i) return false;
            ir::Kernel body;
            body.body = i->then;
            return callCounts(body)[passes::lib::Fn::CopyG2S] > 0;
        }
        ir::Stmt visit(const std::shared_ptr<const ir::Seq> &op) override {
            std::vector<ir::Stmt> out;
            for (size_t i = 0; i < op->stmts.size(); ++i) {
                if (i + 1 < op->stmts.size() && isSync(op->stmts[i]) && refills(op->stmts[i + 1])) {
                    ++removed;
                    continue;
                }
                out.push_back(mutate(op->stmts[i]));
            }
            return ir::Seq::make(std::move(out), op->loc);
        }
    } m;
    auto out = std::make_shared<ir::Kernel>(k);
    out->body = m.mutate(k.body);
    removed = m.removed;
    return out;
}

} // namespace tilec::simtest
