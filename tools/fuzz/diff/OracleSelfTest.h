/// \file
/// The oracles tested themselves (OracleSelfTest.cpp): `tilec-difffuzz --self-test`.
#pragma once

namespace tilec::difffuzz {

/// Programs each oracle must flag, and their correct twins it must pass: the front-end oracle (Scalar.h) on a
/// program read as an aliasing front end would read it, the TMA coordinate check (IndexOracle.h) on a
/// tensor-map transfer whose coordinate passes 2^31. Prints a line per check; 1 when an oracle missed one.
int oracleSelfTest();

} // namespace tilec::difffuzz
