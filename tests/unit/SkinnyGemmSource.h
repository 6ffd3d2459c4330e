/// \file
/// The seed's GEMM over 128 x 64 x 64 tiles as the skinny-GEMM tests write it (LowerSimLiveRowsTest,
/// LowerSimShrinkTilesTest): an A of M rows, possibly fewer than the tile's 128, and its float64 reference.
#pragma once

#include <string>
#include <vector>

namespace tilec::simtest {

/// C (M x N, of type `cType`) = A @ B in 128 x 64 x 64 tiles, the K loop `stages` deep, `epilogue` after it (acc
/// -> C when empty); transA: A stored (K, M).
inline std::string skinnyGemmSource(int M, int N, int K, const std::string &epilogue = "", bool transA = false,
                                    int stages = 2, const std::string &cType = "float32") {
    const std::string aShape = transA ? "(K, M)" : "(M, K)", aTile = transA ? "(64, 128)" : "(128, 64)";
    const std::string aCopy = transA ? "T.copy(A[ko * 64, by * 128], A_s)" : "T.copy(A[by * 128, ko * 64], A_s)";
    return "import tilelang.language as T\n"
           "M = " + std::to_string(M) + "\nN = " + std::to_string(N) + "\nK = " + std::to_string(K) + "\n"
           "@T.prim_func\n"
           "def g(A: T.Tensor(" + aShape + ", \"float16\"), B: T.Tensor((K, N), \"float16\"), C: T.Tensor((M, N), \"" + cType + "\")):\n"
           "    with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 128), threads=128) as (bx, by):\n"
           "        A_s = T.alloc_shared(" + aTile + ", \"float16\")\n"
           "        B_s = T.alloc_shared((64, 64), \"float16\")\n"
           "        acc = T.alloc_fragment((128, 64), \"float\")\n"
           "        T.clear(acc)\n"
           "        for ko in T.Pipelined(T.ceildiv(K, 64), num_stages=" + std::to_string(stages) + "):\n"
           "            " + aCopy + "\n"
           "            T.copy(B[ko * 64, bx * 64], B_s)\n"
           "            T.gemm(A_s, B_s, acc" + std::string(transA ? ", transpose_A=True" : "") + ")\n" +
           (epilogue.empty() ? "        T.copy(acc, C[by * 128, bx * 64])\n" : epilogue);
}

/// The float64 product of A (M x K, or K x M when transA) and B (K x N), row-major.
inline std::vector<double> skinnyGemmReference(int M, int N, int K, const std::vector<double> &a, const std::vector<double> &b,
                                               bool transA = false) {
    std::vector<double> c((size_t)M * N, 0.0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int k = 0; k < K; ++k) c[(size_t)i * N + j] += (transA ? a[(size_t)k * M + i] : a[(size_t)i * K + k]) * b[(size_t)k * N + j];
    return c;
}

} // namespace tilec::simtest
