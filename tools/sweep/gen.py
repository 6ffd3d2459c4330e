#!/usr/bin/env python3
"""The tile-configuration sweep, part one, run HERE where tilec builds: compiles one benchmark program
(benchmarks/*.tile) in many tile configurations into gpu-build/sweep/, one .cu per configuration holding
one kernel per benchmark shape, through `tilec --export 'ID_0=matmul(4096, 4096, 4096, block_M=...)'
--kernel ID_0 ...`. tools/sweep/run.sh then builds, checks and times them all in one GPU call and prints
the configurations sorted by TFLOP/s (part two: tools/sweep/sweep.py).

  tools/sweep/gen.py [--preset gemm|flash ...] [--tilec PATH] [--arch sm_80] [--set NAME=V1,V2 ...]
                     [--shape 'M=2048,N=2048,K=2048' ...] [--max-configs N] [--no-filter] [--list]
                     [--variant NAME='TILEC FLAGS' ...]

--variant adds every configuration once more, built with extra tilec flags (e.g. --variant
nocluster=--no-cluster), as configuration ID_NAME: an A/B of a lowering choice timed in the same GPU run.

A preset names the program, its factory, the benchmark shapes and the grid of parameters to try; --set
replaces one dimension of the grid (values are Python literals: --set num_stages=3,4 --set policy=None,1).
The grid is first thinned by rough register and shared-memory estimates (--no-filter keeps everything);
tilec itself then rejects what does not fit, and the reason is kept in the manifest. The factory's
defaults always run too, as configuration ID `<preset>_default`. Exit 0 when at least one configuration
was generated.
"""
import argparse
import ast
import concurrent.futures
import itertools
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# shared memory per block that the target allows (docs/LANGUAGE.md, section 5)
SMEM = {"sm_80": 166912, "sm_86": 101376, "sm_89": 101376, "sm_90": 232448, "sm_90a": 232448}

PRESETS = {
    "gemm": dict(
        kind="gemm", file="benchmarks/gemm_fp16.tile", factory="matmul", dtype="float16",
        shape_keys=["M", "N", "K"],
        shapes=[dict(M=4096, N=4096, K=4096), dict(M=8192, N=8192, K=8192)],
        grid=dict(block_M=[64, 128, 256], block_N=[64, 128, 256], block_K=[32, 64], num_stages=[2, 3, 4],
                  threads=[128, 256]),
        # factory parameter -> the module-level constant that holds its default (for tilec -D)
        defines=dict(block_M="BLOCK_M", block_N="BLOCK_N", block_K="BLOCK_K", num_stages="STAGES",
                     threads="THREADS", policy="POLICY", panel="PANEL")),
    "gemm_fp8": dict(
        kind="gemm", file="benchmarks/gemm_fp8.tile", factory="matmul", dtype="float8_e4m3", out_dtype="bfloat16",
        trans_B=True, shape_keys=["M", "N", "K"],
        shapes=[dict(M=4096, N=4096, K=4096), dict(M=8192, N=8192, K=8192)],
        grid=dict(block_M=[128], block_N=[128, 256], block_K=[64, 128, 256], num_stages=[2, 3, 4, 5], threads=[256]),
        defines=dict(block_M="BLOCK_M", block_N="BLOCK_N", block_K="BLOCK_K", num_stages="STAGES",
                     threads="THREADS", panel="PANEL")),
    # issue 27's decode shapes: the hand-written split-K GEMM (two launches, float32 partials) over its tiles,
    # stages and split counts, to learn what the automatic split (passes::splitK) should choose.
    "splitk": dict(
        kind="gemm", file="benchmarks/gemm_splitk.tile", factory="matmul_splitk", dtype="float16",
        shape_keys=["M", "N", "K"],
        shapes=[dict(M=16, N=8192, K=8192), dict(M=128, N=8192, K=8192)],
        grid=dict(block_M=[64, 128], block_N=[64, 128, 256], num_stages=[3, 4, 6], splits=[2, 4, 8, 16],
                  threads=[128]),
        defines=dict()),
    # issue 27's decode shapes as the seed's file writes them (benchmarks/gemm_decode.tile: 128x128x64 tiles, 3
    # stages, 128 threads; decode_default is the file as written): what tilec chooses on its own (shrinkGemmTiles,
    # splitK's model; `tilec -v`) beside other stage and thread counts. A before/after: generate it twice, with the
    # old and the new tilec (--tilec, --out), and time both directories (tools/sweep/run.sh --dir).
    "decode": dict(
        kind="gemm", file="benchmarks/gemm_decode.tile", factory="matmul", dtype="float16",
        shape_keys=["M", "N", "K"],
        shapes=[dict(M=16, N=8192, K=8192), dict(M=128, N=8192, K=8192)],
        grid=dict(num_stages=[3, 4, 6], threads=[128, 256]),
        defines=dict()),
    "decode_bf16": dict(
        kind="gemm", file="benchmarks/gemm_decode.tile", factory="matmul", dtype="bfloat16", out_dtype="bfloat16",
        shape_keys=["M", "N", "K"],
        shapes=[dict(M=16, N=8192, K=8192), dict(M=128, N=8192, K=8192)],
        base=dict(dtype="bfloat16"),  # factory arguments every configuration (the default too) takes
        grid=dict(num_stages=[4, 6]),
        defines=dict()),
    "flash": dict(
        kind="attention", file="benchmarks/flash_fwd.tile", factory="flash_fwd", dtype="float16",
        shape_keys=["batch", "heads", "seq", "dim", "causal"],
        shapes=[dict(batch=8, heads=16, seq=4096, dim=128, causal=True),
                dict(batch=8, heads=16, seq=4096, dim=128, causal=False)],
        grid=dict(block_M=[64, 128], block_N=[32, 64, 128], num_stages=[1, 2, 3], threads=[128, 256]),
        defines=dict(block_M="BLOCK_M", block_N="BLOCK_N", num_stages="STAGES", threads="THREADS")),
}


def plausible(preset, p, arch):
    """Rough filters that save nvcc time; tilec has the last word. Returns None or why the point is left out."""
    smem = SMEM.get(arch, 101376)
    thr = p.get("threads", 128)
    if preset in ("gemm", "gemm_fp8", "splitk", "decode", "decode_bf16"):
        bm, bn, bk, st = p.get("block_M", 128), p.get("block_N", 128), p.get("block_K", 64), p.get("num_stages", 3)
        acc = bm * bn // thr           # float32 accumulators per thread
        if not 32 <= acc <= 128:
            return "%d accumulators per thread (want 32..128)" % acc
        if st * (bm * bk + bk * bn) * (1 if preset == "gemm_fp8" else 2) > smem:
            return "shared memory estimate over %d bytes" % smem
        if bm * bn < thr // 32 * 16 * 8 * 2:
            return "too little work per warp"
    elif preset == "flash":
        bm, bn, st = p["block_M"], p["block_N"], p["num_stages"]
        dim = 128
        if bm < thr // 32 * 16:
            return "fewer than 16 query rows per warp"
        regs = (bm * dim + bm * bn) // thr + bm * bn // thr // 2
        if regs > 192:
            return "%d registers per thread for the fragments (want <= 192)" % regs
        if (bm * dim + max(st, 1) * 2 * bn * dim) * 2 > smem:
            return "shared memory estimate over %d bytes" % smem
    return None


def priority(preset, p):
    """Sort key: the configurations most likely to be fast first, so that a sweep cut short by its budget
    (or --max-configs) loses the unlikely ones: large C tiles, the middle of the stage range, 8 warps."""
    area = -p.get("block_M", 0) * p.get("block_N", 0)
    stages = abs(p.get("num_stages", 3) - (3 if preset == "gemm" else 2))
    return (area, stages, p.get("threads", 256) != 256, p.get("block_K", 32) != 32)


def literal(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text                     # a bare word, as tilec's -D takes it


def parse_set(items):
    out = {}
    for item in items or []:
        name, eq, values = item.partition("=")
        if not eq or not name.strip():
            raise SystemExit("gen.py: --set wants NAME=V1,V2,...: %r" % item)
        out[name.strip()] = [literal(v.strip()) for v in values.split(",") if v.strip()]
    return out


def parse_shape(text, keys):
    d = {}
    for part in text.split(","):
        k, eq, v = part.partition("=")
        if not eq or k.strip() not in keys:
            raise SystemExit("gen.py: --shape wants %s: %r" % (", ".join("%s=..." % k for k in keys), text))
        d[k.strip()] = literal(v.strip())
    missing = [k for k in keys if k not in d]
    if missing:
        raise SystemExit("gen.py: --shape %r lacks %s" % (text, ", ".join(missing)))
    return d


def py(v):
    return repr(v)                      # True, None, 128: the .tile file's Python reads them back


def call_text(preset, shape, params):
    args = [py(shape[k]) for k in preset["shape_keys"]]
    args += ["%s=%s" % (k, py(v)) for k, v in sorted(params.items())]
    return "%s(%s)" % (preset["factory"], ", ".join(args))


def configs_of(name, preset, arch, filt, max_configs):
    keys = list(preset["grid"])
    points, dropped = [], []
    for values in itertools.product(*(preset["grid"][k] for k in keys)):
        p = dict(zip(keys, values))
        why = plausible(name, p, arch) if filt else None
        (dropped if why else points).append((p, why))
    points.sort(key=lambda x: priority(name, x[0]))
    if max_configs:
        points = points[:max_configs]
    base = preset.get("base", {})
    out = [dict(id="%s_default" % name, params=dict(base))]
    out += [dict(id="%s_c%03d" % (name, i), params=dict(base, **p)) for i, (p, _) in enumerate(points)]
    return out, dropped


def generate(tilec, arch, outdir, preset, cfg, fake=False):
    cu = os.path.join(outdir, cfg["id"] + ".cu")
    cmd = [tilec, os.path.join(ROOT, preset["file"]), "-arch=" + arch, "-o", cu] + cfg.get("flags", [])
    for i, shape in enumerate(preset["shapes"]):
        k = "%s_%d" % (cfg["id"], i)
        cmd += ["--export", "%s=%s" % (k, call_text(preset, shape, cfg["params"])), "--kernel", k]
    if fake:    # a rehearsal: the same kernels' signatures, naive bodies (tools/gpu/fake.py)
        sys.path.insert(0, os.path.join(ROOT, "tools", "gpu"))
        import fake as fk
        try:
            fk.write(tilec, cmd[1], cfg["id"], outdir, cmd[2:3] + cmd[5:])
            ok, msg = True, ""
        except fk.Unsupported as e:
            ok, msg = False, "error: fake: %s" % e
    else:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            ok, msg = r.returncode == 0, (r.stderr or r.stdout)
        except subprocess.TimeoutExpired:
            ok, msg = False, "tilec ran past 120 s"
    cfg = dict(cfg, cu=cfg["id"] + ".cu", kernels=["%s_%d" % (cfg["id"], i) for i in range(len(preset["shapes"]))],
               command=" ".join("'%s'" % c if ("(" in c or " " in c) else c for c in cmd[1:]).replace(ROOT + "/", ""))
    if ok:
        cfg["status"] = "ok"
    else:
        first = next((ln for ln in msg.splitlines() if "error" in ln), msg.strip().splitlines()[0] if msg.strip() else "?")
        cfg.update(status="rejected", reason=first.replace(ROOT + "/", "")[:300])
        for ext in (".cu", ".h"):
            if os.path.exists(cu[:-3] + ext):
                os.remove(cu[:-3] + ext)
    return cfg


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", action="append", choices=sorted(PRESETS), help="default: all")
    ap.add_argument("--tilec", default=os.environ.get("TILEC", os.path.join(ROOT, "build", "tilec")))
    ap.add_argument("--out", default=os.path.join(ROOT, os.environ.get("GPU_BUILD", "gpu-build"), "sweep"))
    ap.add_argument("--arch", default="sm_80", choices=sorted(SMEM),
                    help="tilec's target; the GPU side builds sm_80/86/89 as compute_XX -> sm_90 (default sm_80)")
    ap.add_argument("--set", action="append", metavar="NAME=V1,V2", help="replace one grid dimension")
    ap.add_argument("--shape", action="append", metavar="K=V,...", help="replace the preset's shapes")
    ap.add_argument("--max-configs", type=int, default=0, help="at most N grid points per preset (the likeliest)")
    ap.add_argument("--no-filter", action="store_true", help="keep the points the estimates leave out")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--list", action="store_true", help="print the configurations, generate nothing")
    ap.add_argument("--variant", action="append", metavar="NAME=FLAGS",
                    help="every configuration again, with these tilec flags, as ID_NAME")
    ap.add_argument("--fake", action="store_true",
                    help="a rehearsal of the GPU side: naive kernels in each configuration's C interface "
                         "(tools/gpu/fake.py), marked FAKE in the table; for use before tilec generates T.gemm")
    args = ap.parse_args(argv)

    sets = parse_set(args.set)
    names = args.preset or sorted(PRESETS)
    presets = {}
    for name in names:
        p = json.loads(json.dumps(PRESETS[name]))
        for k, v in sets.items():
            p["grid"][k] = v
        if args.shape:
            p["shapes"] = [parse_shape(s, p["shape_keys"]) for s in args.shape]
        presets[name] = p

    plan = []
    for name, p in presets.items():
        cfgs, dropped = configs_of(name, p, args.arch, not args.no_filter, args.max_configs)
        for v in args.variant or []:
            vname, eq, flags = v.partition("=")
            if not eq or not vname.strip().isidentifier():
                raise SystemExit("gen.py: --variant wants NAME=FLAGS: %r" % v)
            cfgs += [dict(c, id="%s_%s" % (c["id"], vname.strip()), flags=flags.split()) for c in cfgs if "flags" not in c]
        print("gen: %s: %d configurations (%d grid points left out by the estimates), %d shapes"
              % (name, len(cfgs), len(dropped), len(p["shapes"])))
        if args.list:
            for c in cfgs:
                print("  %-16s %s" % (c["id"], call_text(p, p["shapes"][0], c["params"])))
            for d, why in dropped:
                print("  %-16s %s: %s" % ("(left out)", d, why))
        plan += [(name, c) for c in cfgs]
    if args.list:
        return 0
    if not (os.path.isfile(args.tilec) and os.access(args.tilec, os.X_OK)):
        print("gen: no tilec at %s (build it, or pass --tilec / TILEC=)" % args.tilec, file=sys.stderr)
        return 2

    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        futs = [ex.submit(generate, args.tilec, args.arch, args.out, presets[n], c, args.fake) for n, c in plan]
        results = [dict(f.result(), preset=n) for (n, _), f in zip(plan, futs)]
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "diff", "--quiet"]).returncode != 0
    except OSError:
        commit, dirty = "?", False
    manifest = dict(version=1, arch=args.arch, tilec=os.path.relpath(args.tilec, ROOT), fake=args.fake,
                    commit=commit + ("+changes" if dirty else ""), presets=presets, configs=results)
    with open(os.path.join(args.out, "sweep.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    ok = [r for r in results if r["status"] == "ok"]
    print("gen: %d of %d configurations generated into %s (arch %s)"
          % (len(ok), len(results), os.path.relpath(args.out, ROOT), args.arch))
    for r in results:
        if r["status"] != "ok":
            print("  %-16s rejected: %s" % (r["id"], r.get("reason", "")))
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print("gen: %.1f MiB to carry (the device tool carries 64 MiB at most)" % (size / 2 ** 20))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
