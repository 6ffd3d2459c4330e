/// \file
/// T.gemm to tensor-core library calls (include/tilec/passes/LowerGemm.h).
#include "tilec/passes/LowerGemm.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/HopperOperands.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/Tf32Values.h"

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// The K of one mma.sync for an operand type, 0 when tensor cores do not take it.
int instructionK(DType a, DType b, DType c) {
    auto is = [](DType t, DType::Kind k) { return t.kind == k; };
    if (a.isFloat8() && b.isFloat8()) return is(c, DType::Float32) ? 32 : 0;
    if (a.kind != b.kind) return 0;
    switch (a.kind) {
    case DType::Float16: return is(c, DType::Float32) || is(c, DType::Float16) ? 16 : 0;
    case DType::BFloat16: return is(c, DType::Float32) ? 16 : 0;
    case DType::Float32: return is(c, DType::Float32) ? 8 : 0;
    case DType::Int8:
    case DType::UInt8: return is(c, DType::Int32) ? 32 : 0;
    default: return 0;
    }
}

class GemmLowerer : public IRMutator {
  public:
    using IRMutator::visit;
    GemmLowerer(const Kernel &k, const Target &t, DiagnosticEngine &d)
        : kernel_(k), layouts_(layoutsOf(k)), target_(t), diag_(d) {}

    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        const SourceRange &loc = op->loc;
        const Buffer &A = op->a.buffer, &B = op->b.buffer, &C = op->c.buffer;
        auto cl = layouts_.fragments.find(C.get());
        auto cr = layouts_.registers.find(C.get());
        if (cl == layouts_.fragments.end() || cr == layouts_.registers.end() || cl->second.kind != Layout::Mma) {
            diag_.error(loc, "the accumulator of T.gemm must be a fragment");
            return nullptr;
        }
        const Layout &L = cl->second;
        const int64_t M = L.shape[0], N = L.shape[1];
        if (op->sparse()) return sparse(*op, L, cr->second);
        int kInst = instructionK(A->dtype, B->dtype, C->dtype);
        if (!kInst) {
            diag_.error(loc, "T.gemm of " + std::string(A->dtype.name()) + " x " + std::string(B->dtype.name()) + " into " +
                                 std::string(C->dtype.name()) + " has no tensor-core instruction; supported are float16 (into "
                                 "float32 or float16), bfloat16, float32 as tf32, int8/uint8 into int32 and float8 "
                                 "into float32");
            return nullptr;
        }
        if (A->dtype.isFloat8() && target_.sm < 89) {
            diag_.error(loc, "T.gemm on float8 operands needs sm_89 or newer; " + target_.name +
                                 " has no float8 tensor cores");
            return nullptr;
        }
        // B is shared: (K, N), or (N, K) transposed.
        auto bTile = tile(*op, op->b, "B");
        if (!bTile) return nullptr;
        int64_t K = op->transB ? bTile->cols : bTile->rows;
        int64_t bN = op->transB ? bTile->rows : bTile->cols;
        if (bN != N) {
            diag_.error(op->b.loc.valid() ? op->b.loc : loc, "operand B of T.gemm has " + std::to_string(bN) +
                                                                  " columns but the accumulator has " + std::to_string(N));
            return nullptr;
        }
        if (K % kInst) {
            diag_.error(loc, "T.gemm's K = " + std::to_string(K) + " must be a multiple of " + std::to_string(kInst) +
                                 " for " + std::string(A->dtype.name()) + " operands (the tensor-core instruction's K)");
            return nullptr;
        }
        Expr b = bTile->address;
        Expr c = addressOf(cr->second, {i32(0)});
        if (op->instr == GemmInstr::Wgmma && A->scope == Scope::Fragment) {
            // RS: A's registers in wgmma's m64k16 order, which is the wgmma accumulator layout of (M, K) split by
            // rows like C, a copy in each warpgroup column where the warpgroups split C's columns too
            // (specializeWarps / cpAsyncWgmma checked the split, inferLayouts gave A that layout); a tf32 A in
            // the operand order in wgmma rows (Layout::opCols), whose slots are m64k8's registers.
            auto ar = layouts_.registers.find(A.get());
            auto al = layouts_.fragments.find(A.get());
            int swB = panelSpan(B);
            const bool matches = ar != layouts_.registers.end() && al != layouts_.fragments.end() && al->second.wgmma &&
                                 al->second.warpsN == 1 && al->second.warpsM == L.warpsM && al->second.threads == L.threads && L.wgmma &&
                                 al->second.shape == std::vector<int64_t>{M, K} && swB &&
                                 (A->dtype.bytes() == 4 ? A->dtype.isFloat() && al->second.opCols
                                                        : !al->second.opCols && (A->dtype.bytes() == 2 || A->dtype.isFloat8()));
            TILEC_ASSERT(matches,
                         "a wgmma T.gemm with A in registers whose layouts do not match wgmma's");
            // float8: the registers after the fragment's take its m64k32 image (inferLayouts made room, except
            // for a T.view of another fragment, whose registers are its base's)
            if (A->dtype.isFloat8() && constInt(ar->second->shape[0]) != std::optional<int64_t>(2 * al->second.slotsPerThread())) {
                diag_.error(op->a.loc.valid() ? op->a.loc : loc,
                            "operand A of a float8 T.gemm on wgmma cannot be a view of another fragment; copy it into "
                            "a fragment of its own");
                return nullptr;
            }
            return lib::stmt(lib::Fn::WgmmaRS,
                             {i32(M), i32(N), i32(K), i32(L.warpsM / 4), i32(L.warpsN), i32(op->transB), i32(swB),
                              addressOf(ar->second, {i32(0)}), b, c},
                             loc);
        }
        if (op->instr == GemmInstr::Wgmma) {
            // Issued asynchronously: placeWgmmaWaits puts the wait before the results are read.
            auto aTile = tile(*op, op->a, "A");
            if (!aTile) return nullptr;
            int swA = panelSpan(A), swB = panelSpan(B);
            TILEC_ASSERT(swA && swB && L.wgmma, "a wgmma T.gemm without panel-layout operands");
            // Panels of rows no one observes (boundGemmRows) are not issued; only where one warpgroup owns the rows.
            const int64_t rows = op->liveRows > 0 && op->liveRows < M && L.warpsM == 4 ? op->liveRows : M;
            std::vector<Expr> args{i32(M), i32(N), i32(K), i32(L.warpsM / 4), i32(L.warpsN), i32(op->transA), i32(op->transB),
                                   i32(swA), i32(swB), i32(rows), aTile->address, b, c};
            // ... and where they are known at run time only, each warpgroup's panels from the block's live rows on.
            if (op->liveRowsAt && rows == M) args.push_back(simplify(cast(DType::Int32, op->liveRowsAt)));
            return lib::stmt(lib::Fn::WgmmaSS, std::move(args), loc);
        }
        std::vector<Expr> args{i32(M), i32(N), i32(K), i32(L.warpsM), i32(L.warpsN)};
        // mma.sync over TMA-filled tiles (sm_90): the operands' panel spans, as TMA stored them.
        const bool panels = op->instr == GemmInstr::MmaPanels;
        const int swB = panels ? panelSpan(B) : 0;
        TILEC_ASSERT(!panels || swB, "an mma.sync T.gemm over TMA tiles whose B is not in the panel layout");
        if (A->scope == Scope::Fragment) {
            auto ar = layouts_.registers.find(A.get());
            auto al = layouts_.fragments.find(A.get());
            // opA: A in the tf32 operand column order (Layout::opCols, a 32-bit A that no accumulator shares),
            // whose B the device library reads in the instruction's own k order (ldmatrix where stored (N, K)).
            bool ok = ar != layouts_.registers.end() && al != layouts_.fragments.end() && al->second.kind == Layout::Mma &&
                      al->second.warpsN == 1 && al->second.warpsM == L.warpsM && al->second.shape[0] == M &&
                      al->second.shape[1] == K && (!al->second.opCols || A->dtype.bytes() == 4);
            if (!ok) {
                diag_.error(op->a.loc.valid() ? op->a.loc : loc,
                            "operand A of T.gemm from a fragment must be a " + std::to_string(M) + "x" +
                                std::to_string(K) + " fragment laid out like the accumulator's rows");
                return nullptr;
            }
            args.push_back(i32(op->transB));
            if (panels) args.push_back(i32(swB));
            args.push_back(i32(al->second.opCols));
            // exactA: a float A whose every value tf32 represents (bfloat16 or float16 converted, mHC's x_frag)
            // is handed to the instruction as it is, not rounded again element by element.
            args.push_back(i32(A->dtype.kind == DType::Float32 && holdsTf32Values(kernel_, A.get()) &&
                               (ar->second == A || holdsTf32Values(kernel_, ar->second.get()))));
            args.push_back(addressOf(ar->second, {i32(0)}));
            args.push_back(b);
            args.push_back(c);
            return lib::stmt(panels ? lib::Fn::GemmRSPanels : lib::Fn::GemmRS, std::move(args), loc);
        }
        auto aTile = tile(*op, op->a, "A");
        if (!aTile) return nullptr;
        int64_t aM = op->transA ? aTile->cols : aTile->rows, aK = op->transA ? aTile->rows : aTile->cols;
        if (aM != M || aK != K) {
            diag_.error(op->a.loc.valid() ? op->a.loc : loc,
                        "operand A of T.gemm is " + std::to_string(aM) + "x" + std::to_string(aK) + " but the product needs " +
                            std::to_string(M) + "x" + std::to_string(K));
            return nullptr;
        }
        args.push_back(i32(op->transA));
        args.push_back(i32(op->transB));
        if (panels) {
            const int swA = panelSpan(A);
            TILEC_ASSERT(swA, "an mma.sync T.gemm over TMA tiles whose A is not in the panel layout");
            args.push_back(i32(swA));
            args.push_back(i32(swB));
        }
        args.push_back(aTile->address);
        args.push_back(b);
        args.push_back(c);
        return lib::stmt(panels ? lib::Fn::GemmSSPanels : lib::Fn::GemmSS, std::move(args), loc);
    }

  private:
    /// T.gemm_sp on mma.sp (sm_80+), or on wgmma.mma_async.sp where cpAsyncWgmma chose it (A_sparse and B in the
    /// panel layout, E row-swizzled): the front end checked the operand types and shapes (A_sparse (M, K/2), E
    /// (M, K/16), B (K, N) or (N, K)); the warp (group) tiles are the accumulator's.
    Stmt sparse(const Gemm &op, const Layout &L, const Buffer &regs) {
        const int64_t M = L.shape[0], N = L.shape[1];
        auto aTile = tile(op, op.a, "A_sparse"), eTile = tile(op, op.e, "E"), bTile = tile(op, op.b, "B");
        if (!aTile || !eTile || !bTile) return nullptr;
        const int64_t K = 2 * aTile->cols;
        TILEC_ASSERT((op.instr == GemmInstr::Auto || op.instr == GemmInstr::Wgmma) && aTile->rows == M &&
                         eTile->rows == M && eTile->cols * 16 == K && (op.transB ? bTile->cols : bTile->rows) == K,
                     "a T.gemm_sp whose operands the front end did not check, or planned for another instruction");
        if (op.instr == GemmInstr::Wgmma) {
            const int swA = panelSpan(op.a.buffer), swB = panelSpan(op.b.buffer);
            TILEC_ASSERT(swA && swB && L.wgmma, "a wgmma T.gemm_sp without panel-layout operands");
            return lib::stmt(lib::Fn::WgmmaSpSS,
                             {i32(M), i32(N), i32(K), i32(L.warpsM / 4), i32(L.warpsN), i32(op.transB), i32(swA), i32(swB),
                              aTile->address, eTile->address, bTile->address, addressOf(regs, {i32(0)})},
                             op.loc);
        }
        if ((M / L.warpsM) % 16 || (N / L.warpsN) % 8) {
            diag_.error(op.loc, "T.gemm_sp's warps split the " + std::to_string(M) + "x" + std::to_string(N) +
                                    " accumulator into " + std::to_string(L.warpsM) + "x" + std::to_string(L.warpsN) +
                                    " warp tiles that are not multiples of mma.sp's 16x8");
            return nullptr;
        }
        return lib::stmt(lib::Fn::GemmSpSS,
                         {i32(M), i32(N), i32(K), i32(L.warpsM), i32(L.warpsN), i32(op.transB), aTile->address, eTile->address,
                          bTile->address, addressOf(regs, {i32(0)})},
                         op.loc);
    }

    const Kernel &kernel_;
    const KernelLayouts &layouts_;
    const Target &target_;
    DiagnosticEngine &diag_;

    /// A shared operand as the library reads it: its (rows, columns) and the address of its first element.
    struct SharedTile {
        int64_t rows = 0, cols = 0;
        Expr address;
    };

    /// Shared operand `r` of product `g`: its buffer's last two dimensions, taken whole (any leading dimensions,
    /// a pipeline stage, single elements), or, where `g` reads it in the panel layout (wgmma, mma.sync over
    /// panels; not T.gemm_sp), whole panels of its columns (panelPart: a tile of that layout of its own).
    std::optional<SharedTile> tile(const Gemm &g, const Region &r, const char *which) {
        const char *prim = g.sparse() ? "T.gemm_sp" : "T.gemm";
        const Buffer &b = r.buffer;
        const bool panels = !g.sparse() && (g.instr == GemmInstr::Wgmma || g.instr == GemmInstr::MmaPanels);
        std::string why;
        auto part = b && b->scope == Scope::Shared ? panelPart(r, panels ? panelSpan(b) : 0, &why) : std::nullopt;
        if (!part) {
            diag_.error(r.loc.valid() ? r.loc : b ? b->loc : SourceRange{},
                        std::string("operand ") + which + " of " + prim + " must be a whole 2-D shared buffer" +
                            (g.sparse() ? "" : " (or, for A, a fragment; or, where it runs on wgmma, whole swizzle panels "
                                               "of its columns)") + (why.empty() ? "" : ": the region " + why));
            return std::nullopt;
        }
        return SharedTile{part->rows, part->cols, addressOf(b, part->at)};
    }

    /// The panel layout's span of shared operand `b` as the pass that chose the product's instruction recorded
    /// it (Kernel::tileLayouts); 0 when none did.
    int panelSpan(const Buffer &b) const {
        const TileLayout *t = kernel_.tileLayoutOf(b.get());
        return t ? t->swizzleBytes : 0;
    }
};

} // namespace

Program lowerGemm(const Program &p, const Target &t, DiagnosticEngine &diag) {
    Program out;
    for (const KernelP &k : p.kernels) {
        GemmLowerer m(*k, t, diag);
        out.kernels.push_back(m.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
