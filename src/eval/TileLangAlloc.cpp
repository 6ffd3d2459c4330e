/// \file
/// Allocations inside a kernel (T.alloc_shared, T.alloc_fragment, T.alloc_local, T.alloc_var, T.alloc_barrier, T.alloc_reducer) and the
/// primitives that initialise them (T.fill, T.clear); T.cumsum is in TileLangScan.cpp.
#include "eval/TileLang.h"

#include "tilec/LibraryCalls.h"

#include <vector>

namespace tilec::eval::tl {

namespace {

constexpr size_t kMaxKernelBuffers = 4096;

/// The name the buffer gets: the variable it is assigned to, made unique within the kernel.
std::string bufferName(Interp &in, const ir::Kernel &k) {
    std::string base = in.assignTargetName();
    if (base.empty())
        base = "buf" + std::to_string(k.allocs.size());
    return uniqueBufferName(k, base);
}

ir::Buffer allocate(Interp &in, const CallArgs &args, const std::string &fname, ir::Scope scope,
                    std::vector<ir::Expr> shape, DType t) {
    TraceState &tr = requireLaunch(in, args, fname);
    // Far more than any kernel needs; the cap keeps a runaway loop of allocations from taking minutes.
    // Evaluation stops there (as at the step budget): abandoning just the statement let such a loop run on,
    // failing each allocation, until the step budget, 10 s later (found by the crash fuzzer as timeouts).
    if (tr.kernel->allocs.size() >= kMaxKernelBuffers) {
        in.diag().error(args.call, fname + ": the kernel allocates more than " + std::to_string(kMaxKernelBuffers) +
                                       " buffers (an allocation inside a long or endless loop?)");
        throw BudgetExhausted{};
    }
    auto b = ir::makeBuffer(bufferName(in, *tr.kernel), scope, t, std::move(shape), args.call);
    tr.kernel->allocs.push_back(b);
    return b;
}

/// `empty`: a dimension may be 0 (T.alloc_local's, as TileLang allows: a buffer nothing may index, bufferAccess).
std::vector<ir::Expr> constShape(Interp &in, const Arg &a, const std::string &fname, bool empty = false) {
    auto dims = in.toSequence(a, "shape");
    if (dims.empty())
        in.fail(a.range, fname + " needs at least one dimension");
    std::vector<ir::Expr> shape;
    int64_t elements = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
        int64_t n = constIntArg(in, dims[i], fname + " dimension " + std::to_string(i));
        if (n < (empty ? 0 : 1))
            in.fail(dims[i].range, fname + " dimension " + std::to_string(i) + " is " + std::to_string(n) +
                                       (empty ? "; dimensions cannot be negative" : "; dimensions must be positive"));
        // On-chip buffers are far smaller than this; the cap keeps every later size computation in range.
        if (n > (int64_t(1) << 31) / std::max<int64_t>(elements, 1))
            in.fail(a.range, "the shape of " + fname + " has more than 2^31 elements");
        elements *= n;
        shape.push_back(ir::intImm(n, DType::Int32, dims[i].range));
    }
    return shape;
}

DType bufferDType(Interp &in, const Arg &a) {
    DType t = dtypeArg(in, a);
    if (t == DType::Void)
        in.fail(a.range, "a buffer cannot have element type void");
    return t;
}

void checkScope(Interp &in, const std::optional<Arg> &a, const std::string &fname,
                std::initializer_list<const char *> valid) {
    if (!a)
        return;
    std::string s = in.toStr(*a, "scope");
    std::string list;
    for (const char *v : valid) {
        if (s == v)
            return;
        list += std::string(list.empty() ? "'" : ", '") + v + "'";
    }
    in.fail(a->range, "scope '" + s.substr(0, 40) + "' is not valid for " + fname + " (use " + list + ")");
}

/// An on-chip buffer of `dtype`, or (T.int4, T.uint4, T.float4_e2m1fn) the view of the bytes that hold its
/// sub-byte elements (TileLangSubByte.cpp).
Value allocBuffer(Interp &in, const CallArgs &args, const std::string &fname, ir::Scope scope, std::vector<ir::Expr> shape,
                  const Arg &dtype) {
    SubByte k = subByteArg(dtype);
    if (k == SubByte::None) return Value::ofBuffer(allocate(in, args, fname, scope, std::move(shape), bufferDType(in, dtype)));
    TraceState &t = requireLaunch(in, args, fname);
    auto bytes = subByteStorageShape(in, scope, shape, in.assignTargetName(), k, args.call);
    return Value::ofBuffer(subByteView(t, allocate(in, args, fname, scope, std::move(bytes), subByteStorage(k)), k, std::move(shape)));
}

Value allocShared(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.alloc_shared", {"shape", "dtype", "scope?"});
    requireLaunch(in, args, "T.alloc_shared");
    checkScope(in, a[2], "T.alloc_shared", {"shared.dyn", "shared"});
    auto shape = constShape(in, *a[0], "T.alloc_shared");
    return allocBuffer(in, args, "T.alloc_shared", ir::Scope::Shared, shape, *a[1]);
}

Value allocFragment(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.alloc_fragment", {"shape", "dtype", "scope?"});
    requireLaunch(in, args, "T.alloc_fragment");
    checkScope(in, a[2], "T.alloc_fragment", {"local.fragment", "local"});
    // TileLang's alloc_fragment allocates in the scope it is given: "local" is T.alloc_local's per-thread buffer.
    bool local = a[2] && in.toStr(*a[2], "scope") == "local";
    auto shape = constShape(in, *a[0], "T.alloc_fragment");
    return allocBuffer(in, args, "T.alloc_fragment", local ? ir::Scope::Local : ir::Scope::Fragment, shape, *a[1]);
}

Value allocLocal(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.alloc_local", {"shape", "dtype", "scope?"});
    requireLaunch(in, args, "T.alloc_local");
    checkScope(in, a[2], "T.alloc_local", {"local"});
    auto shape = constShape(in, *a[0], "T.alloc_local", true);
    return allocBuffer(in, args, "T.alloc_local", ir::Scope::Local, shape, *a[1]);
}

Value allocVar(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.alloc_var", {"dtype", "init?", "scope?"});
    requireLaunch(in, args, "T.alloc_var");
    std::optional<Arg> init = a[1], scope = a[2];
    // Newer TileLang takes the scope as the second positional argument: a string there is the scope.
    if (init && init->value.is(VK::Str) && !scope) {
        scope = init;
        init.reset();
    }
    checkScope(in, scope, "T.alloc_var", {"local.var"});
    DType t = bufferDType(in, *a[0]);
    ir::Expr value;
    if (init && !init->value.is(VK::None))
        value = ir::cast(t, in.toExpr(*init, "initial value"), init->range);
    auto b = allocate(in, args, "T.alloc_var", ir::Scope::Var, {ir::intImm(1)}, t);
    if (value)
        in.emit(ir::Store::make(b, {ir::intImm(0)}, value, args.call));
    return Value::ofBuffer(b);
}

/// T.alloc_barrier(arrive_count): one mbarrier per count (an int or a list), each initialised for that many
/// arrivals per phase; lowerWarpRoles moves the initialisations to the kernel's start.
Value allocBarrier(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.alloc_barrier", {"arrive_count"});
    requireLaunch(in, args, "T.alloc_barrier");
    std::vector<Arg> counts = in.toSequence(*a[0], "arrive_count");
    if (counts.empty()) in.fail(a[0]->range, "T.alloc_barrier needs at least one arrive count");
    std::vector<int64_t> n;
    for (auto &c : counts) {
        n.push_back(constIntArg(in, c, "arrive count"));
        if (n.back() < 1 || n.back() > 1024)
            in.fail(c.range, "an mbarrier's arrive count must be in 1..1024 (threads of a block), got " + std::to_string(n.back()));
    }
    auto b = allocate(in, args, "T.alloc_barrier", ir::Scope::Shared, {ir::intImm((int64_t)n.size())}, DType::UInt64);
    for (size_t i = 0; i < n.size(); ++i)
        in.emit(passes::lib::stmt(passes::lib::Fn::MbarrierInit,
                                  {passes::addressOf(b, {ir::intImm((int64_t)i)}), ir::intImm(n[i])}, args.call));
    return Value::ofBuffer(b);
}

/// T.alloc_reducer(shape, dtype, op="sum", replication=None): a fragment T.Parallel nests accumulate into
/// (lowerReducers); the marker statement names its operation.
Value allocReducer(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.alloc_reducer", {"shape", "dtype", "op?", "replication?"});
    requireLaunch(in, args, "T.alloc_reducer");
    std::string op = a[2] ? in.toStr(*a[2], "op") : "sum";
    ir::ReduceKind kind = op == "max" ? ir::ReduceKind::Max : op == "min" ? ir::ReduceKind::Min : ir::ReduceKind::Sum;
    if (op != "sum" && op != "max" && op != "min")
        in.fail(a[2]->range, "T.alloc_reducer op must be \"sum\", \"max\" or \"min\", got \"" + op + "\"");
    if (a[3] && !a[3]->value.is(VK::None)) {
        std::string rep = in.toStr(*a[3], "replication");
        if (rep != "all" && rep != "none")
            in.fail(a[3]->range, "T.alloc_reducer replication must be \"all\" or \"none\", got \"" + rep + "\"");
    }
    auto shape = constShape(in, *a[0], "T.alloc_reducer");
    auto b = allocate(in, args, "T.alloc_reducer", ir::Scope::Fragment, shape, bufferDType(in, *a[1]));
    std::vector<ir::Expr> origin(shape.size(), ir::intImm(0));
    in.emit(passes::lib::stmt(passes::lib::Fn::Reducer, {passes::addressOf(b, origin), ir::intImm((int64_t)kind)}, args.call));
    return Value::ofBuffer(b);
}

/// T.fill(dst, value) and T.clear(dst): dst is a buffer, a slice region or one element.
Value fill(Interp &in, const CallArgs &args, const Arg &dst, ir::Expr value, const std::string &fname) {
    requireLaunch(in, args, fname);
    Operand op = operandArg(in, dst, fname + " destination");
    std::vector<ir::Expr> ones(op.buffer->shape.size(), ir::intImm(1));
    ir::Region r = op.origin ? resolveRegion(in, op, ones, true) : explicitRegion(op);
    checkInBounds(in, r, dst.range);
    if (op.buffer->dtype.isBool() && !value->dtype.isBool())
        value = ir::binary(ir::BinaryOp::NE, value,
                           ir::intImm(0, value->dtype.isInt() ? value->dtype : DType::Int32));
    in.emit(ir::Fill::make(r, ir::cast(op.buffer->dtype, value, args.call), args.call));
    return Value::none();
}

} // namespace

void addAllocPrimitives(Attrs &attrs) {
    def(attrs, "alloc_shared", allocShared);
    def(attrs, "alloc_fragment", allocFragment);
    def(attrs, "alloc_local", allocLocal);
    def(attrs, "alloc_var", allocVar);
    def(attrs, "alloc_barrier", allocBarrier);
    def(attrs, "alloc_reducer", allocReducer);
    // The marker where lowerReducers combines what the threads accumulated (or nothing, where it reduced each nest).
    def(attrs, "finalize_reducer", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.finalize_reducer", {"reducer"});
        requireLaunch(in, args, "T.finalize_reducer");
        if (!a[0]->value.is(VK::Buffer) || a[0]->value.buffer->scope != ir::Scope::Fragment)
            in.fail(a[0]->range, "T.finalize_reducer takes the buffer T.alloc_reducer made");
        const ir::Buffer &b = a[0]->value.buffer;
        std::vector<ir::Expr> origin(b->shape.size(), ir::intImm(0));
        in.emit(passes::lib::stmt(passes::lib::Fn::FinalizeReducer, {passes::addressOf(b, origin)}, args.call));
        return Value::none();
    });
    def(attrs, "fill", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.fill", {"buffer", "value"});
        // a T.alloc_var is its value (issue 24: `T.fill(frag, v)` was "got buffer"); other buffers are not one
        const Value &v = a[1]->value;
        if (v.is(VK::Str) || v.is(VK::None) || (v.is(VK::Buffer) && v.buffer->scope != ir::Scope::Var))
            in.fail(a[1]->range,
                    "fill value must be a number, got " + std::string(typeName(a[1]->value.kind)));
        return fill(in, args, *a[0], in.toExpr(*a[1], "fill value"), "T.fill");
    });
    def(attrs, "clear", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.clear", {"buffer"});
        return fill(in, args, *a[0], ir::intImm(0), "T.clear");
    });
}


} // namespace tilec::eval::tl

namespace tilec::eval {

std::string uniqueBufferName(const ir::Kernel &k, const std::string &base) {
    // The lowest free name of base, base_1, base_2, ... in one pass over the kernel's names, marking the
    // suffixes taken (only those up to the name count can be the lowest free one). A set rebuilt and probed
    // per candidate made an allocation inside a long loop quadratic: 4,096 buffers took 12 s (crash-fuzzer
    // timeouts).
    const size_t n = k.allocs.size() + k.params.size();
    std::vector<char> taken(n + 2, 0); // taken[0]: base itself
    auto note = [&](const std::string &name) {
        if (name.size() < base.size() || name.compare(0, base.size(), base) != 0) return;
        if (name.size() == base.size()) {
            taken[0] = 1;
            return;
        }
        if (name[base.size()] != '_' || name.size() == base.size() + 1 || name[base.size() + 1] == '0') return;
        size_t v = 0;
        for (size_t i = base.size() + 1; i < name.size(); ++i) {
            if (name[i] < '0' || name[i] > '9') return;
            v = v * 10 + (size_t)(name[i] - '0');
            if (v > n + 1) return;
        }
        taken[v] = 1;
    };
    for (auto &b : k.allocs) note(b->name);
    for (auto &p : k.params) note(p.name());
    if (!taken[0]) return base;
    size_t i = 1;
    while (taken[i]) ++i;
    return base + "_" + std::to_string(i);
}

} // namespace tilec::eval
