from neighbour import FACTOR


def scaled(x):
    return x * FACTOR
