# A package's __init__.py runs when one of its own names is needed (`from mypkg import VERSION`), not when only
# a submodule is reached through it.
from .consts import WARP
VERSION = 3
