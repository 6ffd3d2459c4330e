/// \file
/// The stable text form of the IR: what `--emit=ast` prints and golden tests compare against.
///
/// The form reads like the TileLang source it came from (Python syntax for expressions, the primitives'
/// own names for tile statements) with every shape, scope and loop kind spelled out. It never depends on
/// addresses or hash order, so two runs print the same bytes. Layout of a kernel:
///
///     kernel NAME(PARAM, ...)                (a parameter may end `workspace` or `view of TENSOR`)
///       launch 1 of 2                     (only for a prim_func of several T.Kernel launches)
///       dynamic m, n                      (only with T.dynamic symbols)
///       grid (X, Y, Z) as (bx, by, bz)
///       threads 128                       (`threads 128 as tx` when the body reads the thread index)
///       use_swizzle(panel_size=8)         (only when set)
///       buffers                           (only with allocations)
///         NAME: DTYPE[SHAPE] SCOPE
///       body
///         STATEMENTS, two spaces per level
#include "tilec/IRPrinter.h"

#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/SharedAliases.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace tilec::ir {

namespace {

// Python's precedence levels, loosest first; an operand printed where a tighter level is needed gets
// parentheses.
enum Prec : int {
    kLowest = 0,
    kOr, kAnd, kNot, kCompare, kBitOr, kBitXor, kBitAnd, kShift, kAdd, kMul,
    kUnary, ///< -x, ~x, and negative literals
    kPow,
    kAtom,  ///< names, literals, calls, subscripts
};

int precOf(BinaryOp op) {
    switch (op) {
    case BinaryOp::Or: return kOr;
    case BinaryOp::And: return kAnd;
    case BinaryOp::EQ: case BinaryOp::NE: case BinaryOp::LT:
    case BinaryOp::LE: case BinaryOp::GT: case BinaryOp::GE: return kCompare;
    case BinaryOp::BitOr: return kBitOr;
    case BinaryOp::BitXor: return kBitXor;
    case BinaryOp::BitAnd: return kBitAnd;
    case BinaryOp::Shl: case BinaryOp::Shr: return kShift;
    case BinaryOp::Add: case BinaryOp::Sub: return kAdd;
    case BinaryOp::Mul: case BinaryOp::Div: case BinaryOp::FloorDiv: case BinaryOp::FloorMod: return kMul;
    case BinaryOp::Pow: return kPow;
    case BinaryOp::Min: case BinaryOp::Max: return kAtom; // printed as calls
    }
    return kAtom;
}

/// Python's repr of a double from its shortest round-trip digits: fixed notation for decimal exponents in
/// [-4, 16), otherwise `1.5e-07` / `1e+16`; integral values keep a `.0`.
std::string pythonRepr(double v, bool singlePrecision) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char buf[64];
    std::to_chars_result r;
    if (singlePrecision) r = std::to_chars(buf, buf + sizeof buf, (float)v, std::chars_format::scientific);
    else r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    TILEC_ASSERT(r.ec == std::errc(), "to_chars failed");
    std::string sci(buf, r.ptr); // "-1.8033688e-01"
    bool negative = !sci.empty() && sci[0] == '-';
    size_t ePos = sci.find('e');
    TILEC_ASSERT(ePos != std::string::npos, "scientific notation without exponent");
    std::string digits;
    for (size_t i = negative ? 1 : 0; i < ePos; ++i)
        if (sci[i] != '.') digits += sci[i];
    int exp = std::atoi(sci.c_str() + ePos + 1);
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();

    std::string out = negative ? "-" : "";
    if (exp >= -4 && exp < 16) {
        if (exp >= 0) {
            size_t intDigits = (size_t)exp + 1;
            if (digits.size() <= intDigits) out += digits + std::string(intDigits - digits.size(), '0') + ".0";
            else out += digits.substr(0, intDigits) + "." + digits.substr(intDigits);
        } else {
            out += "0." + std::string((size_t)(-exp - 1), '0') + digits;
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    std::string e = std::to_string(exp < 0 ? -exp : exp);
    if (e.size() < 2) e = "0" + e;
    return out + (exp < 0 ? "e-" : "e+") + e;
}

/// The value a float immediate stands for: anything narrower than float64 is printed at single precision,
/// since that is all the emitted constant keeps (unless the value does not fit a float at all).
std::string floatImmText(const FloatImm &f) {
    bool single = f.dtype.kind != DType::Float64 && std::isfinite(f.value) &&
                  std::fabs(f.value) <= (double)std::numeric_limits<float>::max();
    std::string s = pythonRepr(f.value, single);
    if (f.dtype.kind == DType::Float32) return s;
    return std::string(f.dtype.name()) + "(" + s + ")";
}

class Printer {
  public:
    std::string out;

    void expr(const Expr &e, int need = kLowest) {
        if (!e) {
            out += "<null>";
            return;
        }
        IRDepthGuard guard(depth_);
        bool parens = precOfExpr(e) < need;
        if (parens) out += "(";
        exprBody(e);
        if (parens) out += ")";
    }

    /// `min + extent`, folded when both are constants and the sum cannot overflow.
    void end(const Expr &min, const Expr &extent, int need = kLowest) {
        auto m = constInt(min), x = constInt(extent);
        int64_t sum = 0;
        if (m && *m == 0) return expr(extent, need);
        if (m && x && !__builtin_add_overflow(*m, *x, &sum)) {
            out += std::to_string(sum);
            return;
        }
        if (!min || !extent) return expr(extent, need);
        expr(Binary::make(BinaryOp::Add, min, extent), need);
    }

    void region(const Region &r) {
        out += r.buffer ? r.buffer->name : "<null>";
        out += "[";
        for (size_t i = 0; i < r.ranges.size(); ++i) {
            if (i) out += ", ";
            expr(r.ranges[i].min);
            out += ":";
            end(r.ranges[i].min, r.ranges[i].extent);
        }
        out += "]";
    }

    void bufferType(const BufferNode &b) {
        out += b.dtype.name();
        if (!b.shape.empty()) {
            out += "[";
            list(b.shape);
            out += "]";
        }
        out += " ";
        out += toString(b.scope);
    }

    void stmt(const Stmt &s, int level) {
        if (!s) return;
        IRDepthGuard guard(depth_);
        if (auto q = as<Seq>(s)) {
            if (q->stmts.empty()) line(level, "pass");
            for (auto &c : q->stmts) stmt(c, level);
            return;
        }
        if (auto f = as<For>(s)) return forLoop(*f, level);
        if (auto i = as<IfThenElse>(s)) return ifThenElse(*i, level, "if ");
        if (auto r = as<WarpRoles>(s)) return roles(*r, level);
        if (auto w = as<While>(s)) {
            indent(level);
            out += "while ";
            expr(w->cond);
            out += ":\n";
            return bodyOf(w->body, level + 1);
        }
        indent(level);
        if (auto st = as<Store>(s)) {
            out += st->buffer ? st->buffer->name : "<null>";
            out += "[";
            list(st->indices);
            out += "] = ";
            expr(st->value);
        } else if (auto ev = as<Evaluate>(s)) {
            expr(ev->value);
        } else if (auto c = as<Copy>(s)) {
            out += "copy(";
            region(c->src);
            out += ", ";
            region(c->dst);
            out += ")";
        } else if (auto fl = as<Fill>(s)) {
            out += "fill(";
            region(fl->dst);
            out += ", ";
            expr(fl->value);
            out += ")";
        } else if (auto g = as<Gemm>(s)) {
            gemm(*g);
        } else if (auto rd = as<Reduce>(s)) {
            out += std::string("reduce_") + toString(rd->reduceKind) + "(";
            out += rd->src ? rd->src->name : "<null>";
            out += " -> ";
            out += rd->dst ? rd->dst->name : "<null>";
            out += ", dim=" + std::to_string(rd->dim) + ", clear=" + (rd->clear ? "True" : "False") + ")";
        } else if (auto a = as<AtomicAdd>(s)) {
            atomicAdd(*a);
        } else {
            out += "<unknown statement>";
        }
        out += "\n";
    }

  private:
    int depth_ = 0;

    void indent(int level) { out.append((size_t)std::max(level, 0) * 2, ' '); }
    void line(int level, const std::string &text) {
        indent(level);
        out += text;
        out += "\n";
    }

    void list(const std::vector<Expr> &v) {
        for (size_t i = 0; i < v.size(); ++i) {
            if (i) out += ", ";
            expr(v[i]);
        }
    }

    static int precOfExpr(const Expr &e) {
        if (auto i = as<IntImm>(e)) return i->dtype.kind == DType::Int32 && i->value < 0 ? kUnary : kAtom;
        if (auto f = as<FloatImm>(e))
            return f->dtype.kind == DType::Float32 && std::signbit(f->value) && !std::isnan(f->value) ? kUnary : kAtom;
        if (auto b = as<Binary>(e)) return precOf(b->op);
        if (auto u = as<Unary>(e)) return u->op == UnaryOp::Not ? kNot : kUnary;
        return kAtom;
    }

    void exprBody(const Expr &e) {
        switch (e->kind) {
        case NodeKind::IntImm: {
            auto &i = *as<IntImm>(e);
            if (i.dtype.isBool()) out += i.value ? "True" : "False";
            else if (i.dtype.kind == DType::Int32) out += std::to_string(i.value);
            else out += std::string(i.dtype.name()) + "(" + std::to_string(i.value) + ")";
            return;
        }
        case NodeKind::FloatImm: out += floatImmText(*as<FloatImm>(e)); return;
        case NodeKind::Var: out += as<VarNode>(e)->name; return;
        case NodeKind::Binary: return binary(*as<Binary>(e));
        case NodeKind::Unary: {
            auto &u = *as<Unary>(e);
            out += u.op == UnaryOp::Not ? "not " : u.op == UnaryOp::Neg ? "-" : "~";
            // `-(-x)` rather than `--x`, which reads like C's decrement.
            return expr(u.a, u.op == UnaryOp::Not ? kNot : kUnary + 1);
        }
        case NodeKind::Select: {
            auto &s = *as<Select>(e);
            out += "select(";
            list({s.cond, s.t, s.f});
            out += ")";
            return;
        }
        case NodeKind::Cast: {
            auto &c = *as<Cast>(e);
            out += std::string(c.dtype.name()) + "(";
            expr(c.value);
            out += ")";
            return;
        }
        case NodeKind::Call: {
            auto &c = *as<Call>(e);
            out += c.name + "(";
            list(c.args);
            out += ")";
            return;
        }
        case NodeKind::Load: {
            auto &l = *as<Load>(e);
            out += l.buffer ? l.buffer->name : "<null>";
            out += "[";
            list(l.indices);
            out += "]";
            return;
        }
        default: out += "<not an expression>"; return;
        }
    }

    void binary(const Binary &b) {
        if (b.op == BinaryOp::Min || b.op == BinaryOp::Max) {
            out += toString(b.op);
            out += "(";
            list({b.a, b.b});
            out += ")";
            return;
        }
        int p = precOf(b.op);
        // Left-associative operators take an equal level on the left; comparisons chain in Python, so
        // they parenthesize both sides; `**` is right-associative and binds tighter than a unary minus on
        // its left but not on its right.
        int left = p, right = p + 1;
        if (p == kCompare) left = p + 1;
        if (p == kPow) left = kAtom, right = kUnary;
        expr(b.a, left);
        out += " ";
        out += toString(b.op);
        out += " ";
        expr(b.b, right);
    }

    void forLoop(const For &f, int level) {
        indent(level);
        out += "for ";
        out += f.var ? f.var->name : "<null>";
        out += " in ";
        out += toString(f.forKind);
        out += "(";
        auto m = constInt(f.min);
        if (!m || *m != 0) {
            expr(f.min);
            out += ", ";
        }
        end(f.min, f.extent);
        if (f.forKind == ForKind::Pipelined && f.numStages > 0) out += ", stages=" + std::to_string(f.numStages);
        out += "):\n";
        bodyOf(f.body, level + 1);
    }

    void roles(const WarpRoles &r, int level) {
        auto regs = [](int n) { return n ? ", setmaxnreg " + std::to_string(n) : std::string(); };
        if (r.producerThreads) { // none where every warp group computes (explicit roles without a producer)
            line(level, "producer threads [" + std::to_string(r.consumerThreads) + ", " +
                            std::to_string(r.consumerThreads + r.producerThreads) + ")" + regs(r.producerRegs) + ":");
            bodyOf(r.producer, level + 1);
        }
        line(level, "consumer threads [0, " + std::to_string(r.consumerThreads) + ")" + regs(r.consumerRegs) + ":");
        bodyOf(r.consumer, level + 1);
    }

    void ifThenElse(const IfThenElse &i, int level, const char *keyword) {
        indent(level);
        out += keyword;
        expr(i.cond);
        out += ":\n";
        bodyOf(i.then, level + 1);
        if (!i.otherwise) return;
        if (auto elif = as<IfThenElse>(i.otherwise)) return ifThenElse(*elif, level, "elif ");
        line(level, "else:");
        bodyOf(i.otherwise, level + 1);
    }

    void bodyOf(const Stmt &s, int level) {
        if (!s) return line(level, "pass");
        stmt(s, level);
    }

    void gemm(const Gemm &g) {
        out += g.sparse() ? "gemm_sp(" : "gemm(";
        region(g.a);
        out += ", ";
        if (g.sparse()) region(g.e), out += ", ";
        region(g.b);
        out += ", ";
        region(g.c);
        if (g.transA) out += ", transpose_A=True";
        if (g.transB) out += ", transpose_B=True";
        if (g.clearAccum) out += ", clear_accum=True";
        if (g.policy != GemmPolicy::Auto) out += std::string(", policy=") + toString(g.policy);
        if (g.instr == GemmInstr::Wgmma) out += ", wgmma";
        if (g.instr == GemmInstr::MmaPanels) out += ", mma panels";
        if (g.liveRows) out += ", live rows " + std::to_string(g.liveRows);
        if (g.liveRowsAt) {
            out += ", live rows at ";
            expr(g.liveRowsAt);
        }
        out += ")";
    }

    void atomicAdd(const AtomicAdd &a) {
        out += "atomic_add(";
        // The scalar form names one element, so it prints as a subscript rather than a one-element slice.
        if (a.value && !a.src) {
            out += a.dst.buffer ? a.dst.buffer->name : "<null>";
            out += "[";
            for (size_t i = 0; i < a.dst.ranges.size(); ++i) {
                if (i) out += ", ";
                expr(a.dst.ranges[i].min);
            }
            out += "], ";
            expr(a.value);
        } else {
            region(a.dst);
            out += ", ";
            if (a.src) region(*a.src);
            else out += "<null>";
        }
        out += ")";
    }
};

} // namespace

std::string print(const Expr &e) {
    Printer p;
    p.expr(e);
    return std::move(p.out);
}

std::string print(const Stmt &s, int indent) {
    Printer p;
    p.stmt(s, indent);
    return std::move(p.out);
}

std::string print(const Kernel &k) {
    Printer p;
    std::string &o = p.out;
    o += "kernel " + k.name + "(";
    for (size_t i = 0; i < k.params.size(); ++i) {
        auto &prm = k.params[i];
        if (i) o += ", ";
        if (prm.kind == Param::Tensor && prm.buffer) {
            o += prm.buffer->name + ": ";
            p.bufferType(*prm.buffer);
            if (prm.workspace) o += " workspace";
            if (prm.viewOf) o += " view of " + prm.viewOf->name;
        } else if (prm.kind == Param::Scalar && prm.var) {
            o += prm.var->name + ": " + std::string(prm.var->dtype.name());
        } else {
            o += "<null>";
        }
    }
    o += ")\n";
    if (k.parts > 1) o += "  launch " + std::to_string(k.part + 1) + " of " + std::to_string(k.parts) + "\n";
    if (!k.dynamicSymbols.empty()) {
        o += "  dynamic ";
        for (size_t i = 0; i < k.dynamicSymbols.size(); ++i) {
            if (i) o += ", ";
            o += k.dynamicSymbols[i] ? k.dynamicSymbols[i]->name : "<null>";
        }
        o += "\n";
    }
    o += "  grid (";
    for (size_t i = 0; i < 3; ++i) {
        if (i) o += ", ";
        p.expr(k.grid[i]);
    }
    o += ") as (";
    for (size_t i = 0; i < 3; ++i) {
        if (i) o += ", ";
        o += k.blockIdx[i] ? k.blockIdx[i]->name : "_";
    }
    o += ")\n";
    o += "  threads " + std::to_string(k.threads);
    if (k.threadIdx && k.body && uses(k.body, k.threadIdx.get())) o += " as " + k.threadIdx->name;
    o += "\n";
    if (k.producerThreads) o += "  producer threads " + std::to_string(k.producerThreads) + "\n";
    if (k.minBlocksPerSM) o += "  blocks per SM " + std::to_string(k.minBlocksPerSM) + "\n";
    if (k.persistent)
        o += k.walkSlowest == 2 ? "  persistent\n"
             : "  persistent, grid dimension " + std::to_string(k.walkSlowest) +
                   (k.walkGroup > 1 ? " in groups of " + std::to_string(k.walkGroup) : std::string()) + " slowest\n";
    if (k.clusterSize > 1)
        o += "  cluster " + std::to_string(k.clusterSize) + " along grid dimension " + std::to_string(k.clusterAxis) +
             (k.clusterMinWaves ? " from " + std::to_string(k.clusterMinWaves) + " waves of tiles" : "") + "\n";
    if (k.swizzlePanel > 0) o += "  use_swizzle(panel_size=" + std::to_string(k.swizzlePanel) + ")\n";
    for (auto &l : k.tensorLayouts) {
        o += "  layout " + (l.tensor ? l.tensor->name : "<null>") + "[";
        for (size_t d = 0; d < l.vars.size(); ++d) o += (d ? ", " : "") + l.vars[d]->name;
        o += "] at (";
        for (size_t d = 0; d < l.forward.size(); ++d) o += (d ? ", " : "") + print(l.forward[d]);
        o += ") of shape (";
        for (size_t d = 0; d < l.shape.size(); ++d) o += (d ? ", " : "") + print(l.shape[d]);
        o += ")\n";
    }
    for (size_t i = 0; i < k.tensorMaps.size(); ++i) {
        auto &m = k.tensorMaps[i];
        o += "  tensor map " + std::to_string(i) + ": " + (m.tensor ? m.tensor->name : "<null>") + ", box (";
        for (size_t d = 0; d < m.box.size(); ++d) o += (d ? ", " : "") + std::to_string(m.box[d]);
        o += ") innermost first, swizzle " + std::to_string(m.swizzleBytes) + "B\n";
    }
    if (!k.allocs.empty()) {
        o += "  buffers\n";
        for (auto &b : k.allocs) {
            if (!b) continue;
            o += "    " + b->name + ": ";
            p.bufferType(*b);
            if (const BufferNode *base = ir::storageOf(k, b.get()); base != b.get()) o += " over the bytes of " + base->name;
            o += "\n";
        }
    }
    o += "  body\n";
    if (k.body) p.stmt(k.body, 2);
    else o += "    pass\n";
    return std::move(p.out);
}

std::string print(const Program &prog) {
    std::string s;
    for (size_t i = 0; i < prog.kernels.size(); ++i) {
        if (i) s += "\n";
        if (prog.kernels[i]) s += print(*prog.kernels[i]);
    }
    return s;
}

} // namespace tilec::ir
