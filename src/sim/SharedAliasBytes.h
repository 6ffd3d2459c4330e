/// \file
/// The simulator's bytes of shared aliases (tilec/SharedAliases.h): an alias and its base hold the same bytes on
/// purpose, so a write of either is numbered (it poisons neither) and a read of one takes each of its bytes from
/// the latest write that covers it, in whichever of them, as the bytes on the GPU are (SimulatorAgents.cpp, at
/// each access the race check sees). The simulator holds values, not bits: elementBits / elementOfBits convert
/// those of integers, float32 and bfloat16 of at most 32 bits (SimulatorExec.cpp, beside T.reinterpret's).
#pragma once

#include "tilec/DType.h"

#include <cstdint>

namespace tilec::simtest {

/// The bits of value `v` of dtype `t`; an unset (NaN) integer is 0. A SimError for other dtypes.
uint64_t elementBits(DType t, double v);

/// The value of dtype `t` with bits `bits`.
double elementOfBits(DType t, uint64_t bits);

} // namespace tilec::simtest
