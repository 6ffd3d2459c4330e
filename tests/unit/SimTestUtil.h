/// \file
/// Shared by the Sim tests (LowerSimTest.cpp, LowerSimHopperTest.cpp): examples with other instantiations,
/// input data and comparisons against references.
#pragma once

#include "EvalTestUtil.h"
#include "sim/Simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tilec::simtest {

inline std::vector<double> randomData(size_t n, unsigned seed, double lo = -2, double hi = 2) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> d(lo, hi);
    std::vector<double> v(n);
    for (auto &x : v) x = (double)(float)d(g);
    return v;
}

/// Quarters in [-2, 2]: every product and partial sum of a GEMM of modest K is exact in float32, whatever
/// the order of the sum, so the result rounded to the output type is exactly the float64 reference rounded.
inline std::vector<double> quarters(size_t n, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::vector<double> v(n);
    for (auto &x : v) x = (double)((int64_t)(g() % 17) - 8) / 4;
    return v;
}

/// A file of the project's examples/ (or of another of its folders: "benchmarks").
inline std::string example(const std::string &name, const std::string &dir = "examples") {
    return evaltest::readFile(std::string(TILEC_SOURCE_DIR) + "/" + dir + "/" + name);
}

/// The example's factory with other arguments: its source with the module-level instantiations replaced.
inline std::string withExport(const std::string &file, const std::string &exports, const std::string &dir = "examples") {
    std::string src = example(file, dir);
    std::istringstream in(src);
    std::string line, out;
    while (std::getline(in, line)) {
        bool instantiation = !line.empty() && line[0] != ' ' && line[0] != '#' && line.find(" = ") != std::string::npos &&
                             line.find('(') != std::string::npos;
        if (!instantiation) out += line + "\n";
    }
    return out + exports + "\n";
}

inline void expectNear(const std::vector<double> &got, const std::vector<double> &want, double rel, const char *what) {
    ASSERT_EQ(got.size(), want.size());
    int bad = 0;
    for (size_t i = 0; i < got.size() && bad < 5; ++i) {
        double tol = rel * std::max(1.0, std::fabs(want[i]));
        if (!(std::fabs(got[i] - want[i]) <= tol)) {
            ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected " << want[i];
            ++bad;
        }
    }
}

/// Runs one lowered kernel on the simulator over `tensors`; a simulator error or a race is a test failure.
inline void simulate(const ir::Kernel &k, std::map<std::string, std::vector<double> *> tensors,
                     std::map<std::string, double> scalars = {}) {
    Simulator s(k, std::move(tensors), std::move(scalars));
    try {
        s.run();
    } catch (const SimError &e) {
        FAIL() << e.what();
    }
    for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
}

} // namespace tilec::simtest
