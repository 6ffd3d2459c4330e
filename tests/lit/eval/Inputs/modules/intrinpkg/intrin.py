# Looks an intrinsic up by a key an f-string builds, after f-string assertion messages on its arguments.
from typing import Literal
import tilelang.language as T

decode_f4_to_bf16 = "template <typename T> __device__ void decode_fp4_to_bf16(T *in, T *out) {}"


def get_intrin_group(out_dtype: Literal[T.float16, T.bfloat16] = T.bfloat16, source_bit: int = 4,
                     source_format: Literal[T.int, T.uint] = T.uint, use_twiddling: bool = False):
    out_dtype, source_format = T.dtype(out_dtype), T.dtype(source_format)
    assert out_dtype in [T.float16, T.bfloat16], f"Invalid out_dtype: {out_dtype}. Expected 'float16' or 'bfloat16'."
    assert source_format in [T.int, T.uint], f"Invalid source_format: {source_format!r}"
    dtype_map = {T.float16: "f16", T.bfloat16: "bf16"}
    func_name = f"decode_fp{source_bit}_to_{dtype_map[out_dtype]}"
    if use_twiddling:
        func_name += "_twiddling"
    key = f"fp{source_bit}_to_{dtype_map[out_dtype]}"
    return {"func_name": func_name, "c_source": {"fp4_to_bf16": decode_f4_to_bf16}[key]}
