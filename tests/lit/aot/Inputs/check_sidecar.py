"""sidecar.test: each kernel of a PTX file's JSON sidecar names an .entry of that PTX whose parameters match the
sidecar's in number and kind (tensors and tensor maps: 8-byte pointers and 128-byte .b8 arrays; dynamic sizes:
32-bit integers). Usage: check_sidecar.py FILE.ptx"""
import json
import re
import sys

ptx_path = sys.argv[1]
ptx = open(ptx_path).read()
side = json.load(open(ptx_path + ".json"))
assert side["image"] == "ptx", side["image"]
for k in side["kernels"]:
    m = re.search(r"\.entry " + re.escape(k["entry"]) + r"\(\n(.*?)\n\)", ptx, re.S)
    assert m, "no .entry " + k["entry"]
    params = [p.strip() for p in m.group(1).split(",\n")]
    assert len(params) == len(k["params"]), (k["entry"], len(params), len(k["params"]))
    for p, s in zip(params, k["params"]):
        want = {"tensor": ".param .u64", "tensor_map": ".param .align 64 .b8", "dynamic_size": ".param .u32"}.get(s["kind"])
        assert want is None or p.startswith(want), (p, s)
    assert k["block"][0] > 0 and len(k["grid"]) == 3
    print("%s: %d params, block %d, %d bytes shared, %d tensor maps" % (
        k["name"], len(params), k["block"][0], k["dynamic_shared_memory"], len(k["tensor_maps"])))
