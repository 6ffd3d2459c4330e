from ..consts import *

# `other` is not in consts' __all__, so the star import does not bind it.
x = other
