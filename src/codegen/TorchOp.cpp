/// \file
/// The sorting of an exported kernel's C parameters into a framework operator's arguments and results
/// (TorchOp.h), shared by `--emit=torch` and `--emit=xla-ffi`.
#include "codegen/TorchOp.h"

#include "tilec/IRPrinter.h"

#include <algorithm>

namespace tilec::codegen {

using namespace ir;

namespace {

const char *const kPreamble = R"tl(namespace {

/// The message of a failed launch: the status, the argument it names, the CUDA error behind it.
template <int N>
std::string tilec_failure(tilec_status status, const char *const (&names)[N], int argument, cudaError_t cuda) {
    std::string s = tilec_status_string(status);
    if (argument >= 0 && argument < N && (status == TILEC_ERROR_NULL_POINTER || status == TILEC_ERROR_MISALIGNED || status == TILEC_ERROR_BAD_SIZE ||
                                              status == TILEC_ERROR_OVERLAP))
        s += std::string(" (argument '") + names[argument] + "')";
    if (status == TILEC_ERROR_CUDA) s += std::string(": ") + cudaGetErrorString(cuda);
    return s;
}

)tl";

} // namespace

bool isOutput(const Kernel &k, size_t i) {
    return std::find(k.outputs.begin(), k.outputs.end(), i) != k.outputs.end();
}

const Param *cParam(const TorchOp &t, size_t i) {
    const size_t arguments = t.sig.names.size() - t.dynamicArg.size();
    return i < arguments ? &paramAt(t, i) : nullptr;
}

bool bindsDynamic(const TorchOp &t, size_t i, size_t r) {
    for (size_t j = 0; j < t.dynamicArg.size(); ++j)
        if (!t.dynamicArg[j] && t.dynamicFrom[j] == std::make_pair(i, r))
            return true;
    return false;
}

TorchOp makeOp(const ExportedOp &e, const CodegenOptions &o, NameTable &names, DiagnosticEngine &diag) {
    const KernelInfo &info = *e.info;
    const Kernel &k = *info.kernel;
    TorchOp t;
    t.info = &info;
    t.name = e.name;
    t.op = (o.torchNamespace.empty() ? "tilec" : o.torchNamespace) + "::" + e.name;
    t.cFunction = o.prefix + e.name;
    t.sig = signature(info, names, true);
    t.workspace = e.workspace;
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

std::string shapeText(const BufferNode &b) {
    std::string s = std::string(b.dtype.name()) + "[";
    for (size_t i = 0; i < b.shape.size(); ++i)
        s += (i ? ", " : "") + print(b.shape[i]);
    return s + "]";
}

std::vector<ExportedOp> exportedOps(const std::vector<KernelInfo> &kernels, const CodegenOptions &o) {
    auto workspaceOf = [&](const std::string &kernel) {
        for (auto &info : kernels)
            if (info.kernel->part == 0 && info.kernel->name == kernel && hasWorkspaces(*info.kernel))
                return true;
        return false;
    };
    std::vector<ExportedOp> exported;
    for (auto &info : kernels) {
        if (info.kernel->part != 0 || info.variant != 0)
            continue;
        bool chosen = false;
        for (auto &[dispatcher, cfgs] : o.torchDispatchers) {
            chosen |= std::find(cfgs.begin(), cfgs.end(), info.kernel->name) != cfgs.end();
            if (cfgs.empty() || cfgs.front() != info.kernel->name)
                continue;
            // The dispatcher has NAME_with_workspace where any of its kernels has a workspace.
            bool workspace = false;
            for (auto &c : cfgs)
                workspace |= workspaceOf(c);
            exported.push_back({&info, dispatcher, workspace});
        }
        if (!chosen)
            exported.push_back({&info, info.kernel->name, hasWorkspaces(*info.kernel)});
    }
    return exported;
}

NameTable opNames() {
    NameTable names = launcherNames();
    for (const char *r : {"at", "c10", "std", "torch", "xla", "tilec_device", "tilec_guard", "tilec_result",
                          "tilec_stream", "tilec_workspace", "tilec_workspace_bytes", "tilec_workspace_result"})
        names.reserve(r);
    return names;
}

std::string printNames(const TorchOp &t, const std::string &var) {
    std::string s = "const char *const " + var + "[] = {";
    for (size_t i = 0; i < t.sig.names.size(); ++i)
        s += (i ? ", " : "") + quoted(t.sig.names[i]);
    return s + (t.workspace ? ", \"workspace\", \"workspace_bytes\"};\n" : "};\n");
}

std::string includedHeader(const CodegenOptions &o) {
    std::string header =
        o.headerName.empty() ? o.sourceName.substr(0, o.sourceName.find_last_of('.')) + ".h" : o.headerName;
    if (auto slash = header.find_last_of('/'); slash != std::string::npos)
        header = header.substr(slash + 1);
    return header;
}

std::string printFailurePreamble(const CodegenOptions &o, const std::string &failure) {
    std::string preamble = kPreamble; // the runtime's functions carry the prefix
    preamble.replace(preamble.find("tilec_status_string("), 19, rt(o, "status_string"));
    preamble.replace(preamble.find("tilec_failure"), 13, failure);
    return preamble + printFloorDivision("[[maybe_unused]] ") + "\n";
}

} // namespace tilec::codegen
