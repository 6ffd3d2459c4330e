#!/usr/bin/env python3
"""Stages the libraries of gpu/compat_exports.txt: TileLang's own example files compiled by tilec at chosen
arguments (issue 28's attention backward and decode benchmarks), for the GPU suite's tests and benchmarks
(gpu/tests/attn_bwd.py, attn_decode.py). tools/gpu/prepare.sh runs it when TILELANG_SRC is set.

  tools/gpu/stage_exports.py --tilelang-src CHECKOUT [--tilec build/tilec] [--gpu-build gpu-build]
        [--spec gpu/compat_exports.txt] [--manifest-lines FILE]

For each library of the spec: the tag's examples/ is extracted from the checkout (git archive, into a temporary
folder: nothing of TileLang is copied into the repository), tilec runs once on the unchanged file, in its folder,
with one --export NAME=CALL and --kernel NAME per line, into GPU_BUILD/LIB.cu + .h, and the file is copied to
GPU_BUILD/compat/TAG/FILE, where TileLang's own build of the same calls finds it on the GPU machine
(gpu/tlbeside.py). Prints one line per library; --manifest-lines gets one `LIB<TAB>ok|failed<TAB>detail` line
per library for gpu-build/manifest.tsv. Exit 0 when every library was generated, 1 otherwise."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "gpu"))
from tlbeside import SPEC, read_spec  # noqa: E402  the spec's reader, shared with the test modules


def extract(checkout, tag, dest):
    """The tag's examples/ under dest/TAG (once); False when the checkout lacks the tag."""
    out = os.path.join(dest, tag)
    if os.path.isdir(os.path.join(out, "examples")):
        return True
    os.makedirs(out, exist_ok=True)
    git = subprocess.Popen(["git", "-C", checkout, "archive", tag, "examples"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
    tar = subprocess.run(["tar", "-x", "-C", out], stdin=git.stdout, stderr=subprocess.DEVNULL)
    git.stdout.close()
    return git.wait() == 0 and tar.returncode == 0


def tilec_command(tilec, lib, spec, gpu_build):
    cmd = [tilec, os.path.basename(spec["file"]), "-o", os.path.join(gpu_build, lib + ".cu")]
    for name, call in spec["exports"]:
        cmd += ["--export", "%s=%s" % (name, call), "--kernel", name]
    return cmd


def stage(tilec, lib, spec, tree, gpu_build):
    """(ok, detail): tilec on the library's file; its log in GPU_BUILD/LIB.log when it fails."""
    src = os.path.join(tree, spec["tag"], "examples", spec["file"])
    if not os.path.exists(src):
        return False, "%s has no examples/%s" % (spec["tag"], spec["file"])
    try:
        p = subprocess.run(tilec_command(tilec, lib, spec, gpu_build), cwd=os.path.dirname(src),
                           capture_output=True, text=True, timeout=600)
        rc, log = p.returncode, p.stderr + p.stdout
    except subprocess.TimeoutExpired:
        rc, log = -1, "tilec timed out after 600 s"
    if rc != 0:
        for ext in (".cu", ".h"):
            if os.path.exists(os.path.join(gpu_build, lib + ext)):
                os.remove(os.path.join(gpu_build, lib + ext))
        with open(os.path.join(gpu_build, lib + ".log"), "w", encoding="utf-8") as f:
            f.write(log)
        first = next((ln for ln in log.splitlines() if "error" in ln), log.strip()[-200:])
        return False, first.replace("\t", " ")[:200]
    dest = os.path.join(gpu_build, "compat", spec["tag"], spec["file"])
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copy2(src, dest)
    return True, "%d kernels of %s %s (tools/gpu/stage_exports.py)" % (len(spec["exports"]), spec["tag"], spec["file"])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tilelang-src", required=True)
    ap.add_argument("--tilec", default=os.path.join(ROOT, "build", "tilec"))
    ap.add_argument("--gpu-build", default="gpu-build")
    ap.add_argument("--spec", default=SPEC)
    ap.add_argument("--manifest-lines", help="append one manifest.tsv line per library here")
    a = ap.parse_args(argv)
    tilec, gb = os.path.abspath(a.tilec), os.path.abspath(a.gpu_build)
    libs = read_spec(a.spec)
    lines, failed = [], 0
    with tempfile.TemporaryDirectory() as tree:
        for lib, spec in libs.items():
            if not extract(a.tilelang_src, spec["tag"], tree):
                ok, detail = False, "the checkout has no tag %s" % spec["tag"]
            else:
                ok, detail = stage(tilec, lib, spec, tree, gb)
            failed += not ok
            lines.append("%s\t%s\t%s" % (lib, "ok" if ok else "failed", detail))
            print("%-16s %s" % (lib, detail if ok else "FAILED: " + detail), flush=True)
    if a.manifest_lines:
        with open(a.manifest_lines, "a", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)
    print("stage_exports: %d of %d libraries in %s" % (len(libs) - failed, len(libs), gb))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
