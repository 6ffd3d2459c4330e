/// \file
/// Random tile programs and their .tile text (Gen.h).
#include "Gen.h"

#include "Check.h"

#include <algorithm>
#include <functional>
#include <regex>

namespace tilec::difffuzz {

std::string GExpr::print() const {
    if (op.empty()) return leaf;
    auto k = [&](size_t i) { return kids[i]->print(); };
    if (op == "max" || op == "min") return "T." + op + "(" + k(0) + ", " + k(1) + ")";
    if (op == "abs") return "T.abs(" + k(0) + ")";
    if (op == "ite") return "T.if_then_else(" + k(0) + ", " + k(1) + ", " + k(2) + ")";
    if (op == "neg") return "(-" + k(0) + ")";
    return "(" + k(0) + " " + op + " " + k(1) + ")";
}

void GExpr::collect(std::set<std::string> &out) const {
    out.insert(reads.begin(), reads.end());
    for (auto &c : kids) c->collect(out);
}

namespace {

std::string num(int64_t v) { return std::to_string(v); }

bool is2D(const std::string &b) { return b == "s0" || b == "s1" || b == "f0" || b == "f1" || b == "acc"; }

struct Printer {
    const GProgram &p;
    std::string out;
    int serialDepth = 0; ///< names the loop variables it0, it1, ...
    /// authorSyncs: a per-thread statement ran since the author's last T.sync_threads; inside a branch on the
    /// thread index no barrier is written (its statements count as the branch's, outside it).
    bool threadSince = false;
    int divergent = 0;
    void line(int ind, const std::string &s) { out += std::string(4 * ind, ' ') + s + "\n"; }
    void authorSync(int ind) {
        if (p.authorSyncs && !divergent) line(ind, "T.sync_threads()"), threadSince = false;
    }
    std::string origin(const GOp &o, const std::string &extR, const std::string &extC) const {
        std::string r = "by * BM + " + num(o.dr), c = "bx * BN + " + num(o.dc);
        if (!o.slice) return o.tensor + "[" + r + ", " + c + "]";
        return o.tensor + "[" + r + ":" + r + " + " + extR + ", " + c + ":" + c + " + " + extC + "]";
    }
    void ops(int ind, const std::vector<GOp> &v) {
        for (auto &o : v) {
            bool mine = perThreadOp(o);
            if (mine && threadSince) authorSync(ind);
            bool branch = o.kind == GOp::IfThread || o.kind == GOp::IfThreadScalar;
            divergent += branch;
            op(ind, o);
            divergent -= branch;
            threadSince |= mine || holdsPerThread(o.kids) || holdsPerThread(o.elseKids);
        }
        if (v.empty()) line(ind, "pass");
    }
    void op(int ind, const GOp &o) {
        switch (o.kind) {
        case GOp::Load: {
            const std::string fn = o.async ? "T.async_copy(" : "T.copy(";
            if (is2D(o.dst)) line(ind, fn + origin(o, "BM", "BN") + ", " + o.dst + ")");
            else line(ind, fn + o.tensor + "[by * BM + " + num(o.dr) + ", bx * BN + " + num(o.dc) + "], " + o.dst + ")");
            return;
        }
        case GOp::AsyncWait:
            line(ind, o.n >= 0 ? "T.ptx_wait_group(" + num(o.n) + ")" : "T.ptx_commit_group()");
            return;
        case GOp::Store:
            if (is2D(o.src)) line(ind, "T.copy(" + o.src + ", " + (o.tensor == "UO" ? "UO" : "Y") + "[by * BM, bx * BN])");
            else line(ind, "T.copy(" + o.src + ", R[(by * " + num(p.gx) + " + bx) * (BM + BN)])");
            return;
        case GOp::TileCopy:
            if (o.h < 0) line(ind, "T.copy(" + o.src + ", " + o.dst + ")");
            else
                line(ind, "T.copy(" + o.src + "[" + num(o.r0) + ":" + num(o.r0 + o.h) + ", " + num(o.c0) + ":" +
                              num(o.c0 + o.w) + "], " + o.dst + "[" + num(o.r1) + ":" + num(o.r1 + o.h) + ", " +
                              num(o.c1) + ":" + num(o.c1 + o.w) + "])");
            return;
        case GOp::Fill:
            if (o.dst == "v") line(ind, "v = " + o.value->print());
            else if (o.value->leaf == "0.0") line(ind, "T.clear(" + o.dst + ")");
            else line(ind, "T.fill(" + o.dst + ", " + o.value->print() + ")");
            return;
        case GOp::Parallel: {
            std::string idx = o.dst == "rm" ? "i" : o.dst == "rn" ? "j" : "i, j";
            std::string ext = !o.end.empty() ? o.end : o.dst == "rm" ? "BM" : o.dst == "rn" ? "BN" : "BM, BN";
            std::string at = idx;
            if (o.boxH > 0) ext = num(o.boxH) + ", " + num(o.boxW), at = "i + " + num(o.boxR) + ", j + " + num(o.boxC);
            std::function<std::string(std::string)> js = [](std::string t) { return t; };
            if (o.expand > 1) { // j = jq * S + w, w over an inner loop (GOp::expand)
                idx = "i, jq", ext = "BM, BN // " + num(o.expand);
                const std::string jx = "(jq * " + num(o.expand) + " + w)";
                js = [jx](std::string t) { return std::regex_replace(t, std::regex("\\bj\\b"), jx); };
            }
            line(ind, "for " + idx + " in T.Parallel(" + ext + "):");
            int in = ind + 1;
            if (o.expand > 1) line(in++, "for w in T.serial(" + num(o.expand) + "):");
            if (o.gather) line(in, "row = T.cast(T.abs(A[by * BM + i, 0]) * 7.0, \"int32\") % " + num(p.ra));
            if (o.cond) line(in++, "if " + js(o.cond->print()) + ":");
            line(in, o.dst + "[" + js(at) + "] = " + js(o.value->print()));
            return;
        }
        case GOp::Reduce:
            line(ind, "T.reduce_" + o.reduceKind + "(" + o.src + ", " + o.dst + ", dim=" + num(o.dim) +
                          (o.clear ? "" : ", clear=False") + ")");
            return;
        case GOp::AtomicRegion:
            line(ind, "T.atomic_add(Z[by * BM + " + num(o.dr) + "], " + o.src + ")");
            return;
        case GOp::AtomicElem:
            line(ind, "for i, j in T.Parallel(BM, BN):");
            line(ind + 1, "T.atomic_add(Z[(i * " + num(o.dr) + " + j + bx) % " + num(p.zn) + "], " + o.src + "[i, j])");
            return;
        case GOp::Gemm: {
            // clear_accum clears only in a trip of the loop: with a dynamic K of 0 there is none, and reading acc
            // after it would read registers nothing wrote (undefined, not a miscompile: seeds 12696812, 12942427).
            // So with a run-time start, which can lie at or past the end in some blocks, or a conditional end.
            // Likewise under a condition that may fail in every iteration (guarded).
            if (!o.clearAccum || p.dynamic || !o.start.empty() || !o.end.empty() || o.guarded) line(ind, "T.clear(acc)");
            const std::string K = p.dynamic ? "kk" : num(p.gk);
            const std::string bounds = (o.start.empty() ? "" : o.start + ", ") + (o.end.empty() ? "T.ceildiv(" + K + ", BK)" : o.end);
            std::string loop = o.stages > 0 ? "T.Pipelined(" + bounds + ", num_stages=" + num(o.stages) + ")"
                                            : "T.serial(" + bounds + ")";
            std::string kk = "k";
            if (o.scalarBounds > 0) { // the bounds and offsets through scalars set before the loop
                const std::string lo = o.start.empty() ? "0" : o.start;
                line(ind, "klo = " + (o.scalarBounds == 2 ? "(" + lo + ") + 1" : lo));
                line(ind, std::string("kz = ") + (o.scalarBounds == 2 ? "3" : "0"));
                if (o.scalarBounds == 2) {
                    line(ind, "if bx + by >= 0:");
                    line(ind + 1, "klo = klo - 1");
                    line(ind + 1, "kz = kz - 3");
                }
                const std::string end = o.end.empty() ? "T.ceildiv(" + K + ", BK)" : o.end;
                loop = o.stages > 0 ? "T.Pipelined(klo, " + end + ", num_stages=" + num(o.stages) + ")" : "T.serial(klo, " + end + ")";
                kk = "(k + kz)";
            }
            // T.gemm's operand tiles at K block `at` (T.async_copy where o.async)
            auto operands = [&](int at, const std::string &kb) {
                const std::string fn = o.async ? "T.async_copy(" : "T.copy(";
                line(at, fn + (o.transA ? "GA[" + kb + " * BK, by * BM], ga_s)" : "GA[by * BM, " + kb + " * BK], ga_s)"));
                line(at, fn + (o.transB ? "GB[bx * BN, " + kb + " * BK], gb_s)" : "GB[" + kb + " * BK, bx * BN], gb_s)"));
            };
            // the product (T.wgmma_gemm and the program's waits where o.wgmma)
            auto product = [&](int at) {
                line(at, std::string(o.wgmma ? "T.wgmma_gemm" : "T.gemm") + "(ga_s, gb_s, acc" + (o.transA ? ", transpose_A=True" : "") +
                             (o.transB ? ", transpose_B=True" : "") + (o.clearAccum ? ", clear_accum=True" : "") + ")");
                if (o.wgmma == 1 || o.wgmma == 3) line(at, "T.wait_wgmma(" + num(o.wgmma == 3) + ")");
            };
            auto afterLoop = [&] {
                if (o.wgmma >= 2) line(ind, "T.wait_wgmma(0)");
            };
            if (o.async == 2) { // the first K block's copies before the loop, each next one's after T.gemm
                const std::string end = o.end.empty() ? "T.ceildiv(" + K + ", BK)" : o.end;
                operands(ind, o.start.empty() ? "0" : "(" + o.start + ")");
                line(ind, "for k in " + loop + ":");
                if (o.asyncWait >= 0) line(ind + 1, "T.ptx_wait_group(" + num(o.asyncWait) + ")");
                product(ind + 1);
                if (o.asyncGuard) line(ind + 1, "if k + 1 < " + end + ":");
                operands(ind + 1 + o.asyncGuard, "(k + 1)");
                if (o.asyncDrain) line(ind, "T.ptx_wait_group(0)");
                afterLoop();
                return;
            }
            line(ind, "for k in " + loop + ":");
            int in = ind + 1;
            if (o.guarded == 2) { // a K block gathered from a tensor read, under a condition on it
                line(in, "kg = T.cast(T.abs(" + std::string(o.transA ? "GA[k, 0]" : "GA[0, k]") + ") * 7.0, \"int32\") % T.ceildiv(" + K + ", BK)");
                line(in++, "if kg % 4 != 3:");
                kk = "kg";
            } else if (o.guarded == 1) {
                line(in++, "if (k + bx) % 3 != 1:");
            }
            operands(in, kk);
            if (o.async && o.asyncWait >= 0) line(in, "T.ptx_wait_group(" + num(o.asyncWait) + ")");
            product(in);
            afterLoop();
            return;
        }
        case GOp::Serial:
            if (!o.startInit.empty()) line(ind, o.dst + " = " + o.startInit);
            line(ind, "for it" + num(serialDepth) + " in T.serial(" +
                          (o.start.empty() ? (o.step > 0 ? "0, " : "") : o.start + ", ") +
                          (o.end.empty() ? num(o.n) : o.end) + (o.step > 0 ? ", " + num(o.step) : "") + "):");
            ++serialDepth;
            if (holdsPerThread(o.kids)) authorSync(ind + 1); // the last iteration's (and the code before's) per-thread accesses
            ops(ind + 1, o.kids);
            if (!o.startInit.empty() && o.twice) line(ind + 1, o.dst + " = " + o.dst + " + 1");
            --serialDepth;
            return;
        case GOp::IfUniform:
            line(ind, "if " + o.cond->print() + ":");
            ops(ind + 1, o.kids);
            if (!o.elseKids.empty()) {
                line(ind, "else:");
                ops(ind + 1, o.elseKids);
            }
            return;
        case GOp::IfThread:
            if (o.alias) line(ind, "tv = tx");
            line(ind, "if " + std::string(o.alias ? "tv" : "tx") + " < " + num(o.n) + ":");
            ops(ind + 1, o.kids);
            return;
        case GOp::ScalarThread: {
            int in = ind;
            if (o.n > 0) line(in++, "if tx < " + num(o.n) + ":");
            std::string value = o.value->print();
            if (o.lanes > 0) { // the thread's own registers, in T.Parallel nests every thread runs whole
                line(in, "for q in T.Parallel(" + num(o.lanes) + "):");
                line(in + 1, "lr[q] = " + value + " + T.cast(q, \"float32\")");
                if (o.twice) {
                    line(in, "for q in T.Parallel(" + num(o.lanes) + "):");
                    line(in + 1, "lr[q] = lr[q] * 2.0 - 1.0");
                }
                value = "lr[" + num(o.lane) + "]";
            }
            line(in, "W[(by * " + num(p.gx) + " + bx) * " + num(p.threads) + " + tx] = " + value);
            return;
        }
        case GOp::SetVar: line(ind, "v = " + o.value->print()); return;
        case GOp::IfThreadScalar:
            line(ind, "if tx < " + num(o.n) + ":");
            ops(ind + 1, o.kids);
            line(ind, "else:");
            ops(ind + 1, o.elseKids);
            return;
        case GOp::SharedStore: line(ind, o.dst + "[" + o.tensor + "] = " + o.value->print()); return;
        case GOp::Stepped: {
            line(ind, o.dst + " = " + o.startInit);
            int in = ind;
            if (o.h > 0) line(in++, "if tx < " + num(o.h) + ":");
            line(in, "for q in T.serial(" + o.start + ", " + o.end + ", " + num(o.step) + "):");
            line(in + 1, "V[(by * " + num(p.gx) + " + bx) * " + num(p.vb) + " + q + " + num(o.r0 + o.w) +
                             "] = T.cast(q, \"float32\") + P[(q + " + num(o.w) + ") % 4]" +
                             (o.value ? " + " + o.value->print() : ""));
            if (o.twice) line(in + 1, o.dst + " = " + o.dst + " + 1");
            return;
        }
        case GOp::Batched: {
            int in = ind + 1;
            if (p.batch >= 0) line(ind, "xi = bz"), in = ind;
            else line(ind, "for xi in T.serial(xb):");
            if (p.xrank == 4) line(in++, "for hi in T.serial(xh):");
            const std::string at = std::string(p.xrank == 4 ? "xi, hi, " : "xi, ") +
                                   "by * BM:by * BM + BM, bx * BN:bx * BN + BN]";
            if (o.slice) { // X and Q indexed in the T.Parallel, under a guard for the ragged tiles
                line(in, "for i, j in T.Parallel(BM, BN):");
                line(in + 1, "if by * BM + i < " + num(p.xr) + " and bx * BN + j < " + num(p.xc) + ":");
                line(in + 2, "Q[" + std::string(p.xrank == 4 ? "xi, hi, " : "xi, ") + "by * BM + i, bx * BN + j] = " +
                                 o.value->print());
                return;
            }
            line(in, "T.copy(X[" + at + ", " + o.dst + ")");
            line(in, "for i, j in T.Parallel(BM, BN):");
            line(in + 1, o.dst + "[i, j] = " + o.value->print());
            line(in, "T.copy(" + o.dst + ", Q[" + at + ")");
            return;
        }
        }
    }
};

void usedIn(const std::vector<GOp> &ops, std::set<std::string> &out, const GOp *skip = nullptr) {
    for (auto &o : ops) {
        if (&o == skip) continue;
        for (auto *b : {&o.dst, &o.src})
            if (!b->empty()) out.insert(*b);
        if (o.value) o.value->collect(out);
        if (o.cond) o.cond->collect(out);
        if (o.kind == GOp::Gemm) out.insert({"acc", "ga_s", "gb_s"});
        if (o.kind == GOp::Gemm && o.scalarBounds > 0) out.insert({"klo", "kz"});
        if (o.kind == GOp::Gemm && o.guarded == 2) out.insert("kg");
        if (o.kind == GOp::ScalarThread && o.lanes > 0) out.insert("lr");
        usedIn(o.kids, out, skip);
        usedIn(o.elseKids, out, skip);
    }
}

bool threadIn(const std::vector<GOp> &ops) {
    for (auto &o : ops)
        if (o.kind == GOp::IfThread || o.kind == GOp::ScalarThread || o.kind == GOp::IfThreadScalar || o.kind == GOp::Stepped ||
            o.kind == GOp::SharedStore || threadIn(o.kids) || threadIn(o.elseKids))
            return true;
    return false;
}

} // namespace

std::set<std::string> GProgram::buffersUsed() const {
    std::set<std::string> s;
    usedIn(ops, s);
    return s;
}

bool GProgram::usesThreadIndex() const { return threadIn(ops); }

bool perThreadOp(const GOp &o) {
    return o.kind == GOp::ScalarThread || o.kind == GOp::SharedStore || o.kind == GOp::IfThreadScalar ||
           o.kind == GOp::Stepped;
}

bool holdsPerThread(const std::vector<GOp> &ops) {
    for (auto &o : ops)
        if (perThreadOp(o) || holdsPerThread(o.kids) || holdsPerThread(o.elseKids)) return true;
    return false;
}

bool holdsKind(const std::vector<GOp> &ops, GOp::Kind k) {
    for (auto &o : ops)
        if (o.kind == k || holdsKind(o.kids, k) || holdsKind(o.elseKids, k)) return true;
    return false;
}

namespace {
bool pastIn(const GExprP &e) {
    if (!e) return false;
    if (e->pastBound) return true;
    for (auto &k : e->kids)
        if (pastIn(k)) return true;
    return false;
}
bool pastIn(const std::vector<GOp> &ops) {
    for (auto &o : ops)
        if (pastIn(o.value) || pastIn(o.cond) || pastIn(o.kids) || pastIn(o.elseKids)) return true;
    return false;
}
} // namespace

bool GProgram::pastBoundIndex() const { return pastIn(ops); }

const std::vector<std::string> &reservedKernelNames() {
    // C/C++ keywords Python lets one bind, the C library's global names, CUDA's built-ins and types.
    static const std::vector<std::string> v{
        "main", "exit", "abort", "malloc", "free", "calloc", "realloc", "printf", "puts", "memcpy", "memset",
        "strlen", "exp", "exp2", "log", "sqrt", "sin", "pow", "abs", "fabs", "floor", "min", "max", "half",
        "int", "float", "double", "char", "long", "short", "unsigned", "signed", "void", "auto", "struct",
        "union", "enum", "typedef", "static", "extern", "const", "volatile", "register", "switch", "case",
        "default", "goto", "sizeof", "template", "typename", "namespace", "new", "delete", "this", "operator",
        "private", "public", "protected", "virtual", "friend", "inline", "explicit", "mutable", "bool",
        "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "nv_bfloat16", "tilec_run",
        "__kernel", "_Kernel", "time", "signal", "rand", "system", "stdout", "errno", "assert",
        // the implementation's namespaces and CUDA's name families (found by an nvcc sample: `tilec`)
        "tilec", "std", "cudaMalloc", "cuInit", "CUresult", "PFN_cuGetProcAddress", "make_float2", "float4", "half2",
        "int4", "uint8_t", "int_fast32_t", "INT8_MAX", "SIZE_MAX"};
    return v;
}

bool GProgram::reservedName() const {
    auto &r = reservedKernelNames();
    return std::find(r.begin(), r.end(), kernelName) != r.end();
}

std::map<std::string, int64_t> GProgram::dynamicValues() const {
    std::map<std::string, int64_t> v;
    if (dynamic) {
        v["m"] = ra;
        if (gemm) v["kk"] = gk;
        if (dynamicCols) v["n"] = ca;
        if (gemm && dynamicMN) v["gm"] = gm, v["gn"] = gn;
        if (batch >= 0) v["nb"] = batch;
    }
    if (xrank > 0 && batch < 0) v["xb"] = xb;
    if (xrank == 4) v["xh"] = xh;
    for (auto &[n, x] : strideSymbols) v[n] = x;
    for (auto &[n, x] : scalarParams) v[n] = x.second;
    return v;
}

/// Whether the program's T.gemm transposes A and B (its operands GA and GB are then stored transposed).
static std::pair<bool, bool> gemmTransposes(const std::vector<GOp> &ops) {
    std::pair<bool, bool> t{false, false};
    std::function<void(const std::vector<GOp> &)> find = [&](const std::vector<GOp> &v) {
        for (auto &x : v) {
            if (x.kind == GOp::Gemm) t = {x.transA, x.transB};
            find(x.kids), find(x.elseKids);
        }
    };
    find(ops);
    return t;
}

std::vector<int64_t> GProgram::shapeOf(const std::string &name) const {
    // T.dynamic rows are m (= ra) in A, B and Y alike, T.dynamic columns n (= ca)
    auto cols = [&](int64_t c) { return dynamicCols ? ca : c; };
    if (name == "A") return {ra, cols(ca)};
    if (name == "B") return {dynamic ? ra : rb, cols(cb)};
    if (name == "Y") return {dynamic ? ra : ry, cols(cy)};
    if (name == "R") return {rn};
    if (name == "W") return {wn};
    if (name == "Z") return {zn};
    if ((name == "X" || name == "Q") && xrank > 0) {
        std::vector<int64_t> d{batch >= 0 ? batch : xb};
        if (xrank == 4) d.push_back(xh);
        d.push_back(xr), d.push_back(xc);
        return d;
    }
    if ((name == "GA" || name == "GB") && gemm) {
        const auto [ta, tb] = gemmTransposes(ops);
        if (name == "GA") return ta ? std::vector<int64_t>{gk, gm} : std::vector<int64_t>{gm, gk};
        return tb ? std::vector<int64_t>{gn, gk} : std::vector<int64_t>{gk, gn};
    }
    return {};
}

std::vector<int64_t> GProgram::stridesOf(const std::string &name) const {
    auto it = strided.find(name);
    return it == strided.end() || shapeOf(name).empty() ? std::vector<int64_t>{} : it->second.value;
}

std::string GProgram::print() const {
    Printer pr{*this, {}};
    auto &o = pr.out;
    const auto [ta, tb] = gemmTransposes(ops);

    o += std::string(authorSyncs ? "import tilelang\n" : "") + "import tilelang.language as T\n\nBM = " + num(bmText) + "\nBN = " + num(bnText) + "\n";
    if (narrowRounding) o += "# narrow rounding\n";
    if (dynamic) {
        o += "m = T.dynamic(\"m\")\n";
        if (gemm) o += "kk = T.dynamic(\"kk\")\n";
        if (dynamicCols) o += "n = T.dynamic(\"n\")\n";
        if (gemm && dynamicMN) o += "gm = T.dynamic(\"gm\")\ngn = T.dynamic(\"gn\")\n";
        if (batch >= 0) o += "nb = T.dynamic(\"nb\")\n";
    }
    if (xrank > 0 && batch < 0) o += "xb = T.dynamic(\"xb\")\n";
    if (xrank == 4) o += "xh = T.dynamic(\"xh\")\n";
    for (auto &[n, v] : strideSymbols) o += n + " = T.dynamic(\"" + n + "\")\n";
    for (auto &[n, st] : strided) {
        if (shapeOf(n).empty()) continue; // a tensor the program no longer has (GA once shrinking drops the GEMM)
        o += "# strides " + n + ":";
        for (int64_t v : st.value) o += " " + num(v);
        o += "\n";
    }
    if (ru > 0 && uStride > 0) o += "# strides U: " + num(uStride / 2) + " 1\n"; // its bytes' (GenSubByte.cpp)
    if (ruo > 0 && uoStride > 0) o += "# strides UO: " + num(uoStride / 2) + " 1\n";
    if (auto dv = dynamicValues(); !dv.empty()) {
        o += "# dynamic:";
        for (auto &[n, v] : dv) o += " " + n + "=" + num(v);
        o += "\n";
    }
    o += "\n\n";
    const std::string rowsA = dynamic ? "m" : num(ra), rowsB = dynamic ? "m" : num(rb), rowsY = dynamic ? "m" : num(ry);
    const std::string K = dynamic && gemm ? "kk" : num(gk);
    const std::string colsA = dynamicCols ? "n" : num(ca), colsB = dynamicCols ? "n" : num(cb), colsY = dynamicCols ? "n" : num(cy);
    const std::string M = gemm && dynamicMN ? "gm" : num(gm), N = gemm && dynamicMN ? "gn" : num(gn);
    o += "def make(BM, BN, BK=" + num(bk) + "):\n";
    o += "    @T.prim_func\n";
    // A parameter: T.Tensor, or T.StridedTensor where decorateStrided strided it (or a T.ptr that `made`,
    // T.make_tensor in the body, makes the strided tensor, or an entry of the pointer table TP that `launched`,
    // T.make_tensor inside the launch, makes it: no parameter, "").
    std::string made, launched;
    std::vector<std::string> table;
    auto param = [&](const std::string &name, const std::vector<std::string> &dims, const std::string &dtype) -> std::string {
        auto tuple = [](const std::vector<std::string> &v) {
            std::string t;
            for (auto &x : v) t += (t.empty() ? "" : ", ") + x;
            return "(" + t + (v.size() == 1 ? ",)" : ")");
        };
        auto it = strided.find(name);
        if (it == strided.end()) return name + ": T.Tensor(" + tuple(dims) + ", \"" + dtype + "\")";
        const std::string rest = tuple(dims) + ", \"" + dtype + "\", strides=" + tuple(it->second.text) + ")\n";
        if (it->second.table) {
            launched += "            " + name + " = T.make_tensor(TP[" + num(2 * (int64_t)table.size()) + " + (bx + by) % 2], " + rest;
            table.push_back(name);
            return "";
        }
        if (it->second.pointer) {
            made += "        " + name + " = T.make_tensor(" + name + ", " + rest;
            return name + ": T.ptr"; // the tensor takes the pointer's name (its buffer's, the C parameter's)
        }
        return name + ": T.StridedTensor(" + tuple(dims) + ", " + tuple(it->second.text) + ", \"" + dtype + "\")";
    };
    std::vector<std::string> ps{param("A", {rowsA, colsA}, "float32"), param("B", {rowsB, colsB}, "float32"),
                                param("Y", {rowsY, colsY}, "float32"), param("R", {num(rn)}, "float32"),
                                param("W", {num(wn)}, "float32"), param("Z", {num(zn)}, "float32")};
    const ScalarContext sc = scalarContext(1);
    if (ru > 0)
        ps.push_back(uStride > 0 ? "U: T.StridedTensor((" + num(ru) + ", " + num(cu) + "), (" + num(uStride) + ", 1), \"" + uType + "\")"
                                 : "U: T.Tensor((" + num(ru) + ", " + num(cu) + "), \"" + uType + "\")");
    if (ruo > 0)
        ps.push_back(uoStride > 0 ? "UO: T.StridedTensor((" + num(ruo) + ", " + num(cuo) + "), (" + num(uoStride) + ", 1), \"" + uType + "\")"
                                  : "UO: T.Tensor((" + num(ruo) + ", " + num(cuo) + "), \"" + uType + "\")");
    if (batch >= 0) ps.push_back("NB: T.Tensor((nb,), \"float32\")"); // gives the launch function nb
    if (vn > 0) ps.push_back("V: T.Tensor((" + num(vn) + ",), \"float32\"), P: T.Tensor((4,), \"float32\")");
    if (xrank > 0) {
        std::vector<std::string> dims{batch >= 0 ? "nb" : "xb"};
        if (xrank == 4) dims.push_back("xh");
        dims.push_back(num(xr)), dims.push_back(num(xc));
        ps.push_back(param("X", dims, xType)), ps.push_back(param("Q", dims, "float32"));
    }
    if (scalars) ps.push_back("S: T.Tensor((" + num(scalarOutputs(*scalars, sc)) + ",), \"float32\")");
    if (gemm)
        ps.push_back(param("GA", ta ? std::vector<std::string>{K, M} : std::vector<std::string>{M, K}, gemmGlobalType)),
            ps.push_back(param("GB", tb ? std::vector<std::string>{N, K} : std::vector<std::string>{K, N}, gemmGlobalType));
    for (auto &[n, tv] : scalarParams) ps.push_back(n + ": T." + tv.first);
    if (!table.empty()) {
        ps.push_back("TP: T.Tensor((" + num(2 * (int64_t)table.size()) + ",), T.ptr)");
        std::string line = "# pointer table:";
        for (auto &n : table) line += " " + n;
        o.insert(o.find("\n\n\ndef make("), "\n" + line);
    }
    std::string params;
    for (auto &x : ps)
        if (!x.empty()) params += (params.empty() ? "" : ", ") + x;
    o += "    def k(" + params + "):\n" + made;
    // A workspace (GProgram::workspace): WY in Y's place, WA in A's, and the launches that copy them.
    const std::string wsRows = workspace == "A" ? rowsA : rowsY, wsCols = workspace == "A" ? colsA : colsY;
    auto copyLaunch = [&](const std::string &to, const std::string &from) {
        o += "        with T.Kernel(T.ceildiv(" + wsRows + ", 32), threads=128) as bx:\n";
        o += "            for c in T.serial(T.ceildiv(" + wsCols + ", 32)):\n";
        o += "                for i, j in T.Parallel(32, 32):\n";
        o += "                    " + to + "[bx * 32 + i, c * 32 + j] = " + from + "[bx * 32 + i, c * 32 + j]\n";
    };
    if (!workspace.empty())
        o += std::string("        W") + (workspace == "A" ? "A" : "Y") + " = T.alloc_global((" + wsRows + ", " + wsCols + "), \"float32\")\n";
    if (workspace == "A") copyLaunch("WA", "A");
    if (batch >= 0) o += "        with T.Kernel(" + num(gx) + ", " + num(gy) + ", nb, threads=" + num(threads) + ") as (bx, by, bz):\n";
    else o += "        with T.Kernel(" + num(gx) + ", " + num(gy) + ", threads=" + num(threads) + ") as (bx, by):\n";
    o += launched;
    const size_t body = o.size();
    auto used = buffersUsed();
    auto alloc = [&](const std::string &name, const std::string &text) {
        if (used.count(name)) pr.line(3, name + " = " + text);
    };
    alloc("s0", "T.alloc_shared((BM, BN), \"" + tileType + "\")");
    alloc("s1", "T.alloc_shared((BM, BN), \"" + tileType1 + "\")");
    alloc("f0", "T.alloc_fragment((BM, BN), \"" + tileType + "\")");
    alloc("f1", "T.alloc_fragment((BM, BN), \"" + tileType1 + "\")");
    alloc("rm", "T.alloc_fragment((BM,), \"float32\")");
    alloc("rn", "T.alloc_fragment((BN,), \"float32\")");
    alloc("acc", "T.alloc_fragment((BM, BN), \"float32\")");
    const std::string gs = ", \"" + gemmSharedType + "\")";
    alloc("ga_s", std::string("T.alloc_shared(") + (ta ? "(BK, BM)" : "(BM, BK)") + gs);
    alloc("gb_s", std::string("T.alloc_shared(") + (tb ? "(BN, BK)" : "(BK, BN)") + gs);
    alloc("v", "T.alloc_var(\"float32\")");
    alloc("klo", "T.alloc_var(\"int32\")");
    alloc("kz", "T.alloc_var(\"int32\")");
    alloc("kg", "T.alloc_var(\"int32\")");
    alloc("lr", "T.alloc_local((8,), \"float32\")");
    for (const char *b : {"st", "sb0", "sb1"}) alloc(b, "T.alloc_var(\"int32\")");
    if (usesThreadIndex() || scalars) pr.line(3, "tx = T.get_thread_binding()");
    std::string defs;
    if (scalars) printScalars(*scalars, sc, 3, defs, o);
    pr.ops(3, ops);
    if (!workspace.empty()) { // the kernel's Y (or A) is the workspace
        const std::string t = workspace == "A" ? "A" : "Y";
        o = o.substr(0, body) + std::regex_replace(o.substr(body), std::regex("\\b" + t + "\\["), "W" + t + "[");
    }
    if (workspace == "Y here") { // this block's tile of WY into Y, in the same launch
        pr.line(3, "for i, j in T.Parallel(BM, BN):");
        pr.line(4, "Y[by * BM + i, bx * BN + j] = WY[by * BM + i, bx * BN + j]");
    }
    if (workspace == "Y") copyLaunch("Y", "WY");
    o += "    return k\n\n\n" + kernelName + " = " +
         (authorSyncs ? "tilelang.compile(make(BM, BN), pass_configs={\"tl.disable_thread_storage_sync\": True})\n"
                      : "make(BM, BN)\n");
    if (!defs.empty()) o.insert(o.find("def make("), defs);
    return o;
}

ScalarContext GProgram::scalarContext(uint64_t dataSeed) const {
    ScalarContext c;
    c.gx = gx, c.gy = gy, c.threads = threads, c.rowsA = ra, c.colsA = ca;
    auto data = std::make_shared<std::vector<double>>(inputElements("A", {ra, ca}, stridesOf("A"), dataSeed));
    c.a = [data](int64_t i) { return data->at((size_t)i); };
    return c;
}

std::vector<double> GProgram::expectedS(uint64_t dataSeed) const {
    return scalars ? runScalars(*scalars, scalarContext(dataSeed)) : std::vector<double>{};
}

} // namespace tilec::difffuzz
