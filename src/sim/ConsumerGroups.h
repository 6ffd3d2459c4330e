/// \file
/// Consumer warp groups with code of their own (lowerWarpRoles' `if tilec.warp_group(c)` inside the consumer
/// role): while an agent runs its group's code, its scope is its own 128 threads (their layouts, barriers and
/// wgmma), not the whole role's. Each agent runs on a host thread of its own, so the flag is that thread's.
#pragma once

namespace tilec::simtest {

inline thread_local bool inConsumerGroup = false;

} // namespace tilec::simtest
