/// \file
/// Where a kernel's launch parameters are ordered: launchParams() is the one list that the __global__
/// signature (CodegenKernel.cpp), the launchers' argument arrays (.cu and binary mode), the C function and
/// header (signature()), --emit=torch / xla-ffi and the .ptx/.cubin sidecars all read, so the device kernel
/// and its host launch cannot disagree on order or types.
#include "codegen/CodegenImpl.h"

namespace tilec::codegen {

using namespace ir;

std::vector<LaunchParam> launchParams(const KernelInfo &info) {
    const Kernel &k = *info.kernel;
    std::vector<LaunchParam> out;
    auto add = [&](LaunchParam::Kind kind, size_t index, std::string type, const void *key, std::string name, bool argument) {
        out.push_back({kind, index, out.size(), std::move(type), key, std::move(name), argument});
    };
    for (size_t i = 0; i < k.params.size(); ++i) {
        auto &p = k.params[i];
        // __restrict__: tensors of different parameters do not overlap (docs/INTERFACE.md), so the compiler may
        // issue a round's loads ahead of the previous round's stores, and read-only tensors go through the
        // non-coherent cache (LDG.CONSTANT), as TileLang's kernels do.
        if (p.kind == Param::Tensor)
            add(LaunchParam::Tensor, i, (info.written[i] ? "" : "const ") + deviceType(p.buffer->dtype) + " *__restrict__",
                p.buffer.get(), p.buffer->name, p.argument());
        else add(LaunchParam::Scalar, i, deviceType(p.var->dtype), p.var.get(), p.var->name, p.argument());
    }
    for (size_t i = 0; i < k.dynamicSymbols.size(); ++i)
        add(LaunchParam::DynamicSize, i, "int", k.dynamicSymbols[i].get(), k.dynamicSymbols[i]->name, true);
    for (size_t i = 0; i < k.tensorMaps.size(); ++i)
        add(LaunchParam::TensorMap, i, "const __grid_constant__ tilec::tensor_map", nullptr, tensorMapParam((int)i), false);
    return out;
}

Signature signature(const KernelInfo &info, NameTable &names, bool exported) {
    const Kernel &k = *info.kernel;
    Signature s;
    std::vector<std::string> params;
    for (const LaunchParam &p : launchParams(info)) {
        if (p.kind == LaunchParam::TensorMap || (exported && !p.argument)) continue;
        if (p.kind == LaunchParam::DynamicSize && s.dynamicBase == 0) s.dynamicBase = s.names.size();
        std::string n = names.of(p.key, p.name);
        if (p.kind == LaunchParam::Tensor)
            params.push_back((info.written[p.index] ? "" : "const ") + headerType(k.params[p.index].buffer->dtype) + " *" + n);
        else if (p.kind == LaunchParam::Scalar) params.push_back(headerType(k.params[p.index].var->dtype) + " " + n);
        else params.push_back("int64_t " + n);
        s.names.push_back(n);
        s.params.push_back(p);
    }
    if (k.dynamicSymbols.empty()) s.dynamicBase = s.names.size();
    params.push_back("cudaStream_t stream");
    s.text = "tilec_status " + (exported ? info.exportName : info.cName) + "(";
    for (size_t i = 0; i < params.size(); ++i) s.text += (i ? ", " : "") + params[i];
    s.text += ")";
    return s;
}

std::string printLaunchArguments(const KernelInfo &v, const Signature &sig, bool cxx, const std::string &in) {
    const Kernel &k = *v.kernel;
    std::string s, args;
    for (const LaunchParam &p : launchParams(v)) {
        std::string a;
        if (p.kind == LaunchParam::TensorMap) {
            a = "m" + std::to_string(p.index); // encoded by printTensorMaps
        } else {
            TILEC_ASSERT(p.position < sig.params.size() && sig.params[p.position].key == p.key,
                         "a launcher's C parameters are its launch parameters less the tensor maps");
            const std::string &n = sig.names[p.position];
            if (p.kind == LaunchParam::Tensor) {
                a = "a" + std::to_string(p.index);
                std::string t = (v.written[p.index] ? "" : "const ") +
                                (cxx ? deviceType(k.params[p.index].buffer->dtype) + " *" : std::string("void *"));
                s += in + t + a + " = " + (cxx ? "static_cast<" + t + ">(" + n + ")" : n) + ";\n";
            } else if (p.kind == LaunchParam::Scalar) {
                a = "a" + std::to_string(p.index);
                DType t = k.params[p.index].var->dtype;
                s += in + (cxx ? deviceType(t) : headerType(t)) + " " + a + " = " + n + ";\n";
            } else {
                a = "d" + std::to_string(p.index);
                s += in + "int " + a + " = (int)" + n + ";\n";
            }
        }
        args += (args.empty() ? "" : ", ") + std::string(cxx ? "&" : "(void *)&") + a;
    }
    s += in + "void *args[] = {" + (args.empty() ? std::string(cxx ? "nullptr" : "NULL") : args) + "};\n";
    return s;
}

} // namespace tilec::codegen
