import torch

WARP = 32
BLOCK = 64
other = 1
__all__ = ["align", "BLOCK", "WARP"]


def align(x, y):
    return (x + y - 1) // y * y


# Needs torch at run time: skipped with a warning, as in the main file.
CUDA_MAJOR = int(torch.version.cuda)
