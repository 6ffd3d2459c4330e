"""Floating-point facts the GPU harness judges results by: the formats of every output type, ulp sizes,
correct rounding of float64 references, and the ulp distance between two values of one format.

Each function exists twice on purpose. The pure-Python versions (py_*) work bit by bit on single values and
need nothing installed; the self-check tests them exhaustively on the 8- and 16-bit formats and against
Python's own float32/float16 packing. The torch versions (t_*) do the same on whole GPU tensors and are what
the tests use; the self-check compares them with the pure-Python ones on random bit patterns wherever torch
is present, so the fast path is proven against the slow one on the machine that runs the tests.
"""
import math
import struct

# mant: stored mantissa bits; ebits: exponent bits; ieee: has infinities (the e4m3 "fn" format has none and
# only one NaN pattern per sign); torch: the torch dtype name; ctype: the C type the generated header uses for
# a pointer to this element type (docs/INTERFACE.md: void for types C does not have).
FLOATS = {
    "float16": dict(bits=16, mant=10, ebits=5, ieee=True, torch="float16", ctype="void"),
    "bfloat16": dict(bits=16, mant=7, ebits=8, ieee=True, torch="bfloat16", ctype="void"),
    "float32": dict(bits=32, mant=23, ebits=8, ieee=True, torch="float32", ctype="float"),
    "float64": dict(bits=64, mant=52, ebits=11, ieee=True, torch="float64", ctype="double"),
    "float8_e4m3": dict(bits=8, mant=3, ebits=4, ieee=False, torch="float8_e4m3fn", ctype="void"),
    "float8_e5m2": dict(bits=8, mant=2, ebits=5, ieee=True, torch="float8_e5m2", ctype="void"),
}
INTS = {
    "bool": dict(bits=8, torch="bool", ctype="bool"),
    "int8": dict(bits=8, torch="int8", ctype="int8_t"),
    "int16": dict(bits=16, torch="int16", ctype="int16_t"),
    "int32": dict(bits=32, torch="int32", ctype="int32_t"),
    "int64": dict(bits=64, torch="int64", ctype="int64_t"),
    "uint8": dict(bits=8, torch="uint8", ctype="uint8_t"),
    "uint16": dict(bits=16, torch="uint16", ctype="uint16_t"),
    "uint32": dict(bits=32, torch="uint32", ctype="uint32_t"),
    "uint64": dict(bits=64, torch="uint64", ctype="uint64_t"),
}
ALIASES = {"float": "float32", "half": "float16", "double": "float64", "float8_e4m3fn": "float8_e4m3"}

# Unit roundoff of float32 arithmetic, the precision every reduction in the examples accumulates in.
U_F32 = 2.0 ** -24


def canon(dtype):
    """The canonical name of a dtype spelling of the language."""
    return ALIASES.get(dtype, dtype)


def fmt(dtype):
    d = canon(dtype)
    if d not in FLOATS:
        raise KeyError("not a floating-point type: " + dtype)
    f = dict(FLOATS[d])
    f["bias"] = (1 << (f["ebits"] - 1)) - 1
    f["emin"] = 1 - f["bias"]                       # exponent of the smallest normal
    if f["ieee"]:
        f["emax"] = f["bias"]
        f["max"] = (2.0 - 2.0 ** -f["mant"]) * 2.0 ** f["emax"]
    else:                                           # e4m3fn: the all-ones exponent holds normals too
        f["emax"] = f["bias"] + 1
        f["max"] = (2.0 - 2.0 * 2.0 ** -f["mant"]) * 2.0 ** f["emax"]   # 448: mantissa 111 is NaN
    return f


def itemsize(dtype):
    d = canon(dtype)
    return (FLOATS.get(d) or INTS[d])["bits"] // 8


def gamma(n, u=U_F32):
    """Higham's gamma_n = n*u / (1 - n*u): bounds the relative error of any summation order of n terms
    (against the sum of their absolute values) in arithmetic with unit roundoff u."""
    nu = n * u
    if nu >= 1:
        return math.inf
    return nu / (1 - nu)


# ---------------------------------------------------------------- pure Python, one value at a time ----

def py_decode(bits, dtype):
    """The value of a bit pattern of a floating-point format (NaN as float('nan'))."""
    f = fmt(dtype)
    nb, m, e = f["bits"], f["mant"], f["ebits"]
    bits &= (1 << nb) - 1
    sign = -1.0 if bits >> (nb - 1) else 1.0
    exp = (bits >> m) & ((1 << e) - 1)
    man = bits & ((1 << m) - 1)
    if exp == (1 << e) - 1:
        if f["ieee"]:
            return sign * math.inf if man == 0 else math.nan
        if man == (1 << m) - 1:
            return math.nan
    if exp == 0:
        return sign * math.ldexp(man, f["emin"] - m)
    return sign * math.ldexp((1 << m) + man, exp - f["bias"] - m)


def py_is_nan_bits(bits, dtype):
    return math.isnan(py_decode(bits, dtype))


def py_ordered(bits, dtype):
    """Maps a sign-magnitude bit pattern to an integer that grows with the value (+0 and -0 both map to 0),
    so that two finite values of one format are |ordered(a) - ordered(b)| representable steps apart."""
    nb = fmt(dtype)["bits"]
    bits &= (1 << nb) - 1
    mag = bits & ((1 << (nb - 1)) - 1)
    return -mag if bits >> (nb - 1) else mag


def py_ulp_distance(a_bits, b_bits, dtype):
    """Number of representable steps between two values of one format; infinite when exactly one is NaN,
    0 when both are."""
    na, nb_ = py_is_nan_bits(a_bits, dtype), py_is_nan_bits(b_bits, dtype)
    if na or nb_:
        return 0 if na and nb_ else math.inf
    return abs(py_ordered(a_bits, dtype) - py_ordered(b_bits, dtype))


def py_ulp(x, dtype):
    """The spacing of the format's values in the binade that holds |x| (the subnormal spacing below the
    smallest normal): the size of one ulp of the output type at the exact result x."""
    f = fmt(dtype)
    if x == 0 or math.isinf(x) or math.isnan(x):
        e = f["emin"] if x == 0 else f["emax"]
    else:
        e = max(math.frexp(abs(x))[1] - 1, f["emin"])
    return math.ldexp(1.0, e - f["mant"])


def py_round(x, dtype):
    """x (a Python float, i.e. float64) correctly rounded to the format, ties to even, as a Python float.
    Overflow gives an infinity (IEEE formats) or NaN (e4m3fn, which has no infinity)."""
    f = fmt(dtype)
    if math.isnan(x) or math.isinf(x):
        return x if f["ieee"] or math.isnan(x) else math.nan
    u = py_ulp(x, dtype)
    q = x / u                                       # exact: u is a power of two inside float64's range
    r = round(q) * u                                # round() is half-to-even
    if abs(r) > f["max"]:
        return math.copysign(math.inf, x) if f["ieee"] else math.nan
    return r


def py_encode(x, dtype):
    """The bit pattern of a value that the format represents exactly (use py_round first)."""
    f = fmt(dtype)
    nb, m = f["bits"], f["mant"]
    if math.isnan(x):
        return ((1 << (nb - 1)) - 1)                # the positive all-ones pattern is NaN in every format
    sign = 1 << (nb - 1) if math.copysign(1.0, x) < 0 else 0
    a = abs(x)
    if math.isinf(a):
        if not f["ieee"]:
            raise ValueError("format has no infinity")
        return sign | (((1 << f["ebits"]) - 1) << m)
    if a == 0:
        return sign
    e = math.frexp(a)[1] - 1
    if e < f["emin"]:
        man = a / math.ldexp(1.0, f["emin"] - m)
        if man != int(man):
            raise ValueError("%r is not representable" % x)
        return sign | int(man)
    man = a / math.ldexp(1.0, e - m) - (1 << m)
    if man != int(man):
        raise ValueError("%r is not representable" % x)
    return sign | ((e + f["bias"]) << m) | int(man)


def py_float32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def py_float16_bits(x):
    return struct.unpack("<H", struct.pack("<e", x))[0]


# ---------------------------------------------------------------- torch, whole tensors at a time ----

def torch_dtype(torch, dtype):
    d = canon(dtype)
    name = (FLOATS.get(d) or INTS[d])["torch"]
    return getattr(torch, name)


def t_bits(torch, x, dtype):
    """The bit patterns of a float tensor as non-negative int64 values."""
    nb = fmt(dtype)["bits"]
    view = {8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[nb]
    b = x.contiguous().view(view).to(torch.int64)
    if nb < 64:
        b = b & ((1 << nb) - 1)
    return b


def t_ordered(torch, x, dtype):
    nb = fmt(dtype)["bits"]
    b = t_bits(torch, x, dtype)
    if nb == 64:
        mag = b & 0x7FFFFFFFFFFFFFFF
        neg = b < 0
    else:
        mag = b & ((1 << (nb - 1)) - 1)
        neg = (b >> (nb - 1)) == 1
    return torch.where(neg, -mag, mag)


BIG = 1 << 62   # stands for "infinitely many ulps" in int64 results


def t_ulp_distance(torch, a, b, dtype):
    """Element-wise ulp distance of two tensors of one float format (int64; BIG where exactly one is NaN)."""
    d = (t_ordered(torch, a, dtype) - t_ordered(torch, b, dtype)).abs()
    na, nb_ = a.float().isnan(), b.float().isnan()
    d = torch.where(na & nb_, torch.zeros_like(d), d)
    return torch.where(na ^ nb_, torch.full_like(d, BIG), d)


def t_ulp(torch, x64, dtype):
    """Element-wise py_ulp of a float64 tensor."""
    f = fmt(dtype)
    finite = torch.isfinite(x64)
    _, e = torch.frexp(torch.where(finite, x64, torch.zeros_like(x64)))
    e = torch.clamp(e.to(torch.int64) - 1, min=f["emin"])
    e = torch.where(x64 == 0, torch.full_like(e, f["emin"]), e)    # frexp(0) has exponent 0, not emin
    e = torch.where(finite, e, torch.full_like(e, f["emax"]))
    return torch.ldexp(torch.ones_like(x64), (e - f["mant"]).to(x64.dtype))


def t_round(torch, x64, dtype):
    """Element-wise py_round: float64 in, float64 out holding values of the format exactly. torch's own
    casts from float64 go through float32 first, and double rounding can be off by one ulp."""
    f = fmt(dtype)
    u = t_ulp(torch, x64, dtype)
    r = torch.round(x64 / u) * u                    # torch.round rounds half to even
    over = r.abs() > f["max"]
    if f["ieee"]:
        r = torch.where(over, torch.sign(x64) * math.inf, r)
    else:
        r = torch.where(over | torch.isinf(x64), torch.full_like(r, math.nan), r)
    return torch.where(torch.isnan(x64), x64, r)


def t_to_format(torch, x64_exact, dtype):
    """A float64 tensor whose values the format holds exactly, converted to the format (exact)."""
    return x64_exact.to(torch.float32).to(torch_dtype(torch, dtype)) if fmt(dtype)["bits"] < 32 \
        else x64_exact.to(torch_dtype(torch, dtype))
