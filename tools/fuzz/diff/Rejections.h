/// \file
/// The rejection census (Rejections.cpp): every located error tilec gives a generated program must be of a
/// listed kind, each with the reason the fuzzer takes it as an outcome; a rejection of no listed kind is a
/// failure ("unlisted rejection"). A new class of refused programs, above all one that TileLang compiles
/// (session 44: `T.copy(acc_o[:1, :], O_shared)` of a T.gemm accumulator was drawn and counted as a plain
/// rejection), so fails the campaign until tilec compiles it or it is listed with its reason.
#pragma once

#include "Check.h"

#include <string>
#include <vector>

namespace tilec::difffuzz {

struct KnownRejection {
    enum Verdict {
        Refused,    ///< TileLang refuses the program too, or it breaks a rule of the language (an index past an extent)
        Racy,       ///< TileLang compiles it into code whose result depends on the order of the threads: no result
        Limitation, ///< TileLang compiles it; tilec does not yet, for the reason `why` gives
    } verdict;
    const char *name;       ///< the census's key
    const char *diagnostic; ///< a piece of the first diagnostic (as reasonOf gives it: digits as '#') naming the kind
    const char *why;
    /// When set, a regular expression (ECMAScript) the whole diagnostics must match too: a kind narrower than
    /// its message (a tensor-core fragment indexed by a serial loop's variable, not a nest over part of it).
    const char *detail = nullptr;
};

/// The listed kind a rejection whose reason (Check.h: reasonOf, possibly after "front end: " or "big: ") is
/// `reason` and whose diagnostics are `diags` belongs to (the first in the list's order), or null.
const KnownRejection *knownRejection(const std::string &reason, const std::string &diags);

/// The census's key of an unlisted rejection: `reason` with runs of '#' and quoted names folded.
std::string unlistedKey(const std::string &reason);

const char *verdictText(KnownRejection::Verdict v);

/// `o`, or where it is a rejection of no listed kind a failure whose category ("unlisted rejection: KEY") names
/// the kind, so that shrinking keeps it.
Outcome listedOutcome(Outcome o);

/// Every listed kind, in the order of the list.
const std::vector<KnownRejection> &knownRejections();

} // namespace tilec::difffuzz
