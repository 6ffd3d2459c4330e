/// \file
/// Programs over tensors past 2^31 elements (Gen.h: BigProgram): element-wise kernels (1-D and 2-D grids),
/// row-wise ones (a row block through shared memory, a row reduction) and gathers (rows chosen by an int32
/// index tensor), over int8, float16 and float32 tensors of static or T.dynamic sizes, with and without
/// tails, and GEMMs whose operands sm_90a loads with TMA (the oracle checks their tensor maps and coordinates).
/// Some read a few rows of a T.StridedTensor (float or packed int4) whose row stride carries its offsets past
/// 2^31. A few have static sizes whose offsets pass 2^63: those must be refused.
#include "Gen.h"

namespace tilec::difffuzz {

namespace {

struct BigGen : Rng {

    BigProgram p;
    std::string dt;
    bool dyn = false;

    static std::string num(int64_t v) { return std::to_string(v); }
    /// A size: its text (a T.dynamic symbol or the constant) and its value.
    std::string size(const std::string &sym, int64_t &v) {
        if (!dyn) return num(v);
        v = std::min<int64_t>(v, INT32_MAX - in(0, 100)); // a T.dynamic size is an int32
        p.dyn[sym] = v;
        return sym;
    }
    std::string header() const {
        std::string h = "import tilelang.language as T\n\n";
        for (auto &[n, v] : p.dyn) h += n + " = T.dynamic(\"" + n + "\")\n";
        if (!p.dyn.empty()) {
            h += "# dynamic:";
            for (auto &[n, v] : p.dyn) h += " " + n + "=" + num(v);
            h += "\n";
        }
        return h + "\n\n@T.prim_func\n";
    }
    /// Past 2^31 elements: mostly just past, sometimes 4 G elements; cols from small to huge.
    std::pair<int64_t, int64_t> shape2D() {
        static const std::vector<int64_t> cols{1, 3, 64, 1000, 2048, 4096, 65536, 1 << 20};
        if (coin(0.25)) return {((int64_t)1 << 31) + in(-1000, (int64_t)1 << 30), in(1, 4)}; // a row index past 2^31
        int64_t c = pick(cols);
        int64_t total = coin(0.5) ? ((int64_t)1 << 31) + in(-4096, 1 << 20) : in((int64_t)1 << 31, (int64_t)1 << 33);
        int64_t r = std::max<int64_t>(1, total / c + (coin(0.5) ? 0 : in(0, 7)));
        return {r, c};
    }

    void elementwise1D() {
        p.kind = "elementwise 1-D";
        int64_t n = ((int64_t)1 << 31) + (coin(0.3) ? 0 : in(-100000, (int64_t)1 << 31));
        static const std::vector<int64_t> blks{128, 256, 1024, 2048};
        int64_t blk = pick(blks), th = pick(std::vector<int64_t>{64, 128, 256});
        std::string N = size("n", n);
        bool guard = dyn || n % blk || coin(0.3);
        p.text = header() + "def " + p.name + "(A: T.Tensor((" + N + ",), \"" + dt + "\"), B: T.Tensor((" + N + ",), \"" + dt +
                 "\")):\n    with T.Kernel(T.ceildiv(" + N + ", " + num(blk) + "), threads=" + num(th) + ") as bx:\n" +
                 "        for i in T.Parallel(" + num(blk) + "):\n" +
                 (guard ? "            if bx * " + num(blk) + " + i < " + N + ":\n    " : "") +
                 "            B[bx * " + num(blk) + " + i] = A[bx * " + num(blk) + " + i] + A[bx * " + num(blk) + " + i]\n";
        p.reach = (n + blk - 1) / blk * blk;
    }

    /// Rows on blockIdx.x (2^31 - 1 blocks), columns on blockIdx.y (65535).
    void elementwise2D(bool past63) {
        p.kind = past63 ? "elementwise 2-D past 2^63" : "elementwise 2-D";
        auto [r, c] = shape2D();
        int64_t bm = pick(std::vector<int64_t>{1, 2, 4, 8}), bn = pick(std::vector<int64_t>{32, 64, 256});
        bn = std::min(bn, std::max<int64_t>(1, c));
        if (past63) r = ((int64_t)1 << 33) + in(0, 1000), c = ((int64_t)1 << 30) + in(0, 1 << 20), bm = 4, bn = 256;
        int64_t gx = (r + bm - 1) / bm, gy = std::min<int64_t>((c + bn - 1) / bn, past63 ? 1024 : 65535);
        if (gx > 2147483647) bm = 8, gx = (r + bm - 1) / bm;
        std::string R = size("m", r), C = size("c", c);
        std::string row = "bx * " + num(bm) + " + i", col = "by * " + num(bn) + " + j";
        bool guard = dyn || r % bm || c % bn || gy * bn < c;
        std::string grid = past63 ? num(gx) + ", " + num(gy)
                                  : "T.ceildiv(" + R + ", " + num(bm) + "), T.ceildiv(" + C + ", " + num(bn) + ")";
        p.text = header() + "def " + p.name + "(A: T.Tensor((" + R + ", " + C + "), \"" + dt + "\"), B: T.Tensor((" + R +
                 ", " + C + "), \"" + dt + "\")):\n    with T.Kernel(" + grid + ", threads=128) as (bx, by):\n" +
                 "        for i, j in T.Parallel(" + num(bm) + ", " + num(bn) + "):\n" +
                 (guard && !past63 ? "            if " + row + " < " + R + " and " + col + " < " + C + ":\n    " : "") +
                 "            B[" + row + ", " + col + "] = A[" + row + ", " + col + "] + A[" + row + ", " + col + "]\n";
        p.reach = (past63 ? (gx * bm - 1) * c + gy * bn - 1 : r * c);
        p.pastInt64 = past63 && !dyn;
    }

    /// A block of rows through shared memory (a cp.async tile transfer), or a row reduction.
    void rowwise() {
        p.kind = "row-wise";
        static const std::vector<int64_t> cols{256, 1000, 2048, 4096};
        int64_t c = pick(cols), bm = pick(std::vector<int64_t>{1, 2, 4});
        if (c * bm * 4 > 32768) bm = 1;
        int64_t r = (((int64_t)1 << 31) + in(0, (int64_t)1 << 31)) / c + in(0, 3);
        std::string R = size("m", r), C = num(c), BM = num(bm);
        std::string head = header() + "def " + p.name + "(A: T.Tensor((" + R + ", " + C + "), \"" + dt + "\"), ";
        std::string launch = "    with T.Kernel(T.ceildiv(" + R + ", " + BM + "), threads=128) as bx:\n";
        if (coin(0.5)) {
            p.text = head + "B: T.Tensor((" + R + ", " + C + "), \"" + dt + "\")):\n" + launch +
                     "        s = T.alloc_shared((" + BM + ", " + C + "), \"" + dt + "\")\n" +
                     "        T.copy(A[bx * " + BM + ", 0], s)\n" +
                     "        for i, j in T.Parallel(" + BM + ", " + C + "):\n" +
                     "            s[i, j] = s[i, j] + s[i, j]\n" +
                     "        T.copy(s, B[bx * " + BM + ", 0])\n";
        } else {
            p.kind = "row reduction";
            p.text = head + "S: T.Tensor((" + R + ",), \"float32\")):\n" + launch +
                     "        f = T.alloc_fragment((" + BM + ", " + C + "), \"float32\")\n" +
                     "        r = T.alloc_fragment((" + BM + ",), \"float32\")\n" +
                     "        T.copy(A[bx * " + BM + ", 0], f)\n" +
                     "        T.reduce_sum(f, r, dim=1)\n" +
                     "        T.copy(r, S[bx * " + BM + "])\n";
        }
        p.reach = r * c;
    }

    /// A GEMM over 16-bit operands past 2^31 elements, for the TMA tile loads (and TMA stores) of sm_90a: rows of
    /// A past 2^31 (a 32-bit TMA coordinate cannot reach them) or A, B, C past 2^31 elements with rows below it;
    /// M on blockIdx.x (2^31 - 1 blocks), N on blockIdx.y.
    void gemm() {
        p.kind = "gemm";
        dt = coin(0.5) ? "float16" : "bfloat16";
        int64_t bm = pick(std::vector<int64_t>{64, 128}), bn = pick(std::vector<int64_t>{64, 128}), bk = pick(std::vector<int64_t>{32, 64});
        int64_t m, k, n;
        if (coin(0.4)) m = ((int64_t)1 << 31) + in(-(int64_t)bm, 1 << 20), k = pick(std::vector<int64_t>{32, 64}), n = bn;
        else m = (((int64_t)1 << 31) + in(0, (int64_t)1 << 30)) / 4096 + in(0, 300), k = 4096, n = pick(std::vector<int64_t>{128, 4096, 65536 + 64});
        const bool transB = coin(0.3);
        std::string M = size("m", m), K = size("k", k), N = size("n", n);
        std::string Bshape = transB ? "(" + N + ", " + K + ")" : "(" + K + ", " + N + ")";
        std::string Bs = transB ? "(" + num(bn) + ", " + num(bk) + ")" : "(" + num(bk) + ", " + num(bn) + ")";
        std::string Bat = transB ? "B[by * " + num(bn) + ", ko * " + num(bk) + "]" : "B[ko * " + num(bk) + ", by * " + num(bn) + "]";
        p.text = header() + "def " + p.name + "(A: T.Tensor((" + M + ", " + K + "), \"" + dt + "\"), B: T.Tensor(" + Bshape +
                 ", \"" + dt + "\"), C: T.Tensor((" + M + ", " + N + "), \"" + dt + "\")):\n" +
                 "    with T.Kernel(T.ceildiv(" + M + ", " + num(bm) + "), T.ceildiv(" + N + ", " + num(bn) + "), threads=128) as (bx, by):\n" +
                 "        A_s = T.alloc_shared((" + num(bm) + ", " + num(bk) + "), \"" + dt + "\")\n" +
                 "        B_s = T.alloc_shared(" + Bs + ", \"" + dt + "\")\n" +
                 "        C_f = T.alloc_fragment((" + num(bm) + ", " + num(bn) + "), \"float32\")\n" +
                 "        T.clear(C_f)\n" +
                 "        for ko in T.Pipelined(T.ceildiv(" + K + ", " + num(bk) + "), num_stages=" + num(in(2, 3)) + "):\n" +
                 "            T.copy(A[bx * " + num(bm) + ", ko * " + num(bk) + "], A_s)\n" +
                 "            T.copy(" + Bat + ", B_s)\n" +
                 "            T.gemm(A_s, B_s, C_f" + (transB ? ", transpose_B=True" : "") + ")\n" +
                 "        T.copy(C_f, C[bx * " + num(bm) + ", by * " + num(bn) + "])\n";
        p.reach = std::max(m * k, m * n);
    }

    /// A few rows of a strided tensor whose row stride makes its storage pass 2^31 elements (a slice of a
    /// huge tensor: a batch's rows, every S-th), or of a packed int4 one whose bytes pass it: the element
    /// count is small, the offsets are not. Read element by element or by a tile copy through shared memory.
    void strided() {
        const bool packed = coin(0.4);
        p.kind = packed ? "strided int4 rows" : "strided rows";
        if (packed) dt = "int4";
        int64_t r = in(3, 64), c = pick(std::vector<int64_t>{2, 64, 1000, 4096});
        const int64_t reachElems = packed ? ((int64_t)1 << 32) : ((int64_t)1 << 31); // bytes past 2^31 for int4
        int64_t st = std::min<int64_t>(INT32_MAX - 1, reachElems / (r - 1) + in(0, 1 << 20));
        st = std::max(st, c);
        if (packed) st += st % 2; // a packed tensor's strides are even
        const int64_t bn = std::min<int64_t>(c, 256);
        std::string R = size("m", r), S = size("sa", st), C = num(c), out = packed ? "int8" : dt;
        if (packed && dyn) S = num(st), p.dyn.erase("sa"); // a run-time stride of int4 is refused (not provably even)
        std::string col = "by * " + num(bn) + " + j";
        std::string body = coin(0.5) ? "        for j in T.Parallel(" + num(bn) + "):\n            if " + col + " < " + C +
                                           ":\n                B[bx, " + col + "] = A[bx, " + col + "]\n"
                                     : "        s = T.alloc_shared((1, " + num(bn) + "), \"" + out + "\")\n" +
                                           "        T.copy(A[bx, by * " + num(bn) + "], s)\n        T.copy(s, B[bx, by * " + num(bn) + "])\n";
        p.text = header() + "def " + p.name + "(A: T.StridedTensor((" + R + ", " + C + "), (" + S + ", 1), \"" + dt +
                 "\"), B: T.Tensor((" + R + ", " + C + "), \"" + out + "\")):\n" +
                 "    with T.Kernel(" + R + ", T.ceildiv(" + C + ", " + num(bn) + "), threads=128) as (bx, by):\n" + body;
        p.reach = (r - 1) * (packed ? st / 2 : st) + (packed ? c / 2 : c);
    }

    /// B[row] = A[Idx[row]]: the index read from memory.
    void gather() {
        p.kind = "gather";
        auto [r, c] = shape2D();
        c = std::min<int64_t>(c, 4096);
        r = (((int64_t)1 << 31) + in(0, 1 << 30)) / c + 1;
        int64_t n = coin(0.5) ? in(1, 1 << 16) : r, bm = pick(std::vector<int64_t>{1, 2, 4});
        int64_t bn = std::min<int64_t>(c, 256);
        std::string R = size("m", r), N = size("n", n), C = num(c);
        std::string row = "bx * " + num(bm) + " + i", col = "by * " + num(bn) + " + j";
        p.text = header() + "def " + p.name + "(A: T.Tensor((" + R + ", " + C + "), \"" + dt + "\"), Idx: T.Tensor((" + N +
                 ",), \"int32\"), B: T.Tensor((" + N + ", " + C + "), \"" + dt + "\")):\n" +
                 "    with T.Kernel(T.ceildiv(" + N + ", " + num(bm) + "), T.ceildiv(" + C + ", " + num(bn) + "), threads=128) as (bx, by):\n" +
                 "        for i, j in T.Parallel(" + num(bm) + ", " + num(bn) + "):\n" +
                 "            if " + row + " < " + N + " and " + col + " < " + C + ":\n" +
                 "                B[" + row + ", " + col + "] = A[Idx[" + row + "], " + col + "]\n";
        p.reach = r * c;
    }
};

} // namespace

BigProgram generateBig(uint64_t seed) {
    BigGen b;
    b.g.seed(seed ^ 0xb16b16b16ull);
    b.p.seed = seed;
    b.dt = b.pick(std::vector<std::string>{"int8", "int8", "float16", "float16", "bfloat16", "float32"});
    b.dyn = b.coin(0.3);
    b.p.name = "big";
    switch (b.in(0, 9)) {
    case 0:
    case 1: b.elementwise1D(); break;
    case 2:
    case 3:
    case 4: b.elementwise2D(false); break;
    case 5: b.dyn = false, b.elementwise2D(true); break;
    case 6:
    case 7: b.rowwise(); break;
    default: b.gather(); break;
    }
    // Strided and packed tensors past 2^31 (session 38), from a stream of its own (the draws above unchanged).
    if (Rng{std::mt19937_64(seed * 0x9e3779b97f4a7c15ull + 0x57b16)}.coin(0.35)) {
        b.p.dyn.clear(), b.p.pastInt64 = false;
        b.strided();
    }
    // TMA programs (issue 23): a GEMM past 2^31 elements, from a stream of its own (the draws above unchanged).
    if (Rng{std::mt19937_64(seed * 0x9e3779b97f4a7c15ull + 0x7a)}.coin(0.25)) {
        b.p.dyn.clear(), b.p.pastInt64 = false;
        b.gemm();
    }
    return b.p;
}

} // namespace tilec::difffuzz
