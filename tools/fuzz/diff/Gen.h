/// \file
/// The differential fuzzer's program model: a random, well-typed tile program as a small tree of operations
/// over a fixed cast of tensors and tile buffers, printed as .tile text, and the mutations that shrink it.
///
/// The cast: global inputs A and B (float32, random shapes the tiles need not divide), GA and GB (float16
/// T.gemm operands), outputs Y (2-D), R (1-D, one row of tiles per block), W (one value per thread) and Z
/// (1-D, atomics, zero-initialized); tile buffers s0, s1 (shared), f0, f1 (fragments), all (BM, BN), the
/// per-row and per-column fragments rm (BM,) and rn (BN,), the T.gemm accumulator acc and its shared
/// operands, a scalar v (T.alloc_var) and a thread's own registers lr (T.alloc_local, 8). BM and BN are module-level constants set through -D.
/// Every buffer an operation reads is initialized first (the `init` operations, which shrinking keeps
/// while the buffer is used), so every value a program computes is defined.
#pragma once

#include "Scalar.h"

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace tilec::difffuzz {

/// The generators' random source: integers in [lo, hi], coins, picks.
struct Rng {
    std::mt19937_64 g;
    int64_t in(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g); }
    bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(g) < p; }
    template <class T> const T &pick(const std::vector<T> &v) { return v[(size_t)in(0, (int64_t)v.size() - 1)]; }
};

/// An expression of the model: a leaf (text, with the buffers it reads) or an operator over children.
struct GExpr {
    std::string op;                      ///< "" for a leaf; "+", "-", "*", "max", "min", "ite", "abs", "<", ...
    std::string leaf;                    ///< a leaf's text
    std::vector<std::shared_ptr<GExpr>> kids;
    std::set<std::string> reads;         ///< tile buffers a leaf reads
    bool isBool = false;
    bool pastBound = false;              ///< a constant index past its buffer's extent (a located error)
    std::string print() const;
    void collect(std::set<std::string> &out) const;
};
using GExprP = std::shared_ptr<GExpr>;

struct GOp {
    enum Kind {
        Load,         ///< T.copy(A[origin or slice], dst)
        Store,        ///< T.copy(src, Y[...] or R[...])
        TileCopy,     ///< T.copy between tile buffers (whole or sub-regions)
        Fill,         ///< T.fill / T.clear
        Parallel,     ///< T.Parallel nest storing expr (under an optional per-iteration condition)
        Reduce,       ///< T.reduce_*(src, rm or rn, dim, clear)
        AtomicRegion, ///< T.atomic_add(Z[...], rm)
        AtomicElem,   ///< T.atomic_add(Z[...], src[i, j]) in a T.Parallel
        Gemm,         ///< clear acc, a T.Pipelined (or serial) loop of two tile copies and T.gemm
        Serial,       ///< for s in T.serial(n): kids
        IfUniform,    ///< if <block-uniform condition>: kids else: elseKids
        IfThread,     ///< if <thread-dependent condition>: kids (tile statements there must be rejected)
        ScalarThread, ///< W[thread] = expr, per thread, optionally under a thread-dependent if (or through lr)
        SetVar,       ///< v = uniform expr
        /// if tx < n: kids else: elseKids, both thread-level statements (ScalarThread with n = 0, SharedStore):
        /// threads exchange data through shared memory in the branches (generate's threadShared)
        IfThreadScalar,
        SharedStore,  ///< dst[tensor] = expr, one thread's store into a shared tile (`tensor` holds the index)
        /// dst = startInit (an int32 T.alloc_var read from P), then per thread `for q in T.serial(start, end,
        /// step)` storing into V[block's chunk + q + w] (GenShapes.cpp: decorateStepped); h > 0: under `if tx < h`
        Stepped,
        /// a tile through the batched tensors: X[b, (h,) rows, cols] copied into dst, changed by `value`, copied
        /// to Q, for every b and h of their leading T.dynamic dimensions (GenShapes.cpp: decorateBatched); slice:
        /// X read and Q stored element by element in the T.Parallel, under a bounds guard
        Batched,
        /// `T.ptx_wait_group(n)` (n >= 0) or `T.ptx_commit_group()` (n < 0), placed by decorateAsync (GenAsync.cpp)
        AsyncWait,
    } kind = Fill;
    bool init = false;            ///< initializes `dst` (kept by shrinking while dst is used)
    std::string dst, src, tensor; ///< buffer names
    int64_t dr = 0, dc = 0;       ///< origin offsets of global regions
    bool slice = false;           ///< region written as slices instead of an origin
    int64_t r0 = 0, c0 = 0, r1 = 0, c1 = 0, h = 0, w = 0; ///< TileCopy sub-regions (-1 h: whole)
    /// Parallel over a 2-D tile: boxH > 0 runs the nest over (boxH, boxW) and stores dst[i + boxR, j + boxC], a box of
    /// the tile at a constant corner (TileKernels' mHC split-mixes backward fills a fragment's rows in parts).
    int64_t boxH = 0, boxW = 0, boxR = 0, boxC = 0;
    /// Parallel over a 2-D tile: expand > 1 runs the nest over (BM, BN / expand) with `for w in T.serial(expand)` inside
    /// and every `j` of the statement `jq * expand + w` (TileKernels' casts read and write 8 elements per iteration;
    /// layout inference keeps them in the iteration's thread: GenRandom.cpp, decorateExpansions).
    int64_t expand = 0;
    GExprP value, cond;
    std::string reduceKind;       ///< "sum", "max", ...
    int dim = 0;
    bool clear = true, transA = false, transB = false, clearAccum = false, loopVarBound = false;
    int stages = 0;
    int64_t n = 0;                ///< Serial trip count; IfThread bound
    /// Serial and Gemm: the loop's first value, a block-dependent expression ("" for 0), so that a loop runs
    /// 0 times or starts past its end in some blocks (`T.Pipelined(loop_st, loop_ed)` of varlen attention).
    std::string start;
    /// Serial and Gemm: the loop's end as an expression ("" for `n` / `T.ceildiv(K, BK)`): a run-time or
    /// trace-time conditional (`T.if_then_else(bx < 2, bx + 2, bx - 1)`, `3 if bx == 0 else 1`) that code
    /// generation splices into the loop header (GenExtents.cpp). Parallel: its extents ("" for the buffer's
    /// shape), trace-time conditionals.
    std::string end;
    bool alias = false;           ///< IfThread: through `tv = tx`
    /// ScalarThread (unconditional): > 0, the value goes through `lanes` registers of the T.alloc_local buffer lr,
    /// filled by a T.Parallel that every thread runs whole (it stores only into lr; `twice`: a second such nest
    /// updates them), and W gets register `lane`.
    int64_t lanes = 0, lane = 0;
    bool twice = false;
    /// Parallel over a 2-D tile: the body first binds `row` to an int32 row of A read from A (TileLang's sparse
    /// attention binds `idx = Indices[...]`), and the value gathers `A[row, ...]` through it.
    bool gather = false;
    /// Gemm: > 0, the loop's start and the copies' K offset go through int32 T.alloc_var scalars (`klo`, `kz`)
    /// set before the loop (variable-length attention's `kv_start = cu_seqlens_k[bz]`); 2: each set to a wrong
    /// value and corrected under a block-uniform condition that always holds, so that taking the first store
    /// for the scalar's value (when pipelining the loop or giving its producer the bounds) reads wrongly.
    int scalarBounds = 0;
    /// Gemm: > 0, the loop's copies and T.gemm sit under an `if` on the iteration that reads no tile (sparse
    /// attention's `if i_s >= 0:`): 1 `(k + bx) % 3 != 1`; 2 the copies' K block gathered through the int32
    /// T.alloc_var `kg`, set from a GA element at the top of the body (`i_s = block_indices[..., k]`), and the
    /// condition on kg. pipelineLoops issues such copies ahead under the condition (GenRandom.cpp).
    int guarded = 0;
    /// Serial and Stepped: > 0, the loop's step (a stepped T.serial); with startInit, `dst = startInit` before
    /// the loop, dst an int32 T.alloc_var read from memory that the start reads, and (twice) `dst = dst + 1`
    /// at the end of the body (GenShapes.cpp)
    int64_t step = 0;
    std::string startInit;
    /// Stepped: the loop as the generator's own model computes it (GenShapes.cpp: expectedShapes). P indices
    /// are -1 for `bx % 4`; st = int(P[pIndex] * 4) + off; the start st + tx (mode 0), st + tx % 32 (1), st + plus
    /// (2); the end endK (endKind 0), st + endK (1), int(P[endPIndex] * 4) + endK (2).
    struct StepSpec {
        int64_t pIndex = -1, off = 0, mode = 0, plus = 0, endKind = 0, endK = 0, endPIndex = -1;
    } spec;
    double scale = 0; ///< Batched: the factor `value` multiplies the tile by
    /// Load (into a shared tile): 1, written `T.async_copy` (its group closed by itself, waited for by AsyncWait
    /// ops the decorator places, or never). Gemm: the operand copies are T.async_copy, waited for with
    /// `T.ptx_wait_group(asyncWait)` before T.gemm (1; asyncWait < 0: no wait), or (2) the next iteration's copies
    /// issued after T.gemm (under `if k + 1 < end` where asyncGuard), the first before the loop, the wait at the
    /// top of the body (GenAsync.cpp). Whether tilec proves the waits or falls back to synchronous copies, the
    /// result is the synchronous program's (docs/LANGUAGE.md, T.async_copy).
    int async = 0;
    int64_t asyncWait = 0;
    bool asyncGuard = false, asyncDrain = false; ///< Gemm 2: the prefetch's condition; a wait(0) after the loop
    /// Gemm: > 0, the product is `T.wgmma_gemm` (explicitly asynchronous on sm_90a's wgmma path, honourProgramWaits)
    /// and the program waits with `T.wait_wgmma`: 1 `(0)` right after it; 2 only after the loop; 3 `(1)` after it
    /// (the previous iteration's product retired) and `(0)` after the loop. 2 and 3 only in serial loops of one
    /// warpgroup, where every thread that writes the operands issues the product (tilec orders its own statements
    /// after it; another warpgroup's writes would be the program's race), unless setLateWgmmaWaits(false).
    int wgmma = 0;
    std::vector<GOp> kids, elseKids;
};

struct GProgram {
    uint64_t seed = 0;
    int threads = 128, gx = 1, gy = 1;
    int64_t bm = 32, bn = 32, bmText = 16, bnText = 16; ///< -D values, and the defaults the text carries
    int64_t ra = 40, ca = 40, rb = 40, cb = 40, ry = 40, cy = 40, rn = 64, zn = 64, wn = 128;
    bool gemm = false;
    bool dynamic = false; ///< the rows of A, B and Y are T.dynamic("m") (= ra), GEMM's K T.dynamic("kk") (= gk)
    bool dynamicCols = false; ///< (with dynamic) the columns of A, B and Y too: T.dynamic("n") (= ca = cb = cy)
    bool dynamicMN = false;   ///< (with dynamic and gemm) GEMM's M and N: T.dynamic("gm"), T.dynamic("gn")
    /// A third grid dimension of T.dynamic("nb") blocks (a batch; -1: none), the size of an input NB that
    /// nothing reads: 0 launches nothing, every output keeps its initial value; 2 runs every block twice (the
    /// atomics add twice).
    int64_t batch = -1;
    int64_t gm = 32, gn = 32, gk = 32, bk = 16; ///< GEMM sizes (gm, gn are also bm, bn)
    std::string tileType = "float32", tileType1 = "float32"; ///< dtypes of s0/f0 and s1/f1
    /// dtypes of the T.gemm operands GA/GB and of their shared tiles ga_s/gb_s (a converting operand copy)
    std::string gemmGlobalType = "float16", gemmSharedType = "float16";
    std::vector<GOp> ops;
    /// The module-level name the kernel is bound to (its C name): sometimes a C/C++ keyword or C library name.
    std::string kernelName = "kernel";
    /// The front-end oracle's scalar block (Scalar.h), written to the output S; null: none.
    std::shared_ptr<ScalarBlock> scalars;
    /// The scalar block has 16-bit casts with Python float operands (decorateNarrow): the reference and the
    /// simulator round float16 and bfloat16 to their precision (a `# narrow rounding` line), its tiles float32.
    bool narrowRounding = false;
    /// The kernel is compiled with tl.disable_thread_storage_sync and the text carries the author's
    /// T.sync_threads(): between per-thread statements (shared stores, per-thread writes, thread-scalar branches)
    /// and at the top of loops over them, never beside a tile statement, whose threads are tilec's to order
    /// (issue 23: TileKernels' engram_gate_bwd; the simulator's race check judges what tilec adds).
    bool authorSyncs = false;
    /// Stepped loops (GenShapes.cpp): > 0, elements of the output V they store into (vb per block), and the
    /// input P (4 floats) their starts are read from.
    int64_t vn = 0, vb = 0;
    /// Batched tensors (GenShapes.cpp): rank 3 or 4 (0: none) of the input X and the output Q, shaped
    /// (lead, [heads,] xr, xc): lead is T.dynamic("nb") (the grid's batch, indexed by bz) where batch >= 0, else
    /// T.dynamic("xb") (a T.serial loop), heads T.dynamic("xh"); each may be 0.
    int xrank = 0;
    int64_t xb = 0, xh = 0, xr = 0, xc = 0;
    std::string xType = "float32";
    /// T.StridedTensor parameters (GenStrided.cpp: decorateStrided): per tensor name, its strides as the text
    /// spells them (integers or T.dynamic symbols of `strideSymbols`) and their values, and the kind drawn
    /// ("gaps", "transposed", "overlap", "broadcast", "elements"); printed with a `# strides NAME: ...` line.
    /// Some are `T.ptr` parameters that T.make_tensor(p, shape, dtype, strides) makes the tensor.
    struct Strides {
        std::vector<std::string> text;
        std::vector<int64_t> value;
        std::string kind;
        bool pointer = false; ///< a `T.ptr` parameter made the tensor by T.make_tensor(..., strides=...) in the body
        /// (with pointer) no parameter: inside the launch, T.make_tensor(TP[2 * e + (bx + by) % 2], ...) of the
        /// pointer table TP (`T.Tensor((2 * entries,), T.ptr)`), whose entries 2e and 2e + 1 hold its address
        /// (docs/LANGUAGE.md 3.9); printed with a `# pointer table: NAME ...` line in entry order
        bool table = false;
    };
    std::map<std::string, Strides> strided;
    std::map<std::string, int64_t> strideSymbols; ///< T.dynamic strides and their values
    /// Scalar parameters (GenScalarParams.cpp): name -> (dtype, value), the value in the `# dynamic:` line.
    std::map<std::string, std::pair<std::string, int64_t>> scalarParams;
    /// T.alloc_global workspaces (GenWorkspace.cpp: decorateWorkspace): "" none; "Y": the kernel writes WY in
    /// Y's place and a second launch copies WY into Y; "Y here": the same launch copies its tile of WY into Y
    /// after its statements; "A": a first launch copies A into WA, which the kernel reads in A's place.
    std::string workspace;
    /// A packed sub-byte input U (GenSubByte.cpp: decorateSubByte): ru > 0, U is (ru, cu) of `uType` ("int4",
    /// "uint4"), two elements to a byte as torch packs them (cu even); uStride > 0: a T.StridedTensor with row
    /// stride uStride elements (even) and innermost 1. Some loads of A read U instead (unpacking copies); the
    /// C function takes bytes, and the `# strides U:` line gives the bytes' strides (uStride / 2, 1).
    int64_t ru = 0, cu = 0, uStride = 0;
    std::string uType = "int4";
    /// A packed output UO of `uType` (ruo > 0): (ruo, cuo), cuo even, row stride uoStride elements (0:
    /// row-major); a Store of a 2-D tile writes it in Y's place (GOp::tensor "UO"), whole bytes, two elements each.
    int64_t ruo = 0, cuo = 0, uoStride = 0;
    /// The concrete shape of tensor parameter `name` (empty when the program has no such parameter).
    std::vector<int64_t> shapeOf(const std::string &name) const;
    /// The strides of `name` as values (empty: row-major).
    std::vector<int64_t> stridesOf(const std::string &name) const;

    /// What the scalar block sees of this program; A's elements those of data seed `dataSeed` (Check.h).
    ScalarContext scalarContext(uint64_t dataSeed) const;
    /// S as the generator's own model computes it for data seed `dataSeed` (empty without a scalar block).
    std::vector<double> expectedS(uint64_t dataSeed) const;

    std::string print() const;
    /// Whether tilec must refuse the kernel's name (the fuzzer's own list, not tilec's).
    bool reservedName() const;
    /// Whether some constant index passes its buffer's extent.
    bool pastBoundIndex() const; ///< the .tile text (BM and BN carry bmText/bnText; the -D values win)
    /// The T.dynamic symbols and their values (also in a `# dynamic: m=37 kk=20` line of print()).
    std::map<std::string, int64_t> dynamicValues() const;
    std::set<std::string> buffersUsed() const;
    bool usesThreadIndex() const;
};

/// ScalarThread, SharedStore, IfThreadScalar and Stepped: statements whose threads the program itself names.
bool perThreadOp(const GOp &o);
/// Whether ops (or what they nest) hold a per-thread statement.
bool holdsPerThread(const std::vector<GOp> &ops);
/// Whether ops (or what they nest) hold an op of kind k.
bool holdsKind(const std::vector<GOp> &ops, GOp::Kind k);

/// A program over tensors past 2^31 elements (GenBig.cpp): not simulated, its lowered kernels are checked by
/// the index-width oracle (IndexOracle.h).
struct BigProgram {
    uint64_t seed = 0;
    std::string name;                    ///< the kernel's name
    std::string kind;                    ///< "elementwise 1-D", "row-wise", "gather", ...
    std::string text;                    ///< the .tile file (a `# dynamic:` line gives the T.dynamic values)
    std::map<std::string, int64_t> dyn;  ///< T.dynamic symbols and their values
    int64_t reach = 0;                   ///< the largest element offset the kernel's grid reaches (+1)
    bool pastInt64 = false;              ///< static sizes whose offsets pass 2^63: must be a located error
};
BigProgram generateBig(uint64_t seed);

/// Kernel names tilec must refuse: C/C++ keywords Python can bind, C library and CUDA names, reserved prefixes.
const std::vector<std::string> &reservedKernelNames();

/// A random program from `seed`; with `threadShared`, some also get thread-dependent if/else branches that read
/// and write shared tiles per thread (GenRandom.cpp: decorateThreadShared; tilec-difffuzz turns it on unless
/// --no-thread-shared).
GProgram generate(uint64_t seed, bool threadShared = false);

/// Conditional loop extents drawn on top of a program from a stream of its own (GenExtents.cpp).
void decorateExtents(GProgram &p);

/// Stepped T.serial loops whose start is read at run time, and batched 3-D / 4-D tensors whose leading
/// dimensions are T.dynamic sizes that can be 0 (GenShapes.cpp); each from a stream of its own.
void decorateStepped(GProgram &p);
void decorateBatched(GProgram &p);
/// What the generator's own model gives V (stepped loops) and Q (batched tensors) for data seed `dataSeed`
/// (NaN where it does not model an element; no entry where the program has neither).
std::map<std::string, std::vector<double>> expectedShapes(const GProgram &p, uint64_t dataSeed);

/// T.async_copy in place of some global-to-shared copies (loads into s0 / s1, T.gemm's operand copies in
/// pipelined and serial loops) with T.ptx_wait_group / T.ptx_commit_group placed where they cover the reads,
/// too late, with too large a count, or nowhere; from a stream of its own (GenAsync.cpp).
void decorateAsync(GProgram &p);
/// T.wgmma_gemm with T.wait_wgmma in place of some T.gemm (GenAsync.cpp), from a stream of its own.
void decorateWgmma(GProgram &p);
/// Whether decorateWgmma also writes the waits of GOp::wgmma 2 and 3 (off by default: on sm_90a's wgmma path
/// without warp roles tilec orders another warp's next operand copy after the barrier but before only its own
/// warp's wgmma wait, a race the simulator reports; docs/PERFORMANCE.md, session 33 fuzz33).
void setLateWgmmaWaits(bool on);

/// T.StridedTensor in place of some tensor parameters' T.Tensor (GenStrided.cpp), from a stream of its own: rows
/// with gaps, transposed and permuted strides, element gaps in every parameter; rows that share elements and
/// broadcast (stride 0) dimensions in inputs only (an output's elements must be distinct); some strides
/// T.dynamic sizes.
void decorateStrided(GProgram &p);
/// Scalar parameters (`alpha: T.float32`, `nq: T.int32`) in place of some constants of the program's
/// expressions (GenScalarParams.cpp), from a stream of its own.
void decorateScalarParams(GProgram &p);
/// A packed int4 / uint4 input U read by some of the loads of A (GProgram::ru), from a stream of its own.
void decorateSubByte(GProgram &p);
/// T.alloc_global workspaces between launches or inside one (GProgram::workspace), from a stream of its own.
void decorateWorkspace(GProgram &p);
/// Tensors the generator may stride (the inputs it may also overlap or broadcast).
const std::vector<std::string> &stridableTensors();
bool readOnlyTensor(const std::string &name);
/// Over `count` seeds from `seed` (every `bigEvery`-th left out, as a campaign does): how many programs have
/// T.StridedTensor parameters, of which kinds, ranks and directions; 1 when one of them never occurs.
int stridedCensus(uint64_t seed, uint64_t count, uint64_t bigEvery);

/// Smaller variants of `p`, most promising first (for greedy shrinking).
std::vector<GProgram> shrinkCandidates(const GProgram &p);

} // namespace tilec::difffuzz
