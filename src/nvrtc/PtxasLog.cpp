/// \file
/// Reads the report ptxas writes with `-v` (in NVRTC's log) into per-function figures
/// (include/tilec/DeviceCompiler.h). The format is ptxas's, stable for many releases:
///
///     ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90a'
///     ptxas info    : Function properties for _Z3fooPf
///     ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
///     ptxas info    : Used 30 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]
#include "tilec/DeviceCompiler.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>

namespace tilec {

namespace {

/// The number just before `unit` in `line` ("30 registers" -> 30); nullopt-like -1 when absent.
int64_t numberBefore(const std::string &line, const std::string &unit) {
    auto at = line.find(unit);
    if (at == std::string::npos) return -1;
    size_t end = at;
    while (end > 0 && line[end - 1] == ' ') --end;
    size_t begin = end;
    while (begin > 0 && std::isdigit((unsigned char)line[begin - 1])) --begin;
    if (begin == end || end - begin > 15) return -1;
    return std::strtoll(line.substr(begin, end - begin).c_str(), nullptr, 10);
}

/// The text between the first pair of single quotes after `from`.
std::string quotedAfter(const std::string &line, size_t from) {
    auto a = line.find('\'', from);
    if (a == std::string::npos) return "";
    auto b = line.find('\'', a + 1);
    return b == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
}

} // namespace

std::vector<PtxasFunctionInfo> parsePtxasLog(const std::string &log) {
    std::vector<PtxasFunctionInfo> out;
    std::map<std::string, size_t> index; ///< function -> its entry in `out`
    long current = -1;                   ///< the entry that "Used N registers" belongs to
    std::string properties;              ///< the function the next stack/spill line belongs to
    std::istringstream in(log);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("ptxas", 0) != 0) continue;
        static const std::string kCompiling = "Compiling entry function ";
        static const std::string kProperties = "Function properties for ";
        if (auto p = line.find(kCompiling); p != std::string::npos) {
            PtxasFunctionInfo f;
            f.function = quotedAfter(line, p + kCompiling.size());
            auto forAt = line.find(" for ", p + kCompiling.size() + f.function.size());
            if (forAt != std::string::npos) f.target = quotedAfter(line, forAt);
            auto it = index.find(f.function);
            if (it == index.end()) {
                it = index.emplace(f.function, out.size()).first;
                out.push_back(f);
            }
            current = (long)it->second;
        } else if (auto q = line.find(kProperties); q != std::string::npos) {
            properties = line.substr(q + kProperties.size());
            while (!properties.empty() && (properties.back() == ' ' || properties.back() == '\r')) properties.pop_back();
        } else if (line.find("bytes stack frame") != std::string::npos) {
            auto it = index.find(properties);
            if (it == index.end()) continue; // a device function's properties
            auto &f = out[it->second];
            f.stackFrame = std::max<int64_t>(0, numberBefore(line, "bytes stack frame"));
            f.spillStores = std::max<int64_t>(0, numberBefore(line, "bytes spill stores"));
            f.spillLoads = std::max<int64_t>(0, numberBefore(line, "bytes spill loads"));
        } else if (line.find("Used ") != std::string::npos && current >= 0) {
            auto &f = out[(size_t)current];
            f.registers = (int)numberBefore(line, " registers");
            f.barriers = (int)numberBefore(line, " barriers");
            f.staticShared = std::max<int64_t>(0, numberBefore(line, " bytes smem"));
        }
    }
    return out;
}

} // namespace tilec
