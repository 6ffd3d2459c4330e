/// \file
/// The __global__ function of a kernel: prologue (indices, shared-memory views, register arrays), the
/// statements with #line directives into the .tile file, and the vector transfer patterns
/// (src/codegen/CodegenImpl.h).
#include "codegen/CodegenImpl.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/VectorizeAccesses.h"

#include <algorithm>
#include <set>

namespace tilec::codegen {

using namespace ir;

namespace {

class KernelPrinter {
  public:
    KernelPrinter(const KernelInfo &info, const CodegenOptions &o, DiagnosticEngine &diag)
        : info_(info), k_(*info.kernel), opts_(o), diag_(diag), ep_(names_, false) {
        ep_.ranges = passes::kernelRanges(k_);
        ep_.fastMath = o.fastMath || k_.fastMath;
        ep_.flushNarrowExp2 = o.flushNarrowExp2;
        names_.reserve("tilec_smem");
        names_.reserve("tilec_smem_base");
        for (size_t i = 0; i < k_.tensorMaps.size(); ++i) names_.reserve(tensorMapParam((int)i));
    }

    std::string run() {
        signature();
        // A kernel with variants per target: compiled for another architecture, this one's body would be
        // code the device cannot run (wgmma on sm_80, say); the launcher never picks it there.
        std::string guard;
        for (auto &t : info_.targets) {
            std::string one = t.archSpecific ? "defined(__CUDA_ARCH_FEAT_SM" + std::to_string(t.sm) + "_ALL)"
                                             : "__CUDA_ARCH__ >= " + std::to_string(t.sm * 10);
            if (guard.find(one) == std::string::npos) guard += (guard.empty() ? "" : " || ") + one;
        }
        if (info_.variants > 1) {
            line(0, "#if defined(__CUDA_ARCH__) && !(" + guard + ")");
            line(1, "__trap();");
            line(0, "#else");
        }
        prologue();
        stmt(k_.body, 1);
        if (ep_.flushedExp2)
            remark(&diag_.sources(), k_.launchLoc, "kernel '" + k_.name + "': exp2 rounded to float16 or float8 as one "
                   "ex2.approx.ftz each, in " + std::to_string(ep_.flushedExp2) + " places of the code (the subnormal "
                   "range fix of exp2f cannot change the rounded value; --no-narrow-exp2-flush keeps exp2f)");
        if (info_.variants > 1) line(0, "#endif");
        line(0, "}");
        return out_;
    }

  private:
    const KernelInfo &info_;
    const Kernel &k_;
    const CodegenOptions &opts_;
    DiagnosticEngine &diag_;
    NameTable names_;
    ExprPrinter ep_;
    std::string out_;
    int mapped_ = -1; ///< the .tile line the next output line counts as (-1: none yet)

    const std::string &name(const Var &v) { return names_.of(v.get(), v->name); }
    const std::string &name(const BufferNode *b) { return names_.of(b, b->name); }
    void indent(int level) { out_.append((size_t)level * 4, ' '); }

    /// Writes one line; a valid `loc` makes it count as that line of the .tile file (a #line directive
    /// is written only when the running count would say otherwise).
    void line(int level, const std::string &s, const SourceRange &loc = {}) {
        // The file of the def, not of the export: a kernel added with --export is still written in the .tile file.
        int file = k_.funcLoc.valid() ? k_.funcLoc.file : k_.loc.file;
        if (loc.valid() && loc.file == file && mapped_ != loc.line) {
            out_ += "#line " + std::to_string(loc.line) + " " + quoted(opts_.sourceName) + "\n";
            mapped_ = loc.line;
        }
        indent(level);
        out_ += s;
        out_ += "\n";
        if (mapped_ >= 0) ++mapped_;
    }
    void signature() {
        // Warp roles: the blocks per SM the register split was planned for, so that ptxas gives the kernel the
        // register cap setmaxnreg redistributes (without it ptxas ignores setmaxnreg: warning C7508).
        std::string bounds = std::to_string(k_.launchedThreads());
        if (k_.minBlocksPerSM) bounds += ", " + std::to_string(k_.minBlocksPerSM);
        std::string sig = "static __global__ void __launch_bounds__(" + bounds + ") " + info_.symbol + "(";
        std::vector<LaunchParam> params = launchParams(info_);
        for (size_t i = 0; i < params.size(); ++i) {
            auto &p = params[i];
            sig += (i ? ", " : "") + p.type + (p.type.back() == '*' ? "" : " ") + (p.key ? names_.of(p.key, p.name) : p.name);
        }
        line(0, sig + ") {", k_.funcLoc);
    }

    void prologue() {
        const SourceRange &at = k_.launchLoc;
        if (info_.sharedBytes > 0 && k_.shared.alignment <= smem::kBufferAlignment) {
            line(1, "extern __shared__ __align__(128) unsigned char tilec_smem[];", at);
        } else if (info_.sharedBytes > 0) {
            // A stricter plan (TMA tiles at 1024 bytes) rounds the base up; the launch asked for the slack. The
            // pointer is the array plus an offset (from its shared-window address), not an integer cast back:
            // nvcc then still knows it points into shared memory, and the threads' own accesses through it are
            // LDS / STS, not generic LD / ST with 64-bit addresses.
            std::string a = std::to_string(k_.shared.alignment), m = std::to_string(k_.shared.alignment - 1);
            line(1, "extern __shared__ __align__(" + a + ") unsigned char tilec_smem_base[];", at);
            line(1, "unsigned char *const tilec_smem = tilec_smem_base + ((" + a + "u - static_cast<unsigned>(__cvta_generic_to_shared(tilec_smem_base))) & " +
                        m + "u);", at);
        }
        // A block of one thread: its index is 0, written so that nvcc folds what depends on it (seeds, offsets).
        if (k_.threadIdx && uses(k_.body, k_.threadIdx.get()))
            line(1, "const int " + name(k_.threadIdx) + " = " + (k_.launchedThreads() == 1 ? "0" : "threadIdx.x") + ";", at);
        // The launcher's block is launchedThreads() wide (blockDim.y = z = 1): said to nvcc, which otherwise takes
        // threadIdx.x anywhere in [0, 1024) (the device library's `tid >= Threads` exits stay, a predicate live
        // across every loop around a copy; `tx / 32` keeps its sign fix-up). Session 36: block_causal_attention's
        // kernels lose 90-114 SASS instructions.
        if (k_.launchedThreads() > 1)
            line(1, "__builtin_assume(threadIdx.x < " + std::to_string(k_.launchedThreads()) + "u);", at);
        // A persistent kernel binds the blockIdx variables in its tile loops (tileLoop).
        if (!k_.persistent) blockBindings(1, "blockIdx.x", "blockIdx.y", "blockIdx.z", "gridDim.x", "gridDim.y", at);
        for (auto &b : k_.allocs) {
            if (!b) continue;
            std::string t = deviceType(b->dtype);
            if (b->scope == Scope::Shared) {
                auto off = info_.sharedOffset.find(b.get());
                TILEC_ASSERT(off != info_.sharedOffset.end(), "shared buffer without an offset");
                line(1, t + " *" + name(b.get()) + " = reinterpret_cast<" + t + " *>(tilec_smem + " +
                            std::to_string(off->second) + ");", b->loc);
            } else if (b->scope == Scope::Local || b->scope == Scope::Var) {
                int64_t n = std::max<int64_t>(1, b->constElements());
                line(1, "alignas(16) " + t + " " + name(b.get()) + "[" + std::to_string(n) + "];", b->loc);
            } else {
                TILEC_ASSERT(false, "buffer '" + b->name + "' of scope " + toString(b->scope) + " reached code generation");
            }
        }
        // T.make_tensor: the tensor is its address variable's value as a typed pointer, at every use.
        for (auto &a : k_.addressedTensors)
            names_.alias(a.tensor.get(), "reinterpret_cast<" + deviceType(a.tensor->dtype) + " *>(" + name(a.address.get()) + "[0])");
    }

    /// `const int bx = ...;` for each blockIdx variable the body mentions, from the block coordinates x, y, z
    /// of a grid gx wide and gy high, rasterized first where T.use_swizzle asks: consecutive blocks walk down a
    /// column of `panel` block rows before moving right, so the tiles they read stay in L2
    /// (stdlib/tilec/raster.cuh).
    /// A clustered kernel's coordinates are those of its cluster unit; the block's own along the cluster's
    /// dimension is the unit's times the cluster size plus its rank in the cluster.
    void blockBindings(int level, const std::string &x, const std::string &y, const std::string &z, const std::string &gx,
                       const std::string &gy, const SourceRange &at) {
        std::string block[3] = {x, y, z};
        if (k_.swizzlePanel > 0 && k_.gridDims >= 2) {
            const SourceRange &sw = k_.swizzleLoc.valid() ? k_.swizzleLoc : at;
            line(level, "int tilec_tile_x, tilec_tile_y;", sw);
            line(level, "tilec::rasterize(" + std::to_string(k_.swizzlePanel) + ", " + x + ", " + y + ", " + gx + ", " + gy +
                            ", tilec_tile_x, tilec_tile_y);", sw);
            block[0] = "tilec_tile_x";
            block[1] = "tilec_tile_y";
        }
        if (k_.clusterSize > 1) {
            std::string &b = block[k_.clusterAxis];
            b = "(" + b + ") * " + std::to_string(k_.clusterSize) + " + (int)" +
                passes::lib::info(passes::lib::Fn::ClusterRank).cxx + "()";
        }
        // A grid dimension of one block: its coordinate is 0 (as TileLang binds it), so that nvcc folds what
        // depends on it; not where rasterization or a cluster computes the coordinates.
        const bool rasterized = k_.swizzlePanel > 0 && k_.gridDims >= 2;
        for (int d = 0; d < 3; ++d) {
            if (!k_.blockIdx[d] || !uses(k_.body, k_.blockIdx[d].get())) continue;
            const bool computed = (rasterized && d < 2) || (k_.clusterSize > 1 && d == k_.clusterAxis);
            const bool unit = !computed && (size_t)d < k_.grid.size() && constInt(k_.grid[(size_t)d]) == 1;
            line(level, "const int " + name(k_.blockIdx[d]) + " = " + (unit ? std::string("0") : block[d]) + ";", at);
        }
    }

    /// A persistent tile loop: the block's tiles blockIdx.x, blockIdx.x + gridDim.x, ... of the T.Kernel grid,
    /// counted by the loop's variable, each bound to the blockIdx variables as a block of its own would be
    /// (the grid's dimensions advanced in Kernel::walkOrder()).
    /// Clustered: the loop walks cluster units (the grid with the cluster's dimension divided by its size),
    /// unit blockIdx.x / size first, as the launcher's 1-D clusters of consecutive blocks hold them.
    void tileLoop(const For &f, int level) {
        std::string v = name(f.var), tiles = ep_.print(f.extent, 11);
        std::string g[3];
        for (int d = 0; d < 3; ++d) g[d] = "(" + ep_.print(k_.grid[(size_t)d]) + ")";
        std::string first = "blockIdx.x", step = "gridDim.x";
        if (k_.clusterSize > 1) {
            const std::string cm = std::to_string(k_.clusterSize);
            g[k_.clusterAxis] = "(" + g[k_.clusterAxis] + " / " + cm + ")";
            first += " / " + cm;
            step += " / " + cm;
        }
        const std::string &gx = g[0], &gy = g[1];
        line(level, "for (int " + v + " = 0, tilec_tile = " + first + "; tilec_tile < " + tiles + "; ++" + v +
                        ", tilec_tile += " + step + ") {", f.loc);
        const std::array<int, 3> o = k_.walkOrder();
        std::string at[3];
        // Kernel::walkTile's arithmetic: groups where the dimension has more values than a group
        const auto X0 = constInt(k_.grid[(size_t)o[2]]);
        if (k_.walkGroup > 1 && (!X0 || k_.walkGroupFor(*X0) > 1)) {
            std::string G = std::to_string(k_.walkGroup);
            const std::string X = g[o[2]];
            if (!X0) {
                line(level + 1, "const int tilec_group = " + X + " > " + G + " ? " + G + " : 1;", f.loc);
                G = "tilec_group";
            }
            line(level + 1, "const int tilec_span = " + G + " * " + g[o[0]] + " * " + g[o[1]] + ", tilec_full = " + X +
                                " / " + G + " * tilec_span;", f.loc);
            line(level + 1, "const bool tilec_in_full = tilec_tile < tilec_full;", f.loc);
            line(level + 1, "const int tilec_width = tilec_in_full ? " + G + " : " + X + " % " + G +
                                ", tilec_rest = tilec_in_full ? tilec_tile % tilec_span : tilec_tile - tilec_full;", f.loc);
            at[o[2]] = "(tilec_in_full ? tilec_tile / tilec_span * " + G + " : " + X + " / " + G + " * " + G +
                       ") + tilec_rest % tilec_width";
            at[o[0]] = "tilec_rest / tilec_width % " + g[o[0]];
            at[o[1]] = "tilec_rest / tilec_width / " + g[o[0]];
        } else {
            at[o[0]] = "tilec_tile % " + g[o[0]];
            at[o[1]] = "tilec_tile / " + g[o[0]] + " % " + g[o[1]];
            at[o[2]] = "tilec_tile / (" + g[o[0]] + " * " + g[o[1]] + ")";
        }
        blockBindings(level + 1, at[0], at[1], at[2], gx, gy, f.loc);
        stmt(f.body, level + 1);
        line(level, "}");
    }

    void stmt(const Stmt &s, int level) {
        if (!s) return;
        if (auto q = as<Seq>(s)) {
            // A synchronous tile transfer right before another leaves its wait to that one (cp.async.wait_group
            // 0 waits for every group): the tiles are in flight together, nothing runs between them.
            for (size_t i = 0; i < q->stmts.size(); ++i) {
                chainWait_ = i + 1 < q->stmts.size() && syncTransfer(q->stmts[i]) && syncTransfer(q->stmts[i + 1]);
                stmt(q->stmts[i], level);
            }
            chainWait_ = false;
            return;
        }
        const SourceRange &at = s->loc;
        if (auto f = as<For>(s)) return loop(*f, level);
        if (auto r = as<WarpRoles>(s)) return roles(*r, level);
        if (auto i = as<IfThenElse>(s)) {
            if (role_.threads && passes::lib::is(i->cond, passes::lib::Fn::WarpGroup)) return consumerGroup(*i, level);
            line(level, "if (" + ep_.print(i->cond) + ") {", at);
            stmt(i->then, level + 1);
            if (i->otherwise) {
                line(level, "} else {");
                stmt(i->otherwise, level + 1);
            }
            line(level, "}");
            return;
        }
        if (auto w = as<While>(s)) {
            line(level, "while (" + ep_.print(w->cond) + ") {", at);
            stmt(w->body, level + 1);
            line(level, "}");
            return;
        }
        if (auto st = as<Store>(s)) {
            TILEC_ASSERT(st->indices.size() == 1, "store to '" + st->buffer->name + "' was not flattened");
            line(level, name(st->buffer.get()) + "[" + ep_.index(*st->buffer, st->indices[0]) + "] = " + ep_.print(st->value) + ";", at);
            return;
        }
        if (auto e = as<Evaluate>(s)) {
            auto c = as<Call>(e->value);
            if (c && passes::lib::is(*c, passes::lib::Fn::Sync) && role_.threads)
                line(level, "tilec::named_barrier_sync(" + std::to_string(role_.barrier) + ", " + std::to_string(role_.threads) + ");", at);
            else if (c && passes::lib::is(*c, passes::lib::Fn::CopyG2SWait))
                line(level, fromGroup(*c, ep_.print(e->value)) + "; tilec::cp_async_commit();" + (chainWait_ ? "" : " tilec::cp_async_wait<0>();"), at);
            else if (c && c->dtype.kind == DType::Void) line(level, fromGroup(*c, ep_.print(e->value)) + ";", at);
            else line(level, "(void)(" + ep_.print(e->value) + ");", at);
            return;
        }
        if (auto a = as<AtomicAdd>(s)) return atomicAdd(*a, level);
        TILEC_ASSERT(false, "a tile statement reached code generation unlowered");
    }

    bool chainWait_ = false; ///< the statement being printed is a synchronous tile transfer whose wait the next one does
    static bool syncTransfer(const Stmt &s) {
        auto e = as<Evaluate>(s);
        auto c = e ? as<Call>(e->value) : nullptr;
        return c && passes::lib::is(*c, passes::lib::Fn::CopyG2SWait);
    }

    /// Inside the consumer role, a block barrier is a named barrier over the consumers (the producer never
    /// reaches it): their count (0 outside roles), the barrier's id, and the first thread of the consumer warp
    /// group being printed (consumerGroup).
    struct RoleScope {
        int threads = 0, barrier = passes::lib::kRoleBarrier, first = 0;
    } role_;

    /// A tile transfer in a consumer warp group past the first: the library distributes the tile over the
    /// group's threads (copy_g2s's template argument First, after the five the registry prints).
    std::string fromGroup(const Call &c, std::string text) const {
        if (!role_.first || !passes::isTileTransfer(c)) return text;
        const size_t close = text.find(">(");
        TILEC_ASSERT(close != std::string::npos, "internal error: a tile transfer printed as '" + text + "'");
        return text.insert(close, ", " + std::to_string(role_.first));
    }

    /// Consumer warp group c of several (lowerWarpRoles: `if tilec.warp_group(c)` in the consumer role): threads
    /// 128 c .. 128 c + 127, whose code was lowered as a kernel of 128 threads. They read the thread index within
    /// their group, and their barriers are the group's named barrier (kWarpgroupBarrier + c, 128 threads).
    void consumerGroup(const IfThenElse &i, int level) {
        const int c = (int)constInt(as<Call>(i.cond)->args[0]).value_or(-1);
        TILEC_ASSERT(c >= 0, "internal error: a consumer warp group marker without its group");
        line(level, "if (threadIdx.x / 128 == " + std::to_string(c) + ") {", i.loc);
        if (c > 0 && k_.threadIdx && uses(i.then, k_.threadIdx.get()))
            line(level + 1, "const int " + name(k_.threadIdx) + " = (int)threadIdx.x - " + std::to_string(128 * c) + ";");
        const RoleScope outer = role_;
        role_ = {128, passes::lib::kWarpgroupBarrier + c, 128 * c};
        stmt(i.then, level + 1);
        role_ = outer;
        if (i.otherwise) line(level, "} else {"), stmt(i.otherwise, level + 1);
        line(level, "}");
    }

    void roles(const WarpRoles &r, int level) {
        const RoleScope outer = role_;
        if (!r.producerThreads) { // every warp group computes (explicit roles without a producer)
            role_ = {r.consumerThreads, passes::lib::kRoleBarrier, 0};
            stmt(r.consumer, level);
            role_ = outer;
            return;
        }
        line(level, "if (threadIdx.x >= " + std::to_string(r.consumerThreads) + ") {", r.loc);
        if (r.producerRegs) line(level + 1, "tilec::setmaxnreg_dec<" + std::to_string(r.producerRegs) + ">();");
        // Roles of the kernel's own threads (joinThreadRoles: the branches of a thread-range `if`): the producer
        // computes too, its barriers a named barrier of its threads, its tile transfers over its threads.
        if (!k_.producerThreads) role_ = {r.producerThreads, passes::lib::kWarpgroupBarrier, r.consumerThreads};
        stmt(r.producer, level + 1);
        role_ = outer;
        line(level, "} else {");
        if (r.consumerRegs) line(level + 1, "tilec::setmaxnreg_inc<" + std::to_string(r.consumerRegs) + ">();");
        role_ = {r.consumerThreads, passes::lib::kRoleBarrier, 0};
        if (opts_.hoistWgmmaA) for (const std::string &d : hoistWgmmaA(r.consumer, names_, ep_)) line(level + 1, d);
        stmt(r.consumer, level + 1);
        role_ = outer;
        line(level, "}");
    }

    void loop(const For &f, int level) {
        if (f.forKind == ForKind::Persistent) return tileLoop(f, level);
        if (auto t = matchTransfer(f)) return transfer(*t, level, f.loc);
        if (auto c = passes::matchPairConversion(f)) return pairConversion(*c, f, level);
        if (auto a = passes::matchAtomicVector(f)) return atomicVector(*a, level, f.loc);
        auto saved = ep_.ranges;
        passes::addLoopRange(ep_.ranges, f);
        std::string v = name(f.var), type = deviceType(f.var->dtype);
        std::string lo = ep_.print(f.min);
        auto m = constInt(f.min);
        std::string hi = m && *m == 0 ? ep_.print(f.extent, 11) : ep_.print(simplifyEnd(f), 11); // after `v < `
        // C evaluates `v < END` again every trip, a loop's bounds are read once where it starts: an end that
        // loads what the body stores (`for q in T.serial(st, n)` whose body changes the T.alloc_var st) is read
        // into a constant before the loop.
        const bool once = boundsTouched(f);
        if (once) {
            line(level, "{");
            line(level, "const " + type + " tilec_end_" + v + " = " + hi + ";");
            hi = "tilec_end_" + v;
        }
        std::string header = "for (" + type + " " + v + " = " + lo + "; " + v + " < " + hi + "; ++" + v + ") {";
        // _Pragma keeps the loop header on one line, so it counts as the statement's line.
        if (f.forKind == ForKind::Unrolled || f.forKind == ForKind::Vectorized) header = "_Pragma(\"unroll\") " + header;
        line(level, header, f.loc);
        stmt(f.body, level + 1);
        line(level, "}");
        if (once) line(level, "}");
        ep_.ranges = std::move(saved);
    }

    /// Whether the loop's bounds load an element of a buffer its body stores into.
    static bool boundsTouched(const For &f) {
        if (!readsMemory(f.min) && !readsMemory(f.extent)) return false;
        struct Buffers : IRVisitor {
            using IRVisitor::visit;
            std::set<const BufferNode *> loaded, stored;
            void visit(const Load &op) override {
                loaded.insert(op.buffer.get());
                IRVisitor::visit(op);
            }
            void visit(const Store &op) override {
                stored.insert(op.buffer.get());
                IRVisitor::visit(op);
            }
            void visit(const AtomicAdd &op) override {
                stored.insert(op.dst.buffer.get());
                IRVisitor::visit(op);
            }
            void visit(const Copy &op) override {
                stored.insert(op.dst.buffer.get());
                IRVisitor::visit(op);
            }
            void visit(const Fill &op) override {
                stored.insert(op.dst.buffer.get());
                IRVisitor::visit(op);
            }
        } bounds, body;
        bounds.visit(f.min), bounds.visit(f.extent), body.visit(f.body);
        for (auto *b : bounds.loaded)
            if (body.stored.count(b)) return true;
        return false;
    }

    static Expr simplifyEnd(const For &f) { return Binary::make(BinaryOp::Add, f.min, f.extent); }

    void transfer(const Transfer &t, int level, const SourceRange &at) {
        int cb = t.chunkBytes();
        int64_t per = cb / t.dtype.bytes(), chunks = t.lanes / per;
        std::string mem = name(t.memory), regs = name(t.regs), base = ep_.print(t.base);
        // A store of 8 or 16 bytes through a T.make_tensor tensor's run-time address is one PTX store that NVVM
        // cannot take apart (memory.cuh's store_vector); so is a 16-byte one into a tensor parameter at an address
        // through a quotient by a non-power of two (it costs no folded offset there; 8-byte ones stayed whole and
        // cost 4 registers in dQ's postprocess), and with --opaque-vector-stores every
        // tensor parameter's (st.global: a parameter is global memory). Other accesses are copy_vector's copies.
        bool table = k_.addressOf(t.memory) != nullptr;
        bool global = t.memory->scope == Scope::Global;
        bool opaque = !t.load && cb >= 8 && (table || (global && (opts_.opaqueVectorStores || (cb == 16 && ir::dividesByNonPow2(t.base)))));
        std::string fn = std::string(opaque ? "tilec::store_vector<" : "tilec::copy_vector<") + std::to_string(cb) +
                         (opaque && !table ? ", true>" : ">");
        if (!t.load && t.cond) {
            line(level, "if (" + ep_.print(t.cond) + ") {", at);
            ++level;
        }
        for (int64_t c = 0; c < chunks; ++c) {
            std::string off = c == 0 ? base : base + " + " + std::to_string(c * per);
            std::string r = "&" + regs + "[" + std::to_string(t.regBase + c * per) + "]", m = "&" + mem + "[" + off + "]";
            if (t.load && t.cond)
                line(level, "tilec::copy_vector_or_zero<" + std::to_string(cb) + ">(" + r + ", " + m + ", " + ep_.print(t.cond) + ");", at);
            else if (t.load) line(level, fn + "(" + r + ", " + m + ");", at);
            else line(level, fn + "(" + m + ", " + r + ");", at);
        }
        if (!t.load && t.cond) line(level - 1, "}");
    }

    /// Lanes 2i and 2i + 1 converted by one instruction into one 32-bit register (stdlib/tilec/types.cuh).
    void pairConversion(const passes::PairConversion &c, const For &f, int level) {
        std::string regs = name(c.store->buffer.get());
        auto lane = [&](int64_t v) {
            passes::VarMap m{{f.var.get(), intImm(v, f.var->dtype)}};
            Stmt one = passes::simplifyIndices(passes::substitute(f.body, m));
            auto st = as<Store>(one);
            TILEC_ASSERT(st && as<Cast>(st->value), "a pair conversion lost its store");
            return std::make_pair(st->indices[0], ep_.printNarrowed(st->buffer->dtype, as<Cast>(st->value)->value));
        };
        for (int64_t v = 0; v < c.lanes; v += 2) {
            auto [index, lo] = lane(v);
            std::string hi = lane(v + 1).second;
            line(level, "tilec::cast_pair(&" + regs + "[" + ep_.print(index) + "], " + lo + ", " + hi + ");", f.loc);
        }
    }

    void atomicVector(const passes::AtomicVector &a, int level, const SourceRange &at) {
        std::string fn = a.regs->scope == Scope::Shared ? "tilec::atomic_add_vector_shared<" : "tilec::atomic_add_vector<";
        std::string call = fn + std::to_string(a.lanes) + ">(&" + name(a.add->dst.buffer.get()) + "[" +
                           ep_.print(a.base) + "], &" + name(a.regs) + "[" + ep_.print(a.regBase) + "]);";
        if (!a.cond) return line(level, call, at);
        line(level, "if (" + ep_.print(a.cond) + ") {", at);
        line(level + 1, call, at);
        line(level, "}");
    }

    void atomicAdd(const AtomicAdd &a, int level) {
        TILEC_ASSERT(a.dst.ranges.size() == 1 && a.value, "atomic_add was not lowered to one element");
        DType t = a.dst.buffer->dtype;
        std::string target = "&" + name(a.dst.buffer.get()) + "[" + ep_.print(a.dst.ranges[0].min) + "]";
        std::string v = ep_.print(a.value);
        switch (t.kind) {
        case DType::Float32: case DType::Float64: case DType::Int32: case DType::UInt32: case DType::UInt64:
        case DType::Float16: case DType::BFloat16:
            line(level, "atomicAdd(" + target + ", " + v + ");", a.loc);
            return;
        case DType::Int64:
            line(level, "atomicAdd(reinterpret_cast<unsigned long long *>(" + target + "), (unsigned long long)(" + v + "));", a.loc);
            return;
        default:
            diag_.error(a.loc, "T.atomic_add on " + std::string(t.name()) + " is not supported (the hardware adds "
                               "float16, bfloat16, float32, float64, int32, int64, uint32 and uint64 atomically)");
        }
    }
};

/// Which tensors are stored to, and the widest vector access of each.
struct Uses : IRVisitor {
    using IRVisitor::visit;
    std::set<const BufferNode *> written;
    std::map<const BufferNode *, int> align;
    bool fp8 = false;
    void visit(const Store &op) override {
        written.insert(op.buffer.get());
        fp8 |= op.buffer->dtype.isFloat8();
        IRVisitor::visit(op);
    }
    void visit(const AtomicAdd &op) override {
        written.insert(op.dst.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Load &op) override {
        fp8 |= op.buffer->dtype.isFloat8();
        IRVisitor::visit(op);
    }
    void visit(const Cast &op) override {
        fp8 |= op.dtype.isFloat8();
        IRVisitor::visit(op);
    }
    const std::vector<TensorMap> *maps = nullptr;
    std::set<int64_t> storedMaps;
    // A tile transfer's (or a cp.async chunk's) width is an alignment the tensor must have; a TMA store writes its map's tensor.
    void visit(const Call &op) override {
        if (op.name.rfind("extern:", 0) == 0) // T.call_extern / atomic_add(return_prev): a pointer it is handed may be written
            for (auto &a : op.args)
                if (auto l = passes::addressedLoad(a)) written.insert(l->buffer.get());
        if (passes::lib::is(op, passes::lib::Fn::TmaStoreTile))
            if (auto m = constInt(passes::lib::arg(op, passes::lib::Fn::TmaStoreTile, "map")); m && *m >= 0 && (size_t)*m < maps->size()) {
                written.insert((*maps)[(size_t)*m].tensor.get());
                storedMaps.insert(*m);
            }
        // a bulk copy writes its tensor and needs its 16-byte alignment (cp.async.bulk's rule)
        if (passes::lib::is(op, passes::lib::Fn::BulkStore))
            if (auto l = passes::addressedLoad(passes::lib::arg(op, passes::lib::Fn::BulkStore, "dst"))) {
                written.insert(l->buffer.get());
                align[l->buffer.get()] = std::max(align[l->buffer.get()], 16);
            }
        if (passes::isTileTransfer(op)) {
            passes::lib::Fn f = passes::lib::find(op.name)->fn;
            auto l = passes::addressedLoad(passes::lib::arg(op, f, "src"));
            auto vec = constInt(passes::lib::arg(op, f, "vec"));
            if (l && vec) align[l->buffer.get()] = std::max(align[l->buffer.get()], (int)*vec * l->buffer->dtype.bytes());
        }
        // a gathered fill's chunk, or a T.async_copy's: its width likewise
        for (auto chunk : {passes::lib::Fn::CpAsyncChunk, passes::lib::Fn::CpAsyncCopy}) {
            if (!passes::lib::is(op, chunk)) continue;
            auto l = passes::addressedLoad(passes::lib::arg(op, chunk, "src"));
            auto bytes = constInt(passes::lib::arg(op, chunk, "bytes"));
            if (l && bytes) align[l->buffer.get()] = std::max(align[l->buffer.get()], (int)*bytes);
        }
        IRVisitor::visit(op);
    }
    void visit(const For &op) override {
        if (auto t = matchTransfer(op)) align[t->memory] = std::max(align[t->memory], t->chunkBytes());
        if (auto a = passes::matchAtomicVector(op)) {
            const BufferNode *d = a->add->dst.buffer.get();
            align[d] = std::max(align[d], (int)a->lanes * 4);
        }
        IRVisitor::visit(op);
    }
};

} // namespace

KernelInfo analyzeKernel(const Kernel &k, const CodegenOptions &o, DiagnosticEngine &diag) {
    KernelInfo info;
    info.kernel = &k;
    info.exportName = o.prefix + k.name;
    // The launches of a prim_func with several are file-local launchers the exported function calls in order.
    std::string part = k.wrapped() ? "part" + std::to_string(k.part) : "";
    info.cName = k.wrapped() ? rt(o, part.c_str()) + "_" + k.name : info.exportName;
    // The device symbol carries a hash of the source file's name, so kernels of two files never clash.
    uint32_t h = 2166136261u;
    for (unsigned char c : o.sourceName + "\n" + k.name) h = (h ^ c) * 16777619u;
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", h);
    info.symbol = "tilec_" + info.exportName + (part.empty() ? "" : "_" + part) + "_" + hex;

    Uses u;
    u.maps = &k.tensorMaps;
    u.visit(k.body);
    info.usesFp8 = u.fp8;
    for (size_t m = 0; m < k.tensorMaps.size(); ++m) info.storedMaps.push_back(u.storedMaps.count((int64_t)m) > 0);
    for (auto &p : k.params) {
        bool tensor = p.kind == Param::Tensor;
        info.written.push_back(tensor && u.written.count(p.buffer.get()));
        info.alignment.push_back(tensor && u.align.count(p.buffer.get()) ? u.align[p.buffer.get()] : 0);
        info.usesFp8 |= tensor && p.buffer->dtype.isFloat8();
    }
    // A tensor is written, and aligned, as its views need.
    for (size_t i = 0; i < k.params.size(); ++i)
        for (size_t j = 0; j < k.params.size(); ++j)
            if (k.params[j].viewOf && k.params[j].viewOf == k.params[i].buffer) {
                info.written[i] = info.written[i] || info.written[j];
                info.alignment[i] = std::max(info.alignment[i], info.alignment[j]);
            }
    // The shared-memory plan is planSharedMemory's (its limits were checked there).
    for (auto &[b, off] : k.shared.offsets) info.sharedOffset[b] = off;
    info.sharedBytes = k.shared.bytes;
    return info;
}

std::string printKernel(const KernelInfo &info, const CodegenOptions &o, DiagnosticEngine &diag) {
    KernelPrinter p(info, o, diag);
    return p.run();
}

} // namespace tilec::codegen
