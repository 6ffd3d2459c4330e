/// \file
/// What the header says about a tensor pointer's alignment: the launcher's chain of variants decides it, not
/// the preferred variant alone. A variant's rules (a TMA map's 16-byte base, an assumption of wider transfers)
/// pass an ill-aligned pointer on to the next variant; its checks (vector accesses) refuse it with
/// TILEC_ERROR_MISALIGNED. launchAlignments() walks that chain (CodegenHost.cpp's printVariantLaunches) once per
/// device the file has code for, so the documented requirement is exactly what a launch accepts.
#include "codegen/CodegenHostParts.h"
#include "codegen/CodegenImpl.h"

#include <algorithm>
#include <set>

namespace tilec::codegen {

using namespace ir;

namespace {

/// Per parameter: the alignment variant v's launch rules want of the tensor's base pointer (0: none).
std::vector<int> ruleAlignments(const KernelInfo &v) {
    const Kernel &k = *v.kernel;
    std::vector<int> r(k.params.size(), 0);
    for (auto &m : k.tensorMaps) {
        int &a = r[paramOf(k, m.tensor)];
        a = std::max(a, (int)TensorMap::kAlignment);
    }
    for (auto &as : k.assumptions) {
        if (k.addressOf(as.tensor.get())) continue; // a T.make_tensor address: no argument (CodegenHost.cpp)
        int &a = r[paramOf(k, as.tensor)];
        a = std::max(a, (int)as.bytes);
    }
    return r;
}

bool meets(int pointerAlignment, int required) { return required <= 1 || pointerAlignment % required == 0; }

} // namespace

void launchAlignments(std::vector<KernelInfo> &infos, size_t first, size_t end) {
    std::vector<std::vector<int>> rules;
    std::set<int> devices;
    for (size_t v = first; v < end; ++v) {
        rules.push_back(ruleAlignments(infos[v]));
        for (auto &t : infos[v].targets) devices.insert(t.sm);
    }
    const size_t params = infos[first].kernel->params.size();
    std::vector<int> accepted(params, 0), fastest(params, 0);
    for (size_t i = 0; i < params; ++i) {
        if (infos[first].kernel->params[i].kind != Param::Tensor) continue;
        for (int sm : devices) {
            // The least power of two a pointer may be aligned to on this device (every other argument suiting
            // every rule): the first variant whose rules it meets decides, and its checks must pass.
            int least = 0;
            for (int a = 1; a <= 256 && !least; a *= 2)
                for (size_t v = first; v < end; ++v) {
                    const KernelInfo &info = infos[v];
                    if (!runsOnDevice(info, sm) || !meets(a, rules[v - first][i])) continue;
                    if (meets(a, info.alignment[i])) least = a;
                    break;
                }
            accepted[i] = std::max(accepted[i], least);
            for (size_t v = first; v < end; ++v)
                if (runsOnDevice(infos[v], sm)) {
                    fastest[i] = std::max({fastest[i], rules[v - first][i], infos[v].alignment[i]});
                    break;
                }
        }
    }
    for (size_t v = first; v < end; ++v) infos[v].acceptedAlignment = accepted, infos[v].fastestAlignment = fastest;
}

} // namespace tilec::codegen
