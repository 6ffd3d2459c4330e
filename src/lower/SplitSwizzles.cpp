/// \file
/// Swizzled shared-memory offsets split into the parts unrolled loops fix and the rest
/// (include/tilec/passes/SplitSwizzles.h).
#include "tilec/passes/SplitSwizzles.h"

#include "OffsetTerms.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <cstdint>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

bool isPow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
int bitLength(int64_t v) { return v <= 0 ? 0 : 64 - __builtin_clzll((uint64_t)v); }
int trailingZeros(int64_t v) { return v == 0 ? 63 : __builtin_ctzll((uint64_t)(v < 0 ? -v : v)); }

using offsets::kMaxCoefficient;
using offsets::Term;

/// What is known of a group of terms: its range and the bits below 2^L its values may set.
struct Known {
    std::optional<int64_t> lo = 0, hi = 0;
    uint64_t bits = 0;
    bool overlap = false; ///< two terms may set the same bit: the sum carries
    int lowest = 64;      ///< the lowest bit any term may set
};

class Split : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Split(const Kernel &k) : ranges_(kernelRanges(k)) {}

    Stmt visit(const std::shared_ptr<const For> &op) override {
        const RangeMap savedRanges = ranges_;
        const std::set<const VarNode *> savedFixed = fixed_;
        addLoopRange(ranges_, *op);
        // nvcc unrolls a _Pragma("unroll") loop of constant trip count whole: its variable is a constant there.
        if (offsets::unrolledWhole(*op)) fixed_.insert(op->var.get());
        Stmt s = IRMutator::visit(op);
        ranges_ = savedRanges, fixed_ = savedFixed;
        return s;
    }
    Expr visit(const std::shared_ptr<const Call> &op) override {
        Expr e = IRMutator::visit(op);
        auto c = as<Call>(e);
        if (lib::is(*c, lib::Fn::Swz) || lib::is(*c, lib::Fn::SwzPanels)) return split(*c, e);
        return e;
    }

  private:
    RangeMap ranges_;
    std::set<const VarNode *> fixed_;

    /// The period of the map: terms that are multiples of it add to the result unchanged. 0: the map is not
    /// bitwise (a row length that is not a power of two) or moves nothing.
    static int64_t period(bool panels, int64_t cols, int64_t eb, int64_t tileElems) {
        if (!isPow2(cols) || eb <= 0 || 16 % eb || tileElems <= 0 || tileElems % cols) return 0;
        const int64_t rowBytes = cols * eb;
        if (panels) return rowBytes % 32 == 0 ? tileElems : 0;
        const bool active = cols % (16 / eb) == 0 && (rowBytes % 128 == 0 || rowBytes == 64 || rowBytes == 32);
        if (!active) return 0;
        return (tileElems / cols) % 8 == 0 ? 8 * cols : tileElems;
    }

    /// A term's range; tilec.role_thread(first, count) is one of its role's threads.
    Interval rangeOf(const Term &t) const {
        if (!t.leaf) return Interval::point(t.coeff);
        Interval v = boundsOf(t.leaf, ranges_);
        auto c = as<Call>(t.leaf);
        if (c && lib::is(*c, lib::Fn::RoleThread)) {
            auto first = constValue(lib::arg(*c, lib::Fn::RoleThread, "first"));
            auto count = constValue(lib::arg(*c, lib::Fn::RoleThread, "count"));
            if (first && count) v = Interval::of(*first, *first + *count - 1);
        }
        if (!v.lo || !v.hi || std::llabs(*v.lo) >= kMaxCoefficient || std::llabs(*v.hi) >= kMaxCoefficient) return {};
        const int64_t a = *v.lo * t.coeff, b = *v.hi * t.coeff;
        return Interval::of(std::min(a, b), std::max(a, b));
    }

    /// The range and possible bits below 2^L of a sum of terms.
    Known known(const std::vector<Term> &terms, int L) const {
        Known k;
        const uint64_t below = L >= 64 ? ~uint64_t(0) : (uint64_t(1) << L) - 1;
        for (const Term &t : terms) {
            const Interval r = rangeOf(t);
            k.lo = k.lo && r.lo ? std::optional<int64_t>(*k.lo + *r.lo) : std::nullopt;
            k.hi = k.hi && r.hi ? std::optional<int64_t>(*k.hi + *r.hi) : std::nullopt;
            if (r.lo && r.hi && *r.lo == 0 && *r.hi == 0) continue;
            const int tz = trailingZeros(t.coeff) + (t.leaf ? trailingZeros(knownMultiple(t.leaf)) : 0);
            const int top = r.lo && *r.lo >= 0 && r.hi ? std::min(bitLength(*r.hi), L) : L;
            const uint64_t bits = tz >= top ? 0 : ((top >= 64 ? ~uint64_t(0) : (uint64_t(1) << top) - 1) & ~((uint64_t(1) << tz) - 1));
            k.overlap |= (k.bits & bits) != 0;
            k.bits |= bits, k.lowest = std::min(k.lowest, tz);
        }
        if (k.overlap) { // a carry may reach any bit from the lowest up to the sum's top
            const int top = k.lo && *k.lo >= 0 && k.hi ? std::min(bitLength(*k.hi), L) : L;
            k.bits = k.lowest >= top ? 0 : (((uint64_t(1) << top) - 1) & ~((uint64_t(1) << k.lowest) - 1));
        }
        k.bits &= below;
        return k;
    }

    /// Whether a term is fixed once unrolled: a constant, or a function of unrolled loops' variables alone.
    bool isFixed(const Term &t) const { return !t.leaf || offsets::readsOnly(t.leaf, fixed_); }

    Expr split(const Call &c, const Expr &whole) const;
    Expr splitRowsNotPow2(const Call &c, const Expr &whole, int64_t cols, int64_t eb, int64_t tileElems) const;

    /// The panel layout (swz_panels) stores a tile's rows one after another in each column panel of W elements (its
    /// `span` bytes), and
    /// XORs chunks with the row's low 3 bits: a run-time term that is a multiple of 8 rows (8 * cols elements: a
    /// T.serial loop's `i * 2048` over rows of 128) moves the element by its rows times W, outside the map, as long
    /// as the sum stays in one tile. So where those terms and the rest are non-negative and add up to less than the
    /// tile, they join `outside` scaled by W / cols; false where that is not known (they stay inside the map).
    bool panelRowTerms(const std::vector<Term> &rows, const std::vector<Term> &runtime, const std::vector<Term> &fixed, int64_t cols,
                       int64_t eb, int64_t span, int64_t tileElems, std::vector<Term> &outside) const {
        if (span <= 0 || span % eb || cols * eb % span) return false;
        int64_t lo = 0, hi = 0;
        for (const auto *group : {&rows, &runtime, &fixed})
            for (const Term &t : *group) {
                const Interval r = rangeOf(t);
                if (!r.lo || !r.hi || *r.lo < 0) return false;
                lo += *r.lo, hi += *r.hi;
            }
        if (lo < 0 || hi >= tileElems) return false;
        for (const Term &t : rows) outside.push_back({t.leaf, t.coeff / cols * (span / eb)});
        return true;
    }
};

/// The sum of terms (0 for none).
Expr sumOf(const std::vector<Term> &terms) {
    Expr s;
    for (const Term &t : terms) {
        if (t.coeff == 0) continue;
        const int64_t m = s && t.coeff < 0 ? -t.coeff : t.coeff;
        Expr v = !t.leaf ? i32(m) : m == 1 ? t.leaf : binary(BinaryOp::Mul, t.leaf, i32(m));
        s = !s ? v : binary(s && t.coeff < 0 ? BinaryOp::Sub : BinaryOp::Add, s, v);
    }
    return s ? s : i32(0);
}

Expr Split::split(const Call &c, const Expr &whole) const {
    const bool panels = lib::is(c, lib::Fn::SwzPanels);
    const lib::Fn fn = panels ? lib::Fn::SwzPanels : lib::Fn::Swz;
    auto cols = constValue(lib::arg(c, fn, "cols")), eb = constValue(lib::arg(c, fn, "elemBytes"));
    auto tileElems = constValue(lib::arg(c, fn, "tileElems"));
    auto span = panels ? constValue(lib::arg(c, fn, "span")) : std::optional<int64_t>(0);
    if (!cols || !eb || !tileElems || !span) return whole;
    if (!panels && !isPow2(*cols)) return splitRowsNotPow2(c, whole, *cols, *eb, *tileElems);
    const int64_t P = period(panels, *cols, *eb, *tileElems);
    std::vector<Term> terms, periodic, fixed, runtime, panelRows;
    if (!P || !offsets::flatten(lib::arg(c, fn, "offset"), 1, DType::Int32, terms)) return whole;
    const int64_t rowPeriod = panels ? 8 * *cols : 0; // 8 rows of the panel layout: see panelRowTerms
    for (const Term &t : terms) {
        const int64_t m = t.leaf ? knownMultiple(t.leaf) : 1;
        if (t.coeff == 0) continue;
        if (!t.leaf) { // a constant: its whole periods outside, the rest (in [0, P)) fixed
            const int64_t low = ((t.coeff % P) + P) % P;
            if (t.coeff != low) periodic.push_back({nullptr, t.coeff - low});
            if (low) fixed.push_back({nullptr, low});
        } else if ((__int128)t.coeff * m % P == 0) periodic.push_back(t);
        else if (isFixed(t)) fixed.push_back(t);
        else if (rowPeriod && t.coeff % rowPeriod == 0) panelRows.push_back(t);
        else runtime.push_back(t);
    }
    if (!panelRows.empty() && !panelRowTerms(panelRows, runtime, fixed, *cols, *eb, *span, *tileElems, periodic))
        runtime.insert(runtime.end(), panelRows.begin(), panelRows.end());
    if (periodic.empty() && fixed.empty()) return whole; // nothing leaves the map
    const bool pow2 = isPow2(P);
    const int L = pow2 ? bitLength(P) - 1 : bitLength(P - 1);
    // the map's template arguments (the panel layout's span among them)
    std::vector<Expr> tile{i32(*cols), i32(*eb), i32(*tileElems)};
    if (panels) tile.push_back(i32(*span));
    auto args = [&](std::vector<Expr> rest) {
        std::vector<Expr> a = tile;
        a.insert(a.end(), rest.begin(), rest.end());
        return a;
    };
    // Where the split does not hold, the period terms still leave the map (the rest non-negative, and inside the
    // period where that is not a power of two).
    const std::vector<Term> outside = periodic;
    auto peeled = [&]() -> Expr {
        std::vector<Term> rest = runtime;
        rest.insert(rest.end(), fixed.begin(), fixed.end());
        const Known x = known(rest, L);
        if (outside.empty() || !x.lo || *x.lo < 0 || (!pow2 && !(x.hi && *x.hi < P))) return whole;
        return binary(BinaryOp::Add, sumOf(outside), lib::call(fn, args({sumOf(rest)}), c.loc, DType::Int32));
    };
    Known a = known(runtime, L), b = known(fixed, L);
    if (!a.lo || *a.lo < 0) return peeled();
    Expr fixedPart = sumOf(fixed);
    if (!(b.lo && *b.lo >= 0 && (pow2 || (b.hi && *b.hi < P)))) {
        // A fixed sum that may be negative: its whole periods leave the map too, constants once unrolled. Only a
        // power-of-two period keeps the bits below it apart from a borrow.
        if (!pow2) return peeled();
        Expr low = binary(BinaryOp::FloorMod, fixedPart, i32(P));
        periodic.push_back({binary(BinaryOp::Sub, fixedPart, low), 1});
        fixedPart = low;
    }
    if ((a.bits & b.bits) || (!pow2 && !(a.hi && b.hi && *a.hi + *b.hi < P))) return peeled();
    Expr mapped;
    if (fixed.empty() || runtime.empty()) {
        mapped = lib::call(fn, args({fixed.empty() ? sumOf(runtime) : fixedPart}), c.loc, DType::Int32);
    } else {
        mapped = lib::call(panels ? lib::Fn::SwzPanelsSplit : lib::Fn::SwzSplit, args({sumOf(runtime), fixedPart}), c.loc, DType::Int32);
    }
    return periodic.empty() ? mapped : binary(BinaryOp::Add, sumOf(periodic), mapped);
}

/// Rows whose length is not a power of two (192 float16 elements: attention backward's dK of head dimension 192)
/// have no bitwise map, so swz_split does not apply; two identities still hold for an offset o >= 0 (swizzle.cuh:
/// the row XOR is a multiple of the chunk C = 16 / eb elements, depends on row % 8 alone, and stays in the row):
///  - a term that is a multiple of the period P (8 rows, or the tile where its rows are fewer or not a multiple of
///    8) moves the row by whole periods: swz(a + kP) = swz(a) + kP for a >= 0;
///  - a part b in [0, C) beside a rest a that is a multiple of C stays in a's chunk: swz(a + b) = swz(a) + b.
/// The second is what an unrolled vector loop over a chunk needs (`vec[v] = tile[swz(base + v)]`): its 8 element
/// reads become one base plus 0..7, which nvcc joins into one 16-byte access instead of 8 two-byte ones, each with
/// its own division by the row length.
Expr Split::splitRowsNotPow2(const Call &c, const Expr &whole, int64_t cols, int64_t eb, int64_t tileElems) const {
    if (eb <= 0 || 16 % eb || tileElems <= 0 || tileElems % cols) return whole;
    const int64_t C = 16 / eb;
    const int64_t rowBytes = cols * eb;
    if (cols % C || !(rowBytes % 128 == 0 || rowBytes == 64 || rowBytes == 32)) return whole; // the map moves nothing
    const int64_t P = (tileElems / cols) % 8 == 0 ? 8 * cols : tileElems;
    std::vector<Term> terms, periodic, rest, low;
    if (!offsets::flatten(lib::arg(c, lib::Fn::Swz, "offset"), 1, DType::Int32, terms)) return whole;
    bool aligned = true; // every term of `rest` is a multiple of C
    for (const Term &t : terms) {
        if (t.coeff == 0) continue;
        if (!t.leaf) { // a constant: whole periods, whole chunks, and the rest below C
            const int64_t inP = ((t.coeff % P) + P) % P, inC = inP % C;
            if (t.coeff != inP) periodic.push_back({nullptr, t.coeff - inP});
            if (inP != inC) rest.push_back({nullptr, inP - inC});
            if (inC) low.push_back({nullptr, inC});
            continue;
        }
        const __int128 step = (__int128)t.coeff * knownMultiple(t.leaf);
        if (step % P == 0) periodic.push_back(t);
        else if (step % C == 0) rest.push_back(t);
        else if (isFixed(t)) low.push_back(t);
        else rest.push_back(t), aligned = false;
    }
    const Known b = known(low, 62);
    if (!aligned || !(b.lo && *b.lo >= 0 && b.hi && *b.hi < C)) { // the part below a chunk stays in the map
        rest.insert(rest.end(), low.begin(), low.end());
        low.clear();
    }
    std::vector<Term> inside = rest;
    inside.insert(inside.end(), low.begin(), low.end());
    const Known a = known(inside, 62);
    if (!(a.lo && *a.lo >= 0)) { // whole periods leave the map only beside a non-negative rest
        rest.insert(rest.end(), periodic.begin(), periodic.end());
        periodic.clear();
    }
    if (periodic.empty() && low.empty()) return whole;
    Expr e = lib::call(lib::Fn::Swz, {i32(cols), i32(eb), i32(tileElems), sumOf(rest)}, c.loc, DType::Int32);
    if (!periodic.empty()) e = binary(BinaryOp::Add, sumOf(periodic), e);
    return low.empty() ? e : binary(BinaryOp::Add, e, sumOf(low));
}

} // namespace

Program splitSwizzles(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Split s(*k);
        out.kernels.push_back(s.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
