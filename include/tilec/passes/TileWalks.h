/// \file
/// Tile walks a kernel writes itself (src/lower/TileWalks.cpp): T.Persistent's wave loop and its tile guard, or
/// an author's own serial loop over output tiles, around a T.Pipelined loop. specializeWarps gives both roles
/// the same walk: the producer loads the tiles of every output tile the consumers compute, in their order.
#pragma once

#include "tilec/IR.h"
#include "tilec/passes/Arith.h"

#include <string>
#include <vector>

namespace tilec::passes {

/// The path from one top-level statement down to the statement list that holds a T.Pipelined loop: serial
/// loops, conditions without an else (a walk of conditions alone: a tile guard, `if bx * block_M < M:`), and
/// statement lists whose other statements stay the consumers' own.
struct TileWalk {
    std::vector<ir::Stmt> path;  ///< the wrappers, the top-level statement first: For (serial), IfThenElse, Seq
    std::vector<size_t> child;   ///< per wrapper: for a Seq, the statement the path continues into
    std::vector<ir::Stmt> inner; ///< the list holding the loop
    size_t loopAt = 0;           ///< the loop's position in it
    int loops = 0;               ///< serial loops on the path
};

/// The walk in top-level statement `s`, or null with `why` set (empty where `s` holds no T.Pipelined loop).
/// Both roles evaluate the walk's bounds and conditions: they may read no buffer (a value one role computes)
/// and not depend on `threadIdx` (the roles' threads differ); the path holds the kernel's only T.Pipelined
/// loop.
std::optional<TileWalk> findTileWalk(const ir::Stmt &s, const ir::Var &threadIdx, std::string &why);

/// A fresh variable for each loop of the walk (the producer's copy of it).
VarMap freshWalkVars(const TileWalk &w);

/// The walk around `body` in place of its innermost list, the walk's variables renamed by `vars`;
/// `pathOnly`: its lists' other statements left out (the producer's walk).
ir::Stmt rewrapTileWalk(const TileWalk &w, ir::Stmt body, const VarMap &vars, bool pathOnly);

} // namespace tilec::passes
