/// \file
/// Expression evaluation and statement execution of the simulator (src/sim/Simulator.h).
#include "sim/Simulator.h"
#include "sim/SharedAliasBytes.h"
#include "sim/ConsumerGroups.h"
#include "sim/SimulatorRandom.h"
#include "tilec/fp4.cuh"
#include "tilec/IROperator.h"
#include "tilec/IeeeMath.h"
#include "tilec/IRUses.h"
#include "tilec/Lop3Decode.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>

namespace tilec::simtest {

namespace {

/// A vectorized loop that code generation makes vector accesses of (CodegenKernel.cpp's transfers): `for v:
/// r[v] = M[base + v]` (or `c ? M[base + v] : 0`) or `for v: M[base + v] = r[v]` (optionally under `if c`), M
/// global or shared, r registers. Each access is at most 16 bytes, so its first element must be a multiple of
/// `elems` where it is made (the tensor's base being aligned: the launcher checks it): what a wide variant's
/// assumptions about run-time sizes must give (LoweringOptions::assumeAlignedRows).
struct VectorAccess {
    const ir::BufferNode *memory = nullptr;
    std::vector<ir::Expr> indices; ///< M's index (lane 0's where the lane is set to the loop's start)
    ir::Expr cond;                 ///< may be null
    int64_t elems = 1;             ///< elements of one access
};

std::optional<VectorAccess> vectorAccess(const ir::For &f) {
    using namespace ir;
    auto lanes = constInt(f.extent);
    if (f.forKind != ForKind::Vectorized || !lanes || *lanes < 2 || (*lanes & (*lanes - 1))) return std::nullopt;
    auto memory = [](const Buffer &b) { return b->scope == Scope::Global || b->scope == Scope::Shared; };
    auto laneOnly = [&](const std::vector<Expr> &idx) { return idx.size() == 1 && idx[0].get() == f.var.get(); };
    VectorAccess a;
    Stmt body = f.body;
    if (auto i = as<IfThenElse>(body); i && !i->otherwise) a.cond = i->cond, body = i->then;
    auto st = as<Store>(body);
    if (!st) return std::nullopt;
    Expr value = st->value;
    auto zero = [](const Expr &e) {
        auto fi = as<FloatImm>(e);
        auto ii = as<IntImm>(e);
        return (fi && fi->value == 0.0) || (ii && ii->value == 0);
    };
    if (auto sel = as<Select>(value); sel && zero(sel->f) && !a.cond && st->buffer->scope == Scope::Local)
        a.cond = sel->cond, value = sel->t;
    auto l = as<Load>(value);
    if (!l || l->buffer->dtype != st->buffer->dtype) return std::nullopt;
    if (st->buffer->scope == Scope::Local && laneOnly(st->indices) && memory(l->buffer)) {
        a.memory = l->buffer.get(), a.indices = l->indices;
    } else if (memory(st->buffer) && l->buffer->scope == Scope::Local && laneOnly(l->indices)) {
        a.memory = st->buffer.get(), a.indices = st->indices;
    } else {
        return std::nullopt;
    }
    if (a.cond && uses(a.cond, f.var.get())) return std::nullopt;
    const int64_t eb = std::max(1, st->buffer->dtype.bytes());
    a.elems = std::min<int64_t>(16, *lanes * eb) / eb;
    return a;
}

std::string misaligned(const VectorAccess &a, size_t at, int t) {
    return "a vector access of " + std::to_string(a.elems) + " elements of " + a.memory->name + " at the misaligned element " +
           std::to_string(at) + " by thread " + std::to_string(t);
}

/// A bfloat16's bits and back. The simulator holds a bfloat16 as the float32 (then double) of its value, which is
/// exact; a NaN pattern (the halves of a float32 that a T.view of a bfloat16 tile stores, DeepSeek's sparse MLA
/// backward) keeps its 16 bits in a quiet NaN's payload, above float32's cut (bits 50..35, marker bit 29), so
/// that storing it into a bfloat16 buffer (rounded through float32) keeps them.
double bf16FromBits(uint16_t u) {
    uint32_t w = (uint32_t)u << 16;
    float f;
    std::memcpy(&f, &w, 4);
    if (!std::isnan(f)) return f;
    uint64_t bits = 0x7FF8000000000000ull | ((uint64_t)u << 35) | (1ull << 29);
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
}

uint16_t bf16Bits(double v) {
    if (std::isnan(v)) {
        uint64_t bits;
        std::memcpy(&bits, &v, 8);
        return (bits >> 29 & 1) ? (uint16_t)(bits >> 35) : (uint16_t)0x7FC0;
    }
    float f = (float)v;
    uint32_t w;
    std::memcpy(&w, &f, 4);
    if (w & 0xFFFF) throw SimError("reinterpreting a bfloat16 that holds a float32 value (not a bfloat16)");
    return (uint16_t)(w >> 16);
}

/// T.reinterpret / a T.view to another dtype: value v of dtype `from` read as `to`, of the same width. The
/// simulator holds values, not bits, so only integers, float32, float64 (whose values are their bits) and
/// bfloat16 (bf16Bits) take part; float16 and float8 are a SimError.
double reinterpretValue(DType to, DType from, double v) {
    auto exact = [](DType t) {
        return t.isInt() || t.kind == DType::Float32 || t.kind == DType::Float64 || t.kind == DType::BFloat16;
    };
    if (!exact(to) || !exact(from) || to.bits() != from.bits())
        throw SimError("no simulation of reinterpreting " + std::string(from.name()) + " as " + std::string(to.name()));
    uint64_t bits = 0;
    if (from.kind == DType::Float32) {
        float f = (float)v;
        uint32_t u;
        std::memcpy(&u, &f, 4);
        bits = u;
    } else if (from.kind == DType::Float64) {
        std::memcpy(&bits, &v, 8);
    } else if (from.kind == DType::BFloat16) {
        bits = bf16Bits(v);
    } else {
        bits = (uint64_t)(int64_t)v;
    }
    if (to.kind == DType::Float32) {
        uint32_t u = (uint32_t)bits;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
    if (to.kind == DType::Float64) {
        double d;
        std::memcpy(&d, &bits, 8);
        return d;
    }
    if (to.kind == DType::BFloat16) return bf16FromBits((uint16_t)bits);
    return roundToDType(to, (double)(int64_t)bits); // wraps to the integer's width and sign
}

DType bitsType(DType t) { return t.bits() == 8 ? DType::UInt8 : t.bits() == 16 ? DType::UInt16 : DType::UInt32; }

} // namespace

uint64_t elementBits(DType t, double v) {
    if (t.bits() > 32) throw SimError("no simulation of a T.view over " + std::string(t.name()) + " elements (wider than 32 bits)");
    if (t.isInt() && std::isnan(v)) return 0;
    return t == bitsType(t) ? (uint64_t)v : (uint64_t)reinterpretValue(bitsType(t), t, v);
}

double elementOfBits(DType t, uint64_t bits) {
    return t == bitsType(t) ? (double)bits : reinterpretValue(t, bitsType(t), (double)bits);
}

double Simulator::eval(const ir::Expr &e, int t) {
    using namespace ir;
    switch (e->kind) {
    case NodeKind::IntImm: return (double)as<IntImm>(e)->value;
    // a float32 constant is the float32 the generated code spells (`1 / 448.0` in a float32 product is
    // 0.002232143f, not the double), so products with it round as on the GPU
    case NodeKind::FloatImm: return roundTo(e->dtype, as<FloatImm>(e)->value);
    case NodeKind::Var: {
        auto it = vars_[t].find(as<VarNode>(e));
        if (it == vars_[t].end()) throw SimError("unbound variable " + as<VarNode>(e)->name);
        return it->second;
    }
    case NodeKind::Cast: return convertToDType(e->dtype, as<Cast>(e)->value->dtype, eval(as<Cast>(e)->value, t));
    case NodeKind::Select: {
        auto s = as<Select>(e);
        return eval(s->cond, t) != 0 ? eval(s->t, t) : eval(s->f, t);
    }
    case NodeKind::Unary: {
        auto u = as<Unary>(e);
        double a = eval(u->a, t);
        if (u->op == UnaryOp::Not) return a == 0;
        if (u->op == UnaryOp::BitNot) return (double)~(int64_t)a;
        return -a;
    }
    case NodeKind::Load: {
        auto l = as<Load>(e);
        size_t i = index(l->buffer.get(), l->indices, t);
        touch(l->buffer.get(), i, t, false);
        return storage(l->buffer.get(), t)[i];
    }
    case NodeKind::Call: {
        auto c = as<Call>(e);
        using passes::lib::Fn;
        if (const passes::lib::Info *info = passes::lib::find(c->name)) {
            auto arg = [&](const char *n) { return passes::lib::arg(*c, info->fn, n); };
            auto num = [&](const char *n) { return (int64_t)eval(arg(n), t); };
            if (info->fn == Fn::Swz) return (double)swizzled(num("cols"), num("elemBytes"), num("tileElems"), num("offset"));
            if (info->fn == Fn::SwzPanels)
                return (double)panelled(num("cols"), num("elemBytes"), num("span"), num("tileElems"), num("offset"));
            if (info->fn == Fn::SwzSplit || info->fn == Fn::SwzPanelsSplit)
                return (double)splitSwizzled(info->fn == Fn::SwzPanelsSplit ? num("span") : 0, num("cols"), num("elemBytes"),
                                             num("tileElems"), num("runtime"), num("fixed"));
            if (info->fn == Fn::RoleThread) { // the launched index, which must be one of the role's threads
                int64_t first = (int64_t)eval(arg("first"), t), count = (int64_t)eval(arg("count"), t);
                if (t < first || t >= first + count)
                    throw SimError("thread " + std::to_string(t) + " reads the thread index of the role of threads " +
                                   std::to_string(first) + " to " + std::to_string(first + count - 1));
                return (double)t;
            }
            if (info->fn == Fn::Fp4Code) return (double)tilec::fp4_code((float)eval(arg("value"), t));
            if (info->fn == Fn::Fp4x2Code) return (double)tilec::fp4x2_code((float)eval(arg("lo"), t), (float)eval(arg("hi"), t));
            // Shuffles name all 32 lanes of the warp: one in a partial warp (a block of 1 to 31 threads, or
            // the last warp of 48) waits for lanes that do not exist.
            if ((info->fn == Fn::ShflXor || info->fn == Fn::Shfl || info->fn == Fn::WarpAny) && t / 32 * 32 + 32 > T_)
                throw SimError("a warp shuffle in a warp of " + std::to_string(T_ - t / 32 * 32) + " threads");
            if (info->fn == Fn::WarpAny) { // the lanes evaluated in lockstep, as the shuffles' other lanes
                for (int lane = t / 32 * 32; lane < t / 32 * 32 + 32; ++lane)
                    if (eval(arg("pred"), lane) != 0) return 1;
                return 0;
            }
            if (info->fn == Fn::ShflXor) {
                int other = t ^ (int)eval(arg("mask"), t);
                if (other / 32 != t / 32 || other >= T_) throw SimError("shuffle outside the warp");
                return eval(arg("value"), other);
            }
            if (info->fn == Fn::Shfl) { // lane `lane` (mod width) of the caller's group of `width` lanes
                int width = (int)eval(arg("width"), t);
                int other = t / width * width + (int)eval(arg("lane"), t) % width;
                if (other >= T_) throw SimError("shuffle past the block's threads");
                return eval(arg("value"), other);
            }
            throw SimError(std::string("no simulation of ") + info->name + " as a value");
        }
        if (c->name.rfind("extern:tilec_rng_", 0) == 0) { // T.rng_*: cuRAND's Philox on the thread's state words
            const ir::Load *l = passes::addressedLoad(c->args[0]);
            std::vector<double> *w = l ? &storage(l->buffer.get(), t) : nullptr;
            if (!w || w->size() < 16) throw SimError(c->name + " without its 16-word state");
            const std::string fn = c->name.substr(7);
            if (fn == "tilec_rng_init") {
                auto u64 = [&](int i) { return (uint64_t)eval(c->args[(size_t)i], t); }; // exact below 2^53
                philoxInit(w->data(), u64(1), u64(2), u64(3));
                return 0;
            }
            if (fn == "tilec_rng_rand") return philoxNext(w->data());
            if (fn == "tilec_rng_uniform") return philoxUniform(w->data());
            throw SimError("no simulation of " + fn + " (cuRAND's device math is not modelled)");
        }
        if (c->name == "extern:decode_i4u_to_f16" || c->name == "extern:decode_i4s_to_f16") {
            // BitBLAS's lop3 decoders where the kernel's sources are tilec's (include/tilec/Lop3Decode.h): 4 bytes
            // of src into n float16s of dst
            const auto &srcs = k_.importedSources;
            if (std::find(srcs.begin(), srcs.end(), std::string(tilec::lop3DecodeI4ToF16Source())) == srcs.end())
                throw SimError("no simulation of " + c->name.substr(7) + " without tilec's source of it (bitblas.gpu.intrin.lop3)");
            if (c->args.size() < 2 || c->args.size() > 3) throw SimError(c->name.substr(7) + " takes src, dst and n");
            const int n = c->args.size() == 3 ? (int)eval(c->args[2], t) : 8;
            auto [sb, s0] = addressOf(c->args[0], t);
            auto [db, d0] = addressOf(c->args[1], t);
            if (sb->dtype.bits() != 8) throw SimError(c->name.substr(7) + " of a source of " + std::string(sb->dtype.name()));
            uint32_t w = 0;
            for (int b = 0; b < 4; ++b) {
                touch(sb, (size_t)(s0 + b), t, false);
                w |= ((uint32_t)(int64_t)storage(sb, t).at((size_t)(s0 + b)) & 0xffu) << (8 * b);
            }
            for (int e = 0; e < n; ++e) {
                touch(db, (size_t)(d0 + e), t, true);
                storage(db, t).at((size_t)(d0 + e)) = roundTo(db->dtype, tilec::lop3DecodeI4ToF16(w, e, c->name[16] == 's'));
            }
            return 0;
        }
        double a = eval(c->args[0], t);
        const std::string &n = c->name;
        if (n == "reinterpret") return reinterpretValue(e->dtype, c->args[0]->dtype, a);
        if (auto ieee = ieeeCall(n)) {
            double b = c->args.size() > 1 ? eval(c->args[1], t) : 0, z = c->args.size() > 2 ? eval(c->args[2], t) : 0;
            return ieeeEvaluate(*ieee->first, ieee->second, e->dtype == DType::Float32, a, b, z);
        }
        double r;
        if (n == "exp") r = std::exp(a);
        else if (n == "exp2") r = std::exp2(a);
        else if (n == "log") r = std::log(a);
        else if (n == "log2") r = std::log2(a);
        else if (n == "sqrt") r = std::sqrt(a);
        else if (n == "rsqrt") r = 1 / std::sqrt(a);
        else if (n == "abs") r = std::fabs(a);
        else if (n == "tanh") r = std::tanh(a);
        else if (n == "sigmoid") r = 1 / (1 + std::exp(-a)); // tilec::sigmoid
        else if (n == "pow") r = std::pow(a, eval(c->args[1], t));
        else throw SimError("no simulation of " + n);
        return roundTo(e->dtype, r);
    }
    case NodeKind::Binary: {
        auto b = as<Binary>(e);
        // `&&` and `||` as the generated C++ evaluates them: the right side only when the left does not decide
        // (its memory reads are not made otherwise: a guard `i < j && v[j] > v[i]` reads nothing where it fails).
        if (b->op == BinaryOp::And || b->op == BinaryOp::Or) {
            const bool left = eval(b->a, t) != 0;
            if (left == (b->op == BinaryOp::Or)) return left ? 1 : 0;
            return eval(b->b, t) != 0 ? 1 : 0;
        }
        auto r = binaryOp(b->op, eval(b->a, t), eval(b->b, t), b->a->dtype);
        if (!r) throw SimError("integer division or modulo by zero");
        return isComparison(b->op) || b->op == BinaryOp::And || b->op == BinaryOp::Or ? *r : roundTo(e->dtype, *r);
    }
    default: break;
    }
    throw SimError("cannot evaluate a statement");
}

/// Consumer warp group c's own code (`if tilec.warp_group(c)` inside the consumer role): this agent's if it
/// is threads 128 c .. 128 c + 127, run as a kernel of those 128 threads (the thread index within the group, the
/// group's barrier and layouts); another group's agent runs the else branch.
void Simulator::consumerGroup(const ir::IfThenElse &i, const std::vector<char> &mask) {
    using namespace ir;
    const auto c = constInt(as<Call>(i.cond)->args[0]);
    if (!c || agent_->role != 0 || inConsumerGroup || agent_->count != 128)
        throw SimError("a consumer warp group's code outside the consumer role's warp groups");
    if (agent_->first != 128 * *c) return exec(i.otherwise, mask);
    if (!wholeScope(mask)) throw SimError("a consumer warp group's code reached by only some of its threads");
    const ir::VarNode *tx = k_.threadIdx.get();
    struct Scope {
        Simulator &sim;
        const ir::VarNode *tx;
        int first, count;
        Scope(Simulator &s, const ir::VarNode *v, int f, int n) : sim(s), tx(v), first(f), count(n) {
            inConsumerGroup = true;
            if (tx)
                for (int t = first; t < first + count; ++t) sim.vars_[t][tx] = t - first;
        }
        ~Scope() {
            inConsumerGroup = false;
            if (tx)
                for (int t = first; t < first + count; ++t) sim.vars_[t][tx] = t;
        }
    } scope(*this, tx, agent_->first, agent_->count);
    return exec(i.then, mask);
}

void Simulator::exec(const ir::Stmt &s, const std::vector<char> &mask) {
    using namespace ir;
    if (!s) return;
    bool any = std::any_of(mask.begin(), mask.end(), [](char c) { return c; });
    if (!any) return;
    auto first = (int)(std::find(mask.begin(), mask.end(), 1) - mask.begin());
    switch (s->kind) {
    case NodeKind::Seq:
        for (auto &c : as<Seq>(s)->stmts) exec(c, mask);
        return;
    case NodeKind::For: {
        auto f = as<For>(s);
        if (f->forKind == ForKind::Persistent) {
            // The block's tiles physicalBlock_, + physicalBlocks_, ... below the extent, each binding the
            // blockIdx variables (T.use_swizzle's rasterization is a permutation of the tiles: not modelled).
            int64_t tiles = (int64_t)eval(f->extent, first), i = 0;
            for (int64_t tile = physicalBlock_; tile < tiles; tile += physicalBlocks_, ++i) {
                // as the generated tile loop advances them
                const std::array<int64_t, 3> xyz = k_.walkTile(tile, {grid_[0], grid_[1], grid_[2]});
                for (int t = 0; t < T_; ++t) {
                    if (!mask[t]) continue;
                    vars_[t][f->var.get()] = (double)i;
                    for (int d = 0; d < 3; ++d)
                        if (k_.blockIdx[d]) vars_[t][k_.blockIdx[d].get()] = (double)xyz[d];
                }
                exec(f->body, mask);
            }
            return;
        }
        if (auto va = vectorAccess(*f)) // where it is made, at a multiple of its elements (VectorAccess)
            for (int t = 0; t < T_; ++t) {
                if (!mask[t] || (vars_[t][f->var.get()] = eval(f->min, t), va->cond && eval(va->cond, t) == 0)) continue;
                if (size_t at = index(va->memory, va->indices, t); at % (size_t)va->elems) throw SimError(misaligned(*va, at, t));
            }
        // Bounds may differ between threads (T.serial(lane, n, 32)): iteration i runs the threads whose own trip
        // count passes i, in lockstep, each binding its own start + i (a barrier inside that only some reach is an
        // error of the barrier's).
        std::vector<double> lo(T_, 0), n(T_, 0);
        int64_t most = 0;
        for (int t = 0; t < T_; ++t)
            if (mask[t]) lo[t] = eval(f->min, t), n[t] = eval(f->extent, t), most = std::max(most, (int64_t)n[t]);
        std::vector<char> in(T_, 0);
        for (int64_t i = 0; i < most; ++i) {
            for (int t = 0; t < T_; ++t) {
                in[t] = mask[t] && (double)i < n[t];
                if (in[t]) vars_[t][f->var.get()] = lo[t] + (double)i;
            }
            exec(f->body, in);
        }
        return;
    }
    case NodeKind::IfThenElse: {
        auto i = as<IfThenElse>(s);
        if (agent_ && passes::lib::is(i->cond, passes::lib::Fn::WarpGroup)) return consumerGroup(*i, mask);
        std::vector<char> yes(T_, 0), no(T_, 0);
        for (int t = 0; t < T_; ++t)
            if (mask[t]) (eval(i->cond, t) != 0 ? yes : no)[t] = 1;
        exec(i->then, yes);
        exec(i->otherwise, no);
        return;
    }
    case NodeKind::Store: {
        auto st = as<Store>(s);
        // Lockstep: every active thread computes before any stores.
        std::vector<std::pair<size_t, double>> w(T_);
        for (int t = 0; t < T_; ++t)
            if (mask[t]) w[t] = {index(st->buffer.get(), st->indices, t), convertToDType(st->buffer->dtype, st->value->dtype, eval(st->value, t))};
        for (int t = 0; t < T_; ++t)
            if (mask[t]) {
                double &e = storage(st->buffer.get(), t)[w[t].first];
                sameValueWrite_ = e == w[t].second;
                touch(st->buffer.get(), w[t].first, t, true);
                sameValueWrite_ = false;
                e = w[t].second;
                genericWrite(st->buffer.get(), w[t].first, t);
            }
        return;
    }
    case NodeKind::AtomicAdd: {
        auto a = as<AtomicAdd>(s);
        for (int t = 0; t < T_; ++t) {
            if (!mask[t]) continue;
            size_t i = index(a->dst.buffer.get(), {a->dst.ranges[0].min}, t);
            auto &v = storage(a->dst.buffer.get(), t)[i];
            v = roundTo(a->dst.buffer->dtype, v + eval(a->value, t));
        }
        return;
    }
    case NodeKind::Evaluate: {
        auto c = as<Call>(as<Evaluate>(s)->value);
        const passes::lib::Info *info = c ? passes::lib::find(c->name) : nullptr;
        if (info && info->fn == passes::lib::Fn::Sync) {
            if (agent_ && inConsumerGroup) return groupBarrier(-10 - agent_->first / 128, agent_->count, mask, "a warp group's barrier");
            if (agent_) return groupBarrier(-1 - agent_->role, roleCount_[agent_->role], mask, "a barrier");
            if (!wholeScope(mask)) throw SimError("a barrier reached by only some threads");
            ++blockBarriers;
            ++comps_[0].epoch;
            comps_[0].clock.set(0, comps_[0].clock.at(0) + 1);
            return;
        }
        if (info && info->fn == passes::lib::Fn::NamedSync) {
            const int id = (int)eval(passes::lib::arg(*c, info->fn, "id"), first);
            const int threads = (int)eval(passes::lib::arg(*c, info->fn, "threads"), first);
            if (id < 1 || id > 15 || threads % 32) throw SimError("a named barrier " + std::to_string(id) + " for " + std::to_string(threads) + " threads");
            if (agent_) return groupBarrier(id, threads, mask, "a named barrier");
            if (!wholeScope(mask) || threads != T_) {
                // Some whole warps of the block (a branch insertSyncs orders): exactly they must reach it.
                int reached = 0;
                for (int t = 0; t < T_; ++t) reached += mask[t] != 0;
                if (reached != threads)
                    throw SimError("a named barrier " + std::to_string(id) + " for " + std::to_string(threads) + " threads reached by " +
                                   std::to_string(reached));
                partials_.push_back(mask);
                return;
            }
            ++comps_[0].epoch;
            comps_[0].clock.set(0, comps_[0].clock.at(0) + 1);
            return;
        }
        if (info && info->fn == passes::lib::Fn::NamedArrive) {
            const int id = (int)eval(passes::lib::arg(*c, info->fn, "id"), first);
            const int threads = (int)eval(passes::lib::arg(*c, info->fn, "threads"), first);
            if (id < 1 || id > 15 || threads % 32) throw SimError("a named barrier " + std::to_string(id) + " for " + std::to_string(threads) + " threads");
            if (!agent_) throw SimError("bar.arrive outside warp roles");
            return groupArrive(id, threads, mask);
        }
        if (info && c->dtype.kind == DType::Void) return library(*c, *info, mask);
        for (int t = 0; t < T_; ++t)
            if (mask[t]) eval(as<Evaluate>(s)->value, t);
        return;
    }
    case NodeKind::WarpRoles: return roles(*as<WarpRoles>(s), mask);
    case NodeKind::While: {
        // Each thread iterates while its condition holds; the threads still in the loop run the body together.
        auto w = as<While>(s);
        std::vector<char> in = mask;
        for (int64_t iter = 0;; ++iter) {
            bool anyIn = false;
            for (int t = 0; t < T_; ++t) {
                if (in[t]) in[t] = eval(w->cond, t) != 0;
                anyIn |= in[t] != 0;
            }
            if (!anyIn) return;
            if (iter >= (int64_t(1) << 20)) throw SimError("a while loop ran more than 2^20 iterations");
            exec(w->body, in);
        }
    }
    default: throw SimError("statement kind not lowered");
    }
}

} // namespace tilec::simtest
