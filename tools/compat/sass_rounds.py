#!/usr/bin/env python3
"""Memory rounds of each kernel in a SASS listing: how many global-load latencies a thread waits through in order,
and so how many bytes it keeps in flight (issue 25: a bandwidth-bound kernel needs a row's loads issued together).

Model: instructions run in program order and take no time; a global load (LDG, not LDGSTS) issued in round r
lands at the end of round r; an instruction that reads (or overwrites) a register of a load still in flight starts
round r + 1.
The rounds of a kernel are its straight-line code's (a loop body counted once). Bytes per round x threads x
resident blocks is what an SM keeps in flight: sparse_mla_bwd_preprocess at tilec's `__launch_bounds__(128)` 512
bytes a thread in 10 rounds (64 registers), at `(128, 1)` in 2 (107 registers), TileLang's kernel 256 a loop
iteration in 1 (its loop runs twice). A model to read code by, not a timing.

    tools/compat/sass_rounds.py FILE.sass|FILE.cubin ...       one line per kernel
    tools/compat/sass_rounds.py --self-test

Exit 0 (information), 2 for a bad command line."""
import os
import re
import subprocess
import sys

WORDS = {"128": 4, "64": 2}
INSN = re.compile(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9._]*)\s*(.*?)\s*;")
REG = re.compile(r"\bR(\d+)(\.64)?")


def kernel_rounds(lines):
    """(global loads, bytes a thread, rounds) of one kernel's instruction lines."""
    pending = {}  # register -> round its load was issued in
    rnd = loads = nbytes = 0
    for line in lines:
        m = INSN.search(line)
        if not m:
            continue
        op, args = m.group(1), m.group(2)
        ops = [a.strip() for a in args.split(",")] if args else []
        writes = ops and not op.startswith(("ST", "RED", "ATOM", "BAR", "BRA", "EXIT"))
        for s in ops:  # sources, and a destination a load still has in flight (the scoreboard waits for it too)
            for r in REG.finditer(s):
                for q in range(int(r.group(1)), int(r.group(1)) + (2 if r.group(2) else 1)):
                    if q in pending:
                        rnd = max(rnd, pending[q] + 1)
        pending = {q: e for q, e in pending.items() if e >= rnd}
        dst = REG.match(ops[0]) if ops else None
        if op.startswith("LDG") and not op.startswith("LDGSTS") and not op.startswith("LDGDEPBAR") and dst:
            words = next((w for k, w in WORDS.items() if "." + k in op), 1)
            for q in range(int(dst.group(1)), int(dst.group(1)) + words):
                pending[q] = rnd
            loads += 1
            nbytes += 4 * words
    return loads, nbytes, rnd + (1 if pending else 0)


def report(text):
    out = []
    for fn in re.split(r"\n\s*Function : ", text)[1:]:
        name = fn.split("\n", 1)[0].strip()
        if "probe_arch" in name:
            continue
        body = [l for l in fn.split("\n") if re.search(r"/\*[0-9a-f]{4}\*/", l)]
        loads, nbytes, rounds = kernel_rounds(body)
        per = nbytes / rounds if rounds else 0.0
        out.append(f"{name[:64]:64s} LDG {loads:4d}  bytes/thread {nbytes:5d}  rounds {rounds:3d}  bytes/round {per:6.1f}")
    return out


def self_test():
    two_rounds = ["/*0000*/ LDG.E.128 R4, desc[UR4][R2.64] ;", "/*0010*/ LDG.E.128 R8, desc[UR4][R2.64+0x10] ;",
                  "/*0020*/ FADD R12, R4, R8 ;", "/*0030*/ LDG.E R13, desc[UR4][R2.64+0x20] ;",
                  "/*0040*/ FADD R12, R12, R13 ;"]
    assert kernel_rounds(two_rounds) == (3, 36, 2), kernel_rounds(two_rounds)
    overwritten = ["/*0000*/ LDG.E R4, desc[UR4][R2.64] ;", "/*0010*/ MOV R4, R9 ;", "/*0020*/ FADD R5, R4, R4 ;"]
    assert kernel_rounds(overwritten) == (1, 4, 1), kernel_rounds(overwritten)
    print("sass_rounds self-test: ok")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    if argv[0] == "--self-test":
        self_test()
        return 0
    cuobjdump = os.environ.get("CUOBJDUMP", "cuobjdump")
    for path in argv:
        text = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True).stdout \
            if path.endswith(".cubin") else open(path).read()
        for line in report(text):
            print(f"{os.path.basename(path)}: {line}" if len(argv) > 1 else line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
