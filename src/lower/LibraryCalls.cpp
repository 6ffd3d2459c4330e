/// \file
/// Argument positions of the device library's calls (include/tilec/passes/LibraryCalls.h).
#include "tilec/passes/LibraryCalls.h"

namespace tilec::passes {

using namespace ir;

Expr addressOf(const Buffer &b, std::vector<Expr> idx) {
    return Call::make(DType::UInt64, "tilec.address_of", {Load::make(b, std::move(idx))});
}

const Load *addressedLoad(const Expr &e) {
    auto c = as<Call>(e);
    if (!c || c->name != "tilec.address_of" || c->args.size() != 1) return nullptr;
    return as<Load>(c->args[0]);
}

bool isTileTransfer(const Call &c) { return c.name == "tilec.copy_g2s" || c.name == "tilec.copy_g2s_wait"; }

std::vector<const Load *> swizzledOperands(const Call &c) {
    std::vector<size_t> at;
    if (c.name == "tilec.gemm_ss") at = {libcall::kGemmSsA, libcall::kGemmSsB};
    else if (c.name == "tilec.gemm_rs") at = {libcall::kGemmRsB};
    else if (isTileTransfer(c)) at = {libcall::kTransferDst};
    std::vector<const Load *> out;
    for (size_t i : at) {
        const Load *l = i < c.args.size() ? addressedLoad(c.args[i]) : nullptr;
        if (l && l->buffer && l->buffer->scope == Scope::Shared) out.push_back(l);
    }
    return out;
}

} // namespace tilec::passes
