/// \file
/// The syntax tree of a .tile file: Python 3 syntax, as the parser builds it.
///
/// Every node keeps its source range. Constructs that parse but that compile-time evaluation does not
/// support (bytes, del, async, ...) become `Unsupported` nodes naming the construct: they are only an
/// error when evaluation reaches them.
#pragma once

#include "tilec/Diagnostics.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilec::ast {

struct Expr;
struct Stmt;
using ExprP = std::shared_ptr<const Expr>;
using StmtP = std::shared_ptr<const Stmt>;
using Body = std::vector<StmtP>;

enum class ExprKind {
    Name, Int, Float, Str, Bool, None, Ellipsis,
    Tuple, List, Dict, Set,
    Attribute, Subscript, Slice, Call, Starred,
    BinOp, UnaryOp, BoolOp, Compare, IfExp,
    ListComp, SetComp, DictComp, GeneratorExp, ///< `a` the element (DictComp: key, `b` value); `generators`
    Lambda,                                    ///< `lambda`: `def` is a synthesized FunctionDef
    JoinedStr,      ///< an f-string (with the strings next to it): `elts` are Str and FormattedValue parts
    FormattedValue, ///< `{a!conv:spec}` of an f-string: `a` the value, `str` the conversion ("", "s", "r" or
                    ///< "a"), `b` the format spec (a JoinedStr; null when there is none)
    Unsupported,
};

enum class BinOpKind { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, LShift, RShift, BitAnd, BitOr, BitXor, MatMul };
enum class UnaryOpKind { Neg, Pos, Invert, Not };
enum class CmpOpKind { Eq, NotEq, Lt, LtE, Gt, GtE, Is, IsNot, In, NotIn };

const char *toString(BinOpKind k);   ///< "+", "//", ...
const char *toString(UnaryOpKind k); ///< "-", "not", ...
const char *toString(CmpOpKind k);   ///< "<=", "is not", ...

struct Keyword {
    std::string name; ///< empty for `**kwargs`
    ExprP value;
    SourceRange range;
};

/// One `for target in iter if cond ...` clause of a comprehension.
struct Comprehension {
    ExprP target, iter;
    std::vector<ExprP> ifs;
    SourceRange range;
};

/// One struct for every expression kind; only the fields of its kind are set (documented per field).
struct Expr {
    ExprKind kind;
    SourceRange range;
    std::string str;          ///< Name: identifier; Str: decoded value; Attribute: attribute name;
                              ///< Unsupported: what it is ("bytes literal", "walrus", "await", ...)
    int64_t intValue = 0;     ///< Int (a literal that does not fit in int64 is a parse error)
    double floatValue = 0;    ///< Float
    bool boolValue = false;   ///< Bool
    ExprP a, b, c;            ///< Attribute/Starred: a; Subscript: a[b] (b is a Tuple for several indices);
                              ///< Slice: a:b:c (each may be null); BinOp: a op b; UnaryOp: op a;
                              ///< IfExp: a if b else c; Call: callee a
    std::vector<ExprP> elts;  ///< Tuple/List/Set elements; Dict keys; BoolOp operands; Compare: operands
                              ///< (n+1 for n ops); Call: positional args (Starred for *args)
    std::vector<ExprP> values;///< Dict values (a null key means `**mapping`)
    std::vector<Keyword> keywords; ///< Call keyword arguments
    BinOpKind binOp = BinOpKind::Add;
    UnaryOpKind unaryOp = UnaryOpKind::Neg;
    bool isAnd = false;             ///< BoolOp: `and` (else `or`)
    std::vector<CmpOpKind> cmpOps;  ///< Compare
    bool parenthesized = false;     ///< written inside parentheses (Tuple: `(a, b)` vs `a, b`)
    std::vector<Comprehension> generators; ///< comprehensions: the `for` clauses, outermost first
    StmtP def; ///< Lambda: a FunctionDef named `<lambda>` whose body is `return <expression>`

    static std::shared_ptr<Expr> make(ExprKind k, SourceRange r) {
        auto e = std::make_shared<Expr>();
        e->kind = k;
        e->range = r;
        return e;
    }
};

enum class StmtKind {
    Expr, Assign, AugAssign, AnnAssign, If, For, While, With, FunctionDef, ClassDef, Return,
    Pass, Break, Continue, Import, ImportFrom, Assert, Global, Nonlocal, Try, Raise,
    ExceptHandler, ///< one `except TYPE as NAME:` of a Try: value is TYPE (may be null), name NAME
    Match,         ///< `match value:`; its case blocks (MatchCase) in `handlers`
    MatchCase,     ///< `case pattern if value:`: the guard in value (may be null), the pattern in `pattern`
    Unsupported,
};

/// A pattern of a case block (PEP 634).
enum class PatternKind {
    Value,     ///< a literal or a dotted name, compared with ==: `value` (None/True/False: compared with `is`)
    Capture,   ///< a bare name, which it binds (`name`); `_` is Wildcard
    Wildcard,  ///< `_`
    Sequence,  ///< `[p, *rest, q]` / `(p, q)` / `p, q`: `elts` (at most one Star)
    Star,      ///< `*name` in a sequence (`name` empty for `*_`)
    Mapping,   ///< `{k: p, **rest}`: `keys` and `elts` pairwise, `name` the `**rest` (may be empty)
    Class,     ///< `C(p, k=q)`: `value` the class, `elts` positional, `kwdNames` with `kwdPatterns`
    Or,        ///< `p | q`: `elts` the alternatives
    As,        ///< `p as name`: `elts[0]` the pattern
};

struct Pattern;
using PatternP = std::shared_ptr<const Pattern>;

struct Pattern {
    PatternKind kind;
    SourceRange range;
    ExprP value;
    std::string name;
    std::vector<PatternP> elts;
    std::vector<ExprP> keys;
    std::vector<std::string> kwdNames;
    std::vector<PatternP> kwdPatterns;

    static std::shared_ptr<Pattern> make(PatternKind k, SourceRange r) {
        auto p = std::make_shared<Pattern>();
        p->kind = k;
        p->range = r;
        return p;
    }
};

struct Param {
    std::string name;
    ExprP annotation;   ///< may be null
    ExprP defaultValue; ///< may be null
    enum Kind { Normal, VarArgs, KwOnly, VarKw } kind = Normal; ///< `*args`, keyword-only, `**kwargs`
    SourceRange range;
};

struct WithItem {
    ExprP context;
    ExprP target; ///< may be null
};

struct Alias {
    std::string name;   ///< dotted: "tilelang.language"
    std::string asName; ///< empty when no `as`
    SourceRange range;
};

struct Stmt {
    StmtKind kind;
    SourceRange range;
    ExprP value;                  ///< Expr/Assign/AugAssign/AnnAssign/Return (may be null): the value;
                                  ///< If/While/Assert: the condition; For: the iterable; Raise: the exception
                                  ///< (null for a bare `raise`); ClassDef: a Call
                                  ///< of the class name whose arguments are the bases and keywords
    std::vector<ExprP> targets;   ///< Assign: `a = b = value` has two targets; AugAssign/AnnAssign/For: one;
                                  ///< ClassDef: the class name (a Name)
    ExprP annotation;             ///< AnnAssign
    ExprP message;                ///< Assert: optional message
    BinOpKind augOp = BinOpKind::Add;
    Body body, orelse;            ///< If/For/While/With/FunctionDef/ClassDef bodies; If/For/While else branch
                                  ///< (an `elif` is an If alone in orelse)
    std::vector<WithItem> items;  ///< With
    std::string name;             ///< FunctionDef/ClassDef name; ImportFrom module (dotted, with leading
                                  ///< dots); Unsupported: what it is ("try", "raise", "del", ...)
    std::vector<Param> params;    ///< FunctionDef
    std::vector<ExprP> decorators;///< FunctionDef, ClassDef
    ExprP returns;                ///< FunctionDef return annotation (may be null)
    std::vector<std::shared_ptr<Stmt>> handlers; ///< Try: its except clauses (ExceptHandler), in order;
                                                 ///< Match: its case blocks (MatchCase)
    PatternP pattern;             ///< MatchCase
    Body finalbody;               ///< Try: the finally block
    std::vector<Alias> names;     ///< Import / ImportFrom (name "*" for `from x import *`); Global /
                                  ///< Nonlocal: the names

    static std::shared_ptr<Stmt> make(StmtKind k, SourceRange r) {
        auto s = std::make_shared<Stmt>();
        s->kind = k;
        s->range = r;
        return s;
    }
};

struct Module {
    int file = -1;
    Body body;
};

/// Prints the tree in an indented, stable text form (for tests and --emit=syntax debugging).
std::string dump(const Module &m);

} // namespace tilec::ast
