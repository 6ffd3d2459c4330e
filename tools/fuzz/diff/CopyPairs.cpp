/// \file
/// Every dtype pair a T.copy may convert between, on every path between global, shared and fragment memory
/// (and into a T.gemm operand): each program must be a located error or compile with nvcc for sm_80 and sm_90a
/// (issue 23: a bfloat16 global tile copied into a float32 shared T.gemm operand was accepted and nvcc
/// rejected the CUDA). Programs are checked one by one in the compiler; the accepted ones are then compiled
/// together, as one file of many kernels, so nvcc runs once per target.
#include "Check.h"
#include "CopyPairs.h"

#include <filesystem>
#include <fstream>
#include <iostream>

namespace tilec::difffuzz {

namespace {

const std::vector<std::string> kTypes{"float32", "float16", "bfloat16", "float8_e4m3", "float8_e5m2",
                                      "int8",    "uint8",   "int16",    "int32",       "float64"};

std::string alloc(char where, const std::string &name, const std::string &dt) {
    return "        " + name + " = T.alloc_" + (where == 's' ? "shared" : "fragment") + "((32, 32), \"" + dt + "\")\n";
}

/// The kernel `name` whose one converting copy goes from `from` (dtype s) to `to` (dtype d): 'g' global,
/// 's' shared, 'f' fragment; `gemm`: the converted shared tile is a T.gemm operand afterwards.
std::string kernel(const std::string &name, char from, char to, const std::string &s, const std::string &d, bool gemm) {
    std::string t = "@T.prim_func\ndef " + name + "(A: T.Tensor((64, 64), \"" + s + "\"), Y: T.Tensor((64, 64), \"" + d +
                    "\")" + (gemm ? ", G: T.Tensor((32, 32), \"float32\")" : "") + "):\n" +
                    "    with T.Kernel(1, threads=128) as bx:\n";
    std::string src = "A[0, 0]";
    if (from != 'g') t += alloc(from, "a", s) + "        T.copy(A[0, 0], a)\n", src = "a";
    if (to == 'g') return t + "        T.copy(" + src + ", Y[0, 0])\n";
    t += alloc(to, "b", d) + "        T.copy(" + src + ", b)\n";
    if (gemm)
        t += alloc('s', "w", d) + "        T.copy(b, w)\n" + alloc('f', "acc", "float32") +
             "        T.clear(acc)\n        T.gemm(b, w, acc)\n        T.copy(acc, G[0, 0])\n";
    return t + "        T.copy(b, Y[0, 0])\n";
}

} // namespace

int copyPairs(const std::string &out, bool nvcc) {
    namespace fs = std::filesystem;
    static const std::vector<std::pair<char, char>> paths{{'g', 's'}, {'g', 'f'}, {'s', 'f'}, {'f', 's'},
                                                          {'s', 's'}, {'s', 'g'}, {'f', 'g'}};
    std::string combined = "import tilelang.language as T\n\n\n";
    int accepted = 0, refused = 0, failed = 0;
    for (auto &s : kTypes)
        for (auto &d : kTypes)
            for (size_t p = 0; p <= paths.size(); ++p) {
                const bool gemm = p == paths.size();
                if (gemm && !(d == "float16" || d == "bfloat16" || d == "float32" || d == "float8_e4m3" || d == "int8")) continue;
                auto [from, to] = gemm ? std::pair<char, char>{'g', 's'} : paths[p];
                const std::string name = "cp_" + s + "_" + d + "_" + from + to + (gemm ? "_gemm" : "");
                const std::string k = kernel(name, from, to, s, d, gemm);
                Outcome o = compileText("import tilelang.language as T\n\n\n" + k);
                if (o.kind == Outcome::Failure) {
                    std::cout << "FAIL " << name << ": " << o.category << ": " << o.detail << "\n";
                    ++failed;
                } else if (o.kind == Outcome::Rejected) {
                    // a located error: `file:line:col: error:`
                    bool located = o.detail.find("fuzz.tile:") != std::string::npos;
                    if (!located) std::cout << "FAIL " << name << ": refused without a location: " << o.detail << "\n";
                    failed += !located, ++refused;
                } else {
                    combined += k + "\n\n", ++accepted;
                }
            }
    fs::create_directories(out);
    std::ofstream(fs::path(out) / "copy-pairs.tile") << combined;
    std::cout << accepted << " copies accepted, " << refused << " refused with a located error";
    if (nvcc && !nvccFound()) std::cout << "; nvcc not found: not compiled";
    if (nvcc && accepted && nvccFound()) {
        Outcome all = compileText(combined);
        std::string err = all.kind == Outcome::Ok ? compileWithNvcc(all.cuda, out) : all.category + ": " + all.detail;
        std::cout << "; the accepted ones " << (err.empty() ? "compile with nvcc for sm_80 and sm_90a" : "FAIL: " + err);
        failed += !err.empty();
    }
    std::cout << "; " << failed << " failed\n";
    return failed ? 1 : 0;
}

} // namespace tilec::difffuzz
