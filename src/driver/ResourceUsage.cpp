/// \file
/// `--resource-usage` (docs/INTERFACE.md): per kernel, the threads and grid, the shared memory code generation
/// allocated (pipeline buffers per stage apart from everything else), and per target ptxas's registers and
/// spills, the blocks per SM they allow, and the notable instructions in the kernel's PTX.
///
/// A shared buffer counts as a pipeline buffer when code generation allocated a whole multiple (two or more)
/// of what the kernel declared for it: the pipelining pass gave it one copy per stage.
#include "driver/DriverImpl.h"

#include "tilec/IRPrinter.h"
#include "tilec/IRVisitor.h"
#include "tilec/SharedMemory.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace tilec::driver {

using namespace ir;

namespace {

std::string kib(int64_t bytes) {
    char b[32];
    if (bytes % 1024 == 0) std::snprintf(b, sizeof b, "%lld KiB", (long long)(bytes / 1024));
    else std::snprintf(b, sizeof b, "%.1f KiB", bytes / 1024.0);
    return b;
}

bool sameLoc(const SourceRange &a, const SourceRange &b) {
    return a.file == b.file && a.line == b.line && a.col == b.col && a.endLine == b.endLine && a.endCol == b.endCol;
}

/// Blocks of `threads` threads using `regs` registers each and `shared` bytes fit on one SM, and what limits them.
std::pair<int64_t, std::string> blocksPerSm(const Target &t, int threads, int regs, int64_t shared) {
    int64_t warps = (std::max(threads, 1) + 31) / 32;
    std::vector<std::pair<int64_t, std::string>> by;
    by.push_back({t.blocksPerSM, "blocks"});
    by.push_back({t.threadsPerSM / (warps * 32), "threads"});
    if (regs > 0) {
        // Registers are given to warps in units of 256 (8 per thread).
        int64_t perWarp = (regs * 32 + 255) / 256 * 256;
        by.push_back({(t.registersPerSM / perWarp) / warps, "registers"});
    }
    by.push_back({smem::blocksPerSm(t, shared), "shared memory"});
    auto m = *std::min_element(by.begin(), by.end(), [](auto &a, auto &b) { return a.first < b.first; });
    return {std::max<int64_t>(0, m.first), m.second};
}

/// The entry function's text in the PTX.
std::string entryBody(const std::string &ptx, const std::string &name) {
    auto at = ptx.find(".entry " + name + "(");
    if (at == std::string::npos) return "";
    // The body ends at the brace that closes its first one: inline assembly opens scopes of its own ("{ .reg
    // .pred p; ... }"), so the first line holding only "}" need not be the end.
    auto open = ptx.find('{', at);
    if (open == std::string::npos) return ptx.substr(at);
    int depth = 0;
    for (size_t i = open; i < ptx.size(); ++i) {
        if (ptx[i] == '{') ++depth;
        else if (ptx[i] == '}' && --depth == 0) return ptx.substr(at, i + 1 - at);
    }
    return ptx.substr(at);
}

std::string instructions(const std::string &body) {
    static const std::pair<const char *, const char *> kinds[] = {
        {"cp.async.bulk.tensor", "TMA"}, {"cp.async.ca.", "cp.async"}, {"cp.async.cg.", "cp.async"},
        {"wgmma.mma_async", "wgmma"},    {"mma.sync", "mma.sync"},      {"ldmatrix", "ldmatrix"},
        {"stmatrix", "stmatrix"}};
    std::string out;
    for (auto &[text, name] : kinds)
        if (body.find(text) != std::string::npos && out.find(name) == std::string::npos) out += (out.empty() ? "" : ", ") + std::string(name);
    return out.empty() ? "no TMA, cp.async, wgmma or mma.sync" : out;
}

struct PipelineScan : IRVisitor {
    using IRVisitor::visit;
    int deepest = 0; ///< the largest num_stages of a T.Pipelined loop
    void visit(const For &f) override {
        if (f.forKind == ForKind::Pipelined) deepest = std::max(deepest, f.numStages);
        IRVisitor::visit(f);
    }
};

} // namespace

void printResourceUsage(std::ostream &os, const Program &evaluated, const GeneratedCode &code,
                        const std::vector<Target> &targets, const DeviceBuild *device, const std::string &why) {
    const std::vector<Target> &ts = device ? device->targets : targets;
    for (size_t ki = 0; ki < code.kernels.size(); ++ki) {
        const KernelLayout &k = code.kernels[ki];
        const Kernel *src = nullptr;
        for (auto &e : evaluated.kernels) // the launches of one prim_func share its name
            if (e && e->name == k.name && e->part == k.part) src = e.get();
        os << "kernel '" << k.name << "' (launch function " << k.cName << "):\n";
        const LaunchConfig &launch = k.launch;
        os << "  threads: " << launch.launchedThreads() << " per block";
        if (launch.producerThreads)
            os << " (" << launch.threads << " consumers, " << launch.producerThreads << " producer: warp roles)";
        os << "\n";
        if (k.tensorMaps) {
            os << "  lowered for:";
            for (auto &t : k.targets) os << " " << t;
            os << " (TMA tile loads, " << k.tensorMaps << " tensor maps; the launcher runs the next variant "
                                    "when run-time pointers or strides break TMA's rules)";
            os << "\n";
        }
        if (src) os << "  grid: (" << print(src->grid[0]) << ", " << print(src->grid[1]) << ", " << print(src->grid[2]) << ")";
        if (src && launch.persistent)
            os << " tiles; persistent: min(tiles, SMs x " << std::max(1, launch.minBlocksPerSM) << ") blocks walk them";
        if (src && launch.clusterSize > 1)
            os << " in clusters of " << launch.clusterSize << " along grid dimension " << launch.clusterAxis << " (" << launch.sharedTiles
               << " tile(s) per stage loaded once per cluster by TMA multicast)";
        if (src) os << "\n";

        // Shared memory as allocated, split into pipeline copies and the rest.
        struct Piece {
            std::string name;
            int64_t perStage, stages;
        };
        std::vector<Piece> pipeline, other;
        for (auto &b : k.shared) {
            int64_t declared = 0;
            if (src)
                for (auto &a : src->allocs)
                    if (a && a->scope == Scope::Shared && a->name == b.name && sameLoc(a->loc, b.loc))
                        declared = smem::sharedBytes(a.get());
            if (declared > 0 && b.bytes > declared && b.bytes % declared == 0) pipeline.push_back({b.name, declared, b.bytes / declared});
            else other.push_back({b.name, b.bytes, 1});
        }
        int64_t pipeBytes = 0, otherBytes = 0, depth = 0;
        for (auto &p : pipeline) pipeBytes += p.perStage * p.stages, depth = std::max(depth, p.stages);
        for (auto &p : other) otherBytes += p.perStage;
        int64_t padding = std::max<int64_t>(0, k.sharedBytes - pipeBytes - otherBytes);
        os << "  shared memory: " << k.sharedBytes << " bytes (" << kib(k.sharedBytes) << ") per block\n";
        if (!pipeline.empty()) {
            bool uniform = std::all_of(pipeline.begin(), pipeline.end(), [&](auto &p) { return p.stages == depth; });
            os << "    pipeline buffers: " << pipeBytes << " bytes (" << kib(pipeBytes) << ")";
            std::string list;
            for (auto &p : pipeline)
                list += (list.empty() ? "" : ", ") + p.name + " " + (uniform ? "" : std::to_string(p.stages) + " x ") + std::to_string(p.perStage);
            if (uniform) os << " = " << depth << " stages x " << pipeBytes / depth << " bytes (" << list << ")\n";
            else os << ": " << list << "\n";
        }
        {
            std::string list;
            for (auto &p : other) list += (list.empty() ? "" : ", ") + p.name + " " + std::to_string(p.perStage);
            if (padding > 0) list += (list.empty() ? "" : ", ") + std::string("alignment ") + std::to_string(padding);
            os << "    other: " << otherBytes + padding << " bytes" << (list.empty() ? "" : " (" + list + ")") << "\n";
        }
        if (depth > 1) {
            os << "  pipeline depth: " << depth << " stages\n";
        } else {
            PipelineScan scan;
            if (src) scan.visit(src->body);
            os << "  pipeline depth: 1" << (scan.deepest > 1 ? " (the T.Pipelined loop's copies were not pipelined)" : "") << "\n";
        }

        for (size_t ti = 0; ti < ts.size(); ++ti) {
            const Target &t = ts[ti];
            os << "  " << t.name << ": ";
            const PtxasFunctionInfo *f = nullptr;
            if (device && ti < device->ptxas.size() && ki < device->loweredNames.size())
                for (auto &p : device->ptxas[ti])
                    if (p.function == device->loweredNames[ki]) f = &p;
            if (!f) {
                auto [blocks, limit] = blocksPerSm(t, launch.launchedThreads(), 0, k.sharedBytes);
                os << "registers unknown (" << (device ? "no ptxas report" : why) << "), at most " << blocks
                   << " blocks per SM (limited by " << limit << ")\n";
                continue;
            }
            auto [blocks, limit] = blocksPerSm(t, launch.launchedThreads(), f->registers, k.sharedBytes + f->staticShared);
            os << f->registers << " registers, " << f->spillStores + f->spillLoads << " bytes spilled (" << f->spillStores
               << " stored, " << f->spillLoads << " loaded), " << f->stackFrame << " bytes stack";
            if (f->staticShared) os << ", " << f->staticShared << " bytes static shared";
            os << ", " << blocks << (blocks == 1 ? " block" : " blocks") << " per SM (limited by " << limit << "); ";
            os << instructions(entryBody(device->ptxPerTarget[ti], device->loweredNames[ki])) << "\n";
        }
    }
}

} // namespace tilec::driver
