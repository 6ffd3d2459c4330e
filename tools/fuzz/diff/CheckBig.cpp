/// \file
/// Programs too large to simulate, checked by the index-width oracle; and nvcc on generated CUDA (Check.h).
#include "Check.h"

#include "EvalTestUtil.h"
#include "IndexOracle.h"
#include "LoopHeaders.h"

#include "tilec/Check.h"
#include "tilec/Codegen.h"
#include "tilec/Lower.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

namespace tilec::difffuzz {

Outcome compileText(const std::string &text, std::vector<std::pair<std::string, ir::Program>> *lowered) {
    evaltest::EvalRun front;
    Outcome out;
    // sm_80 (cp.async, element-wise global accesses), sm_80 assuming aligned rows where a row length is a
    // run-time value (the variant the launcher prefers), and sm_90a (TMA, warp roles, persistent tile loops).
    Variant wide{*Target::parse("sm_80"), {}};
    wide.options.assumeAlignedRows = true;
    const std::vector<std::pair<std::string, Variant>> variants{
        {"sm_80", Variant{*Target::parse("sm_80"), {}}}, {"sm_80 wide rows", wide}, {"sm_90a", Variant{*Target::parse("sm_90a"), {}}}};
    try {
        front.run(text, "fuzz.tile");
        bool checked = front.program && !front.diag.hasErrors();
        for (size_t i = 0; checked && i < front.program->kernels.size(); ++i)
            checked = checkKernel(*front.program->kernels[i], variants[0].second.target, front.diag);
        for (auto &[name, v] : variants) {
            if (!checked) break;
            PassContext ctx;
            ctx.diag = &front.diag;
            ir::Program p = lower(*front.program, v, ctx);
            if (front.diag.hasErrors()) break;
            CodegenOptions o;
            o.sourceName = "fuzz.tile", o.cudaName = "fuzz.cu", o.headerName = "fuzz.h", o.targets = {v.target};
            std::string cu = generateCode(p, o, front.diag).cuda;
            if (front.diag.hasErrors()) break;
            if (std::string e = checkLoopHeaders(cu); !e.empty()) return outcome(Outcome::Failure, "loop header", name + ": " + e);
            if (name != "sm_80 wide rows") out.cuda[v.target.name] = std::move(cu);
            if (lowered) lowered->emplace_back(name, std::move(p));
        }
    } catch (const InternalError &e) {
        return outcome(Outcome::Failure, "internal error", e.what());
    } catch (const TooManyErrors &) {
    } catch (const std::exception &e) {
        return outcome(Outcome::Failure, "exception", e.what());
    }
    if (!front.program || front.diag.hasErrors()) return outcome(Outcome::Rejected, reasonOf(front.diags()), front.diags());
    return out;
}

Outcome checkBig(const std::string &text, const std::map<std::string, int64_t> &dyn, bool pastInt64, uint64_t seed) {
    std::vector<std::pair<std::string, ir::Program>> lowered;
    Outcome out = compileText(text, &lowered);
    if (out.kind == Outcome::Failure) return out;
    const bool refused = out.kind == Outcome::Rejected;
    const bool overflow = out.detail.find("index arithmetic overflows 64 bits") != std::string::npos;
    if (pastInt64) {
        if (refused && overflow) return outcome(Outcome::RejectedAsExpected, "offsets past 2^63");
        return outcome(Outcome::Failure, "past 2^63", refused ? "refused for another reason: " + out.detail
                                                              : "static offsets past 2^63 compiled without an error");
    }
    if (refused && overflow) return outcome(Outcome::Failure, "refused", "offsets below 2^63 refused: " + out.detail);
    if (refused) return outcome(Outcome::Rejected, "big: " + out.category, out.detail);
    const std::map<std::string, double> sizes(dyn.begin(), dyn.end());
    for (auto &[name, p] : lowered)
        for (auto &k : p.kernels) {
            // The launcher runs the wide variant only for sizes its assumptions hold at (it tests them at each
            // call); at others it may index past a tail its assumptions say cannot exist.
            if (name == "sm_80 wide rows" && !assumptionsHold(*k, sizes)) continue;
            IndexVerdict v = checkIndexWidth(*k, dyn, seed);
            out.accesses += v.accesses;
            if (!v.ok) return outcome(Outcome::Failure, "index width", name + ": " + v.detail);
        }
    return out;
}

namespace {
std::string nvccPath() {
    namespace fs = std::filesystem;
    if (fs::exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
    return std::system("command -v nvcc > /dev/null 2>&1") == 0 ? "nvcc" : "";
}
} // namespace

bool nvccFound() {
    static const bool found = !nvccPath().empty();
    return found;
}

std::string compileWithNvcc(const std::map<std::string, std::string> &cuda, const std::string &dir) {
    namespace fs = std::filesystem;
    static const std::map<std::string, std::string> arch{{"sm_80", "-arch=sm_80"},
                                                         {"sm_90a", "-gencode=arch=compute_90a,code=sm_90a"}};
    static const std::string nvcc = nvccPath();
    if (nvcc.empty()) return "nvcc not found";
    for (auto &[target, text] : cuda) {
        const fs::path cu = fs::path(dir) / ("nvcc-" + target + ".cu"), log = fs::path(dir) / ("nvcc-" + target + ".log");
        std::ofstream(cu) << text;
        const std::string cmd = nvcc + " -c -std=c++17 " + arch.at(target) + " " + cu.string() + " -o " +
                                (fs::path(dir) / ("nvcc-" + target + ".o")).string() + " > " + log.string() + " 2>&1";
        int rc = std::system(cmd.c_str());
        if (rc != 0) {
            std::ifstream in(log);
            std::string first, line;
            while (std::getline(in, line) && first.size() < 600)
                if (line.find("error") != std::string::npos) first += line + "\n";
            return target + ": nvcc exit " + std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : rc) + ": " + first;
        }
    }
    return "";
}

} // namespace tilec::difffuzz
