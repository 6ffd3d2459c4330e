"""FlashAttention forward without the causal mask (tests/gpu/flash_attn_noncausal.tile), float16, tensors
(batch, seq, heads, dim); keys past the end of a seq the key blocks do not divide are masked in the kernel.

Judged against softmax(Q K^T / sqrt(D)) V computed in float64: every element within 2e-2 absolute
(docs/INTERFACE.md)."""
import core as C
import refs as R

SHAPES = {"flash_nc": (1, 8, 1024, 64), "flash_nc_d128": (2, 8, 2048, 128), "flash_nc_odd": (2, 4, 1000, 64),
          "flash_nc_small": (1, 2, 200, 64)}


def tests():
    for k, shape in SHAPES.items():
        yield C.Test("flash_attn_noncausal", k, R.attention_test(*shape, causal=False),
                     small=k == "flash_nc_small", graph=k == "flash_nc_odd")
