/// \file
/// Packed sub-byte tensors (Gen.h: decorateSubByte; docs/LANGUAGE.md, "packed sub-byte dtypes"): U, an int4 or
/// uint4 tensor, two elements to a byte (element 2k in the low nibble), row-major or with an even row stride
/// (a slice of a wider packed tensor), read by some of the program's T.copy loads of A in A's place: a copy from
/// packed global memory into a float or integer tile is an element-wise nest that unpacks each nibble (int4
/// sign-extended) and converts it. Its rows and columns need not cover the tiles: reads outside give 0. The
/// C function takes U's bytes; Check.cpp fills them with random bytes (inputTensor) and the reference and the
/// simulator read them through the `# strides U:` line, which the generator writes in bytes (the element stride
/// halved) independently of tilec's own halving. And UO, a packed output the last store of a 2-D tile writes in
/// Y's place: whole bytes (a tile's columns from an even origin over an even extent, else a located error),
/// each element the tile's value converted (its low four bits; a float truncated first); a strided UO's bytes
/// between rows must keep their sentinel. From a stream of its own.
#include "Gen.h"

#include <functional>

namespace tilec::difffuzz {

void decorateSubByte(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x1a74)};
    if (!r.coin(0.3)) return;
    int loads = 0;
    GOp *store = nullptr; // the last top-level store of a 2-D tile
    std::function<void(std::vector<GOp> &)> walk = [&](std::vector<GOp> &ops) {
        for (auto &o : ops) {
            const bool tile = o.dst == "s0" || o.dst == "s1" || o.dst == "f0" || o.dst == "f1";
            if (o.kind == GOp::Load && o.tensor == "A" && tile && !o.async && r.coin(0.6)) o.tensor = "U", ++loads;
            walk(o.kids), walk(o.elseKids);
        }
    };
    walk(p.ops);
    for (auto &o : p.ops)
        if (o.kind == GOp::Store && o.src != "rm" && o.src != "rn") store = &o;
    p.uType = r.coin(0.6) ? "int4" : "uint4";
    if (loads) {
        p.ru = r.in(1, 3 * p.bm);
        p.cu = 2 * r.in(1, (3 * p.bn + 1) / 2);
        if (r.coin(0.5)) p.uStride = p.cu + 2 * r.in(0, 6); // a slice of a wider packed tensor (0: exactly the row)
    }
    if (store && r.coin(0.5)) { // a packed output: a tile stored two elements to a byte (BN odd: a located error)
        store->tensor = "UO";
        p.ruo = r.in(1, 3 * p.bm);
        p.cuo = 2 * r.in(1, (3 * p.bn + 1) / 2);
        if (r.coin(0.5)) p.uoStride = p.cuo + 2 * r.in(0, 6);
    }
}

} // namespace tilec::difffuzz
