import tilelang
import pypkg
import tilelang.language as T

from pypkg.env import BLOCK, LAZY, mark


@mark
def helper(x):
    return x


@tilelang.jit
def ieee(n, mode="rz"):
    assert helper._marked and helper.__name__ == "helper"

    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float64")):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                A[bx * BLOCK + i] = T.ieee_add(A[bx * BLOCK + i], B[bx * BLOCK + i], mode) + LAZY
                B[bx * BLOCK + i] = T.ieee_fmaf(A[bx * BLOCK + i], B[bx * BLOCK + i], 1.0)
                C[bx * BLOCK + i] = T.ieee_fdiv(C[bx * BLOCK + i], C[bx * BLOCK + i], "rd") + T.ieee_frsqrt(A[bx * BLOCK + i])
    return k


@tilelang.jit
def bad_mode(n):
    @T.prim_func
    def k(A: T.Tensor((n,), "float16")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                A[i] = T.ieee_mul(A[i], A[i], "rx")
    return k


@tilelang.jit
def bad_type(n):
    @T.prim_func
    def k(A: T.Tensor((n,), "float16")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                A[i] = T.ieee_mul(A[i], A[i])
    return k


@tilelang.jit
def uses_mode(n):
    from pypkg.env import MODE

    @T.prim_func
    def k(A: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                A[i] = 1.0 if MODE == MODE.ON else 0.0
    return k
