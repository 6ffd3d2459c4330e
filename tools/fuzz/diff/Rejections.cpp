/// \file
/// The listed kinds of rejection (Rejections.h). Each verdict was taken from TileLang itself where it could be:
/// tools/fuzz/tilelang_verdict.py lowers the census's first seed of the kind with TileLang (docs/PERFORMANCE.md,
/// session 45, fuzz45, gives the seeds and TileLang's answers).
#include "Rejections.h"

#include <regex>

namespace tilec::difffuzz {

const std::vector<KnownRejection> &knownRejections() {
    using V = KnownRejection;
    static const std::vector<KnownRejection> list{
        // Programs without one meaning: their threads race, or TileLang's result depends on its layout.
        {V::Racy, "thread-index branches race", "in one branch of a condition on the thread index, and thread",
         "a thread stores a shared element in one branch of a thread-index condition and another thread reads or "
         "stores it in the other, with no barrier between (decorateThreadShared draws them; ThreadRaces.cpp)"},
        {V::Racy, "stores race in a statement", "both store", "two threads store one shared element in one statement"},
        {V::Racy, "store races a read in a statement", "in this statement while thread",
         "a thread stores a shared element that another reads in the same statement"},
        {V::Racy, "T.Parallel iterations race", "which other iterations store",
         "a T.Parallel reads what other iterations store; they run on other threads in no order"},
        {V::Racy, "barrier in a thread branch", "exchanges data through shared memory with an earlier one",
         "an exchange through shared memory inside a thread-dependent branch needs a barrier that only some threads "
         "reach (a hang or a race; InsertSyncs.cpp)"},
        {V::Racy, "replicated nest stores shared", "runs whole in every thread",
         "a T.Parallel that every thread runs whole stores shared memory that it also reads: every thread stores "
         "every element, racing the others' reads"},
        // Programs TileLang refuses too (tools/fuzz/tilelang_verdict.py on the census's seeds), or that break a
        // rule of the language or of CUDA.
        {V::Refused, "constant index past an extent", "is out of bounds for",
         "a constant index at or past a buffer's extent (GProgram::pastBoundIndex draws them on purpose)"},
        {V::Refused, "grid past CUDA's limit", "blocks CUDA allows", "a grid dimension past what CUDA launches"},
        {V::Refused, "T.gemm tile over the warps", "tensor-core tiles over",
         "a T.gemm accumulator the block's warps cannot split into 16x8 tensor-core tiles (TileLang's gemm "
         "instructions have the same granularity; its verdict not taken: seed 5 fails earlier in TileLang 0.1.15)"},
        {V::Limitation, "tensor-core fragment over part of its shape", "is in the tensor-core layout of a T.gemm",
         "a fragment in a T.gemm's layout indexed by a T.Parallel's variables and constants only, the nest over part "
         "of its shape (session 44 compiled T.copy(acc_o[:1, :], ...); such a nest alone compiles, seed 101's joins "
         "other fragments' groups). TileLang runs the nest in the fragment's thread map; tilec links only whole-shape "
         "nests to a tensor-core layout (MmaLayouts.cpp)",
         R"(whole shape, not by \(\s*([ij][0-9]*|[0-9]+)(\s*[-+*]\s*([ij][0-9]*|[0-9]+))*(\s*,\s*([ij][0-9]*|[0-9]+)(\s*[-+*]\s*([ij][0-9]*|[0-9]+))*)*\s*\))"},
        {V::Refused, "tensor-core fragment indexed by a serial loop", "is in the tensor-core layout of a T.gemm",
         "a T.gemm accumulator indexed by a serial loop's variable inside a T.Parallel (TileLang: 'Cannot lower access "
         "to thread-distributed fragment: the non-parallel loop variable w cannot be used', seed 62)"},
        {V::Refused, "per-row fragment used otherwise", "holds per-row values of a T.gemm result",
         "a per-row fragment of a T.gemm result also indexed by another nest or reduced into (TileLang: no "
         "available layout, seeds 287 and 195)"},
        {V::Refused, "fragment held whole by every thread", "not by the variables of a T.Parallel over its whole shape",
         "a fragment indexed by more than its nest's variables, too big to replicate (TileLang: 'Fragment buffer "
         "access with non-zero index', seeds 409 and 844; a fragment copy at other offsets compiles since session 45)"},
        {V::Refused, "view of a replicated fragment", "is a T.reshape / T.view of",
         "a view of a fragment every thread holds whole, passed to a tile primitive (TileLang's verdict not taken)"},
        {V::Refused, "sub-byte store of half bytes", "writes whole bytes, pairs of elements",
         "a T.copy into a packed int4 / uint4 tensor writing half a byte: the other half of the byte would be lost "
         "(TileLang's verdict not taken: seeds 27 and 54 fail earlier in TileLang 0.1.15)"},
        {V::Refused, "T.make_tensor of an unbound size", "which is not a size of the prim_func",
         "a T.make_tensor shape naming a T.dynamic no parameter's shape gives: nothing binds it at the launch "
         "(TileLang's verdict not taken)"},
        // TileLang compiles these; tilec does not yet.
        {V::Limitation, "reduction of a float into an integer", "cannot reduce",
         "a T.reduce_* of a float fragment into an integer one: which TileLang rounds, each element or the result, "
         "is not pinned down (an integer into a float compiles since session 45; the generator draws only those)"},
        {V::Limitation, "fragment used in and out of a thread branch", "whose tile statements tilec runs with the whole block",
         "a fragment used by tile statements inside a thread-range branch and outside it (TileLang accepts seeds 12 "
         "and 179: its branch's threads do the part of the statement they hold, a result that depends on its layout; "
         "tilec runs the branch's tile statements with the whole block and keeps a fragment within one range, "
         "ThreadRangeRegions.cpp)"},
    };
    return list;
}

const KnownRejection *knownRejection(const std::string &reason, const std::string &diags) {
    for (auto &k : knownRejections())
        if (reason.find(k.diagnostic) != std::string::npos && (!k.detail || std::regex_search(diags, std::regex(k.detail))))
            return &k;
    return nullptr;
}

std::string unlistedKey(const std::string &reason) {
    std::string out;
    for (size_t i = 0; i < reason.size(); ++i) {
        const char c = reason[i];
        if (c == '#' && !out.empty() && out.back() == '#') continue;
        if (c == '\'') { // a quoted name: 'acc', 'f#' (not the text between T.gemm's and 'acc')
            size_t end = reason.find('\'', i + 1);
            if (end != std::string::npos && end - i < 40 && reason.find(' ', i) > end) {
                out += "'X'";
                i = end;
                continue;
            }
        }
        out += c;
    }
    return out;
}

Outcome listedOutcome(Outcome o) {
    if (o.kind == Outcome::Rejected && !knownRejection(o.category, o.detail))
        return outcome(Outcome::Failure, "unlisted rejection: " + unlistedKey(o.category), o.detail);
    return o;
}

const char *verdictText(KnownRejection::Verdict v) {
    switch (v) {
    case KnownRejection::Refused: return "TileLang refuses it too, or it breaks a rule";
    case KnownRejection::Racy: return "TileLang's code races";
    case KnownRejection::Limitation: return "LIMITATION, TileLang compiles it";
    }
    return "";
}

} // namespace tilec::difffuzz
