/// \file
/// A tensor map's element type (src/codegen/CodegenHostParts.h's tensorMapType) is as wide as its tensor's
/// elements, for every element type: the launcher gives dims and boxes in elements, so a narrower map type would
/// encode a box of fewer bytes than the kernel's expect-tx counts (session 42: T.gemm_sp's int16 metadata took
/// UINT8, its 8-element box was 8 bytes, and cuTensorMapEncodeTiled refused it on the H100 as a CUDA error).
#include "codegen/CodegenHostParts.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace tilec;
using namespace tilec::codegen;

namespace {

/// The bytes of each element type of cuda.h's CUtensorMapDataType that tilec names.
int driverTypeBytes(const std::string &name) {
    static const std::map<std::string, int> bytes{
        {"CU_TENSOR_MAP_DATA_TYPE_UINT8", 1},   {"CU_TENSOR_MAP_DATA_TYPE_UINT16", 2},
        {"CU_TENSOR_MAP_DATA_TYPE_UINT32", 4},  {"CU_TENSOR_MAP_DATA_TYPE_INT32", 4},
        {"CU_TENSOR_MAP_DATA_TYPE_UINT64", 8},  {"CU_TENSOR_MAP_DATA_TYPE_INT64", 8},
        {"CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 2}, {"CU_TENSOR_MAP_DATA_TYPE_FLOAT32", 4},
        {"CU_TENSOR_MAP_DATA_TYPE_FLOAT64", 8}, {"CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2},
    };
    auto it = bytes.find(name);
    return it == bytes.end() ? -1 : it->second;
}

} // namespace

TEST(TensorMapType, AsWideAsTheTensorsElementsForEveryType) {
    for (int k = DType::Bool; k < DType::Void; ++k) {
        const DType t(static_cast<DType::Kind>(k));
        EXPECT_EQ(driverTypeBytes(tensorMapType(t)), t.bytes()) << t.name() << " -> " << tensorMapType(t);
    }
}

TEST(TensorMapType, GemmSpMetadataIsSixteenBitWide) {
    EXPECT_STREQ(tensorMapType(DType::Int16), "CU_TENSOR_MAP_DATA_TYPE_UINT16");
    EXPECT_STREQ(tensorMapType(DType::Float8E4M3), "CU_TENSOR_MAP_DATA_TYPE_UINT8");
}
