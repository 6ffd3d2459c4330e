#!/usr/bin/env python3
"""The instructions of a kernel's main loop in a cuobjdump -sass listing, by opcode.

Usage: sass_loop.py SASS FUNCTION_SUBSTRING [OPCODE...]
The loop is the range of a backward branch that holds tensor-core instructions (HGMMA or QGMMA, float8; else
HMMA), no EXIT and no other such range: of those, the one with the most, the shortest of those: the k-loop of a
GEMM, the key-block loop of attention. A persistent walk's tile loop holds the key-block loop (and, with
FlashAttention-3's schedule, the peeled first block and the last P.V besides); ptxas places mbarrier retry loops
after the code, an EXIT before them, their branches back spanning parts of the main loop.
Prints `loop LO-HI N instructions` and then `OPCODE COUNT` for each OPCODE asked for (all, most frequent
first, when none is), the opcode being the mnemonic before its first dot (HGMMA, F2FP, R2UR, ...).
Exit 1 when the function or such a loop is not found."""
import collections
import re
import sys

INSN = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[0-9T] )?([A-Z0-9_]+)(\S*)\s*([^;]*)")


def function(path, name):
    out, inside = [], False
    for line in open(path):
        if "Function :" in line:
            inside = name in line
        elif inside:
            m = INSN.match(line)
            if m:
                out.append((int(m.group(1), 16), m.group(2), m.group(4)))
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    insns = function(sys.argv[1], sys.argv[2])
    if not insns:
        print("no function matching %r" % sys.argv[2])
        return 1
    loops = []
    for addr, op, rest in insns:
        target = re.search(r"0x([0-9a-f]+)", rest) if op == "BRA" else None
        if not target or int(target.group(1), 16) >= addr:
            continue
        lo = int(target.group(1), 16)
        body = [o for a, o, _ in insns if lo <= a <= addr]
        key = (body.count("HGMMA") + body.count("QGMMA"), body.count("HMMA"), -(addr - lo))
        if key[0] + key[1] > 0 and "EXIT" not in body:
            loops.append((key, lo, addr, collections.Counter(body)))
    inner = [l for l in loops if not any(o is not l and l[1] <= o[1] and o[2] <= l[2] for o in loops)]
    best = max(inner, key=lambda l: l[0], default=None)
    if best is None:
        print("no loop with tensor-core instructions in %r" % sys.argv[2])
        return 1
    _, lo, hi, counts = best
    print("loop %x-%x %d instructions" % (lo, hi, sum(counts.values())))
    for op in sys.argv[3:] or [o for o, _ in counts.most_common()]:
        print("%s %d" % (op, counts[op]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
