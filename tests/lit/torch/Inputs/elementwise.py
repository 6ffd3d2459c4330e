# TileLang-style element-wise kernels whose outputs TileLang's wrapper allocates: out_idx as an int on
# @tilelang.jit, as a list to tilelang.compile, and an eager kernel's T.empty output.
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=-1)
def relu(M, N, block_M=32, block_N=64, dtype="float16"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                Y[by * block_M + i, bx * block_N + j] = T.max(X[by * block_M + i, bx * block_N + j], 0)
    return main


def mul_add(N, block=128):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32"),
             D: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * B[bx * block + i]
                D[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return main


@tilelang.jit
def scale(A, factor, block=128, dtype=T.float32):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), dtype)
    B = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
        for i, j in T.Parallel(block, N):
            B[bx * block + i, j] = A[bx * block + i, j] * factor
    return B


relu_rows = relu(T.dynamic("rows"), 256)
mul_add_1k = tilelang.compile(mul_add(1024), out_idx=[2, 3])
scale_rows = scale.compile(N=64, factor=3.0)
