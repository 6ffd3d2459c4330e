/// \file
/// The targets tilec knows and their per-block limits.
#include "tilec/Target.h"

namespace tilec {

std::optional<Target> Target::parse(std::string_view name) {
    Target t;
    t.name = std::string(name);
    if (name == "sm_80") { t.sm = 80; t.archSpecific = false; t.maxSharedPerBlock = 166912; t.numSms = 108; t.sharedPerSM = 164 * 1024; }
    else if (name == "sm_86") { t.sm = 86; t.archSpecific = false; t.maxSharedPerBlock = 101376; t.numSms = 72; t.threadsPerSM = 1536; t.blocksPerSM = 16; t.sharedPerSM = 100 * 1024; }
    else if (name == "sm_89") { t.sm = 89; t.archSpecific = false; t.maxSharedPerBlock = 101376; t.numSms = 142; t.threadsPerSM = 1536; t.blocksPerSM = 24; t.sharedPerSM = 100 * 1024; }
    else if (name == "sm_90") { t.sm = 90; t.archSpecific = false; t.maxSharedPerBlock = 232448; }
    else if (name == "sm_90a") { t.sm = 90; t.archSpecific = true; t.maxSharedPerBlock = 232448; }
    else return std::nullopt;
    return t;
}

} // namespace tilec
