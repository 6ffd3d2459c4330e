/// \file
/// The tile language's scalar semantics on doubles, shared by the CPU simulator of lowered kernels
/// (src/sim/Simulator.h) and the differential fuzzer's reference of tile programs (tools/fuzz/diff): what a
/// buffer of a dtype holds, and each binary operator (C's truncating `/` and Python's floor `//` and `%` on
/// integers, CUDA's fmin/fmax on floats).
#pragma once

#include "tilec/DType.h"
#include "tilec/IR.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

namespace tilec::simtest {

/// Whether float16 and bfloat16 values round to their own precision, as the GPU rounds them. Off by default
/// (the simulator's tests and the fuzzer's tile comparisons work at float32 precision); on inside a
/// NarrowRounding scope, for questions of 16-bit rounding (which type a Python float operand makes an
/// operation compute in, issue 23). float8 values still round to float32.
inline bool &narrowFloatRounding() {
    static thread_local bool on = false;
    return on;
}

/// Turns narrowFloatRounding on (or off) for its lifetime.
struct NarrowRounding {
    bool was;
    explicit NarrowRounding(bool on = true) : was(narrowFloatRounding()) { narrowFloatRounding() = on; }
    ~NarrowRounding() { narrowFloatRounding() = was; }
    NarrowRounding(const NarrowRounding &) = delete;
    NarrowRounding &operator=(const NarrowRounding &) = delete;
};

/// v rounded to nearest even with `frac` fraction bits, exponents down to minExp (subnormals below), and
/// values past `maxFinite` after rounding infinite.
inline double roundToFormat(double v, int frac, int minExp, double maxFinite) {
    if (!std::isfinite(v) || v == 0) return v;
    int e = 0;
    std::frexp(v, &e);
    double quantum = std::ldexp(1.0, std::max(e - 1, minExp) - frac);
    double r = std::nearbyint(v / quantum) * quantum;
    return std::fabs(r) > maxFinite ? std::copysign(INFINITY, v) : r;
}

/// v as a buffer (or an expression) of dtype t holds it: integers wrap, float32 and narrower floats round to
/// float32, and float16 / bfloat16 to their own precision under NarrowRounding (from the float32 value, as the
/// generated code converts).
inline double roundToDType(DType t, double v) {
    if (narrowFloatRounding() && t.kind == DType::Float16) return roundToFormat((double)(float)v, 10, -14, 65504.0);
    if (narrowFloatRounding() && t.kind == DType::BFloat16)
        return roundToFormat((double)(float)v, 7, -126, 3.3895313892515355e38);
    if (t.isBool()) return v != 0;
    if (t.isInt()) {
        if (std::isnan(v)) return 0;
        int bits = t.bits();
        auto x = (int64_t)v;
        if (bits >= 64) return (double)x;
        uint64_t mask = (uint64_t(1) << bits) - 1, u = (uint64_t)x & mask;
        if (t.isSigned() && (u >> (bits - 1))) return (double)(int64_t)(u | ~mask);
        return (double)u;
    }
    return t.kind == DType::Float64 ? v : (double)(float)v;
}

/// v, a value of dtype `from`, converted to dtype t as the generated code converts it (tilec::cast in
/// stdlib/tilec/types.cuh; docs/LANGUAGE.md): a float becomes an integer by truncation toward zero, saturated
/// to the integer's range, NaN to 0; every other conversion is roundToDType's.
inline double convertToDType(DType t, DType from, double v) {
    if (!(from.isFloat() && t.isInt())) return roundToDType(t, v);
    if (std::isnan(v)) return 0;
    const int bits = t.bits();
    const double lo = t.isSigned() ? -std::ldexp(1.0, bits - 1) : 0.0;
    const double hi = bits >= 64 ? std::nextafter(std::ldexp(1.0, t.isSigned() ? 63 : 64), 0.0)
                                 : std::ldexp(1.0, t.isSigned() ? bits - 1 : bits) - 1;
    return roundToDType(t, std::fmin(std::fmax(std::trunc(v), lo), hi));
}

/// x op y for operands of type `operand`, before the result's rounding; nullopt for an integer division or
/// modulo by zero.
inline std::optional<double> binaryOp(ir::BinaryOp op, double x, double y, DType operand) {
    using ir::BinaryOp;
    const bool ints = !operand.isFloat();
    const auto ix = (int64_t)x, iy = (int64_t)y;
    if (ints && iy == 0 && (op == BinaryOp::Div || op == BinaryOp::FloorDiv || op == BinaryOp::FloorMod)) return std::nullopt;
    switch (op) {
    case BinaryOp::Add: return x + y;
    case BinaryOp::Sub: return x - y;
    case BinaryOp::Mul: return x * y;
    case BinaryOp::Div: return ints ? (double)(ix / iy) : x / y;
    case BinaryOp::FloorDiv: {
        if (!ints) return std::floor(x / y);
        int64_t q = ix / iy;
        return (double)((ix % iy != 0) && ((ix < 0) != (iy < 0)) ? q - 1 : q);
    }
    case BinaryOp::FloorMod: {
        if (!ints) return x - std::floor(x / y) * y;
        int64_t m = ix % iy;
        return (double)(m != 0 && ((m < 0) != (iy < 0)) ? m + iy : m);
    }
    case BinaryOp::Min: return std::fmin(x, y);
    case BinaryOp::Max: return std::fmax(x, y);
    case BinaryOp::Pow: return std::pow(x, y);
    case BinaryOp::And: return x != 0 && y != 0;
    case BinaryOp::Or: return x != 0 || y != 0;
    case BinaryOp::BitAnd: return (double)(ix & iy);
    case BinaryOp::BitOr: return (double)(ix | iy);
    case BinaryOp::BitXor: return (double)(ix ^ iy);
    case BinaryOp::Shl: return (double)(ix << (iy & 63));
    case BinaryOp::Shr: return (double)(ix >> (iy & 63));
    case BinaryOp::EQ: return x == y;
    case BinaryOp::NE: return x != y;
    case BinaryOp::LT: return x < y;
    case BinaryOp::LE: return x <= y;
    case BinaryOp::GT: return x > y;
    case BinaryOp::GE: return x >= y;
    }
    return std::nullopt;
}

} // namespace tilec::simtest
