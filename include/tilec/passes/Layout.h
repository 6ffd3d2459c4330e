/// \file
/// How the elements of a fragment (and the iterations of a T.Parallel nest) are spread over the threads
/// of a block. inferLayouts chooses one per fragment and nest; lowerReductions and lowerParallel read it.
///
/// Two kinds exist before tensor cores:
/// - distributed (T threads, vector width V): flatten the shape row-major into elements e; thread
///   `(e / V) % T` owns e, in its local slot `(e / (V*T)) * V + e % V`. A thread has `rounds() * V`
///   slots; when T*V does not divide the element count the last round is partial (predicated).
/// - replicated: every thread holds every element, slot = e (reduction results, small per-row values).
#pragma once

#include "tilec/IR.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tilec::passes {

struct Layout {
    enum Kind { Distributed, Replicated } kind = Distributed;
    std::vector<int64_t> shape;
    int threads = 1; ///< distributed: T
    int vec = 1;     ///< distributed: V; divides the innermost extent

    static Layout distributed(std::vector<int64_t> shape, int threads, int vec);
    static Layout replicated(std::vector<int64_t> shape);

    int64_t elements() const;
    /// Distributed: rounds of T*V elements, the last one possibly partial. Replicated: 1.
    int64_t rounds() const;
    /// Rounds every thread completes (no predicate needed).
    int64_t fullRounds() const;
    /// Registers one thread needs for the buffer, in elements.
    int64_t slotsPerThread() const;
    bool operator==(const Layout &o) const = default;
    /// `distributed over 256 threads, 8-wide, 32 slots per thread` / `replicated, 2 slots per thread`.
    std::string describe() const;
};

/// The layouts chosen for one kernel.
struct KernelLayouts {
    /// Fragments by identity (iteration order is not meaningful; walk Kernel::allocs for stable output).
    std::map<const ir::BufferNode *, Layout> fragments;
    /// T.Parallel nests, by the variable of the nest's outermost loop (loop variables keep their identity
    /// through mutators, statements do not).
    std::map<const ir::VarNode *, Layout> loops;
    /// Each fragment's per-thread register array (a Local buffer of slotsPerThread() elements).
    std::map<const ir::BufferNode *, ir::Buffer> registers;
};

/// The coordinates (one int32 expression per dimension) of the element a thread meets in round `round`
/// at vector lane `lane` of a distributed layout: element `round*T*V + tid*V + lane`. Each coordinate is
/// simplified with what is known about the layout, so that a coordinate which does not depend on the
/// thread comes out as a function of `round` alone (a constant once the round loop is unrolled), and the
/// innermost one is `base + lane` with base a multiple of V.
std::vector<ir::Expr> elementCoords(const Layout &l, const ir::Expr &round, const ir::Expr &tid, const ir::Expr &lane);

/// Row-major flattening of constant-shape coordinates: sum of coords[d] * stride[d] (int32).
ir::Expr flattenCoords(const std::vector<ir::Expr> &coords, const std::vector<int64_t> &shape);

} // namespace tilec::passes
