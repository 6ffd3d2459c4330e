# A module that says who it is: __name__ its dotted name, __file__ the path of its file.
NAME = __name__
FILE = __file__
LABEL = f"{__name__}:{__file__.rsplit('/', 1)[-1]}"
