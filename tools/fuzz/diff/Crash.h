/// \file
/// A campaign's worker that dies of a signal (a compiler crash: SIGFPE, SIGSEGV, an abort) says on which seed
/// before it dies, so tools/fuzz/diff-campaign.sh keeps the program as a failure and goes on past it instead of
/// losing the worker's every count (session 14's H200 campaign: 12 workers died of one SIGFPE each, summary 0).
#pragma once

#include <cstdint>

namespace tilec::difffuzz {

/// Installs the handlers: a fatal signal writes `seed S: crash: signal NAME` to stderr (S as last given to
/// crashSeed) and then kills the process with that signal as before.
void reportCrashes();

/// The seed now being run (read by the handler).
void crashSeed(uint64_t seed);

} // namespace tilec::difffuzz
