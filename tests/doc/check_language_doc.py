#!/usr/bin/env python3
"""Keeps docs/LANGUAGE.md honest: every ```python block is a complete .tile file that tilec must accept
without a diagnostic, unless the next block is a ```console block whose `$ tilec ex.tile ...` commands show
the exact output tilec gives (errors and warnings included). Other console blocks run from a folder where
`examples/` is the repository's examples.

    check_language_doc.py DOC TILEC_BINARY_DIR"""
import os
import re
import subprocess
import sys
import tempfile


def run_console(body, wd, env):
    """Runs each `$ cmd` of a console block; returns the mismatches."""
    fails = []
    lines = body.split("\n")[:-1]
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            fails.append("console block line does not start with '$ ': %r" % lines[i])
            break
        cmd = lines[i][2:]
        j = i + 1
        while j < len(lines) and not lines[j].startswith("$ "):
            j += 1
        want = "\n".join(lines[i + 1:j]) + ("\n" if j > i + 1 else "")
        r = subprocess.run(["bash", "-c", cmd], cwd=wd, env=env, capture_output=True, text=True, timeout=60)
        got = r.stdout + r.stderr
        if got != want:
            fails.append("output of `%s` differs:\n--- documented\n%s--- tilec printed\n%s" % (cmd, want, got))
        i = j
    return fails


def main():
    doc, bindir = sys.argv[1], os.path.abspath(sys.argv[2])
    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(doc))), "examples")
    text = open(doc).read()
    blocks = [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```\n", text, re.S | re.M)]
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    fails = []
    checked = 0
    with tempfile.TemporaryDirectory() as wd:
        os.symlink(examples, os.path.join(wd, "examples"))
        for k, (lang, body) in enumerate(blocks):
            if lang == "python":
                with open(os.path.join(wd, "ex.tile"), "w") as f:
                    f.write(body)
                nxt = blocks[k + 1] if k + 1 < len(blocks) else ("", "")
                if nxt[0] == "console" and nxt[1].startswith("$ tilec ex.tile"):
                    continue  # the console block that follows checks it
                r = subprocess.run(["tilec", "ex.tile", "--emit=ast"], cwd=wd, env=env, capture_output=True,
                                   text=True, timeout=60)
                checked += 1
                if r.returncode != 0 or r.stderr:
                    fails.append("block %d is not accepted cleanly (exit %d):\n%s%s" % (k, r.returncode, body, r.stderr))
            elif lang == "console":
                checked += 1
                fails += run_console(body, wd, env)
    for f in fails:
        print("FAIL:", f)
    print("%d blocks checked, %d failures" % (checked, len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
