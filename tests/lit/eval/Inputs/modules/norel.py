from .sibling import x
