/// \file
/// Private to src/codegen/: the pieces of host code that the .cu's launchers (CUDA runtime, C++) and binary
/// mode's launchers (driver API, C) share, so that both modes check arguments, report errors and answer
/// queries with the same text.
///
/// Every piece is valid C11 and C++. Text that differs by language takes `cxx` (true: the .cu).
#pragma once

#include "codegen/CodegenImpl.h"

#include <string>

namespace tilec::codegen {

/// `extern "C" ` in the .cu (whose host code is C++); nothing in C, where the header's declarations and the
/// file's `extern "C"` block give the linkage.
inline std::string cLinkage(bool cxx) { return cxx ? "extern \"C\" " : ""; }

/// The linkage of a launcher and its queries: file-local where the exported function wraps it (Kernel::wrapped),
/// else as cLinkage.
inline std::string launcherLinkage(const KernelInfo &info, bool cxx) {
    return info.kernel->wrapped() ? "__attribute__((unused)) static " : cLinkage(cxx);
}

/// For each wrapped kernel among `kernels` (whose part launchers precede): the exported function (views given
/// their tensors' pointers, workspaces allocated stream-ordered, the parts' launchers called in order), its
/// queries and load/unload.
std::string printMultiLaunches(const std::vector<KernelInfo> &kernels, const CodegenOptions &o, bool cxx);

/// The runtime's state (the calling thread's last CUDA error and argument position) as weak, thread-local
/// C symbols with the prefix, so every file with that prefix, in either mode, shares one copy; and the
/// three runtime functions of the header (status_string, last_cuda_error, last_error_argument).
std::string printRuntimeFunctions(const CodegenOptions &o, bool cxx);

/// `tilec_argument_error` (records the argument, returns the status) and the floor division and modulo the
/// launchers' grid formulas may use, as file-local functions.
std::string printLauncherHelpers(const CodegenOptions &o, bool cxx);

/// `tilec_floordiv64` and `tilec_floormod64`, the floor division and modulo of host-mode ExprPrinter's
/// expressions, as file-local functions (each declaration starting with `unused`).
std::string printFloorDivision(const std::string &unused);

/// A launcher's name table: the names its body uses are reserved so no parameter takes them.
NameTable launcherNames();

/// The start of a launch function: the signature line, the checks of pointers, alignment and dynamic sizes
/// in parameter order, and the grid (`grid_x`, `grid_y`, `grid_z`, checked against CUDA's limits).
std::string printLaunchPrologue(const KernelInfo &info, const Signature &sig, NameTable &names, bool cxx,
                                bool checkAlignment = true);
/// The alignment checks of one variant's tensors (none for a tensor of no elements, which is never accessed).
std::string printAlignmentChecks(const KernelInfo &info, const Signature &sig, NameTable &names, const std::string &indent);
/// A C condition that holds when `tensor` has no elements (a dimension of 0, e.g. a T.dynamic size of 0); ""
/// where every dimension is a constant above 0. A tensor of no elements is never accessed: its pointer may be
/// NULL or unaligned, and a tensor map of it reads the zero tile (CodegenTensorMaps.cpp).
std::string noElements(const ir::BufferNode &tensor, ExprPrinter &hp);

/// `NAME_threads(int sm)` and `NAME_shared_bytes(int sm)` of a kernel's variants: the preferred variant
/// that runs on `sm`, 0 when none does.
std::string printQueries(const std::vector<const KernelInfo *> &variants, bool cxx);

/// Launch code for a kernel with several variants or tensor maps, after the prologue: for each variant in
/// order, when the device runs it (and, for a TMA variant, when the pointers and strides suit TMA; for one
/// with Kernel::assumptions, when the arguments meet them), its
/// preparation, alignment checks, tensor maps and launch; a variant without code for the device passes to
/// the next one.
std::string printVariantLaunches(const std::vector<const KernelInfo *> &variants, const Signature &sig, NameTable &names,
                                 bool cxx);

/// The position of a global tensor among the kernel's parameters.
size_t paramOf(const ir::Kernel &k, const ir::Buffer &tensor);

/// The conditions on the run-time arguments under which variant `v`'s tensor maps can be encoded (TMA's
/// rules: 16-byte aligned base and strides; a tensor with no elements only where it gets the zero tile).
std::vector<std::string> tensorMapRules(const KernelInfo &v, const Signature &sig, NameTable &names);
/// Variant `v`'s tensor maps `m0`, `m1`, ... on the launcher's stack (`status` and, in binary mode, `fn` in
/// scope), each encoded only where its inputs differ from this thread's last call of the variant (a
/// thread-local `maps` array per variant), each statement indented by `in`.
std::string printTensorMaps(const KernelInfo &v, const Signature &sig, NameTable &names, bool cxx, const std::string &in);

/// The driver API's name of a tensor map's swizzle mode (TensorMap::swizzleBytes: 128, 64, 32, or 0 for none).
inline std::string swizzleEnum(int bytes) {
    return bytes ? "CU_TENSOR_MAP_SWIZZLE_" + std::to_string(bytes) + "B" : "CU_TENSOR_MAP_SWIZZLE_NONE";
}

/// The driver's name of a tensor map's element type (CU_TENSOR_MAP_DATA_TYPE_...).
const char *tensorMapType(DType t);

/// A tensor map as the launcher sees it: its tensor's parameter and element size, and its dimensions
/// (innermost first, as C expressions) from which the encoding and TMA's rules take the byte strides.
struct MapText {
    size_t param = 0;
    int64_t elemBytes = 1;
    std::vector<std::string> dims;
    /// The byte stride of every dimension but the innermost, each dimension cast to `type`.
    std::vector<std::string> strides(const std::string &type) const {
        std::vector<std::string> out;
        std::string stride = std::to_string(elemBytes);
        for (size_t j = 0; j + 1 < dims.size(); ++j) out.push_back(stride = "(" + type + ")(" + dims[j] + ") * " + stride);
        return out;
    }
};
MapText mapText(const ir::Kernel &k, const ir::TensorMap &m, ExprPrinter &hp);

/// `tilec_encode_tiled`: a tensor map through cuTensorMapEncodeTiled (the .cu: the driver's entry point found
/// through the runtime; C: the driver API it links), copied instead from the caller's `tilec_map_cache` entry
/// (this thread's last encoding of that map) when the inputs are that encoding's; and
/// `tilec_zero_tile_address`, the device address of the zero tile the device code defines (Codegen.cpp), which
/// maps of tensors with no elements read.
std::string printTensorMapEncoder(const CodegenOptions &o, bool cxx);

/// T.sync_grid (CodegenGridSync.cpp): whether kernel k calls it; the device function it prints as (once per
/// file, before the kernels); `tilec_launch_cooperative`, the launch such a kernel needs (the .cu or C).
bool syncsGrid(const ir::Kernel &k);
std::string gridSyncDevice();
std::string printCooperativeLaunch(bool cxx);


} // namespace tilec::codegen
