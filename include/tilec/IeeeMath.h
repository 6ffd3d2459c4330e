/// \file
/// TileLang's IEEE-rounded float operations (T.ieee_add, ieee_sub, ieee_mul, ieee_fmaf, ieee_frcp, ieee_fsqrt,
/// ieee_frsqrt, ieee_fdiv), as tilec keeps them: a `Call` named "ieee_OP.MODE" (MODE one of rn, rz, ru, rd: round to
/// nearest even, toward zero, up, down), printed as CUDA's rounding intrinsic of that mode (__fadd_rz, __dmul_ru,
/// ...), which nvcc never contracts into an FMA nor relaxes under fast math; and what each computes, for the CPU
/// simulator. The front end (src/eval/TileLangMath.cpp), code generation and the simulator read this one table.
#pragma once

#include <cfloat>
#include <cmath>
#include <optional>
#include <string>

namespace tilec {

struct IeeeOp {
    const char *name;  ///< TileLang's: "ieee_add"
    int arity;         ///< operands
    const char *f32;   ///< CUDA's float32 intrinsic, without the "_MODE" suffix
    const char *f64;   ///< CUDA's float64 one
    bool onlyNearest;  ///< CUDA has only the _rn form (rsqrt); TileLang takes no rounding_mode for it
};

inline const IeeeOp *ieeeOp(const std::string &name) {
    static const IeeeOp ops[] = {
        {"ieee_add", 2, "__fadd", "__dadd", false},   {"ieee_sub", 2, "__fsub", "__dsub", false},
        {"ieee_mul", 2, "__fmul", "__dmul", false},   {"ieee_fmaf", 3, "__fmaf", "__fma", false},
        {"ieee_frcp", 1, "__frcp", "__drcp", false},  {"ieee_fsqrt", 1, "__fsqrt", "__dsqrt", false},
        {"ieee_frsqrt", 1, "__frsqrt", nullptr, true}, {"ieee_fdiv", 2, "__fdiv", "__ddiv", false},
    };
    for (const IeeeOp &o : ops)
        if (name == o.name) return &o;
    return nullptr;
}

inline bool isIeeeRoundingMode(const std::string &m) { return m == "rn" || m == "rz" || m == "ru" || m == "rd"; }

/// The op and mode of an IR call name "ieee_OP.MODE"; nullopt for any other name.
inline std::optional<std::pair<const IeeeOp *, std::string>> ieeeCall(const std::string &callName) {
    size_t dot = callName.find('.');
    if (callName.rfind("ieee_", 0) != 0 || dot == std::string::npos) return std::nullopt;
    const IeeeOp *op = ieeeOp(callName.substr(0, dot));
    std::string mode = callName.substr(dot + 1);
    if (!op || !isIeeeRoundingMode(mode)) return std::nullopt;
    return std::make_pair(op, mode);
}

/// The op's value on a, b, c, rounded to float32 (f32) or kept double, in the mode's direction: the exact result
/// approximated in long double, then the nearest representable value, stepped once toward the mode's direction
/// where that one lies on the wrong side.
inline double ieeeEvaluate(const IeeeOp &op, const std::string &mode, bool f32, double a, double b, double c) {
    const std::string n = op.name;
    long double x = a, y = b, z = c;
    long double r = n == "ieee_add"    ? x + y
                    : n == "ieee_sub"  ? x - y
                    : n == "ieee_mul"  ? x * y
                    : n == "ieee_fmaf" ? x * y + z
                    : n == "ieee_frcp" ? 1 / x
                    : n == "ieee_fsqrt" ? std::sqrt(x)
                    : n == "ieee_frsqrt" ? 1 / std::sqrt(x)
                                        : x / y;
    if (std::isnan((double)r) || mode == "rn") return f32 ? (double)(float)r : (double)r;
    double near = f32 ? (double)(float)r : (double)r;
    bool up = mode == "ru" || (mode == "rz" && r < 0);
    if (up && (long double)near < r) return f32 ? (double)std::nextafter((float)near, FLT_MAX) : std::nextafter(near, DBL_MAX);
    if (!up && (long double)near > r) return f32 ? (double)std::nextafter((float)near, -FLT_MAX) : std::nextafter(near, -DBL_MAX);
    return near;
}

} // namespace tilec
