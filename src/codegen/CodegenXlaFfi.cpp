/// \file
/// `--emit=xla-ffi`: a C++ file with an XLA FFI handler per exported kernel, for JAX (docs/INTERFACE.md,
/// "PyTorch operators"). Each handler binds the kernel's operands, results and attributes as `--emit=torch`
/// sorts them (TorchOp.h), checks their dtypes and shapes, and calls the C launch function on XLA's stream; a
/// T.alloc_global workspace is one more result, last, which XLA allocates with the others (never XLA's
/// ScratchAllocator, which XLA's GPU runtime does not back for custom calls), so every handler can be declared
/// command-buffer compatible.
#include "codegen/TorchOp.h"

#include "tilec/IRPrinter.h"

#include <algorithm>
#include <map>

namespace tilec::codegen {

using namespace ir;

namespace {

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

/// The arguments (or, with `types`, the parameters) of the C function's NAME_workspace_bytes: its scalars and
/// T.dynamic sizes.
std::string workspaceSizes(const TorchOp &t, bool types) {
    std::string s;
    for (size_t i = 0; i < t.sig.names.size(); ++i)
        if (const Param *p = cParam(t, i); !p || p->kind == Param::Scalar)
            s += (s.empty() ? "" : ", ") + (types ? (p ? headerType(p->var->dtype) : "int64_t") + " " : "") +
                 t.sig.names[i];
    return s.empty() && types ? "void" : s;
}

/// The workspace in the handler: the last result, a buffer XLA allocates with the others (so it is valid under
/// jit and in a command buffer, and no allocation happens while the handler runs), of the bytes
/// tilec_xla_NAME_workspace_bytes names: NAME_workspace_bytes and 255 more, since XLA aligns a buffer to less
/// than the 256 bytes NAME_with_workspace needs, so the handler aligns its start up.
std::string printWorkspace(const TorchOp &t, const std::string &op) {
    std::string s = "    const size_t tilec_workspace_bytes = " + t.cFunction + "_workspace_bytes(" +
                    workspaceSizes(t, false) + ");\n";
    s += "    if (tilec_workspace_bytes > 0 && tilec_workspace_result->size_bytes() < tilec_workspace_bytes + 255)\n";
    s += "        return xla::ffi::Error::InvalidArgument(std::string(" +
         quoted(op + "the workspace result (the last) must have at least ") + ") + std::to_string(tilec_workspace_bytes + 255) + " +
         quoted(" bytes (tilec_xla_" + t.name + "_workspace_bytes)") + ");\n";
    s += "    void *const tilec_workspace = tilec_workspace_bytes == 0 ? nullptr : reinterpret_cast<void *>(\n";
    s += "        (reinterpret_cast<uintptr_t>(tilec_workspace_result->untyped_data()) + 255) & ~static_cast<uintptr_t>(255));\n";
    return s;
}

/// `tilec_xla_NAME_workspace_bytes`: the bytes of the workspace result the caller asks for (JAX: a uint8 array
/// of that length, the last of ffi_call's result_shape_dtypes), from the same sizes and scalars.
std::string printWorkspaceQuery(const TorchOp &t) {
    return "// The bytes of tilec_xla_" + t.name + "'s last result, its workspace (a uint8 array the caller drops):\n"
           "// those of " + t.cFunction + "_workspace_bytes and 255 more, which the handler aligns to 256 bytes.\n"
           "extern \"C\" size_t tilec_xla_" + t.name + "_workspace_bytes(" + workspaceSizes(t, true) + ") {\n"
           "    const size_t tilec_workspace_bytes = " + t.cFunction + "_workspace_bytes(" + workspaceSizes(t, false) +
           ");\n    return tilec_workspace_bytes == 0 ? 0 : tilec_workspace_bytes + 255;\n}\n";
}

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
    if (t.workspace) // the last result: the workspace, which the caller asks for and drops (printWorkspace)
        params.push_back("xla::ffi::Result<xla::ffi::AnyBuffer> tilec_workspace_result"),
            binds.push_back(".Ret<xla::ffi::AnyBuffer>()");
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
            if (isOutput(k, i) || !bindsDynamic(t, i, r))
                body += fail(x + "dimensions()[" + std::to_string(r) + "] != " + hp.print(b.shape[r], 10),
                             "std::string(" +
                                 quoted(op + "'" + t.sig.names[i] + "' must have shape " + shapeText(b) +
                                        ": dimension " + std::to_string(r) + " must be ") +
                                 ") + std::to_string(" + hp.print(b.shape[r]) + ")");
    }
    std::string fn = "tilec_xla_" + t.name;
    std::string s = printNames(t, fn + "_names") + "\nxla::ffi::Error " + fn + "_impl(";
    for (size_t p = 0; p < params.size(); ++p)
        s += (p ? ", " : "") + params[p];
    s += ") {\n" + rets + body;
    if (t.workspace)
        s += printWorkspace(t, op);
    s += "    const tilec_status tilec_result = " + t.cFunction + (t.workspace ? "_with_workspace(" : "(");
    for (size_t i = 0; i < t.sig.names.size(); ++i) {
        const Param *p = cParam(t, i);
        if (p && p->kind == Param::Tensor)
            s += "static_cast<" + std::string(t.info->written[i] ? "" : "const ") +
                 headerType(p->buffer->dtype) + " *>(" + pointer[i] + ")";
        else
            s += t.sig.names[i];
        s += ", ";
    }
    s += t.workspace ? "tilec_workspace, tilec_workspace_bytes, tilec_stream);\n" : "tilec_stream);\n";
    s += "    if (tilec_result != TILEC_SUCCESS) return xla::ffi::Error::Internal(" + quoted(op) +
         " + tilec_xla_failure(tilec_result, " + fn + "_names, " + rt(o, "last_error_argument") + "(), " +
         rt(o, "last_cuda_error") + "()));\n    return xla::ffi::Error::Success();\n}\n";
    // Command-buffer compatible (XLA may capture it into a CUDA graph): it only launches kernels on XLA's
    // stream, in buffers XLA passes (the workspace too), and never waits on the stream.
    s += "XLA_FFI_DEFINE_HANDLER_SYMBOL(" + fn + ", " + fn + "_impl, xla::ffi::Ffi::Bind()";
    for (auto &b : binds)
        s += "\n                                  " + b;
    s += ",\n                              {xla::ffi::Traits::kCmdBufferCompatible});\n";
    return t.workspace ? s + printWorkspaceQuery(t) : s;
}

} // namespace

std::string printXlaFfi(const std::vector<KernelInfo> &kernels, const CodegenOptions &o,
                        DiagnosticEngine &diag) {
    const std::string header = includedHeader(o);
    std::string s = "// Generated by tilec from " + o.sourceName + "; do not edit.\n";
    s += "// XLA FFI handlers tilec_xla_NAME for the kernels of " + header +
         " (JAX: jax.ffi.register_ffi_target(\"NAME\",\n";
    s += "// jax.ffi.pycapsule(lib.tilec_xla_NAME), platform=\"CUDA\")): compile as C++17 with XLA's FFI "
         "headers\n";
    s += "// (jax.ffi.include_dir()) and link with the kernels' .cu (or .o). A kernel with a T.alloc_global "
         "workspace has\n// one more result, the last: a uint8 array of tilec_xla_NAME_workspace_bytes(...) "
         "elements, which the\n// caller drops (docs/INTERFACE.md).\n";
    s += "#include " + quoted(header) +
         "\n\n#include \"xla/ffi/api/ffi.h\"\n\n#include <cstdint>\n#include <string>\n\n";
    s += printFailurePreamble(o, "tilec_xla_failure");
    std::string symbols;
    for (auto &e : exportedOps(kernels, o)) {
        NameTable names = opNames();
        TorchOp t = makeOp(e, o, names, diag);
        std::string h = printXlaHandler(t, names, o);
        size_t at = h.find("XLA_FFI_DEFINE_HANDLER_SYMBOL(");
        s += "// ---- " + t.op + " ----\n" + h.substr(0, at) + "\n";
        symbols += h.substr(at);
    }
    return s + "} // namespace\n\n" + symbols;
}

} // namespace tilec::codegen
