"""Causal FlashAttention forward in float16 (examples/flash_attn.tile), tensors (batch, seq, heads, dim).

Judged against softmax(Q K^T / sqrt(D) + causal mask) V computed in float64 (query i sees keys j <= i, as
the file's mask `bx * block_M + i >= ko * block_N + j` says): every element within 2e-2 absolute
(docs/INTERFACE.md). Both instantiations of the file are checked in full (flash_d128's reference is computed 16
heads at a time); flash_odd (seq = 1000: the last key block is partly past the end, and the causal mask
hides those keys) and flash_small (for the sanitizers) come from gpu/examples.txt."""
import core as C
import refs as R

SHAPES = {"flash": (1, 8, 1024, 64), "flash_d128": (8, 16, 4096, 128), "flash_odd": (2, 4, 1000, 64),
          "flash_small": (1, 2, 256, 64)}


def tests():
    for k, shape in SHAPES.items():
        yield C.Test("flash_attn", k, R.attention_test(*shape, causal=True), small=k == "flash_small",
                     graph=k == "flash_odd")


def benches():
    for k in ("flash_d128", "flash"):
        b, h, s, d = SHAPES[k]
        yield C.Bench("flash_attn", k, R.attention_bench(b, h, s, d, True), nbytes=4 * 2 * b * h * s * d,
                      shape="%d,%d,%d,%d causal" % (b, h, s, d), torch_name="SDPA flash",
                      flops=R.attention_flops(b, h, s, d, True), variants=True)
