/// \file
/// The registry of device-library calls moved to tilec/LibraryCalls.h (IR vocabulary: the evaluator, the
/// passes, code generation and the simulator use it); this header stays for code written before the move.
#pragma once

#include "tilec/LibraryCalls.h"
