"""Reads the C interface of a generated (or hand-written) library the way an application would: from its
header. Every `tilec_status NAME(...)` declaration becomes a Function with typed parameters, so the harness
can call it through ctypes and also check the contract of docs/INTERFACE.md (const pointers for tensors the kernel
only reads, typed pointers where C has the type, the stream last, the per-kernel queries present).

Needs nothing beyond the standard library: the self-check runs it on machines without torch or a GPU.
"""
import ctypes
import re

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DECL = re.compile(r"\btilec_status\s+([A-Za-z_]\w*)\s*\(([^;{}()]*)\)\s*;")
_QUERY = re.compile(r"\b((?:unsigned\s+)?\w+)\s+([A-Za-z_]\w*)_(threads|shared_bytes)\s*\(\s*int\b[^)]*\)\s*;")
_QUALIFIERS = {"restrict", "__restrict", "__restrict__", "volatile"}

SCALARS = {
    "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16, "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64,
    "uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16, "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64, "int": ctypes.c_int, "long": ctypes.c_long, "size_t": ctypes.c_size_t,
    "float": ctypes.c_float, "double": ctypes.c_double, "bool": ctypes.c_bool, "_Bool": ctypes.c_bool,
}
RETURNS = dict(SCALARS, **{"unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint})


class Param:
    """One parameter: kind is 'pointer', 'scalar' or 'stream'; ctype the C base type as written."""

    def __init__(self, kind, name, ctype, const=False):
        self.kind, self.name, self.ctype, self.const = kind, name, ctype, const

    def __repr__(self):
        if self.kind == "pointer":
            return "%s%s *%s" % ("const " if self.const else "", self.ctype, self.name)
        return "%s %s" % (self.ctype, self.name)


class Function:
    def __init__(self, name, params):
        self.name, self.params = name, params

    @property
    def pointers(self):
        return [p for p in self.params if p.kind == "pointer"]

    @property
    def scalars(self):
        return [p for p in self.params if p.kind == "scalar"]

    def signature(self):
        return "tilec_status %s(%s)" % (self.name, ", ".join(repr(p) for p in self.params))


class HeaderError(Exception):
    pass


def parse_param(text, fname):
    toks = re.findall(r"[A-Za-z_]\w*|\*", text)
    toks = [t for t in toks if t not in _QUALIFIERS]
    if len(toks) < 2:
        raise HeaderError("%s: cannot read parameter '%s'" % (fname, text.strip()))
    name = toks[-1]
    body = toks[:-1]
    stars = body.count("*")
    if stars > 1:
        raise HeaderError("%s: parameter '%s' has %d levels of pointers" % (fname, name, stars))
    if stars == 1:
        star = body.index("*")
        const = "const" in body[:star]
        base = " ".join(t for t in body[:star] if t != "const")
        return Param("pointer", name, base, const)
    base = " ".join(t for t in body if t != "const")
    if base in ("cudaStream_t", "CUstream"):
        return Param("stream", name, base)
    if base not in SCALARS:
        raise HeaderError("%s: parameter '%s' has type '%s', which the harness cannot pass" % (fname, name, base))
    return Param("scalar", name, base)


def parse_header(text, lifecycle=None):
    """Returns ({name: Function}, {(name, query): return C type}) of a header's text. The per-kernel
    `tilec_status NAME_load(void)` / `NAME_unload(void)` pair (docs/INTERFACE.md, binary mode; present in .cu mode
    too) and NAME_with_workspace are not kernels: they go into the dict `lifecycle` ({(NAME, "load", "unload" or
    "with_workspace")}) when one is given."""
    code = _COMMENT.sub(" ", text)
    funcs, noargs = {}, []
    for m in _DECL.finditer(code):
        name, plist = m.group(1), m.group(2).strip()
        if plist in ("", "void"):
            noargs.append(name)
            continue
        params = [parse_param(p, name) for p in plist.split(",")]
        if params[-1].kind != "stream" or any(p.kind == "stream" for p in params[:-1]):
            raise HeaderError("%s: the cudaStream_t must be the last parameter and the only one" % name)
        funcs[name] = Function(name, params)
    # NAME_with_workspace (a prim_func with T.alloc_global workspaces: NAME in the caller's memory) is not a kernel
    # of its own: it goes into `lifecycle` as (NAME, "with_workspace").
    for name in [n for n in funcs if n.endswith("_with_workspace") and n[: -len("_with_workspace")] in funcs]:
        del funcs[name]
        if lifecycle is not None:
            lifecycle[(name[: -len("_with_workspace")], "with_workspace")] = name
    for name in noargs:
        stem, _, which = name.rpartition("_")
        if which not in ("load", "unload") or stem not in funcs:
            raise HeaderError("%s: no parameters (the stream is always last)" % name)
        if lifecycle is not None:
            lifecycle[(stem, which)] = name
    queries = {}
    for m in _QUERY.finditer(code):
        queries[(m.group(2), m.group(3))] = m.group(1)
    return funcs, queries


def contract_problems(funcs, queries, text):
    """What the header does against docs/INTERFACE.md, independent of any kernel's semantics."""
    problems = []
    if "TILEC_ABI_VERSION" not in text:
        problems.append("no TILEC_ABI_VERSION")
    for sym in ("tilec_status_string", "tilec_last_cuda_error"):
        if not re.search(r"\b%s\s*\(" % sym, text):
            problems.append("no %s()" % sym)
    if 'extern "C"' not in text:
        problems.append('no extern "C" block for C++')
    for name in funcs:
        for q in ("threads", "shared_bytes"):
            if (name, q) not in queries:
                problems.append("no %s_%s(int sm)" % (name, q))
    return problems


class Library:
    """A shared library and its header. Loaded with RTLD_LOCAL, so two libraries may both define
    tilec_status_string and friends."""

    def __init__(self, so_path, header_path):
        self.so_path, self.header_path = so_path, header_path
        with open(header_path, encoding="utf-8", errors="replace") as f:
            self.header = f.read()
        self.lifecycle = {}
        self.funcs, self.queries = parse_header(self.header, self.lifecycle)
        self.dll = ctypes.CDLL(so_path, mode=ctypes.RTLD_LOCAL)
        self._bound = {}
        try:
            self._status_string = self.dll.tilec_status_string
            self._status_string.restype = ctypes.c_char_p
            self._status_string.argtypes = [ctypes.c_int]
        except AttributeError:
            self._status_string = None
        try:
            self._last_error = self.dll.tilec_last_cuda_error
            self._last_error.restype = ctypes.c_int
            self._last_error.argtypes = []
        except AttributeError:
            self._last_error = None

    def function(self, name):
        """The ctypes function for an exported kernel, with argtypes from the header."""
        if name in self._bound:
            return self._bound[name]
        if name not in self.funcs:
            raise KeyError(name)
        decl = self.funcs[name]
        fn = getattr(self.dll, name)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p if p.kind in ("pointer", "stream") else SCALARS[p.ctype]
                       for p in decl.params]
        self._bound[name] = (fn, decl)
        return self._bound[name]

    def load(self, name):
        """Calls NAME_load() when the header declares it; returns its status, or None."""
        sym = self.lifecycle.get((name, "load"))
        if sym is None:
            return None
        fn = getattr(self.dll, sym)
        fn.restype, fn.argtypes = ctypes.c_int, []
        return fn()

    def query(self, name, which, sm):
        rt = self.queries.get((name, which))
        if rt is None:
            return None
        fn = getattr(self.dll, "%s_%s" % (name, which))
        fn.restype = RETURNS.get(rt, ctypes.c_long)
        fn.argtypes = [ctypes.c_int]
        return fn(sm)

    def status_string(self, status):
        if self._status_string is None:
            return "status %d" % status
        s = self._status_string(status)
        return (s or b"").decode("utf-8", "replace") or "status %d (empty tilec_status_string)" % status

    def last_cuda_error(self):
        return None if self._last_error is None else self._last_error()
