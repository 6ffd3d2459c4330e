/// \file
/// Pure helpers of TileLang's own modules that example programs call while building a kernel, evaluated by
/// tilec with the semantics written here (from TileLang 0.1.13's definitions, for a CUDA target):
///   - `tilelang.language.fp8.determine_fp8_type(fmt="e4m3")`: the FP8 dtype of the platform; on CUDA
///     float8_e4m3fn for "e4m3" and float8_e5m2 for "e5m2" (the FNUZ variants are ROCm's); any other format is
///     an error, as TileLang's ValueError.
///   - `tilelang.cuda.intrinsics.sparse_layout.get_e_factor(a_dtype, meta_dtype)`: how many a_dtype elements one
///     metadata element of 2:4 sparsity indexes, (bits(meta_dtype) // 4) * group, group 2 for float32 and 4 for
///     16- and 8-bit types (other dtypes have no 2:4 layout: an error, TileLang's KeyError);
///     `get_e_replicate_factor(a_dtype)`: 1 for types of 8 bits or fewer, 2 otherwise.
///   - `tilelang.tools.cuda.iket`, TileLang's IKET profiling events (IketModule.cpp).
///   - `tilelang.cuda.intrinsics`' GEMM emitter and swizzle layouts (TileLangMmaEmitter.cpp).
///   - `GemmWarpPolicy`, the IntEnum T.gemm's `policy` takes, from every module of TileLang 0.1.9 to 0.1.13 that
///     defines or re-exports it: `tilelang.tileop.base` (where it is defined), `tilelang.tileop`,
///     `tilelang.language.gemm_op` and (0.1.13) `tilelang.language.common`. Each is T.GemmWarpPolicy itself, so
///     `from tilelang.tileop.base import GemmWarpPolicy` gives the same members under any alias.
/// The modules' other attributes stay opaque.
#include "eval/InterpImpl.h"

namespace tilec::eval {

Value iketModule(); // tilelang.tools.cuda.iket (IketModule.cpp)
// TileLang's intrinsics-level GEMM layer: the emitter, the swizzle layouts (TileLangMmaEmitter.cpp)
std::optional<Value> mmaIntrinsicsModule(InterpImpl &in, const std::string &dotted);

namespace {

Value fp8Module() {
    const std::string N = "tilelang.language.fp8";
    return partlyKnownModule(N, {{"determine_fp8_type", builtinFunction(N + ".determine_fp8_type", [N](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, N + ".determine_fp8_type", {"fp8_format?"});
        std::string f = x[0] ? in.toStr(*x[0], "fp8_format") : "e4m3";
        if (f != "e4m3" && f != "e5m2")
            in.fail(x[0]->range, "unsupported FP8 format '" + f + "': determine_fp8_type takes \"e4m3\" or \"e5m2\"");
        return Value::ofDType(f == "e4m3" ? DType::Float8E4M3 : DType::Float8E5M2);
    })}});
}

/// The elements of a_dtype in one group of 2:4 sparsity's metadata (TileLang's GROUP_CONFIG).
int sparseGroup(InterpImpl &in, const Arg &a, const std::string &fname) {
    DType t = in.toDType(a, "a_dtype");
    switch (t.kind) {
    case DType::Float32: return 2;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int8:
    case DType::UInt8:
    case DType::Float8E4M3:
    case DType::Float8E5M2: return 4;
    default:
        in.fail(a.range, fname + ": " + std::string(t.name()) + " has no 2:4 sparse layout (float32, float16, bfloat16, "
                                                               "int8, uint8 and the float8 types do)");
    }
}

Value sparseLayoutModule() {
    const std::string N = "tilelang.cuda.intrinsics.sparse_layout";
    std::map<std::string, Value> m;
    m["get_e_factor"] = builtinFunction(N + ".get_e_factor", [N](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, N + ".get_e_factor", {"a_dtype", "meta_dtype"});
        int group = sparseGroup(in, *x[0], "get_e_factor");
        return Value::integer((int64_t)(in.toDType(*x[1], "meta_dtype").bits() / 4) * group);
    });
    m["get_e_replicate_factor"] = builtinFunction(N + ".get_e_replicate_factor", [N](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, N + ".get_e_replicate_factor", {"a_dtype"});
        return Value::integer(in.toDType(*x[0], "a_dtype").bits() <= 8 ? 1 : 2);
    });
    return partlyKnownModule(N, std::move(m));
}

/// T.GemmWarpPolicy, the enum of the `tilelang.language` module (TileLangGemm.cpp).
Value tileLangGemmWarpPolicy(InterpImpl &in) {
    return in.importModule("tilelang.language").as<ModuleObj>().attrs.at("GemmWarpPolicy");
}

} // namespace

std::optional<Value> tileLangHelperModule(InterpImpl &in, const std::string &dotted) {
    if (dotted == "tilelang.language.fp8") return fp8Module();
    if (dotted == "tilelang.cuda.intrinsics.sparse_layout") return sparseLayoutModule();
    // The packages above them, so that attribute chains (tilelang.cuda.intrinsics.sparse_layout) reach them.
    if (auto m = mmaIntrinsicsModule(in, dotted)) return m;
    if (dotted == "tilelang.cuda.intrinsics") {
        const auto &gen = in.knownModule(dotted + ".macro.mma_macro_generator")->as<ModuleObj>().attrs;
        const auto &lay = in.knownModule(dotted + ".layout")->as<ModuleObj>().attrs;
        return partlyKnownModule(dotted, {{"sparse_layout", *in.knownModule(dotted + ".sparse_layout")},
                                          {"macro", *in.knownModule(dotted + ".macro")},
                                          {"layout", *in.knownModule(dotted + ".layout")},
                                          {"TensorCoreIntrinEmitter", gen.at("TensorCoreIntrinEmitter")},
                                          {"TensorCoreIntrinEmitterWithLadderTransform", gen.at("TensorCoreIntrinEmitterWithLadderTransform")},
                                          {"get_swizzle_layout", lay.at("get_swizzle_layout")},
                                          {"make_mma_swizzle_layout", lay.at("make_mma_swizzle_layout")}});
    }
    if (dotted == "tilelang.tileop.base" || dotted == "tilelang.language.gemm_op" || dotted == "tilelang.language.common")
        return partlyKnownModule(dotted, {{"GemmWarpPolicy", tileLangGemmWarpPolicy(in)}});
    if (dotted == "tilelang.tileop")
        return partlyKnownModule(dotted, {{"GemmWarpPolicy", tileLangGemmWarpPolicy(in)},
                                          {"base", *in.knownModule(dotted + ".base")}});
    if (dotted == "tilelang.tools.cuda.iket") return iketModule();
    if (dotted == "tilelang.tools.cuda") return partlyKnownModule(dotted, {{"iket", *in.knownModule(dotted + ".iket")}});
    if (dotted == "tilelang.tools") return partlyKnownModule(dotted, {{"cuda", *in.knownModule(dotted + ".cuda")}});
    if (dotted == "tilelang.cuda") return partlyKnownModule(dotted, {{"intrinsics", *in.knownModule(dotted + ".intrinsics")}});
    return std::nullopt;
}

} // namespace tilec::eval
