/// \file
/// DType names, aliases and sizes.
#include "tilec/DType.h"

#include <array>
#include <utility>

namespace tilec {

namespace {
struct Info {
    const char *name;
    int bits;
};
constexpr std::array<Info, 16> kInfo = {{
    {"bool", 8}, {"int8", 8}, {"int16", 16}, {"int32", 32}, {"int64", 64},
    {"uint8", 8}, {"uint16", 16}, {"uint32", 32}, {"uint64", 64},
    {"float16", 16}, {"bfloat16", 16}, {"float32", 32}, {"float64", 64},
    {"float8_e4m3", 8}, {"float8_e5m2", 8}, {"void", 0},
}};
} // namespace

int DType::bits() const { return kInfo[kind].bits; }
std::string_view DType::name() const { return kInfo[kind].name; }

std::optional<DType> DType::parse(std::string_view s) {
    for (size_t i = 0; i + 1 < kInfo.size(); ++i)
        if (s == kInfo[i].name) return DType((Kind)i);
    static const std::pair<const char *, Kind> aliases[] = {
        {"float", Float32},        {"half", Float16},          {"double", Float64},
        {"int", Int32},            {"short", Int16},           {"long", Int64},
        {"uint", UInt32},          {"ulong", UInt64},          // TileLang's C spellings (language/dtypes.py)
        {"float8_e4m3fn", Float8E4M3}, {"float8_e4m3fnuz", Float8E4M3},
        {"float8_e5m2fnuz", Float8E5M2}, {"e4m3_float8", Float8E4M3}, {"e5m2_float8", Float8E5M2},
        {"tfloat32", Float32}, // TensorFloat32: float32 storage; tensor cores take float32 as tf32
    };
    for (auto &[a, k] : aliases)
        if (s == a) return DType(k);
    return std::nullopt;
}

bool DType::holds(int64_t v) const {
    switch (kind) {
    case Bool: return v == 0 || v == 1;
    case Int8: return v >= INT8_MIN && v <= INT8_MAX;
    case Int16: return v >= INT16_MIN && v <= INT16_MAX;
    case Int32: return v >= INT32_MIN && v <= INT32_MAX;
    case Int64: return true;
    case UInt8: return v >= 0 && v <= UINT8_MAX;
    case UInt16: return v >= 0 && v <= UINT16_MAX;
    case UInt32: return v >= 0 && v <= (int64_t)UINT32_MAX;
    case UInt64: return v >= 0;
    default: return false;
    }
}

} // namespace tilec
