from cycle_b import g


def f():
    return 1
