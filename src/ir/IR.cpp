/// \file
/// Constructors of the IR nodes and their names.
#include "tilec/IR.h"

namespace tilec::ir {

namespace {
template <class T> std::shared_ptr<T> node(SourceRange loc) {
    auto n = std::make_shared<T>();
    n->loc = loc;
    return n;
}
} // namespace

Expr IntImm::make(DType t, int64_t v, SourceRange loc) {
    TILEC_ASSERT(t.isInt() || t.isBool(), "IntImm of a non-integer type");
    auto n = node<IntImm>(loc);
    n->dtype = t;
    n->value = t.isBool() ? (v != 0) : v;
    return n;
}

Expr FloatImm::make(DType t, double v, SourceRange loc) {
    TILEC_ASSERT(t.isFloat(), "FloatImm of a non-float type");
    auto n = node<FloatImm>(loc);
    n->dtype = t;
    n->value = v;
    return n;
}

Var makeVar(std::string name, DType t, SourceRange loc) {
    auto n = node<VarNode>(loc);
    n->dtype = t;
    n->name = std::move(name);
    return n;
}

const char *toString(BinaryOp op) {
    switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::FloorDiv: return "//";
    case BinaryOp::FloorMod: return "%";
    case BinaryOp::Min: return "min";
    case BinaryOp::Max: return "max";
    case BinaryOp::Pow: return "**";
    case BinaryOp::And: return "and";
    case BinaryOp::Or: return "or";
    case BinaryOp::BitAnd: return "&";
    case BinaryOp::BitOr: return "|";
    case BinaryOp::BitXor: return "^";
    case BinaryOp::Shl: return "<<";
    case BinaryOp::Shr: return ">>";
    case BinaryOp::EQ: return "==";
    case BinaryOp::NE: return "!=";
    case BinaryOp::LT: return "<";
    case BinaryOp::LE: return "<=";
    case BinaryOp::GT: return ">";
    case BinaryOp::GE: return ">=";
    }
    return "?";
}

bool isComparison(BinaryOp op) { return op >= BinaryOp::EQ; }

Expr Binary::make(BinaryOp op, Expr a, Expr b, SourceRange loc) {
    TILEC_ASSERT(a && b, "Binary with a null operand");
    auto n = node<Binary>(loc);
    n->op = op;
    n->dtype = isComparison(op) || op == BinaryOp::And || op == BinaryOp::Or ? DType(DType::Bool) : a->dtype;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
}

Expr Unary::make(UnaryOp op, Expr a, SourceRange loc) {
    TILEC_ASSERT(a, "Unary with a null operand");
    auto n = node<Unary>(loc);
    n->op = op;
    n->dtype = op == UnaryOp::Not ? DType(DType::Bool) : a->dtype;
    n->a = std::move(a);
    return n;
}

Expr Select::make(Expr cond, Expr t, Expr f, SourceRange loc) {
    TILEC_ASSERT(cond && t && f, "Select with a null operand");
    auto n = node<Select>(loc);
    n->dtype = t->dtype;
    n->cond = std::move(cond);
    n->t = std::move(t);
    n->f = std::move(f);
    return n;
}

Expr Cast::make(DType t, Expr v, SourceRange loc) {
    TILEC_ASSERT(v, "Cast of null");
    auto n = node<Cast>(loc);
    n->dtype = t;
    n->value = std::move(v);
    return n;
}

Expr Call::make(DType t, std::string name, std::vector<Expr> args, SourceRange loc) {
    auto n = node<Call>(loc);
    n->dtype = t;
    n->name = std::move(name);
    n->args = std::move(args);
    return n;
}

const char *toString(Scope s) {
    switch (s) {
    case Scope::Global: return "global";
    case Scope::Shared: return "shared";
    case Scope::Fragment: return "fragment";
    case Scope::Local: return "local";
    case Scope::Var: return "var";
    }
    return "?";
}

int64_t BufferNode::constElements() const {
    int64_t n = 1;
    for (auto &e : shape) {
        auto c = constInt(e);
        if (!c || *c < 0) return -1;
        if (*c != 0 && n > INT64_MAX / *c) return -1;
        n *= *c;
    }
    return n;
}

Buffer makeBuffer(std::string name, Scope scope, DType t, std::vector<Expr> shape, SourceRange loc) {
    auto b = std::make_shared<BufferNode>();
    b->name = std::move(name);
    b->scope = scope;
    b->dtype = t;
    b->shape = std::move(shape);
    b->loc = loc;
    return b;
}

Expr Load::make(Buffer b, std::vector<Expr> indices, SourceRange loc) {
    TILEC_ASSERT(b, "Load from a null buffer");
    auto n = node<Load>(loc);
    n->dtype = b->dtype;
    n->buffer = std::move(b);
    n->indices = std::move(indices);
    return n;
}

Stmt Seq::make(std::vector<Stmt> stmts, SourceRange loc) {
    std::vector<Stmt> flat;
    for (auto &s : stmts) {
        if (!s) continue;
        if (auto q = as<Seq>(s)) flat.insert(flat.end(), q->stmts.begin(), q->stmts.end());
        else flat.push_back(s);
    }
    if (flat.size() == 1) return flat[0];
    auto n = node<Seq>(loc);
    n->stmts = std::move(flat);
    return n;
}

std::vector<Stmt> Seq::items(const Stmt &s) {
    if (auto q = as<Seq>(s)) return q->stmts;
    if (s) return {s};
    return {};
}

const char *toString(ForKind k) {
    switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Pipelined: return "pipelined";
    case ForKind::Unrolled: return "unrolled";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Persistent: return "persistent";
    }
    return "?";
}

Stmt For::make(Var v, Expr min, Expr extent, ForKind k, int numStages, Stmt body, SourceRange loc) {
    TILEC_ASSERT(v && min && extent && body, "For with a null part");
    auto n = node<For>(loc);
    n->var = std::move(v);
    n->min = std::move(min);
    n->extent = std::move(extent);
    n->forKind = k;
    n->numStages = numStages;
    n->body = std::move(body);
    return n;
}

Stmt Store::make(Buffer b, std::vector<Expr> indices, Expr value, SourceRange loc) {
    TILEC_ASSERT(b && value, "Store with a null part");
    auto n = node<Store>(loc);
    n->buffer = std::move(b);
    n->indices = std::move(indices);
    n->value = std::move(value);
    return n;
}

Stmt IfThenElse::make(Expr cond, Stmt then, Stmt otherwise, SourceRange loc) {
    TILEC_ASSERT(cond && then, "IfThenElse with a null part");
    auto n = node<IfThenElse>(loc);
    n->cond = std::move(cond);
    n->then = std::move(then);
    n->otherwise = std::move(otherwise);
    return n;
}

Stmt While::make(Expr cond, Stmt body, SourceRange loc) {
    TILEC_ASSERT(cond && body, "While with a null part");
    auto n = node<While>(loc);
    n->cond = std::move(cond);
    n->body = std::move(body);
    return n;
}

Stmt WarpRoles::make(int consumerThreads, int producerThreads, int producerRegs, int consumerRegs, Stmt producer,
                     Stmt consumer, SourceRange loc) {
    TILEC_ASSERT(producer && consumer && consumerThreads > 0 && producerThreads >= 0, "WarpRoles with a missing role");
    auto n = node<WarpRoles>(loc);
    n->consumerThreads = consumerThreads;
    n->producerThreads = producerThreads;
    n->producerRegs = producerRegs;
    n->consumerRegs = consumerRegs;
    n->producer = std::move(producer);
    n->consumer = std::move(consumer);
    return n;
}

Stmt Evaluate::make(Expr v, SourceRange loc) {
    auto n = node<Evaluate>(loc);
    n->value = std::move(v);
    return n;
}

Region Region::whole(const Buffer &b, SourceRange loc) {
    Region r{b, {}, loc};
    for (auto &e : b->shape) r.ranges.push_back({IntImm::make(DType::Int32, 0), e});
    return r;
}

Stmt Copy::make(Region src, Region dst, SourceRange loc) {
    auto n = node<Copy>(loc);
    n->src = std::move(src);
    n->dst = std::move(dst);
    return n;
}

Stmt Fill::make(Region dst, Expr value, SourceRange loc) {
    auto n = node<Fill>(loc);
    n->dst = std::move(dst);
    n->value = std::move(value);
    return n;
}

const char *toString(GemmPolicy p) {
    switch (p) {
    case GemmPolicy::Auto: return "auto";
    case GemmPolicy::Square: return "Square";
    case GemmPolicy::FullRow: return "FullRow";
    case GemmPolicy::FullCol: return "FullCol";
    }
    return "?";
}

Stmt Gemm::make(Region a, Region b, Region c, bool transA, bool transB, bool clearAccum, GemmPolicy p,
                SourceRange loc, GemmInstr instr) {
    auto n = node<Gemm>(loc);
    n->a = std::move(a);
    n->b = std::move(b);
    n->c = std::move(c);
    n->transA = transA;
    n->transB = transB;
    n->clearAccum = clearAccum;
    n->policy = p;
    n->instr = instr;
    return n;
}

Stmt Gemm::withRegions(Region a2, Region b2, Region c2) const {
    auto n = std::make_shared<Gemm>(*this);
    n->a = std::move(a2);
    n->b = std::move(b2);
    n->c = std::move(c2);
    return n;
}

Stmt Gemm::withInstr(GemmInstr i) const {
    auto n = std::make_shared<Gemm>(*this);
    n->instr = i;
    return n;
}

Stmt Gemm::withLiveRows(int64_t rows) const {
    auto n = std::make_shared<Gemm>(*this);
    n->liveRows = rows;
    return n;
}

Stmt Gemm::withLiveRowsAt(Expr rows) const {
    auto n = std::make_shared<Gemm>(*this);
    n->liveRowsAt = std::move(rows);
    return n;
}

Stmt Gemm::withMetadata(Region e2) const {
    auto n = std::make_shared<Gemm>(*this);
    n->e = std::move(e2);
    return n;
}

const char *toString(ReduceKind k) {
    switch (k) {
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
    case ReduceKind::Sum: return "sum";
    case ReduceKind::AbsSum: return "abssum";
    case ReduceKind::AbsMax: return "absmax";
    }
    return "?";
}

Stmt Reduce::make(ReduceKind k, Buffer src, Buffer dst, int dim, bool clear, SourceRange loc) {
    auto n = node<Reduce>(loc);
    n->reduceKind = k;
    n->src = std::move(src);
    n->dst = std::move(dst);
    n->dim = dim;
    n->clear = clear;
    return n;
}

Stmt AtomicAdd::make(Region dst, std::optional<Region> src, Expr value, SourceRange loc) {
    auto n = node<AtomicAdd>(loc);
    n->dst = std::move(dst);
    n->src = std::move(src);
    n->value = std::move(value);
    return n;
}

void LoweringResult::recordTileLayout(const TileLayout &t) {
    TILEC_ASSERT(t.buffer && t.buffer->scope == Scope::Shared, "a tile layout recorded for a buffer that is not shared");
    if (const TileLayout *old = tileLayoutOf(t.buffer.get())) {
        TILEC_ASSERT(*old == t, "shared tile '" + t.buffer->name + "' given two layouts");
        return;
    }
    tileLayouts.push_back(t);
}

std::optional<int64_t> constInt(const Expr &e) {
    if (auto i = as<IntImm>(e)) return i->value;
    return std::nullopt;
}

} // namespace tilec::ir
