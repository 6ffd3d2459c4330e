#!/usr/bin/env python3
"""Stages a suite of TileLang kernels from a Python package (DeepSeek's TileKernels) for the GPU suite's
side-by-side benchmark (issue 25), the way tools/compat/run.sh --gpu-build stages TileLang's examples.

  tools/gpu/stage_suite.py --suite tilekernels --manifest tests/tilekernels/manifest.tsv --root DIR --under tile_kernels
        [--tilec build/tilec] [--gpu-build gpu-build]

DIR holds the package as unpacked from its wheel (DIR/tile_kernels/...). The manifest has the columns of
tests/tilelang_compat/manifest.tsv (tag, file under DIR, kernel, --export call or `-`, expected: ok or error),
or those of tests/tilekernels/manifest.tsv (the same without the tag, which --tag gives; files under
DIR/--under), and optionally a sixth, the kernel's class in the side-by-side table. For each row tilec compiles the file, run
in DIR so that the package's own imports resolve, into GPU_BUILD/tk_KERNEL.cu + .h (tk_FILE_KERNEL when two files
name a kernel alike); the package's Python files are copied once to GPU_BUILD/SUITE/TAG/ (not into the
repository) and GPU_BUILD/SUITE/kernels.tsv lists library, tag, file, kernel, call and class, which
gpu/sidebyside.py reads. Prints one line per kernel and a count; exit 0 unless a row expected `ok` failed."""
import argparse
import os
import re
import shutil
import subprocess
import sys


def rows(manifest, tag, under):
    """The manifest's rows: tag, file, kernel, call, expected[, class], or (TileKernels' manifest, one package
    version) file, kernel, call, expected with TAG given on the command line; files are under UNDER of the root."""
    with open(manifest, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            cols = line.rstrip("\n").split("\t")
            if not line.strip() or line.startswith("#"):
                continue
            if len(cols) == 4:
                cols = [tag] + cols
            if len(cols) < 5:
                raise SystemExit("%s:%d: %d columns, want [tag,] file, kernel, call, expected[, class]"
                                 % (manifest, n, len(cols)))
            yield dict(tag=cols[0], file=os.path.join(under, cols[1]) if under else cols[1], kernel=cols[2], call=cols[3], expected=cols[4],
                       cls=cols[5] if len(cols) > 5 else "")


def copy_package(root, dest):
    """The package's Python files under root, to dest (once)."""
    if os.path.isdir(dest):
        return
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                out = os.path.join(dest, os.path.relpath(d, root))
                os.makedirs(out, exist_ok=True)
                shutil.copy2(os.path.join(d, f), out)


def library_name(row, taken):
    name = "tk_" + re.sub(r"\W", "_", row["kernel"])
    if name in taken:
        name = "tk_" + re.sub(r"\W", "_", os.path.splitext(row["file"])[0]) + "_" + row["kernel"]
    taken.add(name)
    return name


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="tilekernels")
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--tilec", default="build/tilec")
    ap.add_argument("--gpu-build", default="gpu-build")
    ap.add_argument("--tag", default="1.0.0", help="the tag of manifest rows that have no tag column")
    ap.add_argument("--under", default="", help="the folder of --root that the manifest's files are under")
    a = ap.parse_args(argv)
    tilec, root, gb = (os.path.abspath(p) for p in (a.tilec, a.root, a.gpu_build))
    suite_dir = os.path.join(gb, a.suite)
    os.makedirs(suite_dir, exist_ok=True)
    listing = os.path.join(suite_dir, "kernels.tsv")
    taken, lines, failed, ok = set(), [], 0, 0
    for r in rows(a.manifest, a.tag, a.under):
        lib = library_name(r, taken)
        cmd = [tilec, r["file"], "--kernel", r["kernel"], "-o", os.path.join(gb, lib + ".cu")]
        if r["call"] != "-":
            cmd += ["--export", "%s=%s" % (r["kernel"], r["call"])]
        try:
            p = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120)
            rc, out = p.returncode, p.stderr + p.stdout
        except subprocess.TimeoutExpired:
            rc, out = -1, "timed out after 120 s"
        if rc == 0:
            copy_package(root, os.path.join(suite_dir, r["tag"]))
            lines.append("\t".join((lib, r["tag"], r["file"], r["kernel"], r["call"], r["cls"])))
            ok += 1
            print("%-8s %-44s ok" % (r["tag"], r["kernel"]))
        else:
            for ext in (".cu", ".h"):
                if os.path.exists(os.path.join(gb, lib + ext)):
                    os.remove(os.path.join(gb, lib + ext))
            first = next((ln for ln in out.splitlines() if ": error: " in ln), out.strip()[-200:])
            bad = r["expected"] == "ok"
            failed += bad
            print("%-8s %-44s %s%s" % (r["tag"], r["kernel"], first[:200], "  [expected ok]" if bad else ""))
    with open(listing, "w", encoding="utf-8") as f:
        f.write("# library\ttag\tfile (under %s/TAG/)\tkernel\tcall\tclass (tools/gpu/stage_suite.py)\n" % a.suite)
        f.writelines(line + "\n" for line in lines)
    print("%s: %d kernels staged in %s" % (a.suite, ok, gb))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
