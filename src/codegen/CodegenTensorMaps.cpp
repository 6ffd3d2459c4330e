/// \file
/// TMA's tensor maps in the launchers of both modes: the rules a variant's run-time arguments must meet for
/// them, their encoding on the launcher's stack (kept per thread and variant, and encoded again only where
/// an input changed: issue 27), and the file-local helpers that encoding calls (tilec_encode_tiled,
/// tilec_zero_tile_address). A tensor with no elements (a T.dynamic size of 0) cannot
/// have a map of its own (cuTensorMapEncodeTiled refuses a dimension of 0): its maps read the zero tile.
#include "codegen/CodegenHostParts.h"

#include <algorithm>

namespace tilec::codegen {

using namespace ir;

/// The position of a global tensor among the kernel's parameters.
size_t paramOf(const Kernel &k, const Buffer &tensor) {
    size_t p = 0;
    while (p < k.params.size() && !(k.params[p].kind == Param::Tensor && k.params[p].buffer == tensor)) ++p;
    TILEC_ASSERT(p < k.params.size(), "a tensor map or assumption of a tensor that is no parameter");
    return p;
}


/// The driver's name of a tensor map's element type: the type itself where the driver has it, else the unsigned
/// integer of the element's width (TMA copies bits: T.gemm_sp's int16 metadata as UINT16). The map's element
/// width is the tensor's, whose dims, strides and box the launcher gives in elements (session 42: int16 took the
/// 1-byte type, so E's box of 8 elements was 8 bytes, which cuTensorMapEncodeTiled refuses).
const char *tensorMapType(DType t) {
    switch (t.kind) {
    case DType::Float16: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
    case DType::BFloat16: return "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
    case DType::Float32: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
    case DType::Float64: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT64";
    case DType::Int32: return "CU_TENSOR_MAP_DATA_TYPE_INT32";
    case DType::Int64: return "CU_TENSOR_MAP_DATA_TYPE_INT64";
    default: break;
    }
    switch (t.bytes()) {
    case 1: return "CU_TENSOR_MAP_DATA_TYPE_UINT8";
    case 2: return "CU_TENSOR_MAP_DATA_TYPE_UINT16";
    case 4: return "CU_TENSOR_MAP_DATA_TYPE_UINT32";
    case 8: return "CU_TENSOR_MAP_DATA_TYPE_UINT64";
    }
    TILEC_ASSERT(false, "a tensor map of elements that are not 1, 2, 4 or 8 bytes");
    return "";
}

MapText mapText(const Kernel &k, const TensorMap &m, ExprPrinter &hp) {
    MapText t;
    t.param = paramOf(k, m.tensor);
    t.elemBytes = m.tensor->dtype.bytes();
    for (size_t j = m.tensor->shape.size(); j-- > 0;) t.dims.push_back(hp.print(m.tensor->shape[j]));
    return t;
}

namespace {

/// The condition under which map `mi` of variant `v` is encoded over the zero tile: its tensor has no
/// elements and no TMA store writes through the map ("" for never). Every element a transfer through it names
/// is then out of bounds, so its loads give zeros, which the zero tile gives too, whatever the tensor's pointer
/// and strides; a store would write the zero tile, so a map stored through keeps its tensor (and its variant
/// gives way to the next when the tensor is empty: tensorMapRules).
std::string zeroTileCondition(const KernelInfo &v, size_t mi, ExprPrinter &hp) {
    return v.storedMaps[mi] ? "" : noElements(*v.kernel->tensorMaps[mi].tensor, hp);
}

} // namespace

std::vector<std::string> tensorMapRules(const KernelInfo &v, const Signature &sig, NameTable &names) {
    const Kernel &k = *v.kernel;
    ExprPrinter hp(names, true);
    std::vector<std::string> rules;
    auto rule = [&](const std::string &r) {
        if (std::find(rules.begin(), rules.end(), r) == rules.end()) rules.push_back(r);
    };
    const std::string align = " % " + std::to_string(TensorMap::kAlignment) + " == 0";
    for (size_t mi = 0; mi < k.tensorMaps.size(); ++mi) {
        MapText t = mapText(k, k.tensorMaps[mi], hp);
        std::vector<std::string> tma{"(uintptr_t)" + sig.names[t.param] + align};
        for (auto &st : t.strides("int64_t")) tma.push_back("(" + st + ")" + align);
        const std::string zero = zeroTileCondition(v, mi, hp), empty = noElements(*k.tensorMaps[mi].tensor, hp);
        if (zero.empty()) {
            for (auto &r : tma) rule(r);
            if (!empty.empty()) rule("!(" + empty + ")"); // stored through: no zero tile
        } else {
            std::string all;
            for (auto &r : tma) all += (all.empty() ? "" : " && ") + r;
            rule("((" + zero + ") || (" + all + "))");
        }
    }
    return rules;
}

std::string printTensorMaps(const KernelInfo &v, const Signature &sig, NameTable &names, bool cxx, const std::string &in) {
    const Kernel &k = *v.kernel;
    ExprPrinter hp(names, true);
    std::string s, anyZero;
    for (size_t mi = 0; mi < k.tensorMaps.size(); ++mi) {
        const std::string zero = zeroTileCondition(v, mi, hp);
        if (!zero.empty() && anyZero.find("(" + zero + ")") == std::string::npos)
            anyZero += (anyZero.empty() ? "(" : " || (") + zero + ")";
    }
    if (!anyZero.empty()) {
        s += in + "const void *zero = " + (cxx ? "nullptr" : "NULL") + "; /* the zero tile: maps of tensors of no elements */\n";
        s += in + "if (" + anyZero + ") {\n";
        s += in + "    status = tilec_zero_tile_address(" + (cxx ? "" : "fn, ") + "&zero);\n";
        s += in + "    if (status != TILEC_SUCCESS) return status;\n" + in + "}\n";
    }
    // This thread's last encoding of each map of the variant (block-scope, so one array per variant): a map
    // whose inputs are those of the last call is copied, not encoded again. Zero-initialized thread-local
    // storage of a trivial type: no constructor, no lock, no allocation at the call.
    if (!k.tensorMaps.empty())
        s += in + "static " + std::string(cxx ? "thread_local" : "TILEC_THREAD_LOCAL") + " tilec_map_cache maps[" +
             std::to_string(k.tensorMaps.size()) + "];\n";
    for (size_t mi = 0; mi < k.tensorMaps.size(); ++mi) {
        const TensorMap &m = k.tensorMaps[mi];
        const MapText t = mapText(k, m, hp);
        const std::string zero = zeroTileCondition(v, mi, hp);
        const size_t nd = m.tensor->shape.size();
        TILEC_ASSERT(nd >= 1 && nd <= 5, "a tensor map of more than TMA's five dimensions");
        std::string mn = "m" + std::to_string(mi), dims, strides, box;
        // Over the zero tile: every dimension 1 (strides of 16 bytes, TMA's least), so a load reads its one
        // element, 0, and fills the rest of its box with zeros as out of bounds.
        const std::string dim1 = zero.empty() ? "" : "empty ? 1 : ", stride16 = zero.empty() ? "" : "empty ? 16 : ";
        for (size_t j = 0; j < nd; ++j) {
            dims += (j ? ", " : "") + dim1 + "(cuuint64_t)(" + t.dims[j] + ")";
            box += (j ? ", " : "") + std::to_string(m.box[j]);
        }
        auto st = t.strides("cuuint64_t");
        for (size_t j = 0; j < st.size(); ++j) strides += (j ? ", " : "") + stride16 + st[j];
        s += in + "CUtensorMap " + mn + ";\n";
        s += in + "{\n";
        if (!zero.empty()) s += in + "    const bool empty = " + zero + ";\n";
        s += in + "    const cuuint64_t dims[] = {" + dims + "};\n";
        s += in + "    const cuuint64_t strides[] = {" + strides + "};\n";
        s += in + "    const cuuint32_t box[] = {" + box + "};\n";
        s += in + "    status = tilec_encode_tiled(&maps[" + std::to_string(mi) + "], &" + mn + ", " + tensorMapType(m.tensor->dtype) + ", " + std::to_string(nd) +
             ", " + (zero.empty() ? "" : "empty ? zero : ") + sig.names[t.param] + ", dims, strides, box, " +
             swizzleEnum(m.swizzleBytes) + ");\n";
        s += in + "    if (status != TILEC_SUCCESS) return status;\n";
        s += in + "}\n";
    }
    return s;
}

namespace {

/// `tilec_map_cache` and `tilec_map_cached`: one map's last encoding on a thread, and whether a call's inputs
/// are that encoding's.
std::string mapCacheText(const std::string &unused) {
    // Encoding costs about a microsecond a map (issue 27): a launcher keeps, per thread and variant, each map
    // with the exact inputs it was encoded from, and encodes again only a map whose inputs changed. The map
    // reaches the kernel by value (a __grid_constant__ parameter the launch copies), so a captured CUDA graph
    // keeps its own copy whatever the cache holds later.
    std::string s = "/* One tensor map's last encoding on this thread: the inputs of cuTensorMapEncodeTiled (those not\n"
                    " * fixed in tilec_encode_tiled) and the map they gave; `valid` only after a successful encoding. */\n";
    s += "typedef struct tilec_map_cache {\n";
    s += "    CUtensorMap map;\n";
    s += "    const void *base;\n";
    s += "    cuuint64_t dims[5], strides[4];\n";
    s += "    cuuint32_t box[5], rank;\n";
    s += "    CUtensorMapDataType type;\n";
    s += "    CUtensorMapSwizzle swizzle;\n";
    s += "    int valid;\n";
    s += "} tilec_map_cache;\n";
    s += unused + "static int tilec_map_cached(const tilec_map_cache *c, CUtensorMapDataType type, cuuint32_t rank, const void *base,\n"
         "                            const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,\n"
         "                            CUtensorMapSwizzle swizzle) {\n";
    s += "    cuuint32_t j;\n";
    s += "    if (!c->valid || c->rank != rank || c->base != base || c->type != type || c->swizzle != swizzle) return 0;\n";
    s += "    for (j = 0; j < rank; ++j)\n";
    s += "        if (c->dims[j] != dims[j] || c->box[j] != box[j] || (j + 1 < rank && c->strides[j] != strides[j])) return 0;\n";
    s += "    return 1;\n}\n";
    return s;
}

/// `tilec_zero_tile_address`: the zero tile's device address.
std::string zeroTileAddressText(bool cxx) {
    std::string s;
    // The device code defines the zero tile (Codegen.cpp, kZeroTile): in the .cu, a file-local symbol; in
    // binary mode's module, an extern "C" one found by name.
    s += "/* The zero tile's device address: maps of tensors of no elements read it (nothing writes it). */\n";
    if (cxx) {
        s += "[[maybe_unused]] static tilec_status tilec_zero_tile_address(const void **zero) {\n";
        s += "    void *p = nullptr;\n";
        s += "    cudaError_t e = cudaGetSymbolAddress(&p, tilec_zero_tile);\n";
        s += "    if (e != cudaSuccess) return tilec_cuda_failure(e);\n";
        s += "    *zero = p;\n";
    } else {
        s += "__attribute__((unused)) static tilec_status tilec_zero_tile_address(CUfunction fn, const void **zero) {\n";
        s += "    CUmodule module;\n    CUdeviceptr p = 0;\n    size_t bytes = 0;\n";
        s += "    CUresult r = cuFuncGetModule(&module, fn);\n";
        s += "    if (r == CUDA_SUCCESS) r = cuModuleGetGlobal(&p, &bytes, module, \"tilec_zero_tile\");\n";
        s += "    if (r != CUDA_SUCCESS) return tilec_driver_failure(r);\n";
        s += "    *zero = (const void *)(uintptr_t)p;\n";
    }
    s += "    return TILEC_SUCCESS;\n}\n\n";
    return s;
}

} // namespace

std::string printTensorMapEncoder(const CodegenOptions &o, bool cxx) {
    const std::string unused = cxx ? "[[maybe_unused]] " : "__attribute__((unused)) ";
    std::string s = mapCacheText(unused);
    s += "/* A tensor map (TMA) into `map`: 16-byte aligned base, strides in bytes, boxes innermost first, rank 1 to 5;\n"
         " * copied from `cache` where its inputs are the last call's, else encoded and kept there. */\n";
    s += unused + "static tilec_status tilec_encode_tiled(tilec_map_cache *cache, CUtensorMap *map, CUtensorMapDataType type,\n"
         "                                       cuuint32_t rank, const void *base, const cuuint64_t *dims,\n"
         "                                       const cuuint64_t *strides, const cuuint32_t *box, CUtensorMapSwizzle swizzle) {\n";
    s += "    cuuint32_t j;\n";
    s += "    if (tilec_map_cached(cache, type, rank, base, dims, strides, box, swizzle)) {\n";
    s += "        *map = cache->map;\n";
    s += "        return TILEC_SUCCESS;\n    }\n";
    s += "    cache->valid = 0;\n";
    s += "    const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};\n";
    if (cxx) {
        // The driver's function through the runtime, so the application need not link libcuda; the pointer is
        // looked up once (racing threads store the same value).
        s += "    static std::atomic<PFN_cuTensorMapEncodeTiled_v12000> encode{nullptr};\n";
        s += "    PFN_cuTensorMapEncodeTiled_v12000 fn = encode.load(std::memory_order_acquire);\n";
        s += "    if (!fn) {\n";
        s += "        void *p = nullptr;\n";
        s += "        cudaDriverEntryPointQueryResult q;\n";
        s += "        cudaError_t e = cudaGetDriverEntryPointByVersion(\"cuTensorMapEncodeTiled\", &p, 12000, cudaEnableDefault, &q);\n";
        s += "        if (e != cudaSuccess) return tilec_cuda_failure(e);\n";
        s += "        if (q != cudaDriverEntryPointSuccess || !p) return TILEC_ERROR_NO_DEVICE;\n";
        s += "        fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);\n";
        s += "        encode.store(fn, std::memory_order_release);\n";
        s += "    }\n";
        s += "    CUresult r = fn(&cache->map, type, rank, const_cast<void *>(base), dims, strides, box, element_strides,\n";
    } else {
        s += "    CUresult r = cuTensorMapEncodeTiled(&cache->map, type, rank, (void *)base, dims, strides, box, element_strides,\n";
    }
    s += "                    CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,\n";
    s += "                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);\n";
    if (cxx) {
        s += "    if (r != CUDA_SUCCESS) {\n";
        s += "        " + rt(o, "last_cuda_error_state") + " = cudaErrorInvalidValue;\n";
        s += "        return TILEC_ERROR_CUDA;\n    }\n";
    } else {
        s += "    if (r != CUDA_SUCCESS) return tilec_driver_failure(r);\n";
    }
    s += "    cache->base = base;\n";
    s += "    for (j = 0; j < rank; ++j) {\n";
    s += "        cache->dims[j] = dims[j];\n";
    s += "        cache->box[j] = box[j];\n";
    s += "        if (j + 1 < rank) cache->strides[j] = strides[j];\n    }\n";
    s += "    cache->rank = rank;\n    cache->type = type;\n    cache->swizzle = swizzle;\n    cache->valid = 1;\n";
    s += "    *map = cache->map;\n    return TILEC_SUCCESS;\n}\n\n";
    return s + zeroTileAddressText(cxx);
}

} // namespace tilec::codegen
