from dataclasses import dataclass, field, replace
from enum import IntEnum, auto


class Layout(IntEnum):
    ROW = auto()
    COL = auto()


@dataclass(frozen=True)
class TileConfig:
    block_m: int = 64
    block_n: int = 128
    layout: Layout = Layout.ROW
    stages: tuple = field(default=(2, 3))

    @property
    def area(self):
        return self.block_m * self.block_n

    def with_block(self, m):
        return replace(self, block_m=m)
