/// \file
/// The targets tilec knows and their per-block limits: the one list of them.
#include "tilec/Target.h"

namespace tilec {

namespace {

Target row(const char *name, const char *gpu, int sm, bool archSpecific, int maxSharedPerBlock, int numSms,
           int sharedPerSM, int threadsPerSM = 2048, int blocksPerSM = 32) {
    Target t;
    t.name = name;
    t.gpuName = gpu;
    t.sm = sm;
    t.archSpecific = archSpecific;
    t.maxSharedPerBlock = maxSharedPerBlock;
    t.numSms = numSms;
    t.sharedPerSM = sharedPerSM;
    t.threadsPerSM = threadsPerSM;
    t.blocksPerSM = blocksPerSM;
    return t;
}

} // namespace

const std::vector<Target> &Target::known() {
    static const std::vector<Target> table = {
        // The device names are what torch.cuda.get_device_name() reports on those GPUs.
        row("sm_80", "NVIDIA A100-SXM4-80GB", 80, false, 166912, 108, 164 * 1024),
        row("sm_86", "NVIDIA A10", 86, false, 101376, 72, 100 * 1024, 1536, 16),
        row("sm_89", "NVIDIA L40S", 89, false, 101376, 142, 100 * 1024, 1536, 24),
        row("sm_90", "NVIDIA H100 80GB HBM3", 90, false, 232448, 132, 228 * 1024),
        row("sm_90a", "NVIDIA H100 80GB HBM3", 90, true, 232448, 132, 228 * 1024),
    };
    return table;
}

const Target &Target::byDefault() {
    static const Target t = *parse(kDefaultName);
    return t;
}

std::optional<Target> Target::parse(std::string_view name) {
    for (auto &t : known())
        if (t.name == name) return t;
    return std::nullopt;
}

std::string Target::knownNames() {
    std::string s;
    for (auto &t : known()) s += (s.empty() ? "" : ", ") + t.name;
    return s;
}

std::optional<Target> Target::forDevice(int cc) {
    const auto &ts = known();
    for (auto t = ts.rbegin(); t != ts.rend(); ++t)
        if (t->sm == cc) return *t; // newest first: sm_90a before sm_90
    for (auto t = ts.rbegin(); t != ts.rend(); ++t)
        if (t->sm < cc && !t->archSpecific) return *t;
    return std::nullopt;
}

} // namespace tilec
