#!/usr/bin/env python3
"""Memory instructions by kind and width in two kernels' SASS (tilec's and TileLang's), and the differences that
cost speed without changing results: fewer 16-byte global accesses, float atomics one element at a time where the
other side adds 2 or 4 at once, narrower shared accesses. Static counts (instructions in the code, not executed
ones): a finding says where to look, a timing says whether it matters. Session 29's regression (three backward
kernels whose float4 atomics became scalar) shows in these counts without a GPU.

    tools/compat/sass_widths.py TILEC_SASS TILELANG_SASS        (cuobjdump -sass output, or a .cubin)
    tools/compat/sass_widths.py --pairs DIR_TILEC DIR_TILELANG   (NAME.sass or NAME.cubin in both; one line each)
    tools/compat/sass_widths.py --self-test

Exit 0; the report is information."""
import collections
import os
import re
import subprocess
import sys

# opcode families: global load/store, atomics and reductions, shared load/store
FAMILIES = {"LDG": "gld", "STG": "gst", "RED": "red", "REDG": "red", "ATOM": "red", "ATOMG": "red",
            "LDS": "sld", "STS": "sst"}
WIDTH = re.compile(r"\.(128|64|32|U8|S8|U16|S16)\b")


def sass_of(path):
    if path.endswith(".cubin"):
        tool = os.environ.get("CUOBJDUMP", "cuobjdump")
        return subprocess.run([tool, "-sass", path], capture_output=True, text=True, check=False).stdout
    with open(path, errors="replace") as f:
        return f.read()


def counts(text):
    """{(family, width): n}: width in bits; float atomics as F32x1 / F32x2 / F32x4 (vector float reductions)."""
    c = collections.Counter()
    for line in text.splitlines():
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9]+)(\.[A-Z0-9_.x]+)?", line)
        if not m:
            continue
        op, mods = m.group(2), m.group(3) or ""
        fam = FAMILIES.get(op)
        if not fam:
            continue
        if fam == "red":
            v = re.search(r"\.F32x([24])", mods)
            kind = "F32x" + v.group(1) if v else ("F32x1" if ".F32" in mods or ".FTZ.RN" in mods else "other")
            c[(fam, kind)] += 1
            continue
        w = WIDTH.search(mods)
        bits = {"U8": "8", "S8": "8", "U16": "16", "S16": "16"}.get(w.group(1), w.group(1)) if w else "32"
        c[(fam, bits)] += 1
    return c


def findings(a, b):
    """What tilec (a) does narrower than TileLang (b)."""
    out = []
    for fam, name in (("gld", "global loads"), ("gst", "global stores"), ("sld", "shared loads"), ("sst", "shared stores")):
        wa = sum(n for (f, w), n in a.items() if f == fam and w == "128")
        wb = sum(n for (f, w), n in b.items() if f == fam and w == "128")
        ta = sum(n for (f, _), n in a.items() if f == fam)
        tb = sum(n for (f, _), n in b.items() if f == fam)
        if tb and wb and ta and wa / ta < 0.5 * (wb / tb):
            out.append("%s: %d of %d 16-byte against %d of %d" % (name, wa, ta, wb, tb))
    sa = a.get(("red", "F32x1"), 0)
    vb = b.get(("red", "F32x4"), 0) + b.get(("red", "F32x2"), 0)
    va = a.get(("red", "F32x4"), 0) + a.get(("red", "F32x2"), 0)
    if vb and va < vb and sa > b.get(("red", "F32x1"), 0):
        out.append("float atomics: %d scalar, %d vector against %d scalar, %d vector"
                   % (sa, va, b.get(("red", "F32x1"), 0), vb))
    return out


def line(c):
    return " ".join("%s.%s=%d" % (f, w, n) for (f, w), n in sorted(c.items()))


SELF_TEST_TILEC = """
        /*0100*/                   LDG.E.CONSTANT R0, desc[UR40][R4.64] ;                                 /* 0x0 */
        /*0110*/                   LDS R3, [R10+0x100] ;                                                  /* 0x0 */
        /*0120*/                   LDS R3, [R10+0x104] ;                                                  /* 0x0 */
        /*0130*/               @P0 REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR38][R152.64], R156 ;           /* 0x0 */
        /*0140*/                   REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR38][R152.64+0x4], R157 ;       /* 0x0 */
        /*0150*/                   STG.E.128 desc[UR4][R2.64], R8 ;                                       /* 0x0 */
"""
SELF_TEST_TILELANG = """
        /*0100*/                   LDG.E.128.CONSTANT R0, desc[UR40][R4.64] ;                             /* 0x0 */
        /*0110*/                   LDS.128 R20, [R10+0x1a400] ;                                           /* 0x0 */
        /*0130*/                   REDG.E.ADD.F32x4.FTZ.RN.STRONG.GPU desc[UR40][R8.64], R20 ;            /* 0x0 */
        /*0150*/                   STG.E.128 desc[UR4][R2.64], R8 ;                                       /* 0x0 */
"""


def self_test():
    a, b = counts(SELF_TEST_TILEC), counts(SELF_TEST_TILELANG)
    want_a = {("gld", "32"): 1, ("sld", "32"): 2, ("red", "F32x1"): 2, ("gst", "128"): 1}
    want_b = {("gld", "128"): 1, ("sld", "128"): 1, ("red", "F32x4"): 1, ("gst", "128"): 1}
    f = findings(a, b)
    ok = dict(a) == want_a and dict(b) == want_b and len(f) == 3 and f[2].startswith("float atomics: 2 scalar") \
        and not findings(b, b)
    print("sass_widths self-test: %s" % ("ok" if ok else "FAILED %r %r %r" % (dict(a), dict(b), f)))
    return 0 if ok else 1


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) == 3 and argv[0] == "--pairs":
        da, db = argv[1], argv[2]
        for name in sorted(os.listdir(da)):
            base, ext = os.path.splitext(name)
            if ext not in (".sass", ".cubin"):
                continue
            other = next((os.path.join(db, base + e) for e in (".sass", ".cubin") if os.path.exists(os.path.join(db, base + e))), None)
            if not other:
                continue
            f = findings(counts(sass_of(os.path.join(da, name))), counts(sass_of(other)))
            print("%-60s %s" % (base, "; ".join(f) if f else "-"))
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = counts(sass_of(argv[0])), counts(sass_of(argv[1]))
    print("tilec:    " + line(a))
    print("TileLang: " + line(b))
    for f in findings(a, b) or ["no narrower memory instructions than TileLang's"]:
        print("  " + f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
