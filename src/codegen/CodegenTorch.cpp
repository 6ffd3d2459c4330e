/// \file
/// `--emit=torch`: a C++ file that registers each exported kernel as a PyTorch operator (docs/INTERFACE.md,
/// "PyTorch operators"); and, at the end, `--emit=xla-ffi`'s XLA FFI handlers, which share its parameter
/// sorting. The operator's CUDA implementation checks every tensor against what the header declares (device,
/// dtype, rank, the constant sizes and the agreement of the T.dynamic ones, contiguity), allocates the
/// outputs TileLang's `out_idx` names (ir::Kernel::outputs), calls the C launch function on the current CUDA
/// stream and turns a failed status into a c10::Error; its Meta implementation makes the same shape checks
/// and returns the outputs' shapes, so that torch.compile traces it.
///
/// The C function's parameters are read from signature() (CodegenImpl.h), the one list the header and the
/// launchers print, so the operator passes its arguments in the order the C function takes them.
#include "codegen/CodegenHostParts.h"

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

/// XLA FFI's name of a dtype (xla::ffi::DataType).
std::string xlaType(DType t) {
    switch (t.kind) {
    case DType::Bool:
        return "PRED";
    case DType::Int8:
        return "S8";
    case DType::Int16:
        return "S16";
    case DType::Int32:
        return "S32";
    case DType::Int64:
        return "S64";
    case DType::UInt8:
        return "U8";
    case DType::UInt16:
        return "U16";
    case DType::UInt32:
        return "U32";
    case DType::UInt64:
        return "U64";
    case DType::Float16:
        return "F16";
    case DType::BFloat16:
        return "BF16";
    case DType::Float32:
        return "F32";
    case DType::Float64:
        return "F64";
    case DType::Float8E4M3:
        return "F8E4M3FN";
    case DType::Float8E5M2:
        return "F8E5M2";
    case DType::Void:
        break;
    }
    return "INVALID";
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

/// One operator: the kernel's C parameters (signature()) sorted into the operator's arguments and results.
struct TorchOp {
    const KernelInfo *info = nullptr;
    std::string op;              ///< `ns::name` (messages)
    std::string name;            ///< the schema's name (the kernel's name without the prefix)
    std::string cFunction;       ///< the C function it calls (the kernel's, or a --tuned dispatcher's)
    Signature sig;               ///< the exported C function's parameters
    std::vector<size_t> tensors; ///< C parameter positions of the tensor arguments (not outputs), in order
    std::vector<size_t> outputs; ///< of the outputs (out_idx)
    /// Per T.dynamic symbol: the tensor argument and dimension that gives it, or none (then an int argument).
    std::vector<std::pair<size_t, size_t>> dynamicFrom;
    std::vector<bool> dynamicArg;
};

const Param &paramAt(const TorchOp &t, size_t i) {
    return t.info->kernel->params[i];
}
bool isOutput(const Kernel &k, size_t i) {
    return std::find(k.outputs.begin(), k.outputs.end(), i) != k.outputs.end();
}

/// Sorts the C parameters; reports what an operator cannot express (an error at the parameter).
TorchOp makeOp(const KernelInfo &info, const std::string &name, const CodegenOptions &o, NameTable &names,
               DiagnosticEngine &diag) {
    const Kernel &k = *info.kernel;
    TorchOp t;
    t.info = &info;
    t.name = name;
    t.op = (o.torchNamespace.empty() ? "tilec" : o.torchNamespace) + "::" + name;
    t.cFunction = o.prefix + name;
    t.sig = signature(info, names, true);
    for (size_t i = 0; i < k.params.size(); ++i) {
        const Param &p = k.params[i];
        if (!p.argument())
            continue; // workspaces and views follow the arguments: the C function makes them
        if (p.kind == Param::Scalar) {
            if (isNarrowFloat(p.var->dtype))
                diag.error(p.loc, "--emit=torch: scalar parameter '" + p.var->name + "' of type " +
                                      std::string(p.var->dtype.name()) + " has no PyTorch schema type");
            continue;
        }
        if (k.layoutOf(p.buffer.get()))
            diag.error(
                p.loc,
                "--emit=torch: tensor '" + p.buffer->name +
                    "' is not row-major (T.StridedTensor or T.annotate_layout); a PyTorch operator for it "
                    "is not supported yet");
        (isOutput(k, i) ? t.outputs : t.tensors).push_back(i);
    }
    // A T.dynamic size is read off the first tensor argument that has it as a whole dimension; one that only
    // outputs or compound dimensions have is an int argument of the operator.
    for (auto &d : k.dynamicSymbols) {
        bool found = false;
        for (size_t i : t.tensors) {
            auto &shape = paramAt(t, i).buffer->shape;
            for (size_t r = 0; r < shape.size() && !found; ++r)
                if (as<VarNode>(shape[r]) == d.get())
                    t.dynamicFrom.push_back({i, r}), found = true;
            if (found)
                break;
        }
        if (!found)
            t.dynamicFrom.push_back({0, 0});
        t.dynamicArg.push_back(!found);
    }
    return t;
}

/// The C parameter position of T.dynamic symbol j.
size_t dynamicPos(const TorchOp &t, size_t j) {
    return t.sig.dynamicBase + j;
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

std::string shapeText(const BufferNode &b) {
    std::string s = std::string(b.dtype.name()) + "[";
    for (size_t i = 0; i < b.shape.size(); ++i)
        s += (i ? ", " : "") + print(b.shape[i]);
    return s + "]";
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
            bool binds = false;
            for (size_t j = 0; j < t.dynamicArg.size(); ++j)
                binds |= !t.dynamicArg[j] && t.dynamicFrom[j] == std::make_pair(i, r);
            if (binds)
                continue;
            std::string want = st.value(hp.print(b.shape[r]));
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

std::string printCudaImpl(const TorchOp &t, NameTable &names, const CodegenOptions &o) {
    const Kernel &k = *t.info->kernel;
    std::string s = cxxSignature(t, "tilec_torch_" + t.name + "_cuda") + " {\n";
    s += printScalarChecks(t);
    s += printChecks(t, names, SizeStyle{});
    s += "    const at::Device tilec_device = " + deviceOf(t, true) + ";\n";
    s += printOutputs(t, names, "tilec_device", SizeStyle{});
    s += "    const c10::cuda::CUDAGuard tilec_guard(tilec_device);\n";
    s += "    const tilec_status tilec_result = " + t.cFunction + "(";
    for (size_t i = 0; i < t.sig.names.size(); ++i) {
        std::string a;
        if (i < k.params.size() && k.params[i].kind == Param::Tensor)
            a = "static_cast<" + std::string(t.info->written[i] ? "" : "const ") +
                headerType(k.params[i].buffer->dtype) + " *>(" + t.sig.names[i] + ".data_ptr())";
        else if (i < k.params.size())
            a = "static_cast<" + headerType(k.params[i].var->dtype) + ">(" + t.sig.names[i] + ")";
        else
            a = t.sig.names[i];
        s += a + ", ";
    }
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

const char *const kPreamble = R"tl(namespace {

/// The message of a failed launch: the status, the argument it names, the CUDA error behind it.
template <int N>
std::string tilec_torch_failure(tilec_status status, const char *const (&names)[N], int argument, cudaError_t cuda) {
    std::string s = tilec_status_string(status);
    if (argument >= 0 && argument < N && (status == TILEC_ERROR_NULL_POINTER || status == TILEC_ERROR_MISALIGNED || status == TILEC_ERROR_BAD_SIZE))
        s += std::string(" (argument '") + names[argument] + "')";
    if (status == TILEC_ERROR_CUDA) s += std::string(": ") + cudaGetErrorString(cuda);
    return s;
}

)tl";

/// One XLA FFI handler: the kernel's tensors the kernel only reads are operands (Arg), its out_idx outputs
/// are results (Ret), and a tensor it writes that is no output is both, the result aliasing the operand (JAX:
/// input_output_aliases), which the handler checks, since the kernel may read what it writes; scalars and the
/// T.dynamic sizes no operand gives are attributes.
std::string printXlaHandler(const TorchOp &t, NameTable &names, const CodegenOptions &o) {
    const Kernel &k = *t.info->kernel;
    const std::string op = t.op + ": ";
    std::vector<std::string> params{"cudaStream_t tilec_stream"},
        binds{".Ctx<xla::ffi::PlatformStream<cudaStream_t>>()"};
    std::string body, rets;
    std::map<size_t, std::string> pointer; // C parameter -> the buffer the C function gets
    for (size_t i : t.tensors) {
        params.push_back("xla::ffi::AnyBuffer " + t.sig.names[i]);
        binds.push_back(".Arg<xla::ffi::AnyBuffer>()");
        pointer[i] = t.sig.names[i] + ".untyped_data()";
    }
    for (size_t j = 0; j < t.dynamicArg.size(); ++j)
        if (t.dynamicArg[j]) {
            params.push_back("int64_t " + t.sig.names[dynamicPos(t, j)]);
            binds.push_back(".Attr<int64_t>(" + quoted(t.sig.names[dynamicPos(t, j)]) + ")");
        }
    for (size_t i = 0; i < k.params.size(); ++i)
        if (k.params[i].argument() && k.params[i].kind == Param::Scalar) {
            params.push_back(headerType(k.params[i].var->dtype) + " " + t.sig.names[i]);
            binds.push_back(".Attr<" + headerType(k.params[i].var->dtype) + ">(" + quoted(t.sig.names[i]) +
                            ")");
        }
    std::vector<size_t> results = t.outputs;
    for (size_t i : t.tensors)
        if (t.info->written[i])
            results.push_back(i);
    std::sort(results.begin(), results.end());
    for (size_t i : results) {
        const std::string r = t.sig.names[i] + "_result";
        params.push_back("xla::ffi::Result<xla::ffi::AnyBuffer> " + r);
        binds.push_back(".Ret<xla::ffi::AnyBuffer>()");
        if (!isOutput(k, i))
            rets += "    if (" + r + "->untyped_data() != " + t.sig.names[i] +
                    ".untyped_data()) return xla::ffi::Error::InvalidArgument(" +
                    quoted(op + "result '" + t.sig.names[i] + "' must alias operand '" + t.sig.names[i] +
                           "' (input_output_aliases): the kernel writes it in place") +
                    ");\n";
        pointer[i] = r + "->untyped_data()";
    }
    auto fail = [&](const std::string &cond, const std::string &msg) {
        return "    if (" + cond + ") return xla::ffi::Error::InvalidArgument(" + msg + ");\n";
    };
    // Every tensor's dtype, rank and sizes (an output's too: the caller declared its shape).
    std::vector<size_t> all = t.tensors;
    all.insert(all.end(), t.outputs.begin(), t.outputs.end());
    for (size_t i : all) {
        const BufferNode &b = *paramAt(t, i).buffer;
        const std::string x = isOutput(k, i) ? t.sig.names[i] + "_result->" : t.sig.names[i] + ".";
        body += fail(x + "element_type() != xla::ffi::DataType::" + xlaType(b.dtype),
                     quoted(op + "'" + t.sig.names[i] + "' must be " + std::string(b.dtype.name())));
        body += fail(x + "dimensions().size() != " + std::to_string(b.shape.size()),
                     quoted(op + "'" + t.sig.names[i] + "' must have shape " + shapeText(b)));
    }
    for (size_t j = 0; j < t.dynamicArg.size(); ++j)
        if (!t.dynamicArg[j])
            body += "    const int64_t " + t.sig.names[dynamicPos(t, j)] + " = " +
                    t.sig.names[t.dynamicFrom[j].first] + ".dimensions()[" +
                    std::to_string(t.dynamicFrom[j].second) + "];\n";
    ExprPrinter hp(names, true);
    for (size_t i : all) {
        const BufferNode &b = *paramAt(t, i).buffer;
        const std::string x = isOutput(k, i) ? t.sig.names[i] + "_result->" : t.sig.names[i] + ".";
        for (size_t r = 0; r < b.shape.size(); ++r)
            if (!(!isOutput(k, i) && [&] {
                    for (size_t j = 0; j < t.dynamicArg.size(); ++j)
                        if (!t.dynamicArg[j] && t.dynamicFrom[j] == std::make_pair(i, r))
                            return true;
                    return false;
                }()))
                body += fail(x + "dimensions()[" + std::to_string(r) + "] != " + hp.print(b.shape[r]),
                             "std::string(" +
                                 quoted(op + "'" + t.sig.names[i] + "' must have shape " + shapeText(b) +
                                        ": dimension " + std::to_string(r) + " must be ") +
                                 ") + std::to_string(" + hp.print(b.shape[r]) + ")");
    }
    std::string fn = "tilec_xla_" + t.name;
    std::string s = "const char *const " + fn + "_names[] = {";
    for (size_t i = 0; i < t.sig.names.size(); ++i)
        s += (i ? ", " : "") + quoted(t.sig.names[i]);
    s += "};\n\nxla::ffi::Error " + fn + "_impl(";
    for (size_t p = 0; p < params.size(); ++p)
        s += (p ? ", " : "") + params[p];
    s += ") {\n" + rets + body;
    s += "    const tilec_status tilec_result = " + t.cFunction + "(";
    for (size_t i = 0; i < t.sig.names.size(); ++i) {
        if (i < k.params.size() && k.params[i].kind == Param::Tensor)
            s += "static_cast<" + std::string(t.info->written[i] ? "" : "const ") +
                 headerType(k.params[i].buffer->dtype) + " *>(" + pointer[i] + ")";
        else
            s += t.sig.names[i];
        s += ", ";
    }
    s += "tilec_stream);\n";
    s += "    if (tilec_result != TILEC_SUCCESS) return xla::ffi::Error::Internal(" + quoted(op) +
         " + tilec_xla_failure(tilec_result, " + fn + "_names, " + rt(o, "last_error_argument") + "(), " +
         rt(o, "last_cuda_error") + "()));\n    return xla::ffi::Error::Success();\n}\n";
    s += "XLA_FFI_DEFINE_HANDLER_SYMBOL(" + fn + ", " + fn + "_impl, xla::ffi::Ffi::Bind()";
    for (auto &b : binds)
        s += "\n                                  " + b;
    return s + ");\n";
}

/// One operator per exported function, with its name: a --tuned dispatcher's takes the parameters of its
/// first kernel, and the kernels it chooses among get none.
std::vector<std::pair<const KernelInfo *, std::string>> exportedOps(const std::vector<KernelInfo> &kernels,
                                                                    const CodegenOptions &o) {
    std::vector<std::pair<const KernelInfo *, std::string>> exported;
    for (auto &info : kernels) {
        if (info.kernel->part != 0 || info.variant != 0)
            continue;
        bool chosen = false;
        for (auto &[dispatcher, cfgs] : o.torchDispatchers) {
            chosen |= std::find(cfgs.begin(), cfgs.end(), info.kernel->name) != cfgs.end();
            if (!cfgs.empty() && cfgs.front() == info.kernel->name)
                exported.push_back({&info, dispatcher});
        }
        if (!chosen)
            exported.push_back({&info, info.kernel->name});
    }
    return exported;
}

/// The names an operator's code uses besides its parameters (a parameter named like one is renamed).
NameTable opNames() {
    NameTable names = launcherNames();
    for (const char *r :
         {"at", "c10", "std", "torch", "xla", "tilec_device", "tilec_guard", "tilec_result", "tilec_stream"})
        names.reserve(r);
    return names;
}

} // namespace

std::string printTorch(const std::vector<KernelInfo> &kernels, const CodegenOptions &o,
                       DiagnosticEngine &diag) {
    std::string ns = o.torchNamespace.empty() ? "tilec" : o.torchNamespace;
    std::string header =
        o.headerName.empty() ? o.sourceName.substr(0, o.sourceName.find_last_of('.')) + ".h" : o.headerName;
    if (auto slash = header.find_last_of('/'); slash != std::string::npos)
        header = header.substr(slash + 1);
    std::string s = "// Generated by tilec from " + o.sourceName + "; do not edit.\n";
    s += "// PyTorch operators " + ns + "::NAME for the kernels of " + header +
         ": compile as C++17 (C++20 for\n";
    s += "// PyTorch 2.10 on) against LibTorch with CUDA, link with the kernels' .cu (or .o); load from "
         "Python with\n// torch.ops.load_library.\n";
    s += "#include " + quoted(header) + "\n\n";
    s += "#include <ATen/ATen.h>\n#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n"
         "#include <torch/library.h>\n\n#include <string>\n#include <tuple>\n\n";
    std::string preamble = kPreamble; // the runtime's functions carry the prefix
    preamble.replace(preamble.find("tilec_status_string("), 19, rt(o, "status_string"));
    s += preamble + printFloorDivision("[[maybe_unused]] ") + "\n";
    std::vector<TorchOp> ops;
    std::vector<NameTable> tables;
    tables.reserve(kernels.size());
    for (auto &[info, name] : exportedOps(kernels, o)) {
        tables.push_back(opNames());
        NameTable &names = tables.back();
        ops.push_back(makeOp(*info, name, o, names, diag));
        const TorchOp &t = ops.back();
        s += "// ---- " + t.op + ": " + schema(t) + " ----\n";
        s += "const char *const tilec_torch_" + t.name + "_names[] = {";
        for (size_t i = 0; i < t.sig.names.size(); ++i)
            s += (i ? ", " : "") + quoted(t.sig.names[i]);
        s += "};\n\n";
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

namespace tilec::codegen {

std::string printXlaFfi(const std::vector<KernelInfo> &kernels, const CodegenOptions &o,
                        DiagnosticEngine &diag) {
    std::string header =
        o.headerName.empty() ? o.sourceName.substr(0, o.sourceName.find_last_of('.')) + ".h" : o.headerName;
    if (auto slash = header.find_last_of('/'); slash != std::string::npos)
        header = header.substr(slash + 1);
    std::string s = "// Generated by tilec from " + o.sourceName + "; do not edit.\n";
    s += "// XLA FFI handlers tilec_xla_NAME for the kernels of " + header +
         " (JAX: jax.ffi.register_ffi_target(\"NAME\",\n";
    s += "// jax.ffi.pycapsule(lib.tilec_xla_NAME), platform=\"CUDA\")): compile as C++17 with XLA's FFI "
         "headers\n";
    s += "// (jax.ffi.include_dir()) and link with the kernels' .cu (or .o).\n";
    s += "#include " + quoted(header) + "\n\n#include \"xla/ffi/api/ffi.h\"\n\n#include <string>\n\n";
    std::string preamble = kPreamble;
    preamble.replace(preamble.find("tilec_status_string("), 19, rt(o, "status_string"));
    preamble.replace(preamble.find("tilec_torch_failure"), 19, "tilec_xla_failure");
    s += preamble + printFloorDivision("[[maybe_unused]] ") + "\n";
    std::string symbols;
    for (auto &[info, name] : exportedOps(kernels, o)) {
        NameTable names = opNames();
        TorchOp t = makeOp(*info, name, o, names, diag);
        std::string h = printXlaHandler(t, names, o);
        size_t at = h.find("XLA_FFI_DEFINE_HANDLER_SYMBOL(");
        s += "// ---- " + t.op + " ----\n" + h.substr(0, at) + "\n";
        symbols += h.substr(at);
    }
    return s + "} // namespace\n\n" + symbols;
}

} // namespace tilec::codegen
