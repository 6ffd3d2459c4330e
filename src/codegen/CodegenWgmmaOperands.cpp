/// \file
/// The wgmma products of a consumer role whose A descriptors are made once, before its loops
/// (src/codegen/CodegenImpl.h: hoistWgmmaA).
#include "codegen/CodegenImpl.h"

#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <optional>

namespace tilec::codegen {

using namespace ir;
namespace lib = passes::lib;

namespace {

/// One hoisted operand: the A argument and the products that read it.
struct HoistedWgmmaA {
    Expr a;                          ///< `&tile[constant]`
    std::vector<const Call *> calls; ///< calls[0] names the shape
};

/// The first nine (template) arguments of a wgmma SS product: M, N, K, wgM, wgN, transA, transB, swzA, swzB.
constexpr size_t kShapeArgs = 9;

/// The registry entry of an SS product whose A this may hoist (its `a` argument by name), or none: an SS
/// product that issues every panel it names (no `live` rows at run time), or the overwriting one.
std::optional<lib::Fn> hoistableProduct(const Call &c) {
    if (lib::is(c, lib::Fn::WgmmaSSInit)) return lib::Fn::WgmmaSSInit;
    if (lib::is(c, lib::Fn::WgmmaSS) && !lib::optionalArg(c, lib::Fn::WgmmaSS, "live")) return lib::Fn::WgmmaSS;
    return std::nullopt;
}

/// Whether a product's A is a tile at a fixed address: `&buf[i]` whose index is a constant (no variable, no load),
/// so the same in every iteration of every loop around it.
bool fixedA(const Call &c, lib::Fn f) {
    const Load *a = passes::addressedLoad(lib::arg(c, f, "a"));
    if (!a || a->buffer->scope != Scope::Shared) return false;
    for (const Expr &i : a->indices)
        if (!constInt(i)) return false;
    return true;
}

/// The descriptors one wgmma_gemm_ss keeps for its A: one per 64-row panel of a warpgroup and instruction of K
/// (32 bytes of it), or -1 where its shape is not constant.
int64_t descriptorsOf(const Call &c, lib::Fn f) {
    auto n = [&](const char *name) { return constInt(lib::arg(c, f, name)).value_or(0); };
    const Load *a = passes::addressedLoad(lib::arg(c, f, "a"));
    const int64_t M = n("M"), K = n("K"), wgM = n("wgM"), bytes = a->buffer->dtype.bytes();
    if (M <= 0 || K <= 0 || wgM <= 0 || bytes <= 0) return -1;
    return (M / wgM / 64) * (K * bytes / 32);
}

class Finder : public IRVisitor {
  public:
    using IRVisitor::visit;
    std::vector<HoistedWgmmaA> found;
    int64_t descriptors = 0;
    bool tooMany = false;

    void visit(const For &op) override {
        ++loops_;
        IRVisitor::visit(op);
        --loops_;
    }
    void visit(const Call &op) override {
        IRVisitor::visit(op);
        const auto f = hoistableProduct(op);
        if (!loops_ || !f || !fixedA(op, *f)) return;
        const Expr &a = lib::arg(op, *f, "a");
        for (HoistedWgmmaA &h : found)
            if (sameOperand(*h.calls[0], op) && structurallyEqual(h.a, a)) return h.calls.push_back(&op);
        const int64_t d = descriptorsOf(op, *f);
        if (d < 0) tooMany = true;
        descriptors += d;
        found.push_back({a, {&op}});
    }

  private:
    int loops_ = 0;
    /// The same shape (template arguments), so the same descriptors of the same A.
    static bool sameOperand(const Call &x, const Call &y) {
        for (size_t i = 0; i < kShapeArgs; ++i)
            if (!structurallyEqual(x.args[i], y.args[i])) return false;
        return true;
    }
};

/// `tilec::wgmma_a_descriptor<M, N, K, wgM, wgN, transA, transB, swzA, swzB>(a)` of a product, `a` its printed A.
std::string descriptorOf(const Call &c, const std::string &a) {
    std::string s = "tilec::wgmma_a_descriptor<";
    for (size_t i = 0; i < kShapeArgs; ++i) {
        const std::string v = std::to_string(constInt(c.args[i]).value_or(0));
        const bool flag = i == 5 || i == 6; // transA, transB
        s += (i ? ", " : "") + (flag ? std::string(v == "0" ? "false" : "true") : v);
    }
    return s + ">(" + a + ")";
}

} // namespace

std::vector<std::string> hoistWgmmaA(const Stmt &consumer, NameTable &names, ExprPrinter &ep) {
    Finder f;
    f.visit(consumer);
    if (f.tooMany || f.descriptors > kHoistedWgmmaDescriptors) return {};
    std::vector<std::string> out;
    for (const HoistedWgmmaA &h : f.found) {
        const std::string v = names.of(h.calls[0], "tilec_adesc");
        out.push_back("const tilec::wgmma_a_operand " + v + " = " + descriptorOf(*h.calls[0], ep.print(h.a)) + ";");
        for (const Call *c : h.calls) ep.hoistedA[c] = v;
    }
    return out;
}

} // namespace tilec::codegen
