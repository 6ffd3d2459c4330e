/// \file
/// The static count of shared-memory bank wavefronts (src/lower/BankConflicts.h): the per-access figures that
/// `--dump-after swizzleShared` lists (describeBankConflicts) and the rules behind them. A lane reading one
/// byte of its own 16 (lanes 16 bytes apart, 4 rows of 128 bytes a warp: TileKernels' per_block_cast_lossless
/// decoding its unpacked 4-bit tile) takes 4 wavefronts where 1 would do, in the row-major layout and in
/// every layout that keeps a lane's 16 bytes together (the row swizzle among them); the same bytes as one
/// 16-byte vector a lane take the 4 wavefronts 512 bytes need at the least. The lanes of a pair conversion
/// are element accesses, those of a loop that only loads into registers one vector.
#include "../../src/lower/BankConflicts.h"

#include "tilec/IROperator.h"

#include <gtest/gtest.h>

using namespace tilec;
namespace banks = tilec::passes::banks;

namespace {

banks::WarpAccess sixteenApart(int bytes) {
    banks::WarpAccess a;
    a.bytes = bytes;
    for (int lane = 0; lane < 32; ++lane)
        a.offsets.push_back(lane / 8 * 128 + lane % 8 * 16);
    return a;
}

TEST(BankCosts, ByteOfEachLanesSixteenIsFourWay) {
    auto plain = [](int64_t o) { return o; };
    auto one = sixteenApart(1), all = sixteenApart(16);
    EXPECT_EQ(banks::wavefronts(one, 1, plain), 4);
    EXPECT_EQ(banks::idealWavefronts(one), 1);
    EXPECT_EQ(banks::wavefronts(all, 1, plain), 4);
    EXPECT_EQ(banks::idealWavefronts(all), 4);
    // The row swizzle moves whole 16-byte chunks: the 32 lanes' bytes still share 8 banks.
    auto swizzled = [](int64_t o) { return banks::rowSwizzled(128, 1, 128 * 128, o); };
    EXPECT_EQ(banks::wavefronts(one, 1, swizzled), 4);
    EXPECT_EQ(banks::wavefronts(all, 1, swizzled), 4);
}

TEST(BankCosts, RowSwizzleIsTheLibrarysMap) {
    // swz<64, 4>: rows of 256 bytes, chunk XORed with row % 8; swz<16, 4> (64-byte rows): with (row / 2) % 4.
    EXPECT_EQ(banks::rowSwizzled(64, 4, 64 * 8, 3 * 64 + 5), 3 * 64 + (5 ^ 12));
    EXPECT_EQ(banks::rowSwizzled(16, 4, 16 * 8, 5 * 16 + 1), 5 * 16 + (1 ^ 8));
    // A tile of 4 rows restarts the pattern at each tile; rows of 48 bytes are not swizzled.
    EXPECT_EQ(banks::rowSwizzled(64, 4, 64 * 4, 5 * 64), 5 * 64 + 4);
    EXPECT_EQ(banks::rowSwizzled(12, 4, 12 * 8, 7 * 12), 7 * 12);
    EXPECT_FALSE(banks::rowSwizzleActive(12, 4));
}

TEST(BankCosts, PairConversionLanesAreElements) {
    using namespace ir;
    Var v = makeVar("v", DType::Int32);
    Buffer s = makeBuffer("s", Scope::Shared, DType::Int8, {intImm(4096, DType::Int32)}, {});
    Buffer r = makeBuffer("r", Scope::Local, DType::Int8, {intImm(16, DType::Int32)}, {});
    Buffer o = makeBuffer("o", Scope::Local, DType::Float8E4M3, {intImm(16, DType::Int32)}, {});
    Expr lane = v;
    auto loop = [&](Stmt body) {
        return For::make(v, intImm(0, DType::Int32), intImm(16, DType::Int32), ForKind::Vectorized, 0, body);
    };
    Stmt load = loop(Store::make(r, {lane}, Load::make(s, {lane})));
    Stmt store = loop(Store::make(s, {lane}, Load::make(r, {lane})));
    Stmt pairs =
        loop(Store::make(o, {lane}, cast(DType::Float8E4M3, cast(DType::Float32, Load::make(s, {lane})))));
    EXPECT_TRUE(banks::issuesVectors(*as<For>(load)));
    EXPECT_TRUE(banks::issuesVectors(*as<For>(store)));
    EXPECT_FALSE(banks::issuesVectors(*as<For>(pairs)));
}

} // namespace
