/// knownMultiple through a shared tile's swizzle (src/lower/Arith.cpp): tilec::swz and its panel and split forms
/// keep an offset's residue modulo one 16-byte chunk, and nothing coarser. Vector accesses matched after
/// swizzleShared (matchAtomicVector's shared source) rely on it.
#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <gtest/gtest.h>

using namespace tilec;
namespace lib = tilec::passes::lib;

namespace {

ir::Expr i32(int64_t v) { return ir::IntImm::make(DType::Int32, v); }

ir::Expr swz(lib::Fn f, int64_t cols, int64_t elemBytes, std::vector<ir::Expr> offset) {
    std::vector<ir::Expr> args{i32(cols), i32(elemBytes), i32(cols * 128)};
    if (f == lib::Fn::SwzPanels || f == lib::Fn::SwzPanelsSplit) args.push_back(i32(64)); // the panel span
    for (auto &o : offset) args.push_back(o);
    return lib::call(f, std::move(args), {}, DType::Int32);
}

} // namespace

TEST(ArithSwizzle, KeepsTheResidueWithinAChunk) {
    ir::Expr tx = ir::makeVar("tx", DType::Int32);
    auto four = ir::binary(ir::BinaryOp::Mul, tx, i32(4));  // a float4 per thread
    auto sixteen = ir::binary(ir::BinaryOp::Mul, tx, i32(16));
    // float32: a chunk is 4 elements. tx * 4 stays a multiple of 4; tx * 16 only of 4 (the chunk bits move).
    EXPECT_EQ(passes::knownMultiple(swz(lib::Fn::Swz, 64, 4, {four})) % 4, 0);
    EXPECT_EQ(passes::knownMultiple(swz(lib::Fn::Swz, 64, 4, {sixteen})), 4);
    EXPECT_EQ(passes::knownMultiple(swz(lib::Fn::SwzPanels, 128, 4, {four})) % 4, 0);
    // split forms: the logical offset is runtime + fixed
    EXPECT_EQ(passes::knownMultiple(swz(lib::Fn::SwzSplit, 64, 4, {four, i32(1024)})) % 4, 0);
    EXPECT_EQ(passes::knownMultiple(swz(lib::Fn::SwzPanelsSplit, 128, 4, {four, i32(2)})), 2);
    // float16: 8 elements a chunk; an odd offset stays odd
    EXPECT_EQ(passes::knownMultiple(swz(lib::Fn::Swz, 64, 2, {ir::binary(ir::BinaryOp::Mul, tx, i32(8))})) % 8, 0);
    EXPECT_EQ(passes::knownMultiple(swz(lib::Fn::Swz, 64, 2, {ir::binary(ir::BinaryOp::Add, sixteen, i32(1))})), 1);
    // any other call tells nothing
    EXPECT_EQ(passes::knownMultiple(ir::Call::make(DType::Int32, "f", {four})), 1);
}
