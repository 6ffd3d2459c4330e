# A helper package shaped like TileLang's examples/dequantize_gemm/quantize: a re-export from a submodule.
from .intrin import get_intrin_group  # noqa: F401
