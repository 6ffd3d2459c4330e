/// \file
/// The oracles tested themselves (OracleSelfTest.h): each must see a miscompile of its class that the
/// reference and the simulator cannot, so removing or disconnecting one fails this test (a ctest).
#include "OracleSelfTest.h"

#include "Check.h"
#include "EvalTestUtil.h"
#include "Gen.h"
#include "HostChecks.h"
#include "IndexOracle.h"
#include "LoopHeaders.h"
#include "Rejections.h"

#include <cmath>
#include <functional>
#include <iostream>

namespace tilec::difffuzz {

namespace {

SExprP constant(double c) {
    auto e = std::make_shared<SExpr>();
    e->kind = SExpr::Const, e->c = c;
    return e;
}

SStmt assign(int var, SExprP e) {
    SStmt s;
    s.kind = SStmt::Assign, s.id = var, s.e = std::move(e);
    return s;
}

/// `x0 = x1; x1 = 5.0` over two T.alloc_var variables: x0 keeps x1's old value.
ScalarBlock copyThenStore(bool aliased) {
    ScalarBlock b;
    b.varInt = {false, false}, b.varAlloc = {0, 0}, b.init = {1.0, 2.0};
    auto x1 = std::make_shared<SExpr>();
    x1->kind = SExpr::Var, x1->id = 1;
    // What an aliasing front end makes of it: x0 another name for x1, so x0 sees the later store too.
    if (aliased) b.stmts = {assign(1, constant(5.0)), assign(0, x1)};
    else b.stmts = {assign(0, x1), assign(1, constant(5.0))};
    return b;
}

bool report(bool ok, const std::string &what, const Outcome &o) {
    std::cout << (ok ? "PASS " : "FAIL ") << what << " (" << (o.category.empty() ? "agrees" : o.category) << ")\n";
    return ok;
}

/// The front-end oracle: the generator's model of the program against the reference of a program that means
/// something else (what a front end with the alias bug of 624a01a gives).
int frontEnd() {
    GProgram p;
    p.seed = 1, p.threads = 32;
    p.scalars = std::make_shared<ScalarBlock>(copyThenStore(false));
    const Expected want{{"S", p.expectedS(1)}};
    Outcome right = checkProgram(p.print(), {}, 1, want);
    p.scalars = std::make_shared<ScalarBlock>(copyThenStore(true));
    Outcome wrong = checkProgram(p.print(), {}, 1, want);
    int bad = !report(right.kind == Outcome::Ok, "front-end oracle passes a copy between kernel variables", right);
    bad += !report(wrong.kind == Outcome::Failure && wrong.category == "front end",
                   "front-end oracle flags the copy read as an alias", wrong);
    return bad;
}

/// The front-end oracle on a Python float next to a bfloat16 value (the H200 triage of kda/chunk_o.py): the
/// model computes `T.cast(x0, "bfloat16") * 0.0884` as TVM types it (float32 math, a float32 constant), with 16-bit
/// rounding in the reference; the twin spells out what tilec's front end made of it before (the constant rounded
/// to bfloat16, the product in bfloat16).
int narrowOperand() {
    GProgram p;
    p.seed = 1, p.threads = 32, p.narrowRounding = true;
    auto b = std::make_shared<ScalarBlock>();
    b->varInt = {false}, b->varAlloc = {0}, b->init = {0.7};
    auto x0 = std::make_shared<SExpr>(), scaled = std::make_shared<SExpr>();
    x0->kind = SExpr::Var;
    scaled->kind = SExpr::Narrow, scaled->c = 0.08838834764831845, scaled->op = "*", scaled->kids = {x0};
    b->stmts = {assign(0, scaled)};
    p.scalars = b;
    const Expected want{{"S", p.expectedS(1)}};
    const std::string text = p.print(), literal = "0.088388347648318447";
    Outcome right = checkProgram(text, {}, 1, want);
    std::string narrowed = text;
    if (auto at = narrowed.find(literal); at != std::string::npos)
        narrowed.replace(at, literal.size(), "T.bfloat16(" + literal + ")");
    Outcome wrong = checkProgram(narrowed, {}, 1, want);
    int bad = !report(right.kind == Outcome::Ok, "front-end oracle passes a bfloat16 value times a Python float", right);
    bad += !report(wrong.kind == Outcome::Failure && wrong.category == "front end",
                   "front-end oracle flags the Python float rounded to bfloat16", wrong);
    return bad;
}

/// The TMA coordinate check: a GEMM whose rows are a T.dynamic size gets tensor maps on sm_90a (a T.dynamic
/// size is an int32, so its coordinates fit); evaluated with a row count past 2^31 that no int32 holds, its
/// coordinates pass 32 bits, and the oracle must say so of a TMA transfer.
int tmaCoordinates() {
    const std::string text = R"(import tilelang.language as T

m = T.dynamic("m")


@T.prim_func
def big(A: T.Tensor((m, 64), "float16"), B: T.Tensor((64, 128), "float16"), C: T.Tensor((m, 128), "float16")):
    with T.Kernel(T.ceildiv(m, 128), 1, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        acc = T.alloc_fragment((128, 128), "float32")
        T.clear(acc)
        for ko in T.Pipelined(1, num_stages=2):
            T.copy(A[bx * 128, ko * 64], A_s)
            T.copy(B[ko * 64, by * 128], B_s)
            T.gemm(A_s, B_s, acc)
        T.copy(acc, C[bx * 128, by * 128])
)";
    std::vector<std::pair<std::string, ir::Program>> lowered;
    Outcome o = compileText(text, &lowered);
    int bad = 0;
    for (auto &[name, p] : lowered) {
        if (name != "sm_90a") continue;
        for (auto &k : p.kernels) {
            if (k->tensorMaps.empty()) continue;
            IndexVerdict fits = checkIndexWidth(*k, {{"m", 2147483520}}, 1);
            IndexVerdict wraps = checkIndexWidth(*k, {{"m", ((int64_t)1 << 31) + 4096}}, 1);
            Outcome f = outcome(fits.ok ? Outcome::Ok : Outcome::Failure, fits.ok ? "" : fits.detail);
            Outcome w = outcome(wraps.ok ? Outcome::Ok : Outcome::Failure, wraps.ok ? "" : wraps.detail);
            bad += !report(fits.ok, "TMA coordinate oracle passes rows below 2^31", f);
            bad += !report(!wraps.ok && wraps.detail.find("TMA coordinate") != std::string::npos,
                           "TMA coordinate oracle flags a coordinate past 2^31", w);
            return bad;
        }
    }
    report(false, "the sm_90a lowering of the GEMM has tensor maps: " + o.detail, o);
    return 1;
}

/// The spliced-expression oracle: session 14's hang (a conditional extent spliced bare after `s < `) and its
/// parenthesized twin, C's precedence on a few expressions, and the generated CUDA of a conditional extent.
int loopHeaders() {
    const std::string hang = "for (int32_t s = 0; s < bx < 2 ? bx + 2 : bx - 1; ++s) {}";
    const std::string right = "_Pragma(\"unroll\") for (int32_t s = 0; s < (bx < 2 ? bx + 2 : bx - 1); ++s) {}";
    std::string e = checkLoopHeaders(hang);
    int bad = !report(e.find("((s < bx) < 2) ? (bx + 2) : (bx - 1)") != std::string::npos,
                      "loop-header oracle flags an extent spliced without parentheses", outcome(Outcome::Ok, e));
    e = checkLoopHeaders(right);
    bad += !report(e.empty(), "loop-header oracle passes its parenthesized twin", outcome(Outcome::Ok, e));
    e = checkLoopHeaders("for (int32_t q = 0; q < st[0] + 2; ++q) { V[q] = 1.0f; st[0] = st[0] - 1; }");
    bad += !report(e.find("reads st, which the loop's body stores into") != std::string::npos,
                   "loop-header oracle flags a bound the body changes", outcome(Outcome::Ok, e));
    e = checkLoopHeaders("{ const int32_t tilec_end_q = st[0] + 2; for (int32_t q = 0; q < tilec_end_q; ++q) { st[0] = st[0] - 1; } }");
    bad += !report(e.empty(), "loop-header oracle passes the bound read once", outcome(Outcome::Ok, e));
    const std::pair<const char *, const char *> parses[] = {
        {"a - b - c * d", "((a - b) - (c * d))"},
        {"c ? x : y ? z : w", "(c ? x : (y ? z : w))"},
        {"(int64_t)a + b << 2 & 3", "(((((int64_t)a) + b) << 2) & 3)"},
        {"tilec::floormod<int32_t>(n > 3 ? n : 3, 8) - -1", "(tilec::floormod<int32_t>(((n > 3) ? n : 3), 8) - (-1))"},
        {"a || b && !c == d", "(a || (b && ((!c) == d)))"},
        {"x = y += 1.5e-3f", "(x = (y += 1.5e-3f))"}};
    for (auto &[in, want] : parses) {
        std::string got = parenthesizeC(in);
        bad += !report(got == want, std::string("C precedence of '") + in + "'", outcome(Outcome::Ok, got));
    }
    return bad;
}

/// The first generated program (from `seed` on) whose statements of `kind` (only those kept) the generator's
/// model gives values that `usable` accepts, as a file with its own tile sizes; "" when none in 3000 seeds.
std::string shapedProgram(GOp::Kind kind, uint64_t seed, const std::function<bool(const GProgram &, const Expected &)> &usable,
                          Expected &want) {
    for (uint64_t s = seed; s < seed + 3000; ++s) {
        GProgram p = generate(s);
        std::vector<GOp> kept;
        for (auto &o : p.ops)
            if (o.kind == kind && (kind != GOp::Stepped || !o.value)) kept.push_back(o); // a modelled loop
        if (kept.empty()) continue;
        p.ops = kept, p.scalars = nullptr, p.narrowRounding = false;
        p.bmText = p.bm, p.bnText = p.bn;
        want = expectedShapes(p, 1);
        if (usable(p, want)) return p.print();
    }
    return "";
}

bool modelled(const std::vector<double> &v) {
    for (double x : v)
        if (!std::isnan(x)) return true;
    return false;
}

/// The model of stepped loops whose start is read at run time (GenShapes.cpp): their V as computed; a twin whose
/// loops start one later (a front end that reads the start after the body changed it) must be flagged.
int steppedStart() {
    Expected want;
    std::string text = shapedProgram(GOp::Stepped, 1, [](const GProgram &p, const Expected &e) {
        return p.ops[0].spec.mode == 1 && p.ops[0].twice && modelled(e.at("V"));
    }, want);
    Outcome right = checkProgram(text, {}, 1, want);
    std::string shifted = text;
    if (auto at = shifted.find("T.serial(st"); at != std::string::npos) shifted.replace(at, 11, "T.serial(1 + st");
    Outcome wrong = checkProgram(shifted, {}, 1, want);
    int bad = !report(right.kind == Outcome::Ok, "stepped-loop model passes a lane's loop from a run-time start", right);
    bad += !report(wrong.kind == Outcome::Failure && wrong.category == "front end",
                   "stepped-loop model flags the loop started one later", wrong);
    return bad;
}

/// The model of batched tensors: every batch and head (and none, where a leading size is 0, or an empty grid)
/// as computed; a twin that reads batch 0 for every batch must be flagged.
int batchedTensors() {
    Expected want;
    int bad = 0;
    for (bool empty : {true, false}) {
        std::string text = shapedProgram(GOp::Batched, 1, [&](const GProgram &p, const Expected &e) {
            const int64_t lead = p.batch >= 0 ? p.batch : p.xb;
            return empty ? lead * (p.xrank == 4 ? p.xh : 1) == 0 : lead >= 2 && modelled(e.at("Q"));
        }, want);
        Outcome right = checkProgram(text, {}, 1, want);
        bad += !report(right.kind == Outcome::Ok, empty ? "batched tensors of a 0-size leading dimension" : "batched-tensor model passes its tensors", right);
        if (empty) continue;
        std::string first = text;
        for (auto at = first.find("X[xi, "); at != std::string::npos; at = first.find("X[xi, ")) first.replace(at, 6, "X[0, ");
        Outcome wrong = checkProgram(first, {}, 1, want);
        bad += !report(wrong.kind == Outcome::Failure && wrong.category == "front end",
                       "batched-tensor model flags batch 0 read for every batch", wrong);
    }
    return bad;
}


/// The launch-function oracle (HostChecks.h) on session 36's miscompile: Y's rows every 48 floats (8 rows of 40)
/// span 7 * 48 + 40 = 376 floats, 1504 bytes; the check that takes them for their 320 elements (1280 bytes)
/// misses X lying in Y's gaps, and a launch function without the pair's check misses any overlap.
int launchChecks() {
    const std::string text = R"(import tilelang.language as T

@T.prim_func
def gaps(X: T.Tensor((8, 40), "float32"), Y: T.StridedTensor((8, 40), (48, 1), "float32")):
    with T.Kernel(8, threads=64) as bx:
        for j in T.Parallel(40):
            Y[bx, j] = X[bx, j] * 2.0
)";
    evaltest::EvalRun front;
    front.run(text, "gaps.tile");
    Outcome o = compileText(text);
    if (!front.program || o.kind != Outcome::Ok) return !report(false, "launch-check oracle: the program compiles", o);
    const ir::Kernel &k = *front.program->kernels[0];
    const std::string cuda = o.cuda.at("sm_80");
    auto judge = [&](const std::string &c) {
        std::string e = checkLaunchArguments(c, k, {}, {{"Y", {48, 1}}}, {"X"}, {"Y"});
        return outcome(e.empty() ? Outcome::Ok : Outcome::Failure, e);
    };
    auto replaced = [&](const std::string &from, const std::string &to) {
        std::string c = cuda;
        const size_t at = c.find(from);
        return at == std::string::npos ? std::string() : c.replace(at, from.size(), to);
    };
    Outcome right = judge(cuda), count = judge(replaced("Y, 1504LL", "Y, 1280LL"));
    const size_t line = cuda.find("    if (tilec_overlap(X");
    Outcome none = judge(line == std::string::npos ? "" : std::string(cuda).erase(line, cuda.find('\n', line) + 1 - line));
    int bad = !report(right.kind == Outcome::Ok, "launch-check oracle passes a strided output's span", right);
    bad += !report(count.kind == Outcome::Failure, "launch-check oracle flags its element count taken for its span", count);
    bad += !report(none.kind == Outcome::Failure, "launch-check oracle flags a missing overlap check", none);
    return bad;
}

/// The workspace-size oracle (HostChecks.h: checkWorkspaceBytes) on two workspaces of run-time sizes: the query
/// that sizes one by a wrong factor, or rounds a slot down, would let a launch write past it.
int workspaceBytes() {
    const std::string text = R"(import tilelang.language as T
m = T.dynamic("m")

@T.prim_func
def two(X: T.Tensor((m, 40), "float32"), Y: T.Tensor((m,), "float32")):
    P = T.alloc_global((m, 40), "float32")
    Q = T.alloc_global((m,), "float16")
    with T.Kernel(m, threads=64) as bx:
        for j in T.Parallel(40):
            P[bx, j] = X[bx, j] * 2.0
        Q[bx] = T.cast(X[bx, 0], "float16")
    with T.Kernel(m, threads=64) as bx:
        Y[bx] = P[bx, 1] + T.cast(Q[bx], "float32")
)";
    evaltest::EvalRun front;
    front.run(text, "two.tile");
    Outcome o = compileText(text);
    if (!front.program || o.kind != Outcome::Ok) return !report(false, "workspace-size oracle: the program compiles", o);
    const std::string cuda = o.cuda.at("sm_80");
    auto judge = [&](const std::string &c) {
        std::string e = checkWorkspaceBytes(c, *front.program->kernels.back(), {{"m", 37}});
        return outcome(e.empty() ? Outcome::Ok : Outcome::Failure, e);
    };
    auto replaced = [&](const std::string &from, const std::string &to) {
        std::string c = cuda;
        for (size_t at = c.find(from); at != std::string::npos; at = c.find(from, at + to.size())) c.replace(at, from.size(), to);
        return c;
    };
    Outcome right = judge(cuda), narrow = judge(replaced("int64_t ws_bytes = 2;", "int64_t ws_bytes = 1;")),
            down = judge(replaced("(ws_bytes + 255) / 256 * 256", "ws_bytes / 256 * 256"));
    int bad = !report(right.kind == Outcome::Ok, "workspace-size oracle passes two workspaces of run-time sizes", right);
    bad += !report(narrow.kind == Outcome::Failure, "workspace-size oracle flags a float16 workspace sized as bytes", narrow);
    bad += !report(down.kind == Outcome::Failure, "workspace-size oracle flags a slot rounded down", down);
    return bad;
}

/// The rejection census (Rejections.h): a rejection of no listed kind fails, a listed one is counted. The
/// unlisted one stands for a new class such as session 44's `T.copy(acc_o[:1, :], O_shared)`, which a campaign drew
/// and counted as a plain rejection.
int rejectionCensus() {
    auto program = [](const std::string &copy) {
        return "import tilelang.language as T\n\n\n@T.prim_func\ndef kernel(A: T.Tensor((32, 16), \"float32\"), Y: "
               "T.Tensor((32, 16), \"float32\")):\n    with T.Kernel(1, threads=128) as bx:\n"
               "        f = T.alloc_fragment((32, 16), \"float32\")\n        g = T.alloc_fragment((16, 32), \"float32\")\n"
               "        T.copy(A[0, 0], f)\n        " + copy + "\n        T.copy(g, Y[0, 0])\n";
    };
    Outcome unlisted = listedOutcome(checkProgram(program("T.copy(f, g)"), {}, 1)),
            listed = listedOutcome(checkProgram(program("g[0, 40] = f[0, 0]"), {}, 1));
    int bad = !report(unlisted.kind == Outcome::Failure && unlisted.category.rfind("unlisted rejection: ", 0) == 0,
                      "rejection census fails a rejection of no listed kind", unlisted);
    bad += !report(listed.kind == Outcome::Rejected && knownRejection(listed.category, listed.detail),
                   "rejection census counts a listed kind (a constant index past an extent)", listed);
    return bad;
}

} // namespace

int oracleSelfTest() {
    int bad = frontEnd() + narrowOperand() + tmaCoordinates() + loopHeaders() + steppedStart() + batchedTensors() + launchChecks() +
              workspaceBytes() + rejectionCensus();
    std::cout << (bad ? "an oracle missed what it must see\n" : "every oracle sees its class\n");
    return bad ? 1 : 0;
}

} // namespace tilec::difffuzz
