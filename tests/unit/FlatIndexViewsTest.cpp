/// \file
/// flatEquivalent (src/lower/FlatIndexViews.h): which fragment accesses address the nest iteration's own element
/// row-major, each index inside its dimension.
#include "lower/FlatIndexViews.h"

#include "tilec/IROperator.h"

#include <gtest/gtest.h>

namespace {

using namespace tilec::ir;
using tilec::DType;
using tilec::passes::flatEquivalent;

Expr c(int64_t v) { return intImm(v, DType::Int32); }
Expr add(Expr a, Expr b) { return Binary::make(BinaryOp::Add, a, b); }
Expr mul(Expr a, Expr b) { return Binary::make(BinaryOp::Mul, a, b); }

TEST(FlatIndexViews, UnitDimensionsAndSplits) {
    Var i = makeVar("i", DType::Int32, {}), j = makeVar("j", DType::Int32, {}), k = makeVar("k", DType::Int32, {});
    // g[j] over (512,) in a nest over (1, 512): the extent-1 variable is 0.
    EXPECT_TRUE(flatEquivalent({j}, {512}, {i, j}, {1, 512}));
    // f[i, j * 8 + k] over (16, 32) in a nest over (16, 4, 8), in either order of the product.
    EXPECT_TRUE(flatEquivalent({i, add(mul(j, c(8)), k)}, {16, 32}, {i, j, k}, {16, 4, 8}));
    EXPECT_TRUE(flatEquivalent({i, add(k, mul(c(8), j))}, {16, 32}, {i, j, k}, {16, 4, 8}));
    // f[i * 2 + j] over (8,) in a nest over (4, 2): a merge.
    EXPECT_TRUE(flatEquivalent({add(mul(i, c(2)), j)}, {8}, {i, j}, {4, 2}));
}

TEST(FlatIndexViews, NotEquivalent) {
    Var i = makeVar("i", DType::Int32, {}), j = makeVar("j", DType::Int32, {}), k = makeVar("k", DType::Int32, {});
    Var outside = makeVar("o", DType::Int32, {});
    // Exactly the nest's variables: nothing to view.
    EXPECT_FALSE(flatEquivalent({i, j}, {4, 8}, {i, j}, {4, 8}));
    // A transpose: another element.
    EXPECT_FALSE(flatEquivalent({j, i}, {8, 4}, {i, j}, {4, 8}));
    // h[0, j * 8 + k] over (2, 16) in a nest over (4, 8): the same row-major position, but the column passes 15.
    EXPECT_FALSE(flatEquivalent({c(0), add(mul(j, c(8)), k)}, {2, 16}, {j, k}, {4, 8}));
    // Fewer elements than iterations, an offset, a variable from outside the nest.
    EXPECT_FALSE(flatEquivalent({add(mul(j, c(8)), k)}, {16}, {j, k}, {4, 8}));
    EXPECT_FALSE(flatEquivalent({i, add(j, c(1))}, {4, 9}, {i, j}, {4, 8}));
    EXPECT_FALSE(flatEquivalent({add(outside, j)}, {8}, {j}, {8}));
}

} // namespace
