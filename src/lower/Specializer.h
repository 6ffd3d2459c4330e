/// \file
/// The warp specializer of one kernel: its state and steps. SpecializeWarps.cpp holds the pass, the walk over a
/// kernel's T.Pipelined loops (run) and the assembly of the two roles (specialize); SpecializerPlan.cpp the
/// planning steps specialize takes in turn (tiles, products, barriers, rings, blocks, the cost test, tensor
/// maps). Private to those two files.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/passes/LoopInvariants.h"
#include "tilec/passes/Staging.h"

#include "WarpRoleBodies.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tilec::passes::warproles {

class Specializer {
  public:
    Specializer(const Kernel &k, const Variant &v, const SourceManager *sources)
        : k_(k), t_(v.target), o_(v.options), sources_(sources) {}

    std::string clusterWhy; ///< why T.ClusterKernel's clusters were not planned (empty: they were, or none asked)

    /// The rewritten kernel, or null when nothing applies; -v logs which, and why.
    std::shared_ptr<Kernel> run();

  private:
    const Kernel &k_;
    const Target &t_;
    const LoweringOptions &o_;
    const SourceManager *sources_;
    std::string why_; ///< why the last loop tried was not specialized
    std::optional<KernelScalars> scalars_;  ///< the scalars set before the loop being tried
    int barrierGroups_ = 0, onceTiles_ = 0, ringTiles_ = 0; ///< of the loop specialized: full/empty barrier pairs per stage, tiles loaded once
    int rowTiles_ = 0, boxTiles_ = 0, genericTiles_ = 0, viewCount_ = 0, threadTiles_ = 0;   ///< ... 1-D tiles, tiles read by loads, shared operands the consumers fill
    bool registerA_ = false;                ///< ... and whether a T.gemm in it reads A from registers (wgmma RS)
    bool mmaOnly_ = false;                  ///< ... and, on a wgmma target, whether all its products run on mma.sync
    bool mmaRoles_ = false;                 ///< ... and whether the options let a loop of mma.sync products alone take roles
    bool guarded_ = false;                  ///< ... and whether its body runs under a condition
    std::string notPersistent_;             ///< ... and why its roles do not walk several output tiles
    std::string weighed_;                   ///< ... and the cost test's figures (WarpRoleCost.h)

    void log(const SourceRange &at, const std::string &what) const {
        remark(sources_, at, "kernel '" + k_.name + "' (" + t_.name + "): " + what);
    }
    std::nullptr_t no(std::string why) {
        why_ = std::move(why);
        return nullptr;
    }

    /// The TMA tiles loaded once before the loop: top-level copies ahead of it whose shared destination is
    /// mentioned by no other top-level statement than the copy and the loop (FlashAttention's Q). Null
    /// when one such copy is not a TMA tile (its buffer then stays an ordinary one).
    std::vector<TmaTile> onceTiles(const std::vector<Stmt> &top, size_t at, std::vector<size_t> &where);

    /// A grid dimension whose block index the loop's bounds depend on (attention's causal key blocks on the
    /// query block), -1 where none; `count` (if given) is set to how many do.
    int workAxis(const For &loop, int *count) const;


    bool fail(std::string why) {
        why_ = std::move(why);
        return false;
    }

    /// A loop body that is one condition without an else (block-sparse GEMM's `if mask[by, bx, k]:` around its
    /// copies and T.gemm): both roles evaluate it per iteration, the producer loading and the consumers
    /// computing only where it holds, and the ring moves on by the iterations that run. It may read what every
    /// thread computes alike (global tensors the kernel does not write, scalars set once before the loop:
    /// scalars_); false (why_) where it reads anything else.
    bool unguard(Plan &p);

    /// The loop kernelTop[at] as warp roles; `walk` (at `walkAt` among the kernel's top-level statements `outer`):
    /// the kernel's own walk over output tiles around it, whose innermost list `kernelTop` is.
    std::shared_ptr<Kernel> specialize(const std::vector<Stmt> &kernelTop, size_t at, const TileWalk *walk = nullptr,
                                       const std::vector<Stmt> &outer = {}, size_t walkAt = 0);

    /// The hoisted copies as TMA tiles (the ring's) and the tiles loaded once before the loop; false (why_ says
    /// why) where one is not a TMA tile, or a staged buffer is used outside the loop or written in it.
    bool planTiles(const std::vector<Stmt> &top, const LoopSplit &split, Plan &p);

    /// The loop's other statements with each T.gemm that reads the tiles marked for wgmma (p.rest); false where
    /// a staged buffer has another use or no T.gemm can take the tiles.
    bool markGemms(const LoopSplit &split, Plan &p, const std::vector<Stmt> &top);

    /// The shared operands of the loop's products that are not TMA tiles (filled by the consumers: attention
    /// backward's dS, chunked recurrences' state) as wgmma reads them (operandTile), beside the tiles (p.operands).
    void planViews(const LoopSplit &split, const std::vector<Stmt> &top, Plan &p);

    /// Where the consumers read tiles through the generic proxy, fill product operands themselves or load rows
    /// (what the loop needed to take warp roles at all), the products outside the loop run on wgmma as well
    /// wherever wgmma can take them (views of their shared operands): an accumulator or a per-row fragment they
    /// share with the loop's products then has one layout. False (why_) where one cannot. Loops that took
    /// warp roles without these keep their products outside the loop as they were.
    bool markOutsideGemms(std::vector<Stmt> &top, Plan &p);

    /// Barrier groups: the tiles first used by the same statement of the body share a full and an empty
    /// barrier per stage, so that the consumers wait for each tile only where they first need it (attention's
    /// QK^T before V has landed) and release it after its last use. Group g's full[s] is at 2gS + s, its
    /// empty[s] at 2gS + S + s; the once-loaded tiles' barrier follows them.
    bool groupBarriers(Plan &p);

    /// The rings, whether the roles walk several output tiles (persistent) and the barriers, allocated in nk.
    void planRingsAndWalk(const std::vector<Stmt> &top, Plan &p, Kernel &nk);

    /// Whether the consumers of a wgmma target may run a product wgmma cannot take on mma.sync over the panels:
    /// beside wgmma ones (mixed warp roles) or in a loop of such products alone (mmaRoles_).
    bool mmaBeside() const { return o_.mixedWarpRoles || mmaRoles_; }

    /// Whether a T.gemm of `s` is marked for instruction `instr`.
    static bool callsInstr(const Stmt &s, GemmInstr instr);

    /// Whether a T.gemm of `stmts` runs on mma.sync over the panels (--mixed-warp-roles' products).
    static bool callsMmaPanels(const std::vector<Stmt> &stmts);

    /// Null, with why: the rings beside the other shared buffers (`bytes`, as planned) do not fit.
    std::shared_ptr<Kernel> tooMuchShared(const Plan &p, int64_t bytes);

    /// The blocks per SM; false where, on sm_90, a producer warp would leave the consumers too few registers.
    bool planBlocks(Plan &p, const Kernel &nk);

    /// The cost test (WarpRoleCost.h) where the consumers do more than issue wgmma: false (why_) where the
    /// cp.async pipeline keeps more loads in flight per SM. `top`: the kernel's top-level statements. Not where
    /// T.ClusterKernel asks for clusters, which only warp roles give.
    bool weighPaths(const std::vector<Stmt> &top, const Plan &p, const Kernel &nk);

    /// Tensor maps, one per distinct (tensor, box, swizzle); a multicast tile's box is one block's share, a tile
    /// loaded in part (Plan::liveRows) one panel's rows.
    void internTensorMaps(Plan &p, Kernel &nk);

    /// The once tiles' barriers, the persistent walk's tile variables, and the ring's position where the trip count varies by tile.
    void planWalkVariables(Plan &p, Kernel &nk);

};

} // namespace tilec::passes::warproles
