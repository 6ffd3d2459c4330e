#!/usr/bin/env python3
"""Writes a C program that checks a binary-mode header's alignment documentation against its launchers
(alignment_doc.test): for every tensor of every launch function, a pointer aligned to exactly the documented
N bytes must be accepted (status 0), one aligned to N / 2 is reported with its status, and where the comment
names a larger alignment for the fastest variant, which kernel each alignment launched is printed.
Usage: alignment_probe.py HEADER > probe.c (link with the header's .c and stub_driver.c)."""
import re
import sys

header = open(sys.argv[1]).read()
include = sys.argv[1].rsplit("/", 1)[-1]
# A launch function's comment and declaration: /* NAME: kernel ... */ then its prototype.
blocks = re.findall(r"/\* (\w+): kernel '[^']*' of [^\n]*\n(.*?)\*/\ntilec_status \1\((.*?)\);", header, re.S)
out = ['#include "%s"' % include, "#include <stdint.h>", "#include <stdio.h>",
       "extern const char *stub_launched;", "int main(void) {", "    tilec_status s;", "    const char *at;"]
for name, comment, proto in blocks:
    params = [p.strip() for p in proto.split(",")]
    doc = {}
    for line in comment.splitlines():
        m = re.match(r"\s*\*\s+(\w+): \w+\[.*?\], (?:read|written)(.*)", line)
        if not m:
            continue
        n = re.search(r", (\d+)-byte aligned", m.group(2))
        f = re.search(r"(\d+)-byte aligned runs the fastest variant", m.group(2))
        doc[m.group(1)] = (int(n.group(1)) if n else 1, int(f.group(1)) if f else 0)

    def args(tensor=None, offset=0):
        a = []
        for j, p in enumerate(params):
            pname = p.split()[-1].lstrip("*")
            if pname == "stream":
                a.append("0")
            elif "*" in p:  # a tensor: 64 GiB apart, so no two overlap whatever their sizes
                a.append("(void *)(uintptr_t)(((uint64_t)%d << 36) + %d)" % (j + 1, offset if pname == tensor else 0))
            else:
                a.append("64")
        return ", ".join(a)

    for j, p in enumerate(params):
        t = p.split()[-1].lstrip("*")
        if t not in doc:
            continue
        n, fast = doc[t]
        out.append('    s = %s(%s);' % (name, args(t, n)))
        out.append('    printf("%s %s %d-byte aligned: %%s\\n", s == TILEC_SUCCESS ? "accepted" : "FAIL (refused)");' % (name, t, n))
        if n > 1:
            out.append('    s = %s(%s);' % (name, args(t, n // 2)))
            out.append('    printf("%s %s %d-byte aligned: status %%d, argument %%d\\n", (int)s, s == TILEC_SUCCESS ? -1 : tilec_last_error_argument());' % (name, t, n // 2))
        if fast:
            out.append('    s = %s(%s);' % (name, args(t, n)))
            out.append('    at = stub_launched;')
            out.append('    s = %s(%s);' % (name, args(t, fast)))
            out.append('    printf("%s %s %d-byte aligned runs %%s, %d-byte %%s\\n", at, stub_launched);' % (name, t, n, fast))
out += ["    return 0;", "}"]
print("\n".join(out))
