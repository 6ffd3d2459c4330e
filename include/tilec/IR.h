/// \file
/// The tile IR: typed kernels as the front end produces them and the passes transform them.
///
/// Nodes are small immutable structs created through `make(...)`; handles are shared pointers to const.
/// Variables and buffers have identity (compare the pointers), everything else is a value. A mutator
/// (IRMutator.h) returns the very same node when nothing changed below it.
#pragma once

#include "tilec/DType.h"
#include "tilec/Diagnostics.h"
#include "tilec/Target.h"

#include <array>
#include <utility>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tilec::passes {
struct KernelLayouts; ///< the fragment layouts of one kernel (tilec/passes/Layout.h)
}

namespace tilec::ir {

enum class NodeKind {
    // expressions
    IntImm, FloatImm, Var, Binary, Unary, Select, Cast, Call, Load,
    // statements
    Seq, For, Store, IfThenElse, Evaluate, Copy, Fill, Gemm, Reduce, AtomicAdd, WarpRoles, While,
};

struct Node {
    NodeKind kind;
    SourceRange loc;
    explicit Node(NodeKind k) : kind(k) {}
    virtual ~Node() = default;
};

struct ExprNode : Node {
    DType dtype;
    using Node::Node;
};
struct StmtNode : Node {
    using Node::Node;
};
using Expr = std::shared_ptr<const ExprNode>;
using Stmt = std::shared_ptr<const StmtNode>;

/// Downcast by kind; nullptr when the node is of another kind.
template <class T> const T *as(const Expr &e) { return e && e->kind == T::kKind ? static_cast<const T *>(e.get()) : nullptr; }
template <class T> const T *as(const Stmt &s) { return s && s->kind == T::kKind ? static_cast<const T *>(s.get()) : nullptr; }

// ---------------------------------------------------------------------------------------------------------
// Expressions

struct IntImm : ExprNode {
    static constexpr NodeKind kKind = NodeKind::IntImm;
    int64_t value = 0;
    IntImm() : ExprNode(kKind) {}
    /// dtype must be an integer type or bool.
    static Expr make(DType t, int64_t v, SourceRange loc = {});
};

struct FloatImm : ExprNode {
    static constexpr NodeKind kKind = NodeKind::FloatImm;
    double value = 0;
    FloatImm() : ExprNode(kKind) {}
    static Expr make(DType t, double v, SourceRange loc = {});
};

/// A scalar variable: block index, thread index, loop variable, T.dynamic symbol, scalar parameter.
struct VarNode : ExprNode {
    static constexpr NodeKind kKind = NodeKind::Var;
    std::string name;
    VarNode() : ExprNode(kKind) {}
};
using Var = std::shared_ptr<const VarNode>;
Var makeVar(std::string name, DType t, SourceRange loc = {});

enum class BinaryOp {
    Add, Sub, Mul, Div,    ///< Div: true division for floats, C (truncating) division for integers
    FloorDiv, FloorMod,    ///< Python `//` and `%`
    Min, Max, Pow,
    And, Or,               ///< logical, on bool
    BitAnd, BitOr, BitXor, Shl, Shr,
    EQ, NE, LT, LE, GT, GE,
};
const char *toString(BinaryOp op); ///< "+", "//", "min", "&&", ...
bool isComparison(BinaryOp op);

struct Binary : ExprNode {
    static constexpr NodeKind kKind = NodeKind::Binary;
    BinaryOp op;
    Expr a, b;
    Binary() : ExprNode(kKind) {}
    /// No folding or promotion here: both operands already have the types the result needs
    /// (IROperator.h builds expressions with promotion and folding).
    static Expr make(BinaryOp op, Expr a, Expr b, SourceRange loc = {});
};

enum class UnaryOp { Neg, Not, BitNot };
struct Unary : ExprNode {
    static constexpr NodeKind kKind = NodeKind::Unary;
    UnaryOp op;
    Expr a;
    Unary() : ExprNode(kKind) {}
    static Expr make(UnaryOp op, Expr a, SourceRange loc = {});
};

/// `cond ? t : f` (T.if_then_else and Python's conditional expression over run-time values).
struct Select : ExprNode {
    static constexpr NodeKind kKind = NodeKind::Select;
    Expr cond, t, f;
    Select() : ExprNode(kKind) {}
    static Expr make(Expr cond, Expr t, Expr f, SourceRange loc = {});
};

struct Cast : ExprNode {
    static constexpr NodeKind kKind = NodeKind::Cast;
    Expr value;
    Cast() : ExprNode(kKind) {}
    static Expr make(DType t, Expr v, SourceRange loc = {});
};

/// A math intrinsic: exp, exp2, log, log2, sqrt, rsqrt, abs, ... (names as in the language, without `T.`).
struct Call : ExprNode {
    static constexpr NodeKind kKind = NodeKind::Call;
    std::string name;
    std::vector<Expr> args;
    Call() : ExprNode(kKind) {}
    static Expr make(DType t, std::string name, std::vector<Expr> args, SourceRange loc = {});
};

enum class Scope { Global, Shared, Fragment, Local, Var };
const char *toString(Scope s); ///< "global", "shared", "fragment", "local", "var"

/// A tensor parameter or an allocation. Identity matters: two buffers are the same iff the pointers are.
struct BufferNode {
    std::string name;
    Scope scope = Scope::Global;
    DType dtype;
    std::vector<Expr> shape; ///< constant IntImm, or expressions of T.dynamic symbols for parameters
    SourceRange loc;         ///< the parameter or the alloc_* call
    int64_t constElements() const; ///< product of the shape, -1 when not constant
};
using Buffer = std::shared_ptr<const BufferNode>;
Buffer makeBuffer(std::string name, Scope scope, DType t, std::vector<Expr> shape, SourceRange loc);

struct Load : ExprNode {
    static constexpr NodeKind kKind = NodeKind::Load;
    Buffer buffer;
    std::vector<Expr> indices;
    Load() : ExprNode(kKind) {}
    static Expr make(Buffer b, std::vector<Expr> indices, SourceRange loc = {});
};

// ---------------------------------------------------------------------------------------------------------
// Statements

struct Seq : StmtNode {
    static constexpr NodeKind kKind = NodeKind::Seq;
    std::vector<Stmt> stmts;
    Seq() : StmtNode(kKind) {}
    /// A single statement stays itself; nested Seqs are flattened.
    static Stmt make(std::vector<Stmt> stmts, SourceRange loc = {});
    /// The statements `s` runs in order: a Seq's items (make flattened any nesting), another statement alone,
    /// none for null.
    static std::vector<Stmt> items(const Stmt &s);
};

/// Persistent (warp roles only): the block walks the output tiles it owns, var = 0, 1, ... counting them;
/// tile blockIdx.x + var * gridDim.x of the T.Kernel grid, while below `extent` (the grid's tile count), binds
/// the kernel's blockIdx variables (rasterized as T.use_swizzle says) for the body.
enum class ForKind { Serial, Parallel, Pipelined, Unrolled, Vectorized, Persistent };
const char *toString(ForKind k); ///< "serial", "parallel", ...

struct For : StmtNode {
    static constexpr NodeKind kKind = NodeKind::For;
    Var var;
    Expr min, extent;   ///< iterations: var = min, min + 1, ..., min + extent - 1
    ForKind forKind = ForKind::Serial;
    int numStages = 0;  ///< Pipelined: T.Pipelined(num_stages=...)
    Stmt body;
    For() : StmtNode(kKind) {}
    static Stmt make(Var v, Expr min, Expr extent, ForKind k, int numStages, Stmt body, SourceRange loc = {});
};

struct Store : StmtNode {
    static constexpr NodeKind kKind = NodeKind::Store;
    Buffer buffer;
    std::vector<Expr> indices;
    Expr value;
    Store() : StmtNode(kKind) {}
    static Stmt make(Buffer b, std::vector<Expr> indices, Expr value, SourceRange loc = {});
};

struct IfThenElse : StmtNode {
    static constexpr NodeKind kKind = NodeKind::IfThenElse;
    Expr cond;
    Stmt then, otherwise; ///< otherwise may be null
    IfThenElse() : StmtNode(kKind) {}
    static Stmt make(Expr cond, Stmt then, Stmt otherwise, SourceRange loc = {});
};

/// `while (cond) body`: a loop on a run-time condition (TileLang's `while` over kernel values); the condition
/// is evaluated before every iteration.
struct While : StmtNode {
    static constexpr NodeKind kKind = NodeKind::While;
    Expr cond;
    Stmt body;
    While() : StmtNode(kKind) {}
    static Stmt make(Expr cond, Stmt body, SourceRange loc = {});
};

struct Evaluate : StmtNode {
    static constexpr NodeKind kKind = NodeKind::Evaluate;
    Expr value;
    Evaluate() : StmtNode(kKind) {}
    static Stmt make(Expr v, SourceRange loc = {});
};

/// A rectangular part of a buffer: per dimension, [min, min + extent).
struct Range {
    Expr min, extent;
};
struct Region {
    Buffer buffer;
    std::vector<Range> ranges;
    SourceRange loc;
    /// The whole buffer.
    static Region whole(const Buffer &b, SourceRange loc = {});
};

struct Copy : StmtNode {
    static constexpr NodeKind kKind = NodeKind::Copy;
    Region src, dst;
    Copy() : StmtNode(kKind) {}
    static Stmt make(Region src, Region dst, SourceRange loc = {});
};

/// T.fill / T.clear (value 0).
struct Fill : StmtNode {
    static constexpr NodeKind kKind = NodeKind::Fill;
    Region dst;
    Expr value;
    Fill() : StmtNode(kKind) {}
    static Stmt make(Region dst, Expr value, SourceRange loc = {});
};

enum class GemmPolicy { Auto, Square, FullRow, FullCol };
const char *toString(GemmPolicy p);

/// Which tensor-core instruction a T.gemm becomes: chosen by the target's lowering (specializeWarps picks
/// wgmma for operands that TMA stores); Auto means mma.sync; MmaPanels is mma.sync reading shared operands
/// that TMA stored in its panel layout (sm_90 without the `a`).
enum class GemmInstr { Auto, Wgmma, MmaPanels };

/// C (+)= op(A) @ op(B). A may be a fragment (FlashAttention's probs @ V) or shared; B is shared.
struct Gemm : StmtNode {
    static constexpr NodeKind kKind = NodeKind::Gemm;
    Region a, b, c;
    bool transA = false, transB = false, clearAccum = false;
    GemmPolicy policy = GemmPolicy::Auto; ///< Auto: chosen later by layout inference
    GemmInstr instr = GemmInstr::Auto;
    /// 0, or a row count R of C past which no row can be observed (boundGemmRows): every row of A past R is
    /// out of its tensor's bounds (T.copy pads it with zeros) and every row of C past R is stored only out of
    /// bounds; the tensor-core instructions of whole 64-row panels past R need not be issued.
    int64_t liveRows = 0;
    /// Null, or an expression R of the block's indices and the launch's sizes (never of a loop or the thread)
    /// past which, in this block, no row of C can be observed (boundGemmRows, where no constant liveRows is):
    /// rows of A past R lie past its tensor's end and rows of C past R are stored only there. The wgmma of
    /// 64-row panels at or past R need not be issued, nor the TMA boxes of A's rows at or past R loaded where
    /// nothing else reads the A tile (specializeWarps).
    Expr liveRowsAt;
    /// T.gemm_sp (2:4 structured sparsity): the metadata tile E; `a` is then A compressed to half its K (the two
    /// kept values of each group of four), and E's 4-bit nibbles say where in their group they sit
    /// (docs/LANGUAGE.md, T.gemm_sp). No buffer: a dense product.
    Region e;
    bool sparse() const { return (bool)e.buffer; }
    Gemm() : StmtNode(kKind) {}
    static Stmt make(Region a, Region b, Region c, bool transA, bool transB, bool clearAccum, GemmPolicy p,
                     SourceRange loc = {}, GemmInstr instr = GemmInstr::Auto);
    /// The same product with other operand regions / another instruction (everything else kept).
    Stmt withRegions(Region a, Region b, Region c) const;
    Stmt withInstr(GemmInstr i) const;
    Stmt withLiveRows(int64_t rows) const;
    Stmt withLiveRowsAt(Expr rows) const;
    /// The same product as a sparse one with metadata `e` (a, b, c as they are).
    Stmt withMetadata(Region e) const;
};

enum class ReduceKind { Max, Min, Sum, AbsSum, AbsMax };
const char *toString(ReduceKind k); ///< "max", "min", "sum", "abssum", "absmax"

/// dst = reduce(src along dim) (combined with dst's old value when clear is false).
struct Reduce : StmtNode {
    static constexpr NodeKind kKind = NodeKind::Reduce;
    ReduceKind reduceKind;
    Buffer src, dst;
    int dim = 0;
    bool clear = true;
    Reduce() : StmtNode(kKind) {}
    static Stmt make(ReduceKind k, Buffer src, Buffer dst, int dim, bool clear, SourceRange loc = {});
};

/// dst += src, atomically. Either a region from a region (`T.atomic_add(C[0:64], frag)`) or one element
/// with a scalar (`T.atomic_add(C[i], v)`: dst's extents are all 1 and `value` is set).
struct AtomicAdd : StmtNode {
    static constexpr NodeKind kKind = NodeKind::AtomicAdd;
    Region dst;
    std::optional<Region> src;
    Expr value;
    AtomicAdd() : StmtNode(kKind) {}
    static Stmt make(Region dst, std::optional<Region> src, Expr value, SourceRange loc = {});
};

/// Warp specialization (Hopper): the block's threads split into two roles that run different code. Threads
/// [0, consumerThreads) run `consumer` (the kernel's own threads: layouts, reductions and barriers inside count
/// them only); the producer warpgroup(s), threads [consumerThreads, consumerThreads + producerThreads), run
/// `producer` (one elected thread issues TMA loads). The roles hand tiles over through mbarriers only, so a
/// barrier inside either role is a named barrier over that role's threads. `producerRegs` / `consumerRegs`:
/// the registers per thread each role asks for with setmaxnreg (0: leave the allocation alone). Explicit warp
/// roles where every warp group computes (lowerWarpRoles) have no producer: producerThreads 0, `producer` empty.
struct WarpRoles : StmtNode {
    static constexpr NodeKind kKind = NodeKind::WarpRoles;
    int consumerThreads = 0, producerThreads = 0;
    int producerRegs = 0, consumerRegs = 0;
    Stmt producer, consumer;
    WarpRoles() : StmtNode(kKind) {}
    static Stmt make(int consumerThreads, int producerThreads, int producerRegs, int consumerRegs, Stmt producer,
                     Stmt consumer, SourceRange loc = {});
};

// ---------------------------------------------------------------------------------------------------------
// Kernels

struct Param {
    enum Kind { Tensor, Scalar } kind = Tensor;
    Buffer buffer; ///< Tensor: a global buffer
    Var var;       ///< Scalar
    SourceRange loc;
    /// A T.alloc_global workspace: global memory the launch function allocates for the prim_func's launches
    /// (not an argument of its C function). Workspaces and views follow the other parameters.
    bool workspace = false;
    /// A view (`T.Tensor(shape, dtype, X.data)`): tensor parameter X's memory with another shape; the launch
    /// function passes X's pointer for it (not an argument of its C function). A kernel uses X or one view of it.
    Buffer viewOf;
    /// Whether the exported C function takes it (neither a workspace nor a view).
    bool argument() const { return !workspace && !viewOf; }
    const std::string &name() const { return kind == Tensor ? buffer->name : var->name; }
};

/// A TMA tensor map (CUtensorMap) the launcher encodes for a global tensor and passes as a kernel parameter:
/// the tensor's whole shape as dimensions (innermost first), boxes of `box` elements per dimension (innermost
/// first), the shared-memory swizzle span in bytes (128, 64 or 32). Lowering plans it; codegen prints it.
struct TensorMap {
    /// TMA's rule for the encoded tensor: its base address and byte strides are multiples of this.
    static constexpr int kAlignment = 16;
    Buffer tensor;             ///< a global tensor parameter
    std::vector<int64_t> box;  ///< innermost first, one entry per tensor dimension
    int swizzleBytes = 128;
    bool operator==(const TensorMap &o) const { return tensor == o.tensor && box == o.box && swizzleBytes == o.swizzleBytes; }
};

/// Where a shared buffer lives in the block's dynamic shared memory (planSharedMemory).
struct SharedPlan {
    std::vector<std::pair<const BufferNode *, int64_t>> offsets; ///< in Kernel::allocs order
    int64_t bytes = 0;     ///< the dynamic shared memory the launch asks for
    int alignment = 128;   ///< of the shared-memory base the offsets assume
    std::optional<int64_t> offsetOf(const BufferNode *b) const {
        for (auto &[x, o] : offsets)
            if (x == b) return o;
        return std::nullopt;
    }
};

/// `T.annotate_layout({X: T.Layout(X.shape, lambda i, j, ...: [e0, e1, ...])})` on a global tensor X: the
/// kernel keeps indexing X by its own shape, but element (i, j, ...) lives at the row-major offset of
/// (e0, e1, ...) in a tensor of shape `shape` (the layout's output shape) on X's memory, as TileLang places it
/// (FlashAttention's backward kernels lay out dQ so that one thread's atomic adds are neighbours).
/// flattenBuffers applies it; tile transfers (TMA, cp.async) skip such a tensor, and bounds checks stay on X's
/// own shape.
struct TensorLayout {
    Buffer tensor;            ///< a global tensor parameter
    std::vector<Var> vars;    ///< the layout's inputs, one per dimension of `tensor`
    std::vector<Expr> forward;///< the output indices, expressions of `vars`
    std::vector<Expr> shape;  ///< the output shape (its element count does not exceed the tensor's)
    SourceRange loc;          ///< the T.Layout call
};

/// How a shared tile is stored, recorded by the pass that plans its transfers (specializeWarps and lowerWarpRoles:
/// TMA rings; cpAsyncWgmma: wgmma operands the threads fill; pipelineLoops: a ring of such a tile; stageEpilogue:
/// TMA store tiles) and read by the passes after it (lowerGemm's operand swizzles, planSharedMemory's alignment),
/// which do not rediscover it from the calls.
struct TileLayout {
    Buffer buffer;         ///< a shared buffer of Kernel::allocs (a pipeline ring: every stage alike)
    /// The panel layout's swizzle span in bytes (128, 64 or 32: rows cut into panels of that many bytes, swizzled
    /// as TMA's mode of that span stores them and wgmma / gemm_*_panels read them); 0: not in the panel layout.
    int swizzleBytes = 0;
    bool tma = false;      ///< TMA loads or stores it (a 1-D row too, unswizzled)
    bool operator==(const TileLayout &o) const { return buffer == o.buffer && swizzleBytes == o.swizzleBytes && tma == o.tma; }
};

/// What a lowering assumed of the run-time arguments to give a tile transfer a wider access than it can
/// prove (LoweringOptions::assumeAlignedRows): `tensor`'s base pointer is aligned to `bytes`, and its run-time row
/// length `extent` (elements) times the element size is a multiple of `bytes`. The launcher runs such a
/// variant only when every assumption holds for the arguments, else the next one (lowered without).
struct Assumption {
    Buffer tensor;  ///< a global tensor parameter
    Expr extent;    ///< its innermost extent, a run-time value
    int64_t bytes = 16;
    bool operator==(const Assumption &o) const { return tensor == o.tensor && extent == o.extent && bytes == o.bytes; }
};

/// A kernel is three records and its code, so that a printer or pass can take the part it reads:
///  - KernelSignature: what the exported C function looks like (name, parameters, T.dynamic sizes, outputs,
///    launches of one prim_func), set by the front end;
///  - LaunchConfig: how it is launched (grid, threads, warp roles' producer threads, persistent walk, clusters),
///    set by the front end and changed by lowering (warp roles, persistence);
///  - LoweringResult: what lowering planned for the launcher and code generation (targets, tensor maps,
///    shared-memory plan, run-time assumptions); empty before lowering;
/// and the kernel's own fields (its code, buffers and per-kernel switches). Kernel derives from the three so
/// that fields keep their names (`k.grid`, `k.tensorMaps`) while a function may take `const LaunchConfig &`.

/// What a kernel is to its callers: the exported C function's name and parameters and where the author wrote
/// it. The launch parameters every printer reads are ordered from it (src/codegen/CodegenParams.cpp).
struct KernelSignature {
    std::string name;           ///< the exported C name
    SourceRange loc;            ///< the export (module-level assignment or prim_func def)
    SourceRange funcLoc;        ///< the @T.prim_func def
    std::vector<Param> params;
    std::vector<Var> dynamicSymbols; ///< T.dynamic symbols, in order of first appearance in the parameters
    /// TileLang's `out_idx` (`@tilelang.jit(out_idx=...)`, `tilelang.compile(..., out_idx=...)`, an eager kernel's
    /// T.empty tensors): the positions in `params`, ascending, of the tensors TileLang's wrapper allocates and
    /// returns rather than takes. The C function takes them like any tensor; the PyTorch operators of
    /// --emit=torch allocate and return them.
    std::vector<size_t> outputs;
    /// Several `with T.Kernel` launches in one prim_func: this kernel is launch `part` (0-based) of `parts`, which
    /// the exported function runs in order on one stream. Every part has the same parameters (workspaces
    /// included) and dynamic symbols; a program holds the parts of one export consecutively.
    int part = 0, parts = 1;
    /// Whether the exported C function wraps file-local launchers (src/codegen/CodegenLaunches.cpp): for several
    /// launches, or for parameters that are no arguments (workspaces, views).
    bool wrapped() const {
        if (parts > 1) return true;
        for (auto &p : params)
            if (!p.argument()) return true;
        return false;
    }
};

/// How a kernel is launched: its grid, block and the index variables the body reads, the persistent walk of
/// its tiles and its thread-block clusters.
struct LaunchConfig {
    int gridDims = 1;                ///< how many extents T.Kernel was given (1..3)
    std::array<Expr, 3> grid;        ///< extents; unused ones are IntImm 1
    std::array<Var, 3> blockIdx;     ///< the `as (bx, by, bz)` variables; unused ones are still set
    int threads = 128;               ///< the user's threads (the consumers when warp roles are added)
    int producerThreads = 0;         ///< threads added for a producer role (WarpRoles); launched: the sum
    int launchedThreads() const { return threads + producerThreads; }
    /// The launch bound's blocks per SM: warp roles' (setmaxnreg's budget), or 1 for a one-wave grid
    /// (oneWaveLaunchBounds); 0: none.
    int minBlocksPerSM = 0;
    /// Persistent tile loops (ForKind::Persistent): the launcher starts min(tiles, SMs * minBlocksPerSM)
    /// blocks on a 1-D grid and the blockIdx variables are bound inside those loops only.
    bool persistent = false;
    /// The grid dimension a persistent walk varies slowest (the others fastest first, x before y before z):
    /// z unless the work per tile depends on one block index (attention's causal loop on bx), which then
    /// goes slowest, so that tiles of equal work run side by side and the kernel's own order of that index
    /// (longest first) holds across the whole grid.
    int walkSlowest = 2;
    /// The grid dimensions in the order a persistent walk advances them, fastest first.
    std::array<int, 3> walkOrder() const { return {walkSlowest == 0 ? 1 : 0, walkSlowest == 2 ? 1 : 2, walkSlowest}; }
    /// Where walkSlowest names the dimension the work depends on: it advances in groups of walkGroup consecutive
    /// values (the last group what is left), the group slowest and the position in the group fastest, so that
    /// tiles of one (batch, head) with neighbouring query blocks, which read the same keys and values, run side
    /// by side, while a group size prime to the number of blocks walking gives each block every position in
    /// turn (tiles of every length). 1, or a dimension of no more than walkGroup values: that one slowest.
    int walkGroup = 1;
    /// The group size a walk over X values of that dimension uses (1: that dimension simply slowest).
    int64_t walkGroupFor(int64_t X) const { return X > walkGroup ? walkGroup : 1; }
    /// The grid coordinates of persistent tile `tile` (0 <= tile < the product of `grid`) in this walk: what the
    /// generated tile loop computes (CodegenKernel's tileLoop prints the same arithmetic).
    std::array<int64_t, 3> walkTile(int64_t tile, const std::array<int64_t, 3> &grid) const {
        const std::array<int, 3> o = walkOrder();
        const int64_t other = grid[(size_t)o[0]] * grid[(size_t)o[1]], X = grid[(size_t)o[2]], G = walkGroupFor(X);
        const int64_t span = G * other, full = X / G * span;
        const bool inFull = tile < full;
        const int64_t width = inFull ? G : X % G, rest = inFull ? tile % span : tile - full;
        std::array<int64_t, 3> at{};
        at[(size_t)o[2]] = (inFull ? tile / span * G : X / G * G) + rest % width;
        at[(size_t)o[0]] = rest / width % grid[(size_t)o[0]];
        at[(size_t)o[1]] = rest / width / grid[(size_t)o[0]];
        return at;
    }
    /// Thread-block clusters (persistent warp-role kernels only): clusterSize blocks (1, 2 or 4) that differ
    /// only in T.Kernel grid dimension clusterAxis run as one cluster and share the tiles whose position does
    /// not depend on that dimension (each loads a share and multicasts it to all). The persistent loops
    /// then walk cluster units: the grid with dimension clusterAxis divided by clusterSize.
    int clusterSize = 1;
    int clusterAxis = 0;
    int sharedTiles = 0;             ///< tiles per stage loaded by multicast (clusterSize > 1)
    /// Clusters chosen for a tile count known only at run time (a grouped GEMM's row tiles): the launcher takes
    /// this variant only where the grid holds at least this many waves of tiles (the SMs times minBlocksPerSM
    /// each), else the next one, lowered without clusters (one clustered wave measured slower). 0: no condition.
    int clusterMinWaves = 0;
    /// T.ClusterKernel(..., cluster_dims=(x, y, z)): the clusters the author asked for ({1, 1, 1}: none, as
    /// T.Kernel), which specializeWarps honours through clusterSize / clusterAxis or reports at clusterLoc.
    std::array<int, 3> clusterDims{1, 1, 1};
    SourceRange clusterLoc;
    Var threadIdx;                   ///< T.get_thread_binding(0)
    SourceRange launchLoc;           ///< the `with T.Kernel(...)`
    int swizzlePanel = 0;            ///< T.use_swizzle(panel_size); 0 = off
    SourceRange swizzleLoc;
};

/// What lowering decided for the launcher and code generation: the targets the lowering is for, the TMA tensor
/// maps the launcher encodes, the shared-memory plan, the run-time assumptions it checks.
struct LoweringResult {
    std::vector<TensorMap> tensorMaps; ///< referenced by index from TMA library calls
    SharedPlan shared;               ///< set by planSharedMemory at the end of lowering
    /// The targets this lowering is for (per-target lowering: one Kernel per distinct lowering) and whether it
    /// needs TMA-compatible run-time pointers and strides (else the launcher runs the variant without). Empty
    /// before lowering.
    std::vector<Target> targets;
    bool needsTma = false;
    std::vector<Assumption> assumptions; ///< run-time alignment this lowering relies on (none: it checks all)
    /// The shared tiles whose storage a pass decided (TileLayout), one per buffer, in the order they were recorded.
    std::vector<TileLayout> tileLayouts;
    /// The record of shared buffer `b`, or null (a tile stored row by row, as the threads index it).
    const TileLayout *tileLayoutOf(const BufferNode *b) const {
        for (auto &t : tileLayouts)
            if (t.buffer.get() == b) return &t;
        return nullptr;
    }
    /// Records `t`: decided once, so an existing record of its buffer must be the same (an internal error else).
    void recordTileLayout(const TileLayout &t);
    /// The fragment layouts inferLayouts chose, which the passes after it read (insertSyncs, lowerReductions,
    /// lowerGemm, stageEpilogue, lowerParallel); null before inferLayouts and once lowering ends (they name
    /// fragments by identity, and lowering replaces the fragments by register arrays).
    std::shared_ptr<const passes::KernelLayouts> layouts;
};

struct Kernel : KernelSignature, LaunchConfig, LoweringResult {
    std::vector<TensorLayout> tensorLayouts; ///< T.annotate_layout of global tensors, one per tensor
    /// The layout T.annotate_layout gave global tensor `b` in this kernel, or null.
    const TensorLayout *layoutOf(const BufferNode *b) const {
        for (auto &l : tensorLayouts)
            if (l.tensor.get() == b) return &l;
        return nullptr;
    }
    std::vector<Buffer> allocs;      ///< alloc_shared/fragment/local/var, in program order
    /// T.reshape / T.view of a fragment that tile statements take whole (a reduction of `x.reshape(m, g, c)`):
    /// (view, base). The view is no alloc of its own: it names the base's elements in row-major order, and
    /// inferLayouts gives it the base's layout over its own shape (the same thread and slot per element).
    std::vector<std::pair<Buffer, Buffer>> fragmentViews;
    /// T.make_tensor(address, shape, dtype) inside a launch: global tensor `tensor`, no parameter, whose element 0
    /// is at the run-time address the body stores in `address` (an int64 T.alloc_var) before it uses the tensor
    /// (a pointer table's entry). Code generation reads and writes it through that address; tile transfers the
    /// host must describe (TMA tensor maps) skip it.
    struct AddressedTensor {
        Buffer tensor, address;
    };
    std::vector<AddressedTensor> addressedTensors;
    /// The address variable of a T.make_tensor tensor, or null.
    Buffer addressOf(const BufferNode *b) const {
        for (auto &a : addressedTensors)
            if (a.tensor.get() == b) return a.address;
        return nullptr;
    }
    /// T.import_source: C++ source the kernel's T.call_extern calls ("extern:NAME" calls), emitted verbatim once
    /// before the kernels.
    std::vector<std::string> importedSources;
    /// Per-kernel lowering switches from TileLang's pass_configs ("tl.disable_tma_lower",
    /// "tl.disable_warp_specialized"): as --no-tma / --no-warp-specialize for this kernel alone.
    bool noTma = false;
    bool noWarpSpecialize = false;
    /// "tl.enable_fast_math" (as --use_fast_math for this kernel): float math functions and divisions are
    /// printed as CUDA's fast intrinsics (src/codegen/CodegenExpr.cpp says which).
    bool fastMath = false;
    /// "tl.disable_thread_storage_sync": insertSyncs places no barrier for the author's own shared-memory and
    /// tensor accesses (the author orders them with T.sync_threads); those of tilec's reduction scratch stay.
    bool noThreadSync = false;
    /// Front end only: the prim_func's later launches, which the program lists after this one as its parts.
    std::vector<std::shared_ptr<const Kernel>> laterLaunches;
    Stmt body;
};
using KernelP = std::shared_ptr<const Kernel>;

struct Program {
    std::vector<KernelP> kernels;
};

/// The integer value of a constant expression (IntImm), if it is one.
std::optional<int64_t> constInt(const Expr &e);

} // namespace tilec::ir
