/// \file
/// The JSON beside a .ptx or .cubin output (include/tilec/Codegen.h, generateSidecar): what a program that loads
/// the image with its own runtime must know to launch each kernel. Every fact is read from what the printers of
/// the .cu and the binary-mode C use: the device signature's parameter list (launchParams), the launcher's grid
/// expressions, the kernel's threads and dynamic shared memory, and the tensor maps' dimensions (mapText).
#include "codegen/CodegenHostParts.h"

#include "support/Json.h"

namespace tilec {

using namespace codegen;
using namespace ir;
// json: tilec::json (src/support/Json.h)

namespace {

json::Value str(const std::string &s) { return json::Value::string(s); }
json::Value num(int64_t n) { return json::Value::number((double)n); }
json::Value triple(int64_t a, int64_t b, int64_t c) {
    json::Value v = json::Value::array();
    v.items = {num(a), num(b), num(c)};
    return v;
}

const char *kindName(LaunchParam::Kind k) {
    switch (k) {
    case LaunchParam::Tensor: return "tensor";
    case LaunchParam::Scalar: return "scalar";
    case LaunchParam::DynamicSize: return "dynamic_size";
    case LaunchParam::TensorMap: return "tensor_map";
    }
    return "";
}

json::Value describeKernel(const KernelInfo &info, const std::string &entry) {
    const Kernel &k = *info.kernel;
    NameTable names = launcherNames();
    std::vector<LaunchParam> params = launchParams(info);
    json::Value ps = json::Value::array();
    for (size_t i = 0; i < params.size(); ++i) {
        auto &p = params[i];
        json::Value v = json::Value::object();
        v.set("name", str(p.key ? names.of(p.key, p.name) : p.name)).set("kind", str(kindName(p.kind)));
        v.set("type", str(p.kind == LaunchParam::TensorMap ? "CUtensorMap (128 bytes, passed by value)" : p.type));
        if (p.kind == LaunchParam::Tensor || p.kind == LaunchParam::Scalar) {
            const Param &ip = k.params[p.index];
            if (p.kind == LaunchParam::Tensor) {
                v.set("dtype", str(std::string(ip.buffer->dtype.name())));
                ExprPrinter hp(names, true);
                json::Value shape = json::Value::array();
                for (auto &d : ip.buffer->shape) shape.items.push_back(str(hp.print(d)));
                v.set("shape", std::move(shape)).set("written", json::Value::boolean(info.written[p.index]));
                if (info.alignment[p.index] > 0) v.set("alignment", num(info.alignment[p.index]));
            }
            if (!ip.argument()) v.set("workspace", json::Value::boolean(true));
        }
        if (p.kind == LaunchParam::TensorMap) v.set("tensor_map", num((int64_t)p.index));
        ps.items.push_back(std::move(v));
    }
    ExprPrinter hp(names, true);
    json::Value grid = json::Value::array();
    for (int d = 0; d < 3; ++d) grid.items.push_back(str(hp.print(k.grid[d])));
    json::Value maps = json::Value::array();
    for (size_t mi = 0; mi < k.tensorMaps.size(); ++mi) {
        const TensorMap &m = k.tensorMaps[mi];
        MapText t = mapText(k, m, hp);
        json::Value v = json::Value::object();
        v.set("param", num((int64_t)params[params.size() - k.tensorMaps.size() + mi].position));
        v.set("tensor_param", num((int64_t)t.param)).set("data_type", str(tensorMapType(m.tensor->dtype)));
        v.set("rank", num((int64_t)m.tensor->shape.size()));
        json::Value dims = json::Value::array(), strides = json::Value::array(), box = json::Value::array();
        for (auto &d : t.dims) dims.items.push_back(str(d));
        for (auto &s : t.strides("uint64_t")) strides.items.push_back(str(s));
        for (auto b : m.box) box.items.push_back(num(b));
        v.set("global_dims", std::move(dims)).set("global_strides_bytes", std::move(strides)).set("box", std::move(box));
        v.set("swizzle", str(swizzleEnum(m.swizzleBytes)));
        v.set("interleave", str("CU_TENSOR_MAP_INTERLEAVE_NONE")).set("l2_promotion", str("CU_TENSOR_MAP_L2_PROMOTION_L2_256B"));
        v.set("oob_fill", str("CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"));
        v.set("stored", json::Value::boolean(info.storedMaps[mi]));
        maps.items.push_back(std::move(v));
    }
    json::Value v = json::Value::object();
    v.set("name", str(info.exportName)).set("entry", str(entry));
    json::Value targets = json::Value::array();
    for (auto &t : info.targets) targets.items.push_back(str(t.name));
    v.set("targets", std::move(targets)).set("variant", num(info.variant)).set("variants", num(info.variants));
    v.set("params", std::move(ps)).set("grid", std::move(grid));
    if (k.persistent) {
        // The launchers start fewer blocks than tiles; the kernel walks the grid's tiles.
        json::Value p = json::Value::object();
        p.set("blocks", str("min(grid[0] * grid[1] * grid[2], SMs * " + std::to_string(std::max(1, k.minBlocksPerSM)) +
                            "), as a 1-D grid; each block walks the tiles"));
        v.set("persistent", std::move(p));
    }
    if (k.clusterSize > 1) {
        // Launched in clusters of consecutive blocks along x (the launch's 1-D grid); the tiles they share lie
        // along grid dimension `axis`.
        json::Value c = json::Value::object();
        c.set("dims", triple(k.clusterSize, 1, 1)).set("shared_tiles_axis", num(k.clusterAxis));
        v.set("cluster", std::move(c));
    }
    v.set("block", triple(k.launchedThreads(), 1, 1));
    v.set("dynamic_shared_memory", num(info.sharedBytes));
    v.set("tensor_maps", std::move(maps));
    // When the launchers take this variant: TMA's rules on the arguments (else the next variant runs).
    if (!k.tensorMaps.empty()) {
        Signature sig = signature(info, names);
        json::Value rules = json::Value::array();
        for (auto &r : tensorMapRules(info, sig, names)) rules.items.push_back(str(r));
        v.set("requires", std::move(rules));
    }
    return v;
}

} // namespace

std::string generateSidecar(const ir::Program &lowered, const CodegenOptions &opts, const DeviceImage &image,
                            const std::vector<std::string> &loweredNames, DiagnosticEngine &diag) {
    std::vector<KernelInfo> infos = analyzeKernels(lowered, opts, diag);
    json::Value kernels = json::Value::array();
    for (size_t i = 0; i < infos.size(); ++i)
        kernels.items.push_back(describeKernel(infos[i], i < loweredNames.size() ? loweredNames[i] : ""));
    json::Value v = json::Value::object();
    v.set("source", str(opts.sourceName));
    v.set("image", str(image.ptx ? "ptx" : "cubin"));
    v.set("target", str(image.ptx ? image.target.virtualArch() : image.target.name));
    v.set("grid_formula", str("C expressions over the parameters by name; tilec_floordiv64/tilec_floormod64 are "
                              "floor division and modulo"));
    v.set("kernels", std::move(kernels));
    return json::write(v) + "\n";
}

} // namespace tilec
