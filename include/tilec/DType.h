/// \file
/// Scalar data types of the tile language.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tilec {

struct DType {
    enum Kind : unsigned char {
        Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64,
        Float16, BFloat16, Float32, Float64, Float8E4M3, Float8E5M2,
        Void, ///< statements and handles; never a buffer's element type
    };
    Kind kind = Int32;

    constexpr DType() = default;
    constexpr DType(Kind k) : kind(k) {}
    bool operator==(const DType &o) const = default;

    int bits() const;
    int bytes() const { return (bits() + 7) / 8; }
    bool isBool() const { return kind == Bool; }
    bool isInt() const { return kind >= Int8 && kind <= UInt64; } ///< signed or unsigned, not bool
    bool isSigned() const { return kind >= Int8 && kind <= Int64; }
    bool isFloat() const { return kind >= Float16 && kind <= Float8E5M2; }
    bool isFloat8() const { return kind == Float8E4M3 || kind == Float8E5M2; }
    /// Whether integer v is representable in this integer (or bool) type; false for floats.
    bool holds(int64_t v) const;
    /// The canonical name: "float16", "bfloat16", "float8_e4m3", ...
    std::string_view name() const;
    /// Accepts canonical names and aliases ("float" = float32, "float8_e4m3fn" = float8_e4m3, "half", ...).
    static std::optional<DType> parse(std::string_view s);
};

} // namespace tilec
