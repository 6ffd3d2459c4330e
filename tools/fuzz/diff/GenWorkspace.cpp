/// \file
/// T.alloc_global workspaces (Gen.h: decorateWorkspace; docs/LANGUAGE.md 3.8, /work/shared/CONTRACT.md): global
/// memory the launch function allocates for the prim_func's launches, which one statement or launch writes and
/// another reads. The program keeps its meaning; only where its data passes changes:
///   "Y"       the kernel writes WY (Y's shape) in Y's place, and a second launch copies WY into Y
///   "Y here"  the same, but the kernel itself copies its tile of WY into Y after its statements (global memory
///             written by one tile statement, read by another thread's iteration of the next)
///   "A"       a first launch copies A into WA, which the kernel reads in A's place
/// Workspaces start uninitialized: what the kernel never writes of WY is NaN in the reference and the simulator
/// alike, and NaN compares equal to NaN. From a stream of its own, so the rest of a seed's program is what it was.
#include "Gen.h"

namespace tilec::difffuzz {

void decorateWorkspace(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x3017ace)};
    if (!r.coin(0.2)) return;
    const std::string kind = r.pick(std::vector<std::string>{"Y", "Y", "Y here", "Y here", "A"});
    const std::string tensor = kind == "A" ? "A" : "Y";
    // a tensor made from a pointer table exists only in the main launch
    if (auto it = p.strided.find(tensor); it != p.strided.end() && it->second.table) return;
    p.workspace = kind;
}

} // namespace tilec::difffuzz
