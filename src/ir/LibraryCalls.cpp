/// \file
/// The registry of device-library calls (include/tilec/LibraryCalls.h).
#include "tilec/LibraryCalls.h"

#include <cstring>
#include <initializer_list>
#include <unordered_map>

namespace tilec::passes {

using namespace ir;

namespace lib {

namespace {

const std::vector<Info> &table() {
    using I = Issuers;
    static const std::vector<Info> t = {
        {Fn::AddressOf, "tilec.address_of", "", 0, {}, {"load"}, kPure, I::All, "sm_80"},
        {Fn::Sync, "tilec.sync", "__syncthreads", 0, {}, {}, kBarrier, I::All, "sm_80"},
        {Fn::NamedSync, "tilec.named_sync", "tilec::named_barrier_sync", 0, {}, {"id", "threads"}, kBarrier, I::All, "sm_80"},
        {Fn::NamedArrive, "tilec.named_arrive", "tilec::named_barrier_arrive", 0, {}, {"id", "threads"}, kNone, I::All, "sm_80"},
        {Fn::ShflXor, "tilec.shfl_xor", "__shfl_xor_sync", 0, {}, {"value", "mask"}, kPure, I::All, "sm_80"},
        {Fn::Shfl, "tilec.shfl", "__shfl_sync", 0, {}, {"mask", "value", "lane", "width"}, kPure, I::All, "sm_80"},
        {Fn::WarpAny, "tilec.warp_any", "__any_sync", 0, {}, {"pred"}, kPure, I::All, "sm_80"},
        {Fn::Swz, "tilec.swz", "tilec::swz", 2, {}, {"cols", "elemBytes", "tileElems", "offset"}, kPure, I::All, "sm_80"},
        // span: the panel layout's, which the code leaves out where it is the row's widest (the template's default)
        {Fn::SwzPanels, "tilec.swz_panels", "tilec::swz_panels", 4, {}, {"cols", "elemBytes", "tileElems", "span", "offset"},
         kPure, I::All, "sm_80"},
        {Fn::SwzSplit, "tilec.swz_split", "tilec::swz_split", 3, {}, {"cols", "elemBytes", "tileElems", "runtime", "fixed"},
         kPure, I::All, "sm_80"},
        {Fn::SwzPanelsSplit, "tilec.swz_panels_split", "tilec::swz_panels_split", 4, {},
         {"cols", "elemBytes", "tileElems", "span", "runtime", "fixed"}, kPure, I::All, "sm_80"},
        {Fn::CopyG2S, "tilec.copy_g2s", "tilec::copy_g2s", 5, {},
         {"rows", "cols", "vec", "threads", "swizzle", "dst", "src", "ldg", "validRows", "validCols"},
         kWritesShared | kAsync, I::All, "sm_80"},
        {Fn::CopyG2SWait, "tilec.copy_g2s_wait", "tilec::copy_g2s", 5, {},
         {"rows", "cols", "vec", "threads", "swizzle", "dst", "src", "ldg", "validRows", "validCols"}, kWritesShared,
         I::All, "sm_80"},
        {Fn::CpAsyncCommit, "tilec.cp_async_commit", "tilec::cp_async_commit", 0, {}, {}, kNone, I::All, "sm_80"},
        {Fn::CpAsyncWait, "tilec.cp_async_wait", "tilec::cp_async_wait", 1, {}, {"pending"}, kNone, I::All, "sm_80"},
        {Fn::GemmSS, "tilec.gemm_ss", "tilec::gemm_ss", 7, {5, 6},
         {"M", "N", "K", "warpsM", "warpsN", "transA", "transB", "a", "b", "c"}, kReadsShared, I::All, "sm_80"},
        // exactA: A's floats are tf32 values already (holdsTf32Values), handed to mma.sync without rounding
        {Fn::GemmRS, "tilec.gemm_rs", "tilec::gemm_rs", 8, {5, 6, 7},
         {"M", "N", "K", "warpsM", "warpsN", "transB", "opA", "exactA", "a", "b", "c"},
         kReadsShared, I::All, "sm_80"},
        {Fn::GemmSSPanels, "tilec.gemm_ss_panels", "tilec::gemm_ss_panels", 9, {5, 6},
         {"M", "N", "K", "warpsM", "warpsN", "transA", "transB", "swzA", "swzB", "a", "b", "c"}, kReadsShared, I::All, "sm_90"},
        {Fn::GemmRSPanels, "tilec.gemm_rs_panels", "tilec::gemm_rs_panels", 9, {5, 7, 8},
         {"M", "N", "K", "warpsM", "warpsN", "transB", "swzB", "opA", "exactA", "a", "b", "c"}, kReadsShared, I::All, "sm_90"},
        {Fn::MbarrierInit, "tilec.mbarrier_init", "tilec::mbarrier_init", 0, {}, {"bar", "arrivals"}, kNone, I::One, "sm_90"},
        {Fn::MbarrierInitFence, "tilec.mbarrier_init_fence", "tilec::mbarrier_init_fence", 0, {}, {}, kNone, I::One, "sm_90"},
        {Fn::MbarrierArrive, "tilec.mbarrier_arrive", "tilec::mbarrier_arrive", 0, {}, {"bar"}, kNone, I::One, "sm_90"},
        {Fn::MbarrierArriveExpectTx, "tilec.mbarrier_arrive_expect_tx", "tilec::mbarrier_arrive_expect_tx", 0, {},
         {"bar", "bytes"}, kNone, I::One, "sm_90"},
        {Fn::MbarrierWait, "tilec.mbarrier_wait", "tilec::mbarrier_wait", 0, {}, {"bar", "parity"}, kBarrier, I::All, "sm_90"},
        {Fn::TmaLoadTile, "tilec.tma_load_tile", "tilec::tma_load_tile", 6, {},
         {"rank", "rowDim", "rows", "cols", "elemBytes", "swizzle", "dst", "map", "bar", "c0", "c1", "c2", "c3", "c4"},
         kWritesShared | kAsync, I::One, "sm_90"},
        // live: the block's live rows at run time (Gemm::liveRowsAt), each warpgroup's panels from there on not issued
        {Fn::WgmmaSS, "tilec.wgmma_ss", "tilec::wgmma_gemm_ss", 10, {5, 6},
         {"M", "N", "K", "wgM", "wgN", "transA", "transB", "swzA", "swzB", "rows", "a", "b", "c", "live"},
         kReadsShared | kAsync, I::Warpgroups, "sm_90a", 1},
        {Fn::WgmmaWait, "tilec.wgmma_wait", "tilec::wgmma_wait", 1, {}, {"pending"}, kNone, I::Warpgroups, "sm_90a"},
        {Fn::FenceProxyAsync, "tilec.fence_proxy_async", "tilec::fence_proxy_async_shared", 0, {}, {}, kNone, I::All,
         "sm_90"},
        {Fn::WgmmaWaitAcc, "tilec.wgmma_wait_acc", "tilec::wgmma_wait", 2, {}, {"pending", "count", "acc"}, kNone,
         I::Warpgroups, "sm_90a"},
        {Fn::WgmmaClear, "tilec.wgmma_clear", "tilec::wgmma_clear", 1, {}, {"count", "acc"}, kNone, I::All, "sm_90a"},
        // C = op(A) op(B): every panel issued (rows == M), the accumulators' old values never read
        {Fn::WgmmaSSInit, "tilec.wgmma_ss_init", "tilec::wgmma_gemm_ss_init", 10, {5, 6},
         {"M", "N", "K", "wgM", "wgN", "transA", "transB", "swzA", "swzB", "rows", "a", "b", "c"},
         kReadsShared | kAsync, I::Warpgroups, "sm_90a"},
        {Fn::TmaLoadTileMulticast, "tilec.tma_load_tile_multicast", "tilec::tma_load_tile_multicast", 8, {},
         {"rank", "rowDim", "rows", "cols", "elemBytes", "swizzle", "boxRows", "parts", "dst", "map", "bar", "ctaMask",
          "part", "c0", "c1", "c2", "c3", "c4"},
         kWritesShared | kAsync, I::One, "sm_90a"},
        {Fn::MbarrierArriveCluster, "tilec.mbarrier_arrive_cluster", "tilec::mbarrier_arrive_ctas", 0, {},
         {"bar", "ctas"}, kNone, I::One, "sm_90"},
        {Fn::ClusterSync, "tilec.cluster_sync", "tilec::cluster_sync", 0, {}, {}, kBarrier, I::All, "sm_90"},
        {Fn::ClusterRank, "tilec.cluster_rank", "tilec::cluster_ctarank", 0, {}, {}, kPure, I::All, "sm_90"},
        {Fn::StmatrixTile, "tilec.stmatrix_tile", "tilec::stmatrix_tile", 2, {}, {"cols", "swizzle", "dst", "acc"},
         kWritesShared, I::Warpgroups, "sm_90"},
        {Fn::TmaStoreTile, "tilec.tma_store_tile", "tilec::tma_store_tile", 4, {},
         {"rows", "cols", "elemBytes", "swizzle", "src", "map", "rank", "c0", "c1", "c2", "c3", "c4"}, kReadsShared | kAsync,
         I::One, "sm_90"},
        {Fn::TmaStoreWait, "tilec.tma_store_wait", "tilec::tma_store_wait", 0, {}, {"pending"}, kNone, I::One, "sm_90"},
        {Fn::WgmmaRS, "tilec.wgmma_rs", "tilec::wgmma_gemm_rs_fragment", 7, {5},
         {"M", "N", "K", "wgM", "wgN", "transB", "swzB", "a", "b", "c"}, kReadsShared | kAsync, I::Warpgroups, "sm_90a"},
        {Fn::WgmmaFenceOperands, "tilec.wgmma_fence_operands", "tilec::wgmma_fence_operands", 1, {}, {"count", "regs"}, kNone,
         I::All, "sm_90a"},
        {Fn::MbarrierExpectTx, "tilec.mbarrier_expect_tx", "tilec::mbarrier_expect_tx", 0, {}, {"bar", "bytes"}, kNone,
         I::One, "sm_90"},
        {Fn::MbarrierArriveEach, "tilec.mbarrier_arrive_each", "tilec::mbarrier_arrive", 0, {}, {"bar", "noinc"}, kNone,
         I::All, "sm_90", 1},
        {Fn::WarpGroup, "tilec.warp_group", "", 0, {}, {"group"}, kPure, I::All, "sm_90"},
        {Fn::TmaCopyOn, "tilec.tma_copy_on", "", 0, {}, {"bar"}, kPure, I::One, "sm_90"},
        {Fn::Reducer, "tilec.reducer", "", 0, {}, {"buffer", "op"}, kNone, I::All, "sm_80"},
        {Fn::FinalizeReducer, "tilec.finalize_reducer", "", 0, {}, {"buffer"}, kNone, I::All, "sm_80"},
        {Fn::ShflXorSync, "tilec.shfl_xor_sync", "__shfl_xor_sync", 0, {}, {"mask", "value", "delta", "width"}, kPure, I::All, "sm_80"},
        {Fn::ShflDownSync, "tilec.shfl_down_sync", "__shfl_down_sync", 0, {}, {"mask", "value", "delta", "width"}, kPure, I::All, "sm_80"},
        {Fn::ShflUpSync, "tilec.shfl_up_sync", "__shfl_up_sync", 0, {}, {"mask", "value", "delta", "width"}, kPure, I::All, "sm_80"},
        {Fn::SyncWarp, "tilec.sync_warp", "__syncwarp", 0, {}, {"mask"}, kNone, I::All, "sm_80"},
        {Fn::ThreadReturn, "tilec.thread_return", "return", 0, {}, {}, kNone, I::All, "sm_80"},
        {Fn::GridSync, "tilec.grid_sync", "tilec::grid_sync", 0, {}, {}, kBarrier, I::All, "sm_80"},
        {Fn::GemmSpSS, "tilec.gemm_sp_ss", "tilec::gemm_sp_ss", 6, {5}, {"M", "N", "K", "warpsM", "warpsN", "transB", "a", "e", "b", "c"},
         kReadsShared, I::All, "sm_80"},
        {Fn::MmaSync, "tilec.mma_sync", "tilec::mma_sync", 0, {}, {"a", "b", "c"}, kNone, I::All, "sm_80"},
        {Fn::LdMatrix, "tilec.ldmatrix", "tilec::ldmatrix", 2, {1}, {"count", "trans", "dst", "src"}, kReadsShared, I::All,
         "sm_80"},
        {Fn::RoleThread, "tilec.role_thread", "threadIdx.x", 0, {}, {"first", "count"}, kPure, I::All, "sm_80"},
        {Fn::Fp4Code, "tilec.fp4_code", "tilec::fp4_code", 0, {}, {"value"}, kPure, I::All, "sm_80"},
        {Fn::Fp4x2Code, "tilec.fp4x2_code", "tilec::fp4x2_code", 0, {}, {"lo", "hi"}, kPure, I::All, "sm_80"},
        {Fn::TmaLoadTileRows, "tilec.tma_load_tile_rows", "tilec::tma_load_tile_rows", 7, {},
         {"rank", "rowDim", "rows", "cols", "elemBytes", "swizzle", "boxRows", "dst", "map", "bar", "live", "c0", "c1", "c2",
          "c3", "c4"},
         kWritesShared | kAsync, I::One, "sm_90"},
        // the compressed A (M, K/2) and B panel tiles read by the async proxy, the metadata E (M, K/16) by the threads
        {Fn::WgmmaSpSS, "tilec.wgmma_sp_ss", "tilec::wgmma_sp_gemm_ss", 8, {5},
         {"M", "N", "K", "wgM", "wgN", "transB", "swzA", "swzB", "a", "e", "b", "c"}, kReadsShared | kAsync, I::Warpgroups,
         "sm_90a"},
        {Fn::CpAsyncChunk, "tilec.cp_async", "tilec::cp_async", 1, {}, {"bytes", "dst", "src", "valid"}, kWritesShared | kAsync,
         I::All, "sm_80"},
        {Fn::AsyncCopyOn, "tilec.async_copy_on", "", 0, {}, {"rowThreads", "run"}, kPure, I::All, "sm_80"},
        {Fn::CpAsyncCopy, "tilec.cp_async_copy", "tilec::cp_async", 1, {}, {"bytes", "dst", "src", "valid"},
         kWritesShared | kAsync, I::All, "sm_80"},
        {Fn::AsyncLanded, "tilec.async_landed", "", 0, {}, {"buffer"}, kPure, I::All, "sm_80"},
        {Fn::CpAsyncArrive, "tilec.cp_async_arrive", "tilec::cp_async_mbarrier_arrive", 0, {}, {"bar"}, kNone, I::All,
         "sm_80"},
        {Fn::MaxNregInc, "tilec.setmaxnreg_inc", "tilec::setmaxnreg_inc", 1, {}, {"regs"}, kNone, I::All, "sm_90a"},
        {Fn::MaxNregDec, "tilec.setmaxnreg_dec", "tilec::setmaxnreg_dec", 1, {}, {"regs"}, kNone, I::All, "sm_90a"},
        {Fn::BulkStore, "tilec.bulk_store", "tilec::bulk_store", 1, {}, {"bytes", "dst", "src"}, kReadsShared | kAsync, I::One,
         "sm_90"},
        {Fn::Stmatrix, "tilec.stmatrix", "tilec::stmatrix", 2, {1}, {"count", "trans", "dst", "src"}, kWritesShared, I::All,
         "sm_90"},
    };
    return t;
}

} // namespace

const Info &info(Fn f) {
    const auto &t = table();
    TILEC_ASSERT((size_t)f < t.size() && t[(size_t)f].fn == f, "the library-call table is out of order");
    return t[(size_t)f];
}

const Info *find(const std::string &irName) {
    if (irName.rfind("tilec.", 0) != 0) return nullptr;
    // Hashed once: passes and the simulator ask for every call they meet (a linear scan compared ~100 names).
    static const std::unordered_map<std::string, const Info *> byName = [] {
        std::unordered_map<std::string, const Info *> m;
        for (auto &i : table()) m.emplace(i.name, &i);
        return m;
    }();
    auto it = byName.find(irName);
    return it == byName.end() ? nullptr : it->second;
}

bool is(const Call &c, Fn f) { return c.name == info(f).name; }
bool is(const Expr &e, Fn f) {
    auto c = as<Call>(e);
    return c && is(*c, f);
}

size_t argIndex(Fn f, const char *name) {
    const Info &i = info(f);
    for (size_t a = 0; a < i.args.size(); ++a)
        if (std::strcmp(i.args[a], name) == 0) return a;
    TILEC_ASSERT(false, std::string(i.name) + " has no argument '" + name + "'");
    return 0;
}

const Expr &arg(const Call &c, Fn f, const char *name) {
    size_t a = argIndex(f, name);
    TILEC_ASSERT(is(c, f) && a < c.args.size(), std::string(info(f).name) + " without its argument '" + name + "'");
    return c.args[a];
}

const Expr *optionalArg(const Call &c, Fn f, const char *name) {
    size_t a = argIndex(f, name);
    TILEC_ASSERT(is(c, f) && a + info(f).optionalArgs >= info(f).args.size(), std::string(info(f).name) + "'s argument '" + name + "' is not optional");
    return a < c.args.size() ? &c.args[a] : nullptr;
}

Expr call(Fn f, std::vector<Expr> args, SourceRange loc, DType type) {
    const Info &i = info(f);
    TILEC_ASSERT(args.size() <= i.args.size() && args.size() + i.optionalArgs >= i.args.size(),
                 std::string(i.name) + " takes " + std::to_string(i.args.size()) + " arguments, not " + std::to_string(args.size()));
    for (int t = 0; t < i.templateArgs; ++t)
        TILEC_ASSERT(constInt(args[(size_t)t]), std::string(i.name) + "'s template argument '" + i.args[(size_t)t] +
                                                    "' must be a constant");
    if (f == Fn::AddressOf) type = DType::UInt64;
    return Call::make(type, i.name, std::move(args), loc);
}

Stmt stmt(Fn f, std::vector<Expr> args, SourceRange loc) { return Evaluate::make(call(f, std::move(args), loc), loc); }

int widestPanelSpan(int64_t rowBytes) {
    for (int sw : {128, 64, 32})
        if (rowBytes % sw == 0) return sw;
    return 0;
}

int transferPanels(int span, int64_t rowBytes) { return span == widestPanelSpan(rowBytes) ? kTransferPanels : span; }

int transferPanelSpan(int64_t swizzle, int64_t rowBytes) {
    if (swizzle == kTransferPanels) return widestPanelSpan(rowBytes);
    return swizzle == 32 || swizzle == 64 || swizzle == 128 ? (int)swizzle : 0;
}

} // namespace lib

Stmt syncThreads(SourceRange loc) { return lib::stmt(lib::Fn::Sync, {}, loc); }

Expr addressOf(const Buffer &b, std::vector<Expr> idx) { return lib::call(lib::Fn::AddressOf, {Load::make(b, std::move(idx))}); }

const Load *addressedLoad(const Expr &e) {
    auto c = as<Call>(e);
    if (!c || !lib::is(*c, lib::Fn::AddressOf) || c->args.size() != 1) return nullptr;
    return as<Load>(c->args[0]);
}

const Call *callOf(const Stmt &s) {
    auto e = as<Evaluate>(s);
    return e ? as<Call>(e->value) : nullptr;
}

bool isCall(const Stmt &s, lib::Fn f) {
    auto c = callOf(s);
    return c && lib::is(*c, f);
}

bool isTileTransfer(const Call &c) { return lib::is(c, lib::Fn::CopyG2S) || lib::is(c, lib::Fn::CopyG2SWait); }

bool isWgmmaProduct(const Call &c) {
    return lib::is(c, lib::Fn::WgmmaSS) || lib::is(c, lib::Fn::WgmmaSSInit) || lib::is(c, lib::Fn::WgmmaRS) ||
           lib::is(c, lib::Fn::WgmmaSpSS);
}

namespace {

/// The shared-memory Loads behind the address arguments `names` of call `c` to `f`.
std::vector<const Load *> sharedArgs(const Call &c, lib::Fn f, std::initializer_list<const char *> names) {
    std::vector<const Load *> out;
    for (const char *name : names) {
        size_t i = lib::argIndex(f, name);
        const Load *l = i < c.args.size() ? addressedLoad(c.args[i]) : nullptr;
        if (l && l->buffer && l->buffer->scope == Scope::Shared) out.push_back(l);
    }
    return out;
}

} // namespace

std::vector<const Load *> wgmmaSharedOperands(const Call &c) {
    if (lib::is(c, lib::Fn::WgmmaSS)) return sharedArgs(c, lib::Fn::WgmmaSS, {"a", "b"});
    if (lib::is(c, lib::Fn::WgmmaSSInit)) return sharedArgs(c, lib::Fn::WgmmaSSInit, {"a", "b"});
    if (lib::is(c, lib::Fn::WgmmaRS)) return sharedArgs(c, lib::Fn::WgmmaRS, {"b"});
    if (lib::is(c, lib::Fn::WgmmaSpSS)) return sharedArgs(c, lib::Fn::WgmmaSpSS, {"a", "b"});
    return {};
}

std::vector<const Load *> panelSharedOperands(const Call &c) {
    if (lib::is(c, lib::Fn::GemmSSPanels)) return sharedArgs(c, lib::Fn::GemmSSPanels, {"a", "b"});
    if (lib::is(c, lib::Fn::GemmRSPanels)) return sharedArgs(c, lib::Fn::GemmRSPanels, {"b"});
    return wgmmaSharedOperands(c);
}

std::vector<const Load *> swizzledOperands(const Call &c) {
    if (lib::is(c, lib::Fn::GemmSS)) return sharedArgs(c, lib::Fn::GemmSS, {"a", "b"});
    if (lib::is(c, lib::Fn::GemmRS)) return sharedArgs(c, lib::Fn::GemmRS, {"b"});
    if (lib::is(c, lib::Fn::GemmSpSS)) return sharedArgs(c, lib::Fn::GemmSpSS, {"a", "e", "b"});
    if (lib::is(c, lib::Fn::WgmmaSpSS)) return sharedArgs(c, lib::Fn::WgmmaSpSS, {"a", "e", "b"}); // E: the row swizzle
    if (lib::is(c, lib::Fn::LdMatrix)) return sharedArgs(c, lib::Fn::LdMatrix, {"src"});
    if (isTileTransfer(c)) return sharedArgs(c, lib::find(c.name)->fn, {"dst"});
    return panelSharedOperands(c); // TMA tiles have no other accesses to swizzle
}

} // namespace tilec::passes
