/// \file
/// The simulator's model of the Hopper stores (stdlib/tilec/sm90_store.cuh; Simulator.h): stmatrix, TMA stores
/// and bulk copies from shared memory, their waits and the proxy fences they need. The rules are those of
/// SimulatorHopper.cpp's file comment ("The epilogue").
#include "sim/Simulator.h"
#include "tilec/IRVisitor.h"

#include <algorithm>

namespace tilec::simtest {

void Simulator::stmatrix(const ir::Call &c, const std::vector<char> &mask) {
    using passes::lib::Fn;
    if (!agent_ || !wholeScope(mask)) throw SimError("stmatrix outside a whole warpgroup of a warp role");
    const int64_t cols = (int64_t)eval(passes::lib::arg(c, Fn::StmatrixTile, "cols"), agent_->first);
    const int64_t swz = (int64_t)eval(passes::lib::arg(c, Fn::StmatrixTile, "swizzle"), agent_->first);
    if ((cols != 16 && cols != 32 && cols != 64) || swz != 2 * cols) throw SimError("a stmatrix piece of " + std::to_string(cols) + " columns, swizzle " + std::to_string(swz));
    for (int t = 0; t < T_; ++t) {
        if (!mask[t]) continue;
        auto [dst, d0] = addressOf(passes::lib::arg(c, Fn::StmatrixTile, "dst"), t);
        auto [acc, a0] = addressOf(passes::lib::arg(c, Fn::StmatrixTile, "acc"), t);
        if (dst->scope != ir::Scope::Shared || dst->dtype.bytes() != 2) throw SimError("stmatrix into " + dst->name + ", not 16-bit shared memory");
        const int64_t base = sharedByte(dst, d0), bufBase = sharedByte(dst, 0);
        if (base % 1024 || k_.shared.alignment < 1024) throw SimError("a stmatrix piece in " + dst->name + " not 1024-byte aligned");
        auto &regs = storage(acc, t);
        if (a0 < 0 || a0 + cols / 2 > (int64_t)regs.size()) throw SimError("stmatrix of accumulators outside " + acc->name);
        auto &to = shared_.at(dst);
        const int lane = t % 32, warp = t / 32 % 4;
        for (int64_t slot = 0; slot < cols / 2; ++slot) {
            const int64_t cc = slot % 2, h = slot / 2 % 2, ni = slot / 4;
            const int64_t row = warp * 16 + h * 8 + lane / 4, col = ni * 8 + lane % 4 * 2 + cc;
            const int64_t at = (swizzleAddress(base + row * swz + col * 2, (int)swz) - bufBase) / 2;
            if (at < 0 || at >= (int64_t)to.size()) throw SimError("stmatrix writes outside " + dst->name);
            touch(dst, (size_t)at, t, true);
            to[(size_t)at] = roundTo(dst->dtype, regs[(size_t)(a0 + slot)]);
            unfenced_[{dst, (size_t)at}] = t;
            unfencedBy_[t].push_back({dst, (size_t)at});
        }
    }
}

namespace {

/// A store `s` (a TMA store or a bulk copy) issued by component `cur`: a clock component of its own that knows what
/// its issuer knew at the issue, appended to its issuer's stores in flight (`list`).
template <class Comps, class Store>
void startStore(Comps &comps, int cur, std::string name, Store s, std::vector<Store> &list) {
    s.comp = (int)comps.size();
    typename Comps::value_type c;
    c.name = std::move(name);
    c.clock = comps[(size_t)cur].clock;
    c.clock.set((size_t)s.comp, 0);
    comps.push_back(std::move(c));
    list.push_back(s);
}

} // namespace

void Simulator::findBulkSources() {
    struct V : ir::IRVisitor {
        using IRVisitor::visit;
        std::set<const ir::BufferNode *> found;
        void visit(const ir::Call &c) override {
            if (passes::lib::is(c, passes::lib::Fn::BulkStore))
                if (auto l = passes::addressedLoad(passes::lib::arg(c, passes::lib::Fn::BulkStore, "src"))) found.insert(l->buffer.get());
            IRVisitor::visit(c);
        }
    } v;
    v.visit(k_.body);
    bulkSources_ = std::move(v.found);
}

void Simulator::genericWrite(const ir::BufferNode *b, size_t i, int t) {
    if (!bulkSources_.count(b)) return;
    unfenced_[{b, i}] = t;
    unfencedBy_[t].push_back({b, i});
}

/// A bulk copy (cp.async.bulk.global.shared::cta) issued by thread `t`: 16-byte sizes and ends, inside both
/// buffers, no unfenced source element; it reads its source when a wait retires it (retireStore).
void Simulator::bulkStoreIssue(const ir::Call &c, int t) {
    using passes::lib::Fn;
    TmaStore s;
    s.thread = t;
    const int64_t bytes = (int64_t)eval(passes::lib::arg(c, Fn::BulkStore, "bytes"), t);
    std::tie(s.dst, s.dstIndex) = addressOf(passes::lib::arg(c, Fn::BulkStore, "dst"), t);
    std::tie(s.src, s.srcIndex) = addressOf(passes::lib::arg(c, Fn::BulkStore, "src"), t);
    const int64_t eb = s.src->dtype.bytes();
    if (s.dst->scope != ir::Scope::Global || s.src->scope != ir::Scope::Shared || s.dst->dtype != s.src->dtype)
        throw SimError("a bulk copy from " + s.src->name + " to " + s.dst->name + ", not shared to global of one type");
    if (bytes <= 0 || bytes % 16 || bytes % eb || s.dstIndex * eb % 16 || sharedByte(s.src, s.srcIndex) % 16)
        throw SimError("a bulk copy of " + std::to_string(bytes) + " bytes from " + s.src->name + "[" + std::to_string(s.srcIndex) + "] to " +
                       s.dst->name + "[" + std::to_string(s.dstIndex) + "]: sizes and addresses must be multiples of 16 bytes");
    s.elems = bytes / eb;
    if (s.srcIndex < 0 || s.srcIndex + s.elems > (int64_t)shared_.at(s.src).size()) throw SimError("a bulk copy reads outside " + s.src->name);
    if (s.dstIndex < 0 || s.dstIndex + s.elems > (int64_t)storage(s.dst, t).size()) throw SimError("a bulk copy writes outside " + s.dst->name);
    for (int64_t e = 0; e < s.elems; ++e)
        if (auto it = unfenced_.find({s.src, (size_t)(s.srcIndex + e)}); it != unfenced_.end())
            throw SimError("a bulk copy by thread " + std::to_string(t) + " reads " + s.src->name + "[" + std::to_string(s.srcIndex + e) +
                           "], which thread " + std::to_string(it->second) + " wrote without a fence.proxy.async after it");
    startStore(comps_, cur_, "the bulk copy from " + s.src->name + " issued by " + who(cur_, t), s, stores_[t]);
}

void Simulator::retireStore(const TmaStore &s) {
    if (s.dst) { // a bulk copy: its elements in order
        auto &to = storage(s.dst, s.thread);
        const auto &from = shared_.at(s.src);
        for (int64_t e = 0; e < s.elems; ++e) {
            const size_t at = (size_t)(s.srcIndex + e);
            touchAs(s.comp, s.src, at, s.thread, false);
            touch(s.src, at, s.thread, false);
            to[(size_t)(s.dstIndex + e)] = from[at];
        }
        acquire(comps_[(size_t)s.comp].clock);
        return;
    }
    const ir::TensorMap &map = k_.tensorMaps[(size_t)s.map];
    if (zeroTile_[(size_t)s.map])
        throw SimError("a TMA store through the map of " + map.tensor->name + ", which has no elements (the launcher runs "
                       "the variant without TMA instead: a store would write the zero tile)");
    const std::vector<int64_t> &dims = mapDims_[(size_t)s.map];
    auto &to = *tensors_.at(map.tensor->name);
    const auto &from = shared_.at(s.src);
    const int64_t base = sharedByte(s.src, s.srcIndex), bufBase = sharedByte(s.src, 0);
    // The box's elements in order (innermost first) are the piece's, row by row (its other extents are 1).
    for (int64_t e = 0; e < (int64_t)s.rows * s.cols; ++e) {
        const size_t at = (size_t)((swizzleAddress(base + e / s.cols * s.swizzle + e % s.cols * s.elemBytes, s.swizzle) - bufBase) / s.elemBytes);
        touchAs(s.comp, s.src, at, s.thread, false);
        touch(s.src, at, s.thread, false);
        int64_t rest = e, g = 0, stride = 1;
        bool inside = true;
        for (int d = 0; d < s.rank; ++d) {
            const int64_t x = s.coords[(size_t)d] + rest % map.box[(size_t)d];
            rest /= map.box[(size_t)d];
            inside &= x >= 0 && x < dims[(size_t)d];
            g += x * stride;
            stride *= dims[(size_t)d];
        }
        if (inside) to[(size_t)g] = roundTo(map.tensor->dtype, from[at]);
    }
    acquire(comps_[(size_t)s.comp].clock);
}

/// A TMA store issued by thread `t`, checked against its tensor map and for unfenced elements; it reads its
/// piece when a wait retires it (retireStore).
void Simulator::tmaStoreIssue(const ir::Call &c, const passes::lib::Info &info, int t) {
    auto num = [&](const char *n) { return (int64_t)eval(passes::lib::arg(c, info.fn, n), t); };
    TmaStore s;
    s.thread = t;
    s.rows = (int)num("rows"), s.cols = (int)num("cols"), s.elemBytes = (int)num("elemBytes"), s.swizzle = (int)num("swizzle");
    std::tie(s.src, s.srcIndex) = addressOf(passes::lib::arg(c, info.fn, "src"), t);
    s.map = num("map"), s.rank = (int)num("rank");
    const char *coord[5] = {"c0", "c1", "c2", "c3", "c4"};
    for (int d = 0; d < 5; ++d) s.coords[(size_t)d] = num(coord[d]);
    if (s.map < 0 || s.map >= (int64_t)k_.tensorMaps.size()) throw SimError("a TMA store through tensor map " + std::to_string(s.map) + ", which the kernel does not have");
    const ir::TensorMap &map = k_.tensorMaps[(size_t)s.map];
    // the box: the piece's columns innermost, its rows along exactly one other dimension, 1 elsewhere
    int64_t boxElems = 1, rowDims = 0;
    for (size_t d = 1; d < map.box.size(); ++d) boxElems *= map.box[d], rowDims += map.box[d] != 1;
    if (s.rank < 2 || s.rank > 5 || (int)map.box.size() != s.rank || (int)mapDims_[(size_t)s.map].size() != s.rank)
        throw SimError("a TMA store of rank " + std::to_string(s.rank) + " through a map of rank " + std::to_string(map.box.size()));
    if (map.box[0] != s.cols || boxElems != s.rows || rowDims != 1 || map.swizzleBytes != s.swizzle || s.cols * s.elemBytes != s.swizzle ||
        map.tensor->dtype.bytes() != s.elemBytes || s.src->dtype.bytes() != s.elemBytes)
        throw SimError("a TMA store whose piece differs from tensor map " + std::to_string(s.map) + "'s box, swizzle or element size");
    const int64_t base = sharedByte(s.src, s.srcIndex), bufBase = sharedByte(s.src, 0);
    if (base % 1024 || k_.shared.alignment < 1024) throw SimError("a TMA store from " + s.src->name + " not 1024-byte aligned");
    for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t col = 0; col < s.cols; ++col) {
            const size_t at = (size_t)((swizzleAddress(base + r * s.swizzle + col * s.elemBytes, s.swizzle) - bufBase) / s.elemBytes);
            if (at >= shared_.at(s.src).size()) throw SimError("a TMA store reads outside " + s.src->name);
            if (auto it = unfenced_.find({s.src, at}); it != unfenced_.end())
                throw SimError("a TMA store by thread " + std::to_string(t) + " reads " + s.src->name + "[" + std::to_string(at) + "], which thread " + std::to_string(it->second) + " wrote without a fence.proxy.async after it");
        }
    startStore(comps_, cur_, "the TMA store from " + s.src->name + " issued by " + who(cur_, t), s, stores_[t]);
}

} // namespace tilec::simtest
