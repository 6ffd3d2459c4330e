/// \file
/// Named barriers between consumer warp groups that hand data on through shared memory after their last
/// mbarrier arrival (src/lower/OrderRoleExchanges.cpp).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// The consumer warp groups of a warp-role kernel (`if tilec.warp_group(0): A elif tilec.warp_group(1): B`) run at
/// the same time; what orders their shared-memory exchanges is the mbarriers they arrive on. A statement of A that
/// comes after A's last publishing operation (an mbarrier arrival, a named barrier, an atomic, a `while` loop) is
/// published to no one, so a statement of B after B's own last publishing operation that reads a shared buffer it
/// writes is unordered with it: a race in the program as written (TileLang's FlashMLA decoding example: warp group
/// 0 stores its row sums to `sum_exp_shared` after its loop, warp group 1 divides by them after its own loop; in
/// TileLang's CUDA too only timing orders the two). Such a pair gets a named barrier of A's and B's threads: A
/// arrives on it after its last such write (bar.arrive, not waiting), B waits on it before its first such read
/// (bar.sync). Neither can deadlock: every publishing operation of B precedes its wait, so what A waits on before
/// arriving happens, and B publishes nothing after it. Pairs whose exchanges go both ways after both groups' last
/// publication, and kernels whose 16 hardware barriers are used up, are left as they are.
ir::Program orderRoleExchanges(const ir::Program &p);

} // namespace tilec::passes
