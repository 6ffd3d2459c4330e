/// \file
/// The IR's text form: expressions with minimal parentheses, exact float literals, tile statements, and a
/// whole kernel built by hand the way the evaluator builds the seed GEMM.
#include "tilec/IRPrinter.h"
#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using namespace tilec::ir;

namespace {

Expr i32(int64_t v) { return IntImm::make(DType::Int32, v); }
Expr f32(double v) { return FloatImm::make(DType::Float32, v); }
Expr bin(BinaryOp op, Expr a, Expr b) { return Binary::make(op, std::move(a), std::move(b)); }
Expr add(Expr a, Expr b) { return bin(BinaryOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return bin(BinaryOp::Mul, std::move(a), std::move(b)); }
Buffer buf(const char *name, Scope s, DType t, std::vector<int64_t> shape) {
    std::vector<Expr> dims;
    for (auto d : shape) dims.push_back(i32(d));
    return makeBuffer(name, s, t, dims, {});
}
/// `buffer[origin[0]:origin[0] + extent[0], ...]` with extents taken from `like`'s shape.
Region at(const Buffer &b, std::vector<Expr> origin, const Buffer &like) {
    Region r{b, {}, {}};
    for (size_t i = 0; i < origin.size(); ++i) r.ranges.push_back({origin[i], like->shape[i]});
    return r;
}

} // namespace

TEST(IRPrinter, Precedence) {
    Var a = makeVar("a", DType::Int32), b = makeVar("b", DType::Int32), c = makeVar("c", DType::Int32);
    EXPECT_EQ(print(add(a, mul(b, c))), "a + b * c");
    EXPECT_EQ(print(mul(add(a, b), c)), "(a + b) * c");
    EXPECT_EQ(print(bin(BinaryOp::Sub, a, bin(BinaryOp::Sub, b, c))), "a - (b - c)");
    EXPECT_EQ(print(bin(BinaryOp::Sub, bin(BinaryOp::Sub, a, b), c)), "a - b - c");
    EXPECT_EQ(print(bin(BinaryOp::FloorDiv, add(a, b), i32(2))), "(a + b) // 2");
    EXPECT_EQ(print(bin(BinaryOp::FloorMod, a, i32(-3))), "a % -3");
    EXPECT_EQ(print(bin(BinaryOp::Min, add(a, b), c)), "min(a + b, c)");
    EXPECT_EQ(print(bin(BinaryOp::LT, bin(BinaryOp::LT, a, b), c)), "(a < b) < c");
    EXPECT_EQ(print(bin(BinaryOp::And, bin(BinaryOp::GE, a, b), Unary::make(UnaryOp::Not, bin(BinaryOp::EQ, a, c)))),
              "a >= b and not a == c");
    EXPECT_EQ(print(bin(BinaryOp::Pow, bin(BinaryOp::Pow, a, b), c)), "(a ** b) ** c");
    EXPECT_EQ(print(bin(BinaryOp::Pow, a, bin(BinaryOp::Pow, b, c))), "a ** b ** c");
    EXPECT_EQ(print(bin(BinaryOp::Pow, i32(-2), a)), "(-2) ** a");
    EXPECT_EQ(print(Unary::make(UnaryOp::Neg, Unary::make(UnaryOp::Neg, a))), "-(-a)");
    EXPECT_EQ(print(Unary::make(UnaryOp::Neg, add(a, b))), "-(a + b)");
    EXPECT_EQ(print(bin(BinaryOp::BitAnd, bin(BinaryOp::Shl, a, i32(1)), bin(BinaryOp::BitOr, b, c))),
              "a << 1 & (b | c)");
}

TEST(IRPrinter, AtomsAndLiterals) {
    Var x = makeVar("x", DType::Float32);
    Buffer s = buf("scores", Scope::Fragment, DType::Float32, {64, 64});
    Var i = makeVar("i", DType::Int32), j = makeVar("j", DType::Int32);
    EXPECT_EQ(print(Load::make(s, {i, add(j, i32(1))})), "scores[i, j + 1]");
    EXPECT_EQ(print(Cast::make(DType::Float16, x)), "float16(x)");
    EXPECT_EQ(print(Call::make(DType::Float32, "exp2", {x})), "exp2(x)");
    EXPECT_EQ(print(Select::make(bin(BinaryOp::GE, i, j), x, f32(-INFINITY))), "select(i >= j, x, -inf)");
    EXPECT_EQ(print(mul(x, f32(-INFINITY))), "x * -inf");
    EXPECT_EQ(print(f32(0)), "0.0");
    EXPECT_EQ(print(f32(-0.0)), "-0.0");
    EXPECT_EQ(print(f32(1e-6)), "1e-06");
    EXPECT_EQ(print(f32(1.5e20)), "1.5e+20");
    EXPECT_EQ(print(f32(123456.0)), "123456.0");
    EXPECT_EQ(print(f32(NAN)), "nan");
    // float32 immediates print at the precision they are emitted with.
    EXPECT_EQ(print(f32(std::pow(1.0 / 64, 0.5) * 1.44269504)), "0.18033688");
    EXPECT_EQ(print(FloatImm::make(DType::Float64, 0.1)), "float64(0.1)");
    EXPECT_EQ(print(FloatImm::make(DType::Float64, 1.0 / 3)), "float64(0.3333333333333333)");
    EXPECT_EQ(print(FloatImm::make(DType::Float16, -INFINITY)), "float16(-inf)");
    EXPECT_EQ(print(IntImm::make(DType::Int64, 5)), "int64(5)");
    EXPECT_EQ(print(IntImm::make(DType::Bool, 1)), "True");
    EXPECT_EQ(print(Expr()), "<null>");
}

TEST(IRPrinter, TileStatements) {
    Buffer scores = buf("scores", Scope::Fragment, DType::Float32, {64, 64});
    Buffer rowMax = buf("row_max", Scope::Fragment, DType::Float32, {64});
    Buffer C = buf("C", Scope::Global, DType::Float32, {1024});
    Var i = makeVar("i", DType::Int32), k = makeVar("k", DType::Int32);
    EXPECT_EQ(print(Reduce::make(ReduceKind::Max, scores, rowMax, 1, false)),
              "reduce_max(scores -> row_max, dim=1, clear=False)\n");
    EXPECT_EQ(print(AtomicAdd::make(Region{C, {{i, i32(1)}}, {}}, std::nullopt, f32(1))),
              "atomic_add(C[i], 1.0)\n");
    EXPECT_EQ(print(AtomicAdd::make(Region{C, {{i32(0), i32(64)}}, {}}, Region::whole(rowMax), nullptr)),
              "atomic_add(C[0:64], row_max[0:64])\n");
    Stmt store = Store::make(rowMax, {i}, f32(0));
    Stmt loop = For::make(k, i32(2), i32(8), ForKind::Serial, 0,
                          IfThenElse::make(bin(BinaryOp::LT, i, k), store,
                                           IfThenElse::make(bin(BinaryOp::EQ, i, k), Seq::make({}), store)));
    EXPECT_EQ(print(loop, 1), "  for k in serial(2, 10):\n"
                              "    if i < k:\n"
                              "      row_max[i] = 0.0\n"
                              "    elif i == k:\n"
                              "      pass\n"
                              "    else:\n"
                              "      row_max[i] = 0.0\n");
    Stmt unrolled = For::make(i, k, i32(4), ForKind::Unrolled, 0, store);
    EXPECT_EQ(print(unrolled), "for i in unrolled(k, k + 4):\n  row_max[i] = 0.0\n");
}

TEST(IRPrinter, SeedGemmKernel) {
    Buffer A = buf("A", Scope::Global, DType::Float16, {1024, 1024});
    Buffer B = buf("B", Scope::Global, DType::Float16, {1024, 1024});
    Buffer C = buf("C", Scope::Global, DType::Float16, {1024, 1024});
    Buffer As = buf("A_shared", Scope::Shared, DType::Float16, {128, 64});
    Buffer Bs = buf("B_shared", Scope::Shared, DType::Float16, {64, 128});
    Buffer Cl = buf("C_local", Scope::Fragment, DType::Float32, {128, 128});
    Var bx = makeVar("bx", DType::Int32), by = makeVar("by", DType::Int32), bz = makeVar("bz", DType::Int32);
    Var ko = makeVar("ko", DType::Int32);

    Kernel k;
    k.name = "gemm";
    for (auto &b : {A, B, C}) k.params.push_back({Param::Tensor, b, nullptr, {}});
    k.gridDims = 2;
    k.grid = {i32(8), i32(8), i32(1)};
    k.blockIdx = {bx, by, bz};
    k.threads = 128;
    k.threadIdx = makeVar("tx", DType::Int32);
    k.allocs = {As, Bs, Cl};
    Stmt loopBody = Seq::make({
        Copy::make(at(A, {mul(by, i32(128)), mul(ko, i32(64))}, As), Region::whole(As)),
        Copy::make(at(B, {mul(ko, i32(64)), mul(bx, i32(128))}, Bs), Region::whole(Bs)),
        Gemm::make(Region::whole(As), Region::whole(Bs), Region::whole(Cl), false, false, false, GemmPolicy::Auto),
    });
    k.body = Seq::make({
        Fill::make(Region::whole(Cl), f32(0)),
        For::make(ko, i32(0), i32(16), ForKind::Pipelined, 3, loopBody),
        Copy::make(Region::whole(Cl), at(C, {mul(by, i32(128)), mul(bx, i32(128))}, Cl)),
    });
    EXPECT_EQ(print(k),
              "kernel gemm(A: float16[1024, 1024] global, B: float16[1024, 1024] global, "
              "C: float16[1024, 1024] global)\n"
              "  grid (8, 8, 1) as (bx, by, bz)\n"
              "  threads 128\n"
              "  buffers\n"
              "    A_shared: float16[128, 64] shared\n"
              "    B_shared: float16[64, 128] shared\n"
              "    C_local: float32[128, 128] fragment\n"
              "  body\n"
              "    fill(C_local[0:128, 0:128], 0.0)\n"
              "    for ko in pipelined(16, stages=3):\n"
              "      copy(A[by * 128:by * 128 + 128, ko * 64:ko * 64 + 64], A_shared[0:128, 0:64])\n"
              "      copy(B[ko * 64:ko * 64 + 64, bx * 128:bx * 128 + 128], B_shared[0:64, 0:128])\n"
              "      gemm(A_shared[0:128, 0:64], B_shared[0:64, 0:128], C_local[0:128, 0:128])\n"
              "    copy(C_local[0:128, 0:128], C[by * 128:by * 128 + 128, bx * 128:bx * 128 + 128])\n");

    Program p;
    p.kernels.push_back(std::make_shared<Kernel>(k));
    p.kernels.push_back(std::make_shared<Kernel>(k));
    EXPECT_EQ(print(p), print(k) + "\n" + print(k));
}

TEST(IRPrinter, DynamicScalarsSwizzleAndThreadIndex) {
    Var m = makeVar("m", DType::Int32);
    Var n = makeVar("n", DType::Int32);
    Var tx = makeVar("tx", DType::Int32);
    Var bx = makeVar("bx", DType::Int32), by = makeVar("by", DType::Int32), bz = makeVar("bz", DType::Int32);
    Buffer X = makeBuffer("X", Scope::Global, DType::BFloat16, {m, i32(4096)}, {});
    Buffer acc = buf("acc", Scope::Fragment, DType::Float32, {128, 128});
    Kernel k;
    k.name = "linear";
    k.params.push_back({Param::Tensor, X, nullptr, {}});
    k.params.push_back({Param::Scalar, nullptr, n, {}});
    k.dynamicSymbols = {m};
    k.grid = {i32(32), bin(BinaryOp::FloorDiv, add(m, i32(127)), i32(128)), i32(1)};
    k.blockIdx = {bx, by, bz};
    k.threads = 256;
    k.threadIdx = tx;
    k.swizzlePanel = 8;
    k.allocs = {acc};
    Var ko = makeVar("ko", DType::Int32);
    k.body = Seq::make({
        Gemm::make(Region::whole(acc), Region::whole(acc), Region::whole(acc), true, true, true, GemmPolicy::FullRow),
        Store::make(acc, {tx, i32(0)}, Cast::make(DType::Float32, n)),
        For::make(ko, i32(0), n, ForKind::Pipelined, 0, Evaluate::make(Call::make(DType::Float32, "exp2", {f32(1)}))),
    });
    EXPECT_EQ(print(k), "kernel linear(X: bfloat16[m, 4096] global, n: int32)\n"
                        "  dynamic m\n"
                        "  grid (32, (m + 127) // 128, 1) as (bx, by, bz)\n"
                        "  threads 256 as tx\n"
                        "  use_swizzle(panel_size=8)\n"
                        "  buffers\n"
                        "    acc: float32[128, 128] fragment\n"
                        "  body\n"
                        "    gemm(acc[0:128, 0:128], acc[0:128, 0:128], acc[0:128, 0:128], transpose_A=True, "
                        "transpose_B=True, clear_accum=True, policy=FullRow)\n"
                        "    acc[tx, 0] = float32(n)\n"
                        "    for ko in pipelined(n):\n"
                        "      exp2(1.0)\n");
}

TEST(IRPrinter, DeepExpressionsPrintOrFailCleanly) {
    Expr e = makeVar("x", DType::Int32);
    for (int i = 0; i + 1 < kMaxIRDepth; ++i) e = add(e, i32(1));
    std::string text = print(e); // left-nested sums need no parentheses
    EXPECT_EQ(text.size(), 1 + 4 * size_t(kMaxIRDepth - 1));
    e = add(e, i32(1));
    e = add(e, i32(1));
    EXPECT_THROW(print(e), InternalError);
}
