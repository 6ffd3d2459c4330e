/// \file
/// T.StridedTensor parameters (Gen.h: decorateStrided), the class of session 36's missed overlap: the launch
/// function measured a strided tensor by its element count, not by its strides' span, and the fuzzer, whose
/// tensors were all row-major, could not see it. Some of a program's tensor parameters get strides of a kind:
///   gaps        row-major with padding after some dimensions (a slice of a wider tensor: rows longer than the row)
///   transposed  the dimensions in another order in memory (column-major), padded or not
///   elements    an innermost stride of 2 or 3 (every other element), rows padded or not
///   overlap     (inputs) an outer stride smaller than what the inner dimensions span: rows that share elements
///   broadcast   (inputs) a stride of 0 (torch's expand), one dimension's elements all one
/// Some strides are T.dynamic sizes (the C function's arguments, validated by the launch function); some tensors
/// are `T.ptr` parameters that T.make_tensor(p, shape, dtype, strides) makes the tensor in the body. Outputs
/// keep distinct elements. From a stream of its own, so the rest of a seed's program is what it was.
#include "Gen.h"

#include <algorithm>
#include <cctype>
#include <iostream>

namespace tilec::difffuzz {

const std::vector<std::string> &stridableTensors() {
    static const std::vector<std::string> v{"A", "B", "Y", "R", "W", "Z", "GA", "GB", "X", "Q"};
    return v;
}

bool readOnlyTensor(const std::string &name) {
    return name == "A" || name == "B" || name == "GA" || name == "GB" || name == "X";
}

namespace {

/// Strides of `kind` for `shape` (see the file's comment).
std::vector<int64_t> drawStrides(Rng &r, const std::vector<int64_t> &shape, const std::string &kind) {
    const size_t n = shape.size();
    std::vector<size_t> order(n); // the dimensions from the innermost in memory outwards
    for (size_t k = 0; k < n; ++k) order[k] = n - 1 - k;
    if (kind == "transposed" && n > 1) {
        std::reverse(order.begin(), order.end());
        if (n > 2 && r.coin(0.5)) std::swap(order[(size_t)r.in(1, (int64_t)n - 1)], order[0]);
    }
    std::vector<int64_t> s(n);
    int64_t next = kind == "elements" ? r.in(2, 3) : 1;
    for (size_t k = 0; k < n; ++k) {
        const size_t d = order[k];
        s[d] = next;
        const bool pad = (kind == "gaps" || kind == "transposed" || kind == "elements") && r.coin(0.5);
        next = next * std::max<int64_t>(shape[d], 1) + (pad ? r.in(1, 9) : 0);
    }
    if (kind == "gaps" && n > 1) s[order[n - 1]] += r.in(1, 9); // padded at least once
    if (kind == "gaps" && n == 1) s[0] = r.in(2, 4);
    if (kind == "overlap" && n > 1) { // an outer dimension steps less than the inner ones span
        const size_t d = order[(size_t)r.in(1, (int64_t)n - 1)];
        s[d] = r.in(1, std::max<int64_t>(1, s[d] - 1));
    }
    if (kind == "broadcast") s[(size_t)r.in(0, (int64_t)n - 1)] = 0;
    return s;
}

/// The T.dynamic symbol of `name`'s stride d ("sga1"): names no other symbol of the program has.
std::string strideSymbol(const std::string &name, size_t d) {
    std::string s = "s";
    for (char c : name) s += (char)std::tolower((unsigned char)c);
    return s + std::to_string(d);
}

} // namespace

void decorateStrided(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x57d1de)};
    Rng tables{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x7ab1e)}; // its own, so the strides are what they were
    if (!r.coin(0.35)) return;
    for (auto &name : stridableTensors()) {
        const std::vector<int64_t> shape = p.shapeOf(name);
        if (shape.empty() || !r.coin(0.45)) continue;
        std::vector<std::string> kinds{"gaps", "transposed", "elements"};
        if (readOnlyTensor(name)) kinds.insert(kinds.end(), {"overlap", "overlap", "broadcast"});
        GProgram::Strides st;
        st.kind = r.pick(kinds);
        st.value = drawStrides(r, shape, st.kind);
        for (size_t d = 0; d < shape.size(); ++d) {
            st.text.push_back(std::to_string(st.value[d]));
            if (!r.coin(0.3)) continue;
            st.text[d] = strideSymbol(name, d);
            p.strideSymbols[st.text[d]] = st.value[d];
        }
        st.pointer = r.coin(0.25); // through a T.ptr and T.make_tensor (docs/LANGUAGE.md, section 3.9)
        st.table = st.pointer && tables.coin(0.6); // through a pointer table, inside the launch
        // no argument has a table tensor's strides: its run-time ones are int32 scalar parameters (a T.dynamic
        // only it uses is a located error, tests/fuzz/pointer_table_unbound_stride.tile)
        if (st.table)
            for (auto &t : st.text)
                if (p.strideSymbols.count(t)) p.scalarParams[t] = {"int32", p.strideSymbols[t]}, p.strideSymbols.erase(t);
        p.strided[name] = std::move(st);
    }
}

} // namespace tilec::difffuzz

namespace tilec::difffuzz {

int stridedCensus(uint64_t seed, uint64_t count, uint64_t bigEvery) {
    std::map<std::string, uint64_t> n;
    uint64_t programs = 0, strided = 0;
    for (uint64_t s = seed; s < seed + count; ++s) {
        if (bigEvery && s % bigEvery == 0) { // a program past 2^31 elements (GenBig.cpp): strided ones among them
            const std::string kind = generateBig(s).kind;
            n["past 2^31: strided rows"] += kind == "strided rows", n["past 2^31: strided int4 rows"] += kind == "strided int4 rows";
            continue;
        }
        const GProgram p = generate(s, true);
        ++programs, strided += !p.strided.empty();
        for (auto &[name, st] : p.strided) {
            ++n["kind " + st.kind];
            ++n[readOnlyTensor(name) ? "in an input" : "in an output"];
            n["through T.ptr and T.make_tensor"] += st.pointer && !st.table;
            n["through a T.ptr table inside the launch"] += st.table;
            n["through a T.ptr table, run-time strides"] +=
                st.table && std::any_of(st.text.begin(), st.text.end(), [&](auto &t) { return p.scalarParams.count(t) > 0; });
            ++n[st.value.size() > 2 ? "of rank 3 or 4" : st.value.size() == 2 ? "of rank 2" : "of rank 1"];
        }
        n["with T.dynamic strides"] += !p.strideSymbols.empty();
        n["with scalar parameters (not strides)"] += !p.scalarParams.empty();
        n["with T.ptr tables of two tensors or more"] += std::count_if(p.strided.begin(), p.strided.end(), [](auto &e) { return e.second.table; }) > 1;
        if (!p.workspace.empty()) ++n["with a T.alloc_global workspace: " + p.workspace];
        if (p.ru > 0) ++n["with a packed " + p.uType + " input" + (p.uStride ? ", strided" : "")];
        if (p.ruo > 0) ++n[std::string("with a packed output") + (p.uoStride ? ", strided" : "")];
    }
    std::cout << strided << " of " << programs << " programs from seed " << seed << " have T.StridedTensor parameters\n";
    int missing = strided == 0;
    for (const char *k : {"kind gaps", "kind transposed", "kind elements", "kind overlap", "kind broadcast", "in an input",
                          "in an output", "of rank 1", "of rank 2", "of rank 3 or 4", "with T.dynamic strides",
                          "through T.ptr and T.make_tensor", "through a T.ptr table inside the launch", "through a T.ptr table, run-time strides", "with scalar parameters (not strides)",
                          "with T.ptr tables of two tensors or more", "with a T.alloc_global workspace: Y",
                          "with a T.alloc_global workspace: Y here", "with a T.alloc_global workspace: A",
                          "with a packed int4 input", "with a packed int4 input, strided", "with a packed uint4 input",
                          "with a packed uint4 input, strided", "with a packed output", "with a packed output, strided",
                          "past 2^31: strided rows", "past 2^31: strided int4 rows"}) {
        std::cout << "  " << n[k] << "  " << k << "\n";
        missing += n[k] == 0;
    }
    if (missing) std::cout << "the generator no longer covers every kind of parameter (strided, pointer table, workspace, packed)\n";
    return missing ? 1 : 0;
}

} // namespace tilec::difffuzz
