import tilelang
import tilelang.language as T

from ..consts import *
from .. import consts as _common
from mypkg.configs import TileConfig, Layout
from mypkg import VERSION


@tilelang.jit
def scale(n, cfg=TileConfig()):
    cfg = cfg.with_block(32)

    @T.prim_func
    def k(A: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, cfg.block_m), threads=_common.WARP) as bx:
            for i in T.Parallel(cfg.block_m):
                A[bx * cfg.block_m + i] = align(cfg.area, 1000) + VERSION + cfg.layout + BLOCK
    return k
