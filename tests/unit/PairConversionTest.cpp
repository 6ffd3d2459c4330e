/// \file
/// VectorizeAccesses.h's pair conversions: which vectorized loops convert two float lanes to float16 /
/// bfloat16 / float8 at once (and stay vectorized for code generation), and which stay element by element.
#include "tilec/IROperator.h"
#include "tilec/passes/VectorizeAccesses.h"

#include <gtest/gtest.h>

using namespace tilec;
using namespace tilec::ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

struct Loop {
    Var lane = makeVar("c", DType::Int32);
    Var outer = makeVar("ni", DType::Int32); ///< an unrolled loop around it: the base is ni * 4
    Buffer src = makeBuffer("scores", Scope::Local, DType::Float32, {i32(64)}, {});
    Buffer dst;
    explicit Loop(DType t = DType::Float16, Scope s = Scope::Local) { dst = makeBuffer("probs", s, t, {i32(64)}, {}); }
    Expr base() const { return binary(BinaryOp::Mul, outer, i32(4)); }
    Expr at(const Expr &b) const { return binary(BinaryOp::Add, b, lane); }
    /// for c in vectorized(lanes): probs[base + c] = cast(value)
    Stmt loop(const Expr &value, int64_t lanes = 2, Expr index = nullptr) const {
        Stmt st = Store::make(dst, {index ? index : at(base())}, cast(dst->dtype, value));
        return For::make(lane, i32(0), i32(lanes), ForKind::Vectorized, 0, st);
    }
    Expr exp2Of(const Buffer &b) const { return Call::make(DType::Float32, "exp2", {Load::make(b, {at(base())})}); }
};

std::optional<passes::PairConversion> match(const Stmt &s) { return passes::matchPairConversion(*as<For>(s)); }

TEST(PairConversion, FloatLanesIntoHalfBfloat16OrFloat8Registers) {
    for (DType t : {DType(DType::Float16), DType(DType::BFloat16), DType(DType::Float8E4M3), DType(DType::Float8E5M2)}) {
        Loop l(t);
        auto m = match(l.loop(l.exp2Of(l.src)));
        ASSERT_TRUE(m) << t.name();
        EXPECT_EQ(m->lanes, 2);
        EXPECT_TRUE(structurallyEqual(m->base, l.base()));
        EXPECT_EQ(m->store->buffer, l.dst);
        EXPECT_TRUE(match(l.loop(l.exp2Of(l.src), 8))) << "any even lane count";
    }
}

TEST(PairConversion, EverythingElseStaysElementByElement) {
    Loop l;
    Expr v = l.exp2Of(l.src);
    EXPECT_FALSE(match(l.loop(v, 3))) << "odd lane count";
    EXPECT_FALSE(match(l.loop(v, 2, binary(BinaryOp::Add, binary(BinaryOp::Add, l.base(), i32(1)), l.lane))))
        << "a base that is not a multiple of 2 (the pair would straddle two registers)";
    EXPECT_FALSE(match(l.loop(v, 2, binary(BinaryOp::Sub, l.base(), l.lane)))) << "lanes not adjacent upward";
    // Both lanes' values are computed before either store: a value reading the destination (here probs[c ^ 1]
    // would see lane 0's store) is left alone.
    Expr own = cast(DType::Float32, Load::make(l.dst, {binary(BinaryOp::Sub, binary(BinaryOp::Add, l.base(), i32(1)), l.lane)}));
    EXPECT_FALSE(match(l.loop(own)));
    Loop d;
    Expr dbl = cast(DType::Float64, Load::make(d.src, {d.at(d.base())}));
    EXPECT_FALSE(match(d.loop(dbl))) << "a float64 value rounds differently through float";
    Loop i8(DType::Int8);
    EXPECT_FALSE(match(i8.loop(v))) << "int8 (a saturating integer conversion)";
    Loop g(DType::Float16, Scope::Global);
    EXPECT_FALSE(match(g.loop(v))) << "memory stores are vector transfers, not conversions";
    Stmt unrolled = For::make(l.lane, i32(0), i32(2), ForKind::Unrolled, 0, as<For>(l.loop(v))->body);
    EXPECT_FALSE(match(unrolled)) << "only vectorized loops";
}

TEST(PairConversion, VectorizeAccessesKeepsThemVectorized) {
    Loop l;
    Stmt pair = l.loop(l.exp2Of(l.src));
    Stmt other = l.loop(l.exp2Of(l.src), 3);
    Kernel k;
    k.name = "k";
    k.body = Seq::make({For::make(l.outer, i32(0), i32(16), ForKind::Unrolled, 0, Seq::make({pair, other}))});
    Program p;
    p.kernels.push_back(std::make_shared<Kernel>(k));
    Program out = passes::vectorizeAccesses(p);
    auto outer = as<For>(out.kernels.at(0)->body);
    ASSERT_TRUE(outer);
    auto seq = as<Seq>(outer->body);
    ASSERT_TRUE(seq);
    ASSERT_EQ(seq->stmts.size(), 2u);
    EXPECT_EQ(as<For>(seq->stmts[0])->forKind, ForKind::Vectorized);
    EXPECT_EQ(as<For>(seq->stmts[1])->forKind, ForKind::Unrolled) << "three lanes: element by element";
}

} // namespace
