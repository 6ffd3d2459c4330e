/// \file
/// skipUnitRescales (include/tilec/passes/SkipUnitRescales.h) on the CPU simulator: examples/flash_attn.tile
/// lowered for sm_90a with and without the warp vote around the output's rescale gives the same output bit for
/// bit, in the loop kept in order (D = 64, one consumer warpgroup) and in FlashAttention-3's schedule (D = 128,
/// two consumer warpgroups taking turns, the rescale under the next block's QK^T); on data whose row maxima keep
/// changing (the multiplies run) and on data whose maxima are fixed by the first key (every later rescale is by
/// exactly 1: the multiplies are skipped). A mutant that doubles what the guarded multiplies store tells the two
/// apart: it changes the first data's output and not the second's (where it only ever doubles zeros: the first
/// block's accumulators).
#include "LowerSimHopperAttnUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>

using namespace tilec;
using namespace tilec::simtest::attn;
using tilec::simtest::Outcome;
using tilec::simtest::callCounts;

namespace {

/// What the guarded multiplies store, doubled (only inside `if __any_sync(...)`).
struct DoubleGuarded : ir::IRMutator {
    using ir::IRMutator::visit;
    int guards = 0;
    bool inside = false;
    ir::Stmt visit(const std::shared_ptr<const ir::IfThenElse> &op) override {
        if (!lib::is(op->cond, lib::Fn::WarpAny)) return ir::IRMutator::visit(op);
        ++guards;
        inside = true;
        ir::Stmt s = ir::IRMutator::visit(op);
        inside = false;
        return s;
    }
    ir::Stmt visit(const std::shared_ptr<const ir::Store> &op) override {
        if (!inside) return op;
        return ir::Store::make(op->buffer, op->indices,
                               ir::Binary::make(ir::BinaryOp::Mul, op->value, ir::floatImm(2.0, op->value->dtype)), op->loc);
    }
};

/// The output of `k` on `d` (interleaving 0); the simulation must run clean.
std::vector<double> output(const ir::Kernel &k, const Data &d) {
    Data in = d;
    std::vector<double> out(d.want.size(), std::nan(""));
    Outcome o = simtest::runCaught(k, {{"Q", &in.q}, {"K", &in.k}, {"V", &in.v}, {"Out", &out}}, {}, 0);
    EXPECT_EQ(o.error, "");
    EXPECT_TRUE(o.races.empty());
    return out;
}

/// Elements whose bits differ.
int differing(const std::vector<double> &a, const std::vector<double> &b) {
    int n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += std::bit_cast<uint64_t>(a[i]) != std::bit_cast<uint64_t>(b[i]);
    return n;
}

/// `d` with key 0 dominating every query's scores: Q's first column 1, K's first column 40 at key 0 (the
/// other 63 or 127 terms of a dot product add about +-3): each row's maximum is its first key's from the first
/// block on, so every later rescale factor is exp2(0) = 1 exactly.
Data dominantFirstKey(const AttnCase &a, Data d) {
    for (int b = 0; b < a.batch; ++b)
        for (int h = 0; h < a.heads; ++h)
            for (int t = 0; t < a.seq; ++t) {
                const size_t row = (((size_t)b * a.seq + t) * a.heads + h) * a.dim;
                d.q[row] = 1.0;
                if (t == 0) d.k[row] = 40.0;
            }
    return d;
}

void sameBits(AttnCase a) {
    Lowered on(a);
    a.skipRescales = false;
    Lowered off(a);
    ASSERT_TRUE(on.roles && off.roles) << on.r.diags();
    EXPECT_GT(callCounts(*on.roles)[lib::Fn::WarpAny], 0) << "no vote around the output's rescale";
    EXPECT_EQ(callCounts(*off.roles)[lib::Fn::WarpAny], 0) << "--no-skip-unit-rescales";
    DoubleGuarded m;
    auto mutant = std::make_shared<ir::Kernel>(*on.roles);
    mutant->body = m.mutate(on.roles->body);
    ASSERT_GT(m.guards, 0);
    const Data changing = reference(a), fixed = dominantFirstKey(a, changing);
    {
        SCOPED_TRACE("row maxima changing: the multiplies run");
        const std::vector<double> yes = output(*on.roles, changing), no = output(*off.roles, changing);
        EXPECT_EQ(differing(yes, no), 0);
        EXPECT_GT(differing(yes, output(*mutant, changing)), 0) << "the guarded multiplies never ran";
    }
    {
        SCOPED_TRACE("row maxima fixed by key 0: every later rescale skipped");
        const std::vector<double> yes = output(*on.roles, fixed), no = output(*off.roles, fixed);
        EXPECT_EQ(differing(yes, no), 0);
        EXPECT_EQ(differing(yes, output(*mutant, fixed)), 0) << "a multiply by 1 ran on accumulated values";
        for (double v : yes) EXPECT_TRUE(std::isfinite(v));
    }
}

// examples/flash_attn.tile as written (64 x 64 tiles, one consumer warpgroup, the loop in order)
TEST(SimUnitRescales, ExampleInOrder) { sameBits({1, 2, 192, 64, true, 64, 64, 2, 128, true}); }
// the seed's flash_d128 shape scaled down: D = 128, 128 x 64 tiles over two consumer warpgroups, by default in
// FlashAttention-3's schedule (the rescale under the next block's QK^T, ping-pong turns)
TEST(SimUnitRescales, SeedFa3Schedule) { sameBits(byDefault({1, 1, 256, 128, true, 128, 64, 2, 256, true})); }

} // namespace
