/// \file
/// TileLang's random numbers (TileLangRandom.cpp): T.rng_init, T.rng_rand, T.rng_rand_float.
#pragma once

#include "eval/TileLang.h"

namespace tilec::eval::tl {

void addRandomPrimitives(Attrs &attrs);

/// The name of the device functions the primitives call (T.call_extern-style calls `extern:NAME`), which the
/// simulator runs too: tilec_rng_init(state, seed, seq, off), tilec_rng_rand(state), tilec_rng_uniform(state).
/// `state` is the address of the kernel's per-thread generator state, kRngStateWords uint32 words.
constexpr int kRngStateWords = 16;

} // namespace tilec::eval::tl
