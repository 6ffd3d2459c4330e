/// \file
/// cuRAND's Philox4_32_10 generator on the CPU (SimulatorRandom.cpp), for the simulator's runs of T.rng_init /
/// T.rng_rand / T.rng_rand_float: the state in the 16 words tilec's device functions keep it in
/// (src/eval/TileLangRandom.cpp), each word a double holding a uint32.
#pragma once

#include <cstdint>

namespace tilec::simtest {

/// curand_init(seed, seq, off): the words of the state it makes.
void philoxInit(double *words, uint64_t seed, uint64_t seq, uint64_t off);
/// curand(): the next 32 bits, the state advanced.
uint32_t philoxNext(double *words);
/// curand_uniform(): a float in (0, 1] from the next 32 bits.
float philoxUniform(double *words);

} // namespace tilec::simtest
