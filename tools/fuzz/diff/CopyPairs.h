/// \file
/// The dtype-pair test of T.copy (CopyPairs.cpp): `tilec-difffuzz --copy-pairs [--nvcc]`.
#pragma once

#include <string>

namespace tilec::difffuzz {

/// Every dtype pair on every copy path: a located error or (with `nvcc`) CUDA that compiles for sm_80 and
/// sm_90a; the programs and nvcc's files go to `out`. Prints one line per failure and a summary; 1 on failure.
int copyPairs(const std::string &out, bool nvcc);

} // namespace tilec::difffuzz
