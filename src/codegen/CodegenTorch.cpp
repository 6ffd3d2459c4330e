/// \file
/// `--emit=torch`: a C++ file that registers each exported kernel as a PyTorch operator (docs/INTERFACE.md,
/// "PyTorch operators"). The operator's CUDA implementation checks every tensor against what the header
/// declares (device, dtype, rank, the constant sizes and the agreement of the T.dynamic ones, contiguity),
/// allocates the outputs TileLang's `out_idx` names (ir::Kernel::outputs), calls the C launch function on the
/// current CUDA stream and turns a failed status into a c10::Error; its Meta implementation makes the same
/// shape checks and returns the outputs' shapes, so that torch.compile traces it. `--emit=xla-ffi`
/// (CodegenXlaFfi.cpp) sorts the parameters the same way (TorchOp.h).
///
/// The C function's parameters are read from signature() (CodegenImpl.h), the one list the header and the
/// launchers print, so the operator passes its arguments in the order the C function takes them.
#include "codegen/TorchOp.h"

#include "tilec/IRPrinter.h"

#include <algorithm>

namespace tilec::codegen {

using namespace ir;

namespace {

/// ATen's name of a dtype's ScalarType.
std::string scalarType(DType t) {
    switch (t.kind) {
    case DType::Bool:
        return "at::ScalarType::Bool";
    case DType::Int8:
        return "at::ScalarType::Char";
    case DType::Int16:
        return "at::ScalarType::Short";
    case DType::Int32:
        return "at::ScalarType::Int";
    case DType::Int64:
        return "at::ScalarType::Long";
    case DType::UInt8:
        return "at::ScalarType::Byte";
    case DType::UInt16:
        return "at::ScalarType::UInt16";
    case DType::UInt32:
        return "at::ScalarType::UInt32";
    case DType::UInt64:
        return "at::ScalarType::UInt64";
    case DType::Float16:
        return "at::ScalarType::Half";
    case DType::BFloat16:
        return "at::ScalarType::BFloat16";
    case DType::Float32:
        return "at::ScalarType::Float";
    case DType::Float64:
        return "at::ScalarType::Double";
    case DType::Float8E4M3:
        return "at::ScalarType::Float8_e4m3fn";
    case DType::Float8E5M2:
        return "at::ScalarType::Float8_e5m2";
    case DType::Void:
        break;
    }
    return "at::ScalarType::Undefined";
}

/// A scalar parameter's type in the operator's schema and in its C++ implementation.
std::pair<std::string, std::string> scalarArgType(DType t) {
    if (t.isBool())
        return {"bool", "bool"};
    if (t.isInt())
        return {"int", "int64_t"};
    return {"float", "double"};
}

/// The alias set of the n-th tensor an operator writes in place: a, b, ..., z, ba, bb, ...
std::string aliasSet(size_t n) {
    std::string s(1, (char)('a' + n % 26));
    for (n /= 26; n > 0; n /= 26)
        s.insert(s.begin(), (char)('a' + n % 26));
    return s;
}

/// The operator's arguments in order, each as the schema writes it and as the C++ implementation takes it:
/// the C function's parameters less the outputs, then the T.dynamic sizes that no tensor argument gives.
std::vector<std::pair<std::string, std::string>> arguments(const TorchOp &t) {
    const Kernel &k = *t.info->kernel;
    std::vector<std::pair<std::string, std::string>> args;
    size_t mutated = 0;
    for (size_t i = 0; i < k.params.size(); ++i) {
        const Param &p = k.params[i];
        const std::string &n = t.sig.names[i];
        if (!p.argument() || isOutput(k, i))
            continue;
        if (p.kind == Param::Tensor)
            args.push_back({(t.info->written[i] ? "Tensor(" + aliasSet(mutated++) + "!) " : "Tensor ") + n,
                            "const at::Tensor &" + n});
        else
            args.push_back(
                {scalarArgType(p.var->dtype).first + " " + n, scalarArgType(p.var->dtype).second + " " + n});
    }
    for (size_t j = 0; j < t.dynamicArg.size(); ++j)
        if (t.dynamicArg[j])
            args.push_back(
                {"int " + t.sig.names[dynamicPos(t, j)], "int64_t " + t.sig.names[dynamicPos(t, j)]});
    return args;
}

/// `TYPES` joined as `T` (one), `(T, U)` (a schema's results) or `std::tuple<T, U>` (C++'s).
std::string results(size_t n, const std::string &type, bool cxx) {
    if (n == 1)
        return type;
    if (n == 0)
        return cxx ? "void" : "()";
    std::string s = cxx ? "std::tuple<" : "(";
    for (size_t o = 0; o < n; ++o)
        s += (o ? ", " : "") + type;
    return s + (cxx ? ">" : ")");
}

std::string schema(const TorchOp &t) {
    std::string s = t.name + "(";
    auto args = arguments(t);
    for (size_t a = 0; a < args.size(); ++a)
        s += (a ? ", " : "") + args[a].first;
    return s + ") -> " + results(t.outputs.size(), "Tensor", false);
}

/// The C++ function's result type and parameter list (the schema's arguments, in its order).
std::string cxxSignature(const TorchOp &t, const std::string &fn) {
    std::string s = results(t.outputs.size(), "at::Tensor", true) + " " + fn + "(";
    auto args = arguments(t);
    for (size_t a = 0; a < args.size(); ++a)
        s += (a ? ", " : "") + args[a].second;
    return s + ")";
}

/// Whether every dimension of the operator's tensors is a constant or a T.dynamic size: its Meta
/// implementation then keeps the sizes symbolic (c10::SymInt), so torch.compile's dynamic shapes pass
/// through; otherwise it specializes on them (guard_int).
bool symbolicMeta(const TorchOp &t) {
    for (auto *list : {&t.tensors, &t.outputs})
        for (size_t i : *list)
            for (auto &d : paramAt(t, i).buffer->shape)
                if (!as<IntImm>(d) && !as<VarNode>(d))
                    return false;
    return true;
}

/// How an implementation reads sizes: the CUDA one as int64_t, the Meta one through sym_size.
struct SizeStyle {
    bool cuda = true;      ///< also the device (the first tensor's, which the others share) and contiguity
    bool symbolic = false; ///< Meta: sizes as c10::SymInt
    std::string size(const std::string &x, size_t r) const {
        return x + (cuda ? ".size(" : ".sym_size(") + std::to_string(r) + ")";
    }
    std::string sizes(const std::string &x) const { return x + (cuda ? ".sizes()" : ".sym_sizes()"); }
    std::string type() const { return symbolic ? "const c10::SymInt" : "const int64_t"; }
    std::string bound(const std::string &x, size_t r) const {
        return size(x, r) + (!cuda && !symbolic ? ".guard_int(__FILE__, __LINE__)" : "");
    }
    std::string value(const std::string &e) const { return cuda ? e : "c10::SymInt(" + e + ")"; }
};

/// The checks both implementations make: every tensor argument's dtype and rank, then the T.dynamic sizes
/// read off them, then every other dimension against its size.
std::string printChecks(const TorchOp &t, NameTable &names, const SizeStyle &st) {
    const std::string op = quoted(t.op + ": ");
    std::string s;
    for (size_t i : t.tensors) {
        const std::string &x = t.sig.names[i];
        const BufferNode &b = *paramAt(t, i).buffer;
        const std::string arg = "argument '" + x + "'";
        if (st.cuda) {
            const std::string &first = t.sig.names[t.tensors.front()];
            if (i == t.tensors.front())
                s += "    TORCH_CHECK(" + x + ".is_cuda(), " + op + ", \"" + arg +
                     " must be a CUDA tensor, not on \", " + x + ".device());\n";
            else
                s += "    TORCH_CHECK(" + x + ".device() == " + first + ".device(), " + op + ", \"" + arg +
                     " is on \", " + x + ".device(), \" but '" + first + "' on \", " + first +
                     ".device());\n";
        }
        s += "    TORCH_CHECK(" + x + ".scalar_type() == " + scalarType(b.dtype) + ", " + op + ", \"" + arg +
             " must be " + std::string(b.dtype.name()) + ", not \", " + x + ".scalar_type());\n";
        s += "    TORCH_CHECK(" + x + ".dim() == " + std::to_string(b.shape.size()) + ", " + op + ", \"" +
             arg + " must have " + std::to_string(b.shape.size()) +
             (b.shape.size() == 1 ? " dimension" : " dimensions") + " (" + shapeText(b) + "), not \", " + x +
             ".dim());\n";
    }
    for (size_t j = 0; j < t.dynamicArg.size(); ++j)
        if (!t.dynamicArg[j]) {
            auto [i, r] = t.dynamicFrom[j];
            s += "    " + st.type() + " " + t.sig.names[dynamicPos(t, j)] + " = " +
                 st.bound(t.sig.names[i], r) + ";\n";
        }
    ExprPrinter hp(names, true);
    for (size_t i : t.tensors) {
        const std::string &x = t.sig.names[i];
        const BufferNode &b = *paramAt(t, i).buffer;
        for (size_t r = 0; r < b.shape.size(); ++r) {
            if (bindsDynamic(t, i, r))
                continue;
            std::string want = st.value(hp.print(b.shape[r], 10)); // after ` == `
            s += "    TORCH_CHECK(" + st.size(x, r) + " == " + want + ", " + op + ", \"argument '" + x +
                 "' has shape \", " + st.sizes(x) + ", \" but the kernel takes " + shapeText(b) +
                 ": dimension " + std::to_string(r) + " must be \", " + want + ");\n";
        }
        if (st.cuda)
            s += "    TORCH_CHECK(" + x + ".is_contiguous(), " + op + ", \"argument '" + x +
                 "' must be contiguous (row-major), " + "its strides are \", " + x + ".strides());\n";
    }
    return s;
}

/// `at::Tensor NAME = at::empty({...}, ...)` for every output, on `device`.
std::string printOutputs(const TorchOp &t, NameTable &names, const std::string &device, const SizeStyle &st) {
    ExprPrinter hp(names, true);
    std::string s;
    for (size_t i : t.outputs) {
        const BufferNode &b = *paramAt(t, i).buffer;
        s += "    at::Tensor " + t.sig.names[i] + (st.symbolic ? " = at::empty_symint({" : " = at::empty({");
        for (size_t r = 0; r < b.shape.size(); ++r)
            s += (r ? ", " : "") +
                 (st.symbolic ? st.value(hp.print(b.shape[r])) : "(int64_t)(" + hp.print(b.shape[r]) + ")");
        s += "}, at::TensorOptions().dtype(" + scalarType(b.dtype) + ").device(" + device + "));\n";
    }
    return s;
}

std::string printReturn(const TorchOp &t) {
    if (t.outputs.empty())
        return "";
    if (t.outputs.size() == 1)
        return "    return " + t.sig.names[t.outputs[0]] + ";\n";
    std::string s = "    return std::make_tuple(";
    for (size_t o = 0; o < t.outputs.size(); ++o)
        s += (o ? ", " : "") + t.sig.names[t.outputs[o]];
    return s + ");\n";
}

/// Where the operator runs: its first tensor argument's device, else (outputs only) the current CUDA device.
std::string deviceOf(const TorchOp &t, bool cuda) {
    if (!t.tensors.empty())
        return t.sig.names[t.tensors.front()] + ".device()";
    return cuda ? "at::Device(at::kCUDA, c10::cuda::current_device())" : "at::Device(at::kMeta)";
}

/// The range checks of scalar arguments narrower than the schema's int64_t / double.
std::string printScalarChecks(const TorchOp &t) {
    const Kernel &k = *t.info->kernel;
    std::string s;
    for (size_t i = 0; i < k.params.size(); ++i) {
        const Param &p = k.params[i];
        if (!p.argument() || p.kind != Param::Scalar || !p.var->dtype.isInt() ||
            p.var->dtype.kind == DType::Int64 || p.var->dtype.kind == DType::UInt64)
            continue;
        const std::string ty = headerType(p.var->dtype), x = t.sig.names[i];
        s += "    TORCH_CHECK(static_cast<int64_t>(static_cast<" + ty + ">(" + x + ")) == " + x + ", " +
             quoted(t.op + ": ") + ", \"argument '" + x + "' = \", " + x + ", \" does not fit the kernel's " +
             std::string(p.var->dtype.name()) + "\");\n";
    }
    return s;
}

/// The C function's arguments (its parameters less the stream), cast from the operator's, each followed by
/// ", "; without the tensors: NAME_workspace_bytes's.
std::string printCArguments(const TorchOp &t, bool tensors = true) {
    std::string s;
    for (size_t i = 0; i < t.sig.names.size(); ++i) {
        const Param *p = cParam(t, i);
        if (p && p->kind == Param::Tensor && !tensors)
            continue;
        if (p && p->kind == Param::Tensor)
            s += "static_cast<" + std::string(t.info->written[i] ? "" : "const ") +
                 headerType(p->buffer->dtype) + " *>(" + t.sig.names[i] + ".data_ptr())";
        else
            s +=
                p ? "static_cast<" + headerType(p->var->dtype) + ">(" + t.sig.names[i] + ")" : t.sig.names[i];
        s += ", ";
    }
    return s;
}

/// The T.alloc_global workspaces as one byte tensor from PyTorch's allocator on the current stream (the
/// caching allocator, whose blocks a CUDA graph's capture takes from the graph's pool), for
/// `cFunction`_with_workspace.
std::string printWorkspace(const TorchOp &t) {
    std::string sizes = printCArguments(t, false);
    sizes = sizes.substr(0, sizes.size() >= 2 ? sizes.size() - 2 : 0);
    return "    const size_t tilec_workspace_bytes = " + t.cFunction + "_workspace_bytes(" + sizes + ");\n" +
           "    const at::Tensor tilec_workspace = at::empty({static_cast<int64_t>(tilec_workspace_bytes)}, "
           "at::TensorOptions().dtype(at::ScalarType::Byte).device(tilec_device));\n";
}

std::string printCudaImpl(const TorchOp &t, NameTable &names, const CodegenOptions &o) {
    std::string s = cxxSignature(t, "tilec_torch_" + t.name + "_cuda") + " {\n";
    s += printScalarChecks(t);
    s += printChecks(t, names, SizeStyle{});
    s += "    const at::Device tilec_device = " + deviceOf(t, true) + ";\n";
    s += printOutputs(t, names, "tilec_device", SizeStyle{});
    s += "    const c10::cuda::CUDAGuard tilec_guard(tilec_device);\n";
    if (t.workspace)
        s += printWorkspace(t) + "    const tilec_status tilec_result = " + t.cFunction + "_with_workspace(" +
             printCArguments(t) + "tilec_workspace.data_ptr(), tilec_workspace_bytes, ";
    else
        s += "    const tilec_status tilec_result = " + t.cFunction + "(" + printCArguments(t);
    s += "at::cuda::getCurrentCUDAStream(tilec_device.index()).stream());\n";
    s += "    TORCH_CHECK(tilec_result == TILEC_SUCCESS, " + quoted(t.op + ": ") +
         ", tilec_torch_failure(tilec_result, " + "tilec_torch_" + t.name + "_names, " +
         rt(o, "last_error_argument") + "(), " + rt(o, "last_cuda_error") + "()));\n";
    return s + printReturn(t) + "}\n";
}

std::string printMetaImpl(const TorchOp &t, NameTable &names) {
    std::string s = cxxSignature(t, "tilec_torch_" + t.name + "_meta") + " {\n";
    const SizeStyle st{false, symbolicMeta(t)};
    const Kernel &k = *t.info->kernel;
    for (size_t i = 0; i < k.params.size(); ++i) // the values do not change the outputs' shapes
        if (k.params[i].argument() && k.params[i].kind == Param::Scalar)
            s += "    (void)" + t.sig.names[i] + ";\n";
    s += printChecks(t, names, st);
    s += printOutputs(t, names, deviceOf(t, false), st);
    return s + printReturn(t) + "}\n";
}

} // namespace

std::string printTorch(const std::vector<KernelInfo> &kernels, const CodegenOptions &o,
                       DiagnosticEngine &diag) {
    std::string ns = o.torchNamespace.empty() ? "tilec" : o.torchNamespace;
    const std::string header = includedHeader(o);
    std::string s = "// Generated by tilec from " + o.sourceName + "; do not edit.\n";
    s += "// PyTorch operators " + ns + "::NAME for the kernels of " + header +
         ": compile as C++17 (C++20 for\n";
    s += "// PyTorch 2.10 on) against LibTorch with CUDA, link with the kernels' .cu (or .o); load from "
         "Python with\n// torch.ops.load_library.\n";
    s += "#include " + quoted(header) + "\n\n";
    s += "#include <ATen/ATen.h>\n#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n"
         "#include <torch/library.h>\n\n#include <string>\n#include <tuple>\n\n";
    s += printFailurePreamble(o, "tilec_torch_failure");
    std::vector<TorchOp> ops;
    std::vector<NameTable> tables;
    tables.reserve(kernels.size());
    for (auto &e : exportedOps(kernels, o)) {
        tables.push_back(opNames());
        NameTable &names = tables.back();
        ops.push_back(makeOp(e, o, names, diag));
        const TorchOp &t = ops.back();
        s += "// ---- " + t.op + ": " + schema(t) + " ----\n";
        s += printNames(t, "tilec_torch_" + t.name + "_names") + "\n";

        s += printCudaImpl(t, names, o) + "\n" + printMetaImpl(t, names) + "\n";
    }
    s += "} // namespace\n\n";
    s += "TORCH_LIBRARY_FRAGMENT(" + ns + ", m) {\n";
    for (auto &t : ops)
        s += "    m.def(" + quoted(schema(t)) + ");\n";
    s += "}\n\nTORCH_LIBRARY_IMPL(" + ns + ", CUDA, m) {\n";
    for (auto &t : ops)
        s += "    m.impl(" + quoted(t.name) + ", &tilec_torch_" + t.name + "_cuda);\n";
    s += "}\n\nTORCH_LIBRARY_IMPL(" + ns + ", Meta, m) {\n";
    for (auto &t : ops)
        s += "    m.impl(" + quoted(t.name) + ", &tilec_torch_" + t.name + "_meta);\n";
    return s + "}\n";
}

} // namespace tilec::codegen
