/// \file
/// Compilation targets (-arch): what each GPU architecture has and its limits. A Target is a row of the
/// table in src/support/Target.cpp, the one place that lists the architectures tilec knows; how a kernel is
/// lowered for it (TMA or not, warp specialization, ...) is a LoweringOptions (tilec/LoweringOptions.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec {

struct Target {
    /// The target of a compilation that names none (-arch, the language server, `tilec tune`): the one place
    /// that spells it. A default-constructed Target is its row of the table (a unit test checks the two agree).
    static constexpr const char *kDefaultName = "sm_90a";

    std::string name = kDefaultName; ///< as -arch spells it; Target::parse(name) gives this row back
    int sm = 90;                 ///< compute capability times ten
    bool archSpecific = true;    ///< the `a` suffix (wgmma, setmaxnreg)
    int maxSharedPerBlock = 232448; ///< opt-in dynamic shared memory per block, bytes
    int registersPerThread = 255;
    int registersPerSM = 65536;
    int registerUnit = 8; ///< a thread's registers are allocated in multiples of this (256 a warp)
    /// Per SM (CUDA C Programming Guide, "Compute Capabilities"): resident threads and blocks, and the shared
    /// memory blocks can share (each block also takes 1 KiB the system reserves).
    int threadsPerSM = 2048, blocksPerSM = 32;
    int sharedPerSM = 228 * 1024;
    /// What a build-time GPU query (`get_num_sms()`, `multi_processor_count`) answers and the lowering's wave
    /// estimates assume: the SM count of the target's usual data-centre GPU (A100 108, A10 72, L40S 142,
    /// H100/H200 132); --num-sms gives another GPU of the architecture (withSmCount).
    int numSms = 132;
    /// That GPU's name, as `torch.cuda.get_device_name()` reports it (a build-time query answers it).
    std::string gpuName = "NVIDIA H100 80GB HBM3";

    /// Hardware features.
    bool hasTmaUnit() const { return sm >= 90; }                 ///< TMA tile transfers, mbarrier transactions
    bool hasStmatrix() const { return sm >= 90; }                ///< stmatrix (a warp's 8x8 matrices to shared memory)
    bool hasWgmma() const { return sm == 90 && archSpecific; }   ///< wgmma, setmaxnreg, clusters with multicast
    /// The virtual architecture its PTX is for: sm_90a -> compute_90a.
    std::string virtualArch() const { return "compute_" + name.substr(name.find('_') + 1); }
    /// The same architecture on a GPU of `n` SMs (--num-sms).
    Target withSmCount(int n) const {
        Target t = *this;
        t.numSms = n;
        return t;
    }
    bool operator==(const Target &) const = default;

    /// The row of kDefaultName.
    static const Target &byDefault();
    /// Parses one -arch value; nullopt for unknown names.
    static std::optional<Target> parse(std::string_view name);
    /// Every target tilec knows, oldest first.
    static const std::vector<Target> &known();
    /// Their names, for messages and --help: "sm_80, sm_86, sm_89, sm_90, sm_90a".
    static std::string knownNames();
    /// The target whose code runs best on a device of compute capability `cc` (times ten): its own (the
    /// arch-specific one where there is one), else the newest older one's portable PTX; nullopt below all.
    static std::optional<Target> forDevice(int cc);
};

} // namespace tilec
