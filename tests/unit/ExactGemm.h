/// \file
/// A GEMM checked exactly on the CPU simulator (ConflictSwizzlesTest.cpp, SplitSwizzlesTest.cpp): A and B
/// multiples of 1/16 in [-1, 1], exact in every type of the tests and in every partial sum, against the float64
/// product; every element of C compared.
#pragma once

#include "LowerSimUtil.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace tilec::simtest {

/// C = scale * A B (A B^T where transB), A M x K.
struct ExactGemm {
    std::string a, b, c;
    std::map<std::string, std::vector<double>> io;
    std::vector<double> want;
    ExactGemm(std::string a_, std::string b_, std::string c_, int M, int N, int K, bool transB, double scale, uint64_t seed)
        : a(std::move(a_)), b(std::move(b_)), c(std::move(c_)), want((size_t)M * N, 0) {
        io[a] = randomData((size_t)M * K, seed, -1, 1);
        io[b] = randomData((size_t)K * N, seed + 1, -1, 1);
        for (auto *t : {&io[a], &io[b]})
            for (auto &e : *t) e = std::round(e * 16) / 16;
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j)
                for (int kk = 0; kk < K; ++kk)
                    want[(size_t)i * N + j] += scale * io[a][(size_t)i * K + kk] * io[b][transB ? (size_t)j * K + kk : (size_t)kk * N + j];
    }
    /// One run of `kernel` under interleaving `seed` (C first filled with NaN; `scalars`: T.dynamic sizes), every
    /// element of C checked.
    Outcome run(const ir::Kernel &kernel, uint64_t seed = 0, const std::map<std::string, double> &scalars = {}) {
        io[c].assign(want.size(), std::nan(""));
        Outcome o = runCaught(kernel, {{a, &io[a]}, {b, &io[b]}, {c, &io[c]}}, scalars, seed);
        for (size_t e = 0; e < want.size(); ++e)
            o.check(io[c][e] == want[e], [&] { return c + "[" + std::to_string(e) + "] = " + std::to_string(io[c][e]) + ", expected " + std::to_string(want[e]); });
        return o;
    }
};

} // namespace tilec::simtest
