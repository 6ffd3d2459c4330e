/// \file
/// tilec-difffuzz: the differential fuzzer of the whole compiler (docs/TESTING.md would say more; see
/// tools/fuzz/README.md). Generates seeded random tile programs (Gen.h), runs each through the compiler, the
/// reference and the simulator (Check.h), shrinks every failure to a minimal .tile file and writes it.
///
///   tilec-difffuzz [--seed S] [--count N] [--seconds T] [--out DIR] [-v]   a campaign from seed S
///       [--big-every B]    every seed divisible by B is a program over tensors past 2^31 elements (GenBig.cpp),
///                          checked by the index-width oracle instead of simulated (default 10; 0: none)
///       [--nvcc-every K]   every K-th accepted program's CUDA compiled by nvcc for sm_80 and sm_90a (0: none)
///       [--twice-every K]  every K-th program is compiled a second time over a reshaped heap; diagnostics or
///                          CUDA that differ are a failure ("nondeterministic"; default 8, 0: never)
///       [--summary FILE]   the closing line (counts and rate) also written to FILE
///       [--crash-seed S]   dies of SIGFPE at seed S (tests tools/fuzz/diff-campaign.sh's crash handling)
///       [--no-wgmma-late-waits]  T.wgmma_gemm programs wait right after the product only, never only after the
///                          loop or with T.wait_wgmma(1) in it (GenAsync.cpp; the late forms are on by default)
///       [--no-thread-shared]  no program gets threads exchanging data through shared tiles in the branches of
///                          a thread-dependent if/else (GenRandom.cpp: decorateThreadShared; on by default since
///                          tilec refuses those races, src/lower/ThreadRaces.cpp; --thread-shared is accepted)
///   tilec-difffuzz --copy-pairs [--nvcc] [--out DIR]                       T.copy between every dtype pair on every
///       path (CopyPairs.cpp): a located error, or (--nvcc) CUDA that nvcc compiles for sm_80 and sm_90a
///   tilec-difffuzz --census [--seed S] [--count N]                        what the generator's programs of those
///       seeds hold of T.StridedTensor parameters (GenStrided.cpp), by kind, rank and direction, of pointer
///       tables, workspaces, packed int4 / uint4 tensors and strided programs past 2^31; exit status 1 when one
///       of them never occurs (a ctest: the generator must not stop producing them)
///   tilec-difffuzz --print [--seed] S                                     the program of seed S, as a campaign draws it,
///       standing alone (BM and BN as the campaign passes them; a big program as its regression file)
///   tilec-difffuzz --self-test                                             each oracle on a miscompile of its
///       class it must flag and its correct twin (OracleSelfTest.cpp)
///   tilec-difffuzz --replay FILE.tile|DIR ...                              regression files: each must pass
///       (agree with the reference, or be rejected where the reference gives it no meaning; a file saying
///       `# expect: rejected` must be rejected; `# expect S: v0 v1 ...` gives the front-end oracle's values
///       of S for data seed 1, which the reference must reproduce exactly)
///
/// The front-end oracle (Scalar.h): many programs carry a block of scalar code in varied surface forms whose
/// results the generator computes on its own model; the reference of tilec's front-end output must agree
/// exactly ("front end" failures), so front-end miscompiles are seen although both executions share it.
///
/// The rejection census (Rejections.h): every rejection is counted by its kind in the summary, and the first seed
/// of each kind is printed with TileLang's verdict on the kind and why it is listed; a rejection of no listed kind
/// is a failure ("unlisted rejection: ..."), so a new class of refused programs fails the campaign (and ctest
/// difffuzz_campaign) until tilec compiles it or it is listed with its reason. tools/fuzz/tilelang_verdict.py asks
/// TileLang whether it compiles a seed's program.
///
/// Exit status: 0 when no program failed, 1 otherwise, 2 for a bad command line. A fatal signal (a compiler
/// crash) first writes `seed S: crash: signal NAME` to stderr (Crash.h).
#include "Check.h"
#include "CopyPairs.h"
#include "Crash.h"
#include "Gen.h"
#include "OracleSelfTest.h"
#include "Rejections.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

using namespace tilec::difffuzz;
namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> definesOf(const GProgram &p) {
    return {{"BM", std::to_string(p.bm)}, {"BN", std::to_string(p.bn)}};
}

/// The program run, and what its decorations demand (GenRandom.cpp: decorate): a reserved kernel name and a
/// constant index past a buffer's extent are located errors; other names are never refused as names.
/// What the front-end oracle's own model computes for data seed `dataSeed` (Scalar.h).
/// and of its stepped loops and batched tensors (GenShapes.cpp).
Expected expectedFor(const GProgram &p, uint64_t dataSeed) {
    Expected e = expectedShapes(p, dataSeed);
    if (p.scalars) e["S"] = p.expectedS(dataSeed);
    return e;
}

/// The census's key of a rejection: its listed kind's name, or its folded reason.
std::string censusKey(const Outcome &o) {
    const KnownRejection *k = knownRejection(o.category, o.detail);
    return k ? k->name : unlistedKey(o.category);
}

Outcome check(const GProgram &p) {
    Outcome o = checkProgram(p.print(), definesOf(p), p.seed, expectedFor(p, p.seed));
    const bool refused = o.kind == Outcome::Rejected || o.kind == Outcome::RejectedAsExpected;
    const bool nameError = o.detail.find("kernel name '" + p.kernelName + "'") != std::string::npos;
    if (p.reservedName() && !refused)
        return outcome(Outcome::Failure, "reserved name", "kernel bound to '" + p.kernelName + "' accepted");
    if (!p.reservedName() && nameError)
        return outcome(Outcome::Failure, "name refused", "kernel bound to '" + p.kernelName + "' refused: " + o.detail);
    if (p.pastBoundIndex() && !refused)
        return outcome(Outcome::Failure, "constant index", "a constant index past a buffer's extent accepted");
    if (p.reservedName() && refused) return outcome(Outcome::RejectedAsExpected, "reserved kernel name");
    return listedOutcome(o);
}

/// Greedy: the first smaller variant that fails the same way replaces the program, until none does.
GProgram shrink(GProgram p, const std::string &category, bool verbose) {
    for (int round = 0; round < 400; ++round) {
        bool progress = false;
        for (auto &c : shrinkCandidates(p)) {
            Outcome o = check(c);
            if (o.kind == Outcome::Failure && o.category == category) {
                p = std::move(c);
                progress = true;
                break;
            }
        }
        if (!progress) break;
        if (verbose) std::cerr << "  shrink round " << round << ": " << p.print().size() << " bytes\n";
    }
    return p;
}

std::string readFile(const fs::path &f) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The `# dynamic:` line of a big program, as integers.
std::map<std::string, int64_t> bigDynamic(const std::string &text) {
    std::map<std::string, int64_t> v;
    for (auto &[n, x] : dynamicValues(text)) v[n] = (int64_t)x;
    return v;
}

/// A big program's text as a regression file stands alone: `# big` marks it, `# expect: past 2^63` its verdict.
std::string bigFile(const BigProgram &b) {
    return "# big\n" + std::string(b.pastInt64 ? "# expect: past 2^63\n" : "") + b.text;
}

/// The census's kinds that occurred, each with the first seed that drew it and (listed) TileLang's verdict and the
/// reason the kind is listed: standard output only (a campaign's summary files hold counts alone).
std::string censusLegend(const std::map<std::string, uint64_t> &firstSeed) {
    std::ostringstream os;
    if (!firstSeed.empty()) os << "rejections by kind (the first seed; listed: TileLang's verdict and why):\n";
    for (auto &[key, seed] : firstSeed) {
        const std::string name = key.substr(key.find(": ") + 2);
        os << "  " << key << ": seed " << seed;
        for (auto &k : knownRejections())
            if (name == k.name) os << "; " << verdictText(k.verdict) << ": " << k.why;
        os << "\n";
    }
    return os.str();
}

/// `--print`: the program of seed `s` as a campaign draws it, standing alone (BM and BN the values a campaign
/// passes with -D; a big program as its regression file): for tilec, for TileLang (tools/fuzz/tilelang_verdict.py)
/// and for a crash's file (tools/fuzz/diff-campaign.sh).
int printProgram(uint64_t s, uint64_t bigEvery, bool threadShared) {
    if (bigEvery && s % bigEvery == 0) return std::cout << bigFile(generateBig(s)), 0;
    GProgram p = generate(s, threadShared);
    p.bmText = p.bm, p.bnText = p.bn;
    std::cout << p.print();
    return 0;
}

int replay(const std::vector<std::string> &args) {
    std::vector<fs::path> files;
    for (auto &a : args) {
        if (fs::is_directory(a)) {
            for (auto &e : fs::directory_iterator(a))
                if (e.path().extension() == ".tile") files.push_back(e.path());
        } else {
            files.push_back(a);
        }
    }
    std::sort(files.begin(), files.end());
    int bad = 0;
    for (auto &f : files) {
        std::string text = readFile(f);
        const bool big = text.rfind("# big\n", 0) == 0;
        Outcome o = big ? checkBig(text, bigDynamic(text), text.find("# expect: past 2^63") != std::string::npos, 1)
                        : checkProgram(text, {}, 1, expectedOf(text));
        // `# expect: nvcc`: an accepted program's CUDA must compile (a kept nvcc failure, or a dtype-pair test).
        if (o.kind == Outcome::Ok && text.find("# expect: nvcc") != std::string::npos && nvccFound()) {
            fs::path dir = fs::temp_directory_path() / ("difffuzz-replay-" + std::to_string(::getpid()));
            fs::create_directories(dir);
            if (std::string e = compileWithNvcc(o.cuda, dir.string()); !e.empty()) o = outcome(Outcome::Failure, "nvcc", e);
            fs::remove_all(dir);
        }
        // `# expect: rejected`: a program the compiler cannot honour (a located error) though it has a meaning.
        bool rejectable = text.find("# expect: rejected") != std::string::npos;
        bool pass = o.kind == Outcome::Ok || o.kind == Outcome::RejectedAsExpected;
        if (rejectable) pass = o.kind == Outcome::Rejected || o.kind == Outcome::RejectedAsExpected;
        // `# expect: error: TEXT`: the rejection's diagnostics say TEXT (the error the file is kept for).
        if (auto at = text.find("# expect: error: "); at != std::string::npos) {
            std::string want = text.substr(at + 17, text.find('\n', at) - at - 17);
            if (pass && o.detail.find(want) == std::string::npos) {
                pass = false;
                o.category = "another error", o.detail = "expected '" + want + "': " + o.detail;
            }
        }
        std::cout << (pass ? "PASS " : "FAIL ") << f.filename().string();
        if (pass && o.kind != Outcome::Ok) std::cout << " (rejected: " << o.category << ")";
        if (!pass) std::cout << ": " << o.category << ": " << o.detail;
        std::cout << "\n";
        bad += !pass;
    }
    std::cout << files.size() - bad << " of " << files.size() << " regression programs pass\n";
    return bad ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
    uint64_t seed = 1, count = UINT64_MAX;
    double seconds = 0;
    std::string out = ".";
    bool verbose = false;
    uint64_t bigEvery = 10, nvccEvery = 0, crashAt = UINT64_MAX;
    std::string summaryFile;
    bool copyPairsMode = false, nvccToo = false, threadShared = true, census = false, print = false;
    std::vector<std::string> replayArgs;
    bool replaying = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::cerr << "tilec-difffuzz: " << a << " needs a value\n";
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--seed") seed = std::stoull(next());
        else if (a == "--count") count = std::stoull(next());
        else if (a == "--seconds") seconds = std::stod(next());
        else if (a == "--out") out = next();
        else if (a == "-v") verbose = true;
        else if (a == "--big-every") bigEvery = std::stoull(next());
        else if (a == "--twice-every") setCompileTwiceEvery(std::stoull(next()));
        else if (a == "--nvcc-every") nvccEvery = std::stoull(next());
        else if (a == "--summary") summaryFile = next();
        else if (a == "--crash-seed") crashAt = std::stoull(next());
        else if (a == "--thread-shared") threadShared = true;
        else if (a == "--no-thread-shared") threadShared = false;
        else if (a == "--no-wgmma-late-waits") setLateWgmmaWaits(false);
        else if (a == "--copy-pairs") copyPairsMode = true;
        else if (a == "--census") census = true;
        else if (a == "--print") {
            print = true;
            if (i + 1 < argc && std::isdigit((unsigned char)argv[i + 1][0])) seed = std::stoull(argv[++i]); // --print S
        } else if (a == "--nvcc") nvccToo = true;
        else if (a == "--replay") replaying = true;
        else if (a == "--self-test") return oracleSelfTest();
        else if (replaying) replayArgs.push_back(a);
        else {
            std::cerr << "tilec-difffuzz: unknown argument '" << a << "'\n";
            return 2;
        }
    }
    if (replaying) return replay(replayArgs);
    if (copyPairsMode) return copyPairs(out, nvccToo);
    if (census) return stridedCensus(seed, count == UINT64_MAX ? 1000 : count, bigEvery);
    if (print) return printProgram(seed, bigEvery, threadShared);
    if (count == UINT64_MAX && seconds == 0) count = 1000;

    auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    std::map<Outcome::Kind, uint64_t> kinds;
    std::map<std::string, uint64_t> reasons, firstSeed; ///< outcomes by reason (rejections by census key)
    uint64_t n = 0, roles = 0, wgmmas = 0, bigs = 0, accesses = 0, accepted = 0, compiled = 0;
    const std::string nvccDir = (fs::path(out) / ("difffuzz-nvcc-" + std::to_string(seed))).string();
    if (nvccEvery && !nvccFound()) {
        std::cerr << "tilec-difffuzz: --nvcc-every: nvcc not found (neither /usr/local/cuda/bin/nvcc nor on the PATH): "
                     "no program is compiled\n";
        nvccEvery = 0;
    }
    fs::create_directories(out); // a failure's file must not vanish into a folder that is not there
    if (nvccEvery) fs::create_directories(nvccDir);
    reportCrashes();
    for (uint64_t s = seed; n < count && (seconds == 0 || elapsed() < seconds); ++s, ++n) {
        crashSeed(s);
        if (s == crashAt) std::raise(SIGFPE);
        const bool isBig = bigEvery && s % bigEvery == 0;
        GProgram p;
        BigProgram b;
        Outcome o;
        if (isBig) {
            b = generateBig(s);
            o = listedOutcome(checkBig(b.text, b.dyn, b.pastInt64, s));
            ++bigs, accesses += (uint64_t)o.accesses;
        } else {
            p = generate(s, threadShared);
            o = check(p);
        }
        if (o.kind == Outcome::Ok && nvccEvery && !o.cuda.empty() && ++accepted % nvccEvery == 0) {
            ++compiled;
            if (std::string e = compileWithNvcc(o.cuda, nvccDir); !e.empty()) o = outcome(Outcome::Failure, "nvcc", e);
        }
        ++kinds[o.kind];
        roles += o.warpRoles, wgmmas += o.wgmma;
        if (verbose && (n + 1) % 5000 == 0)
            std::cerr << "progress: " << n + 1 << " programs in " << elapsed() << " s, " << kinds[Outcome::Failure]
                      << " failed\n";
        if (o.kind == Outcome::Rejected || o.kind == Outcome::RejectedAsExpected) {
            const std::string key = (o.kind == Outcome::Rejected ? "rejected: " : "rejected as expected: ") + censusKey(o);
            if (!reasons.count(key)) firstSeed[key] = s;
        }
        if (o.kind != Outcome::Ok) ++reasons[(o.kind == Outcome::Skipped ? "skipped: " : o.kind == Outcome::Failure ? "FAILED: " : o.kind == Outcome::RejectedAsExpected ? "rejected as expected: " : "rejected: ") + (o.kind == Outcome::Rejected || o.kind == Outcome::RejectedAsExpected ? censusKey(o) : o.category)];
        if (o.kind != Outcome::Failure) continue;
        std::cerr << "seed " << s << ": " << o.category << ": " << o.detail << "\n";
        std::replace(o.detail.begin(), o.detail.end(), '\n', ' '); // the file's header is one comment line
        fs::path f = fs::path(out) / ("difffuzz-" + std::to_string(s) + ".tile");
        std::ofstream file(f);
        if (isBig) {
            file << bigFile(b) << "# tilec-difffuzz seed " << s << ": " << o.category << ": " << o.detail << "\n";
        } else {
            // nvcc failures are kept whole (shrinking would run nvcc for every candidate).
            GProgram small = o.category == "nvcc" ? p : shrink(p, o.category, verbose);
            small.bmText = small.bm, small.bnText = small.bn; // the file stands alone, without -D
            Outcome again = checkProgram(small.print(), {}, 1, expectedFor(small, 1));
            std::replace(again.detail.begin(), again.detail.end(), '\n', ' '); // a rejection's diagnostics, too
            file << "# tilec-difffuzz seed " << s << ": " << o.category << ": " << o.detail << "\n"
                 << (o.category == "nvcc" ? "# expect: nvcc\n" : "")
                 << "# shrunk (data seed 1): " << again.category << ": " << again.detail << "\n"
                 ;
            for (auto &[tensor, values] : expectedFor(small, 1)) file << expectLine(tensor, values);
            file << small.print();
        }
        std::cerr << "  written " << f.string() << "\n";
    }
    double t = elapsed();
    std::ostringstream summary;
    summary << n << " programs from seed " << seed << " in " << t << " s (" << (t > 0 ? n / t : 0) << "/s): "
              << kinds[Outcome::Ok] << " agree (" << roles << " of them with warp roles on sm_90a too, " << wgmmas << " with wgmma there), " << kinds[Outcome::Rejected] << " rejected, "
              << kinds[Outcome::RejectedAsExpected] << " rejected as expected, " << kinds[Outcome::Skipped]
              << " skipped, " << kinds[Outcome::Failure] << " failed; " << bigs << " past 2^31 elements (" << accesses
              << " global accesses checked for index width), " << compiled << " compiled by nvcc (sm_80, sm_90a)\n";
    for (auto &[r, c] : reasons) summary << "  " << c << "  " << r << "\n";
    std::cout << summary.str() << censusLegend(firstSeed);
    if (!summaryFile.empty()) std::ofstream(summaryFile) << summary.str();
    return kinds[Outcome::Failure] ? 1 : 0;
}
