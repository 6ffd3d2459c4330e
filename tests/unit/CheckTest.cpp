/// \file
/// Whole-kernel checks: shared memory (with pipeline stages), registers per thread, T.Parallel extents.
/// Each rule has a kernel that passes and one that fails, with the exact diagnostics.
#include "tilec/Check.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace tilec;
using namespace tilec::ir;

namespace {

Expr i32(int64_t v) { return IntImm::make(DType::Int32, v); }

/// One source line per buffer, so every diagnostic shows where it points.
struct Harness {
    SourceManager sm;
    int file;
    std::ostringstream out;
    DiagnosticEngine diag{sm, out};
    Kernel k;
    Var ko = makeVar("ko", DType::Int32);
    std::vector<Stmt> body;

    Harness() {
        file = sm.add("k.tile", "with T.Kernel(8, 8, threads=128) as (bx, by):\n"
                                "    a = T.alloc(...)\n"
                                "    b = T.alloc(...)\n"
                                "    c = T.alloc(...)\n"
                                "    d = T.alloc(...)\n"
                                "    for i in T.Parallel(n):\n");
        diag.setErrorLimit(0);
        k.name = "gemm";
        k.launchLoc = {file, 1, 6, 1, 33};
        k.grid = {i32(8), i32(8), i32(1)};
        k.threads = 128;
    }
    /// An allocation on line 2, 3, ... in declaration order.
    Buffer alloc(const char *name, Scope s, DType t, std::vector<int64_t> shape) {
        std::vector<Expr> dims;
        for (auto d : shape) dims.push_back(i32(d));
        int line = 2 + (int)k.allocs.size();
        Buffer b = makeBuffer(name, s, t, dims, {file, line, 9, line, 20});
        k.allocs.push_back(b);
        return b;
    }
    /// A pipelined loop copying into each of `dsts`.
    void pipelined(int stages, const std::vector<Buffer> &dsts) {
        std::vector<Stmt> copies;
        // Loads from global memory: what a pipeline stages.
        for (auto &d : dsts) {
            Buffer g = makeBuffer(d->name + "_global", Scope::Global, d->dtype, d->shape, d->loc);
            copies.push_back(Copy::make(Region::whole(g), Region::whole(d)));
        }
        body.push_back(For::make(ko, i32(0), i32(16), ForKind::Pipelined, stages, Seq::make(copies)));
    }
    bool run(const char *arch = "sm_90a") {
        k.body = Seq::make(body);
        return checkKernel(k, *Target::parse(arch), diag);
    }
};

} // namespace

TEST(Check, SeedGemmFitsEverywhere) {
    for (const char *arch : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}) {
        Harness h;
        Buffer as = h.alloc("A_shared", Scope::Shared, DType::Float16, {128, 64});
        Buffer bs = h.alloc("B_shared", Scope::Shared, DType::Float16, {64, 128});
        h.alloc("C_local", Scope::Fragment, DType::Float32, {128, 128}); // 128 registers per thread
        h.pipelined(3, {as, bs});                                          // 2 * 16 KiB * 3 = 96 KiB
        EXPECT_TRUE(h.run(arch)) << arch << "\n" << h.out.str();
        EXPECT_EQ(h.out.str(), "");
    }
}

TEST(Check, SharedMemoryCountsPipelineStages) {
    Harness h;
    Buffer as = h.alloc("A_shared", Scope::Shared, DType::Float16, {256, 128});
    Buffer bs = h.alloc("B_shared", Scope::Shared, DType::Float16, {128, 128});
    h.alloc("Q_shared", Scope::Shared, DType::Float16, {8}); // never used: it takes no shared memory
    h.pipelined(3, {as, bs});
    EXPECT_FALSE(h.run());
    EXPECT_EQ(h.out.str(),
              "k.tile:1:6: error: kernel 'gemm' declares 294912 bytes of shared memory, above the 232448-byte "
              "limit of sm_90a\n"
              "with T.Kernel(8, 8, threads=128) as (bx, by):\n"
              "     ^~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
              "k.tile:2:9: note: 'A_shared' float16[256, 128]: 65536 bytes x 3 pipeline stages\n"
              "    a = T.alloc(...)\n"
              "        ^~~~~~~~~~~\n"
              "k.tile:3:9: note: 'B_shared' float16[128, 128]: 32768 bytes x 3 pipeline stages\n"
              "    b = T.alloc(...)\n"
              "        ^~~~~~~~~~~\n");
}

TEST(Check, SharedMemoryCountsBuffersInUseTogether) {
    // Two 64 KiB buffers used by different top-level statements may share memory on sm_86 (101376 bytes); a
    // third used with both may not. A copy from registers inside a pipeline is not staged.
    for (bool together : {false, true}) {
        Harness h;
        Buffer a = h.alloc("A_shared", Scope::Shared, DType::Float16, {256, 128});
        Buffer b = h.alloc("B_shared", Scope::Shared, DType::Float16, {256, 128});
        Buffer f = h.alloc("F", Scope::Fragment, DType::Float16, {256, 128});
        h.body.push_back(Copy::make(Region::whole(f), Region::whole(a)));
        if (together) h.body.push_back(Copy::make(Region::whole(a), Region::whole(b)));
        h.body.push_back(For::make(h.ko, i32(0), i32(16), ForKind::Pipelined, 2,
                                   Copy::make(Region::whole(f), Region::whole(b))));
        EXPECT_EQ(h.run("sm_86"), !together) << h.out.str();
        if (together)
            EXPECT_NE(h.out.str().find("declares 131072 bytes of shared memory"), std::string::npos) << h.out.str();
    }
}

TEST(Check, SharedMemoryLimitDependsOnTarget) {
    // 2 * 32 KiB * 2 stages = 128 KiB: fine on sm_90 and sm_80, too much for sm_86.
    for (auto [arch, ok] : {std::pair{"sm_90", true}, {"sm_80", true}, {"sm_86", false}, {"sm_89", false}}) {
        Harness h;
        Buffer a = h.alloc("K_shared", Scope::Shared, DType::Float16, {128, 128});
        Buffer b = h.alloc("V_shared", Scope::Shared, DType::Float16, {128, 128});
        h.pipelined(2, {a, b});
        EXPECT_EQ(h.run(arch), ok) << arch;
        if (!ok) EXPECT_NE(h.out.str().find("131072 bytes of shared memory, above the 101376-byte limit of " +
                                            std::string(arch)),
                           std::string::npos)
                     << h.out.str();
    }
}

TEST(Check, SharedBufferOutsideThePipelineCountsOnce) {
    Harness h;
    Buffer q = h.alloc("Q_shared", Scope::Shared, DType::Float16, {256, 256}); // 128 KiB, copied once
    h.body.push_back(Copy::make(Region::whole(q), Region::whole(q)));
    h.pipelined(4, {});
    EXPECT_TRUE(h.run()) << h.out.str();
}

TEST(Check, FragmentPastTheRegistersSpills) {
    Harness h;
    h.k.threads = 256;
    h.alloc("acc", Scope::Fragment, DType::Float32, {256, 256});
    EXPECT_TRUE(h.run()) << h.out.str(); // ptxas keeps what does not fit in local memory, as TileLang lets it
    EXPECT_EQ(h.out.str(), "k.tile:2:9: warning: fragment 'acc' needs 256 registers per thread (float32[256, 256] "
                           "over 256 threads), more than the 255 a thread can have: ptxas keeps what does not fit in "
                           "local memory (spills, slower; see --resource-usage)\n"
                           "    a = T.alloc(...)\n"
                           "        ^~~~~~~~~~~\n");
}

TEST(Check, FragmentFourTimesPastTheRegistersIsAnError) {
    Harness h;
    h.k.threads = 64;
    h.alloc("acc", Scope::Fragment, DType::Float32, {256, 256}); // 1024 registers per thread, past 4 x 255
    EXPECT_FALSE(h.run());
    EXPECT_NE(h.out.str().find("error: fragment 'acc' needs 1024 registers per thread (float32[256, 256] over 64 "
                               "threads), more than the 255 a thread can have, and more than the 1020 tilec lets "
                               "spill to local memory"),
              std::string::npos)
        << h.out.str();
}

TEST(Check, LocalBufferIsPerThread) {
    Harness h;
    h.alloc("tmp", Scope::Local, DType::Float32, {256});
    EXPECT_TRUE(h.run());
    EXPECT_NE(h.out.str().find("warning: local buffer 'tmp' needs 256 registers per thread (float32[256]), more "
                               "than the 255 a thread can have"),
              std::string::npos)
        << h.out.str();
    Harness big;
    big.alloc("tmp", Scope::Local, DType::Float32, {2048});
    EXPECT_FALSE(big.run());
    EXPECT_NE(big.out.str().find("error: local buffer 'tmp' needs 2048 registers per thread"), std::string::npos)
        << big.out.str();
}

TEST(Check, RegistersSummedOverBuffers) {
    Harness h;
    h.k.threads = 128;
    h.alloc("acc", Scope::Fragment, DType::Float32, {128, 128}); // 128
    h.alloc("scores", Scope::Fragment, DType::Float32, {128, 64}); // 64
    h.alloc("probs", Scope::Fragment, DType::Float16, {128, 64});  // 32
    h.alloc("extra", Scope::Fragment, DType::Float32, {128, 32});  // 32
    EXPECT_TRUE(h.run()); // a warning: ptxas decides (spills), as TileLang lets it
    EXPECT_EQ(h.out.str(),
              "k.tile:1:6: warning: the fragments and locals of kernel 'gemm' need 256 registers per thread "
              "together, more than the 255 a thread can have: ptxas will keep some in local memory (spills; see "
              "--resource-usage)\n"
              "with T.Kernel(8, 8, threads=128) as (bx, by):\n"
              "     ^~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
              "k.tile:2:9: note: 'acc' float32[128, 128] over 128 threads: 128 registers per thread\n"
              "    a = T.alloc(...)\n"
              "        ^~~~~~~~~~~\n"
              "k.tile:3:9: note: 'scores' float32[128, 64] over 128 threads: 64 registers per thread\n"
              "    b = T.alloc(...)\n"
              "        ^~~~~~~~~~~\n"
              "k.tile:4:9: note: 'probs' float16[128, 64] over 128 threads: 32 registers per thread\n"
              "    c = T.alloc(...)\n"
              "        ^~~~~~~~~~~\n");
}

TEST(Check, FlashAttentionD128Fits) {
    Harness h;
    h.k.threads = 256;
    h.alloc("acc", Scope::Fragment, DType::Float32, {128, 128});   // 64
    h.alloc("scores", Scope::Fragment, DType::Float32, {128, 64}); // 32
    h.alloc("probs", Scope::Fragment, DType::Float16, {128, 64});  // 16
    for (const char *n : {"row_max", "row_sum", "prev_max", "rescale"})
        h.alloc(n, Scope::Fragment, DType::Float32, {128}); // 1 each
    EXPECT_TRUE(h.run()) << h.out.str();
}

TEST(Check, ParallelExtentMustBeConstant) {
    Harness h;
    Var n = makeVar("n", DType::Int32), i = makeVar("i", DType::Int32), j = makeVar("j", DType::Int32);
    Buffer acc = h.alloc("acc", Scope::Fragment, DType::Float32, {64});
    SourceRange loop{h.file, 6, 14, 6, 28};
    // T.Parallel(n, n): two loops with one location get one message.
    Stmt store = Store::make(acc, {i}, FloatImm::make(DType::Float32, 0));
    h.body.push_back(For::make(i, i32(0), n, ForKind::Parallel, 0,
                               For::make(j, i32(0), n, ForKind::Parallel, 0, store, loop), loop));
    // Constant parallel loops and non-constant serial loops are fine.
    h.body.push_back(For::make(i, i32(0), i32(64), ForKind::Parallel, 0, store, loop));
    h.body.push_back(For::make(i, i32(0), n, ForKind::Serial, 0, store, loop));
    EXPECT_FALSE(h.run());
    EXPECT_EQ(h.out.str(), "k.tile:6:14: error: T.Parallel extent must be a compile-time constant\n"
                           "    for i in T.Parallel(n):\n"
                           "             ^~~~~~~~~~~~~~\n");
}

TEST(Check, HugeShapesDoNotOverflow) {
    Harness h;
    Buffer big = h.alloc("big", Scope::Shared, DType::Float64, {1 << 30, 1 << 30});
    h.alloc("frag", Scope::Fragment, DType::Float64, {int64_t(1) << 40, int64_t(1) << 20});
    h.pipelined(1 << 30, {big});
    EXPECT_FALSE(h.run());
    EXPECT_EQ(h.diag.errorCount(), 2) << h.out.str();
}
