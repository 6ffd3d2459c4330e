/// \file
/// The AST builder: walks a parse tree that had no syntax errors and makes the ast::Module. It checks what
/// the (deliberately liberal) grammar lets through: assignment targets, argument and parameter order,
/// literals, `return`/`break` placement. Split by topic: BuildExpr.cpp, BuildStmt.cpp, Literals.cpp.
#pragma once

#include "parse/ParseInternal.h"

#include <set>
#include <string>
#include <string_view>

namespace tilec::parse {

using MExpr = std::shared_ptr<ast::Expr>; ///< an expression still being built (mutable)
using MStmt = std::shared_ptr<ast::Stmt>;
using TP = grammar::TileParser;

/// The rule index of a generated context class (specialized below for the classes the builder tests for).
template <class C> inline constexpr size_t kRuleOf = size_t(-1);
#define TILEC_RULE_OF(Name) template <> inline constexpr size_t kRuleOf<TP::Name##Context> = TP::Rule##Name
TILEC_RULE_OF(Stmt);
TILEC_RULE_OF(Simple_stmts);
TILEC_RULE_OF(Simple_stmt);
TILEC_RULE_OF(Annassign);
TILEC_RULE_OF(Augassign);
TILEC_RULE_OF(Block);
TILEC_RULE_OF(Test);
TILEC_RULE_OF(Or_test);
TILEC_RULE_OF(Comp_op);
TILEC_RULE_OF(Expr);
TILEC_RULE_OF(Star_expr);
TILEC_RULE_OF(Namedexpr_test);
TILEC_RULE_OF(Testlist_comp);
TILEC_RULE_OF(Testlist_star_expr);
TILEC_RULE_OF(Dictorsetmaker);
TILEC_RULE_OF(Arglist);
TILEC_RULE_OF(Yield_expr);
TILEC_RULE_OF(Except_clause);
TILEC_RULE_OF(Else_clause);
TILEC_RULE_OF(Finally_clause);
TILEC_RULE_OF(Match_subject);
#undef TILEC_RULE_OF

/// The child as rule context C, or null when it is something else. In a tree without errors every rule
/// context has children and a terminal has none; this test and getRuleIndex avoid dynamic_cast and
/// typeid, which cost more than the rest of the builder's work on every node.
template <class C> C *ruleAs(antlr4::tree::ParseTree *t) {
    static_assert(kRuleOf<C> != size_t(-1), "add TILEC_RULE_OF for this context");
    if (t->children.empty()) return nullptr;
    auto *r = static_cast<antlr4::ParserRuleContext *>(t);
    return r->getRuleIndex() == kRuleOf<C> ? static_cast<C *>(r) : nullptr;
}

/// Thrown when the tree is nested deeper than the builder accepts; caught at the entry points.
struct TooDeep {
    SourceRange range;
    size_t offset;
    const char *message = "expression is too deeply nested";
};

/// One replacement field of an f-string, as byte offsets in its token (FStrings.cpp).
struct FStringField {
    size_t open = 0;                             ///< the '{'
    size_t exprEnd = 0;                          ///< the expression is (open, exprEnd)
    size_t debugEnd = std::string_view::npos;    ///< `{x = }`: the text shown before the value is (open, debugEnd)
    size_t bang = std::string_view::npos;        ///< the '!' of a conversion
    size_t colon = std::string_view::npos;       ///< the ':' of a format spec
    size_t close = 0;                            ///< the matching '}'
};

class Builder {
  public:
    /// `stackBase`: where the stack budget is counted from (an f-string's expressions share their file's).
    Builder(antlr4::TokenStream &tokens, const SourceText &src, SyntaxErrors &errs, uintptr_t stackBase = 0)
        : tokens_(tokens), src_(src), errs_(errs), stackBase_(stackBase ? stackBase : stackPosition()) {}

    // ---- statements (BuildStmt.cpp)
    void stmt(TP::StmtContext *c, ast::Body &out);
    void block(TP::BlockContext *c, ast::Body &out);

    // ---- expressions (BuildExpr.cpp)
    MExpr test(TP::TestContext *c);
    MExpr namedexpr(TP::Namedexpr_testContext *c);
    MExpr expr(TP::ExprContext *c);
    MExpr starExpr(TP::Star_exprContext *c);
    /// A comma list of `test`/`star_expr` children: one item alone, otherwise an unparenthesized Tuple.
    MExpr commaList(antlr4::ParserRuleContext *c);
    MExpr yieldExpr(TP::Yield_exprContext *c);
    MExpr arguments(MExpr callee, TP::ArglistContext *c, const SourceRange &r);

    // ---- comprehensions and lambdas (BuildComprehension.cpp)
    /// `elt for ... in ... if ...`: a ListComp/SetComp/GeneratorExp (DictComp: `elt` key, `value` value).
    MExpr comprehension(ast::ExprKind kind, const SourceRange &r, MExpr elt, MExpr value, TP::Comp_forContext *c);
    /// `lambda params: body` (a lambdef or lambdef_nocond).
    MExpr lambda(antlr4::ParserRuleContext *c, TP::Lambda_paramsContext *ps, MExpr body);
    MExpr testNocond(TP::Test_nocondContext *c);

    // ---- checks
    enum class TargetUse { Assign, AugAssign, AnnAssign, For, With, Del };
    void checkTarget(const ast::Expr &e, TargetUse use, bool nested = false);

    /// The token of a terminal child, or null when the child is a rule (see ruleAs).
    antlr4::Token *terminal(antlr4::tree::ParseTree *t) const {
        if (!t->children.empty()) return nullptr;
        return tokens_.get(size_t(t->getSourceInterval().a));
    }
    size_t terminalType(antlr4::tree::ParseTree *t) const {
        antlr4::Token *tok = terminal(t);
        return tok ? tok->getType() : 0;
    }

    // ---- positions and errors
    SourceRange range(antlr4::ParserRuleContext *c) const;
    SourceRange range(antlr4::Token *t) const { return src_.tokenRange(t); }
    SourceRange range(antlr4::tree::TerminalNode *n) const { return src_.tokenRange(n->getSymbol()); }
    void error(const SourceRange &r, std::string msg);
    std::string_view text(antlr4::Token *t) const { return src_.tokenText(t); }
    std::string_view text(antlr4::tree::TerminalNode *n) const { return src_.tokenText(n->getSymbol()); }

    /// Counts expression nesting and watches the stack; throws TooDeep past the limits.
    class Nest {
      public:
        Nest(Builder &b, antlr4::ParserRuleContext *c);
        ~Nest() { --b_.depth_; }
        Nest(const Nest &) = delete;
        Nest &operator=(const Nest &) = delete;

      private:
        Builder &b_;
    };

    int fstringDepth = 0; ///< f-strings around the expression being built
    int funcDepth = 0; ///< enclosing `def`s (0 at module level and directly in a class body)
    int loopDepth = 0; ///< enclosing loops of the innermost function

  private:
    friend class Nest;
    MExpr orTest(TP::Or_testContext *c);
    MExpr comparison(TP::Or_testContext *c);
    MExpr boolOp(TP::Or_testContext *c, size_t op);
    MExpr strings(antlr4::ParserRuleContext *c);
    void fstringParts(antlr4::Token *t, size_t b, size_t e, bool raw, std::vector<ast::ExprP> &parts,
                      std::string &pending);
    MExpr field(antlr4::Token *t, const FStringField &f, bool raw);
    MExpr number(antlr4::Token *t);
    MExpr bracketed(TP::ExprContext *c, ast::ExprKind kind);
    MExpr braces(TP::ExprContext *c);
    MExpr subscripts(TP::SubscriptlistContext *c);
    MExpr subscript(TP::SubscriptContext *c);
    MExpr unsupported(const SourceRange &r, const char *what);

    void simpleStmt(TP::Simple_stmtContext *c, ast::Body &out);
    MStmt exprStmt(TP::Expr_stmtContext *c);
    MStmt compoundStmt(TP::Compound_stmtContext *c, std::vector<ast::ExprP> decorators);
    MStmt ifStmt(TP::If_stmtContext *c);
    MStmt forStmt(TP::For_stmtContext *c);
    MStmt whileStmt(TP::While_stmtContext *c);
    MStmt withStmt(TP::With_stmtContext *c);
    MStmt funcDef(TP::FuncdefContext *c, std::vector<ast::ExprP> decorators);
    MStmt importFrom(TP::Import_fromContext *c);
    MStmt unsupportedStmt(antlr4::ParserRuleContext *c, const char *what);
    MStmt classStmt(TP::ClassdefContext *c, std::vector<ast::ExprP> decorators);
    MStmt tryStmt(TP::Try_stmtContext *c);

    // ---- match statements (BuildPattern.cpp)
    MStmt matchStmt(TP::Match_stmtContext *c);
    std::shared_ptr<ast::Pattern> patternList(TP::Pattern_listContext *c, bool open, const SourceRange *outer = nullptr);
    std::shared_ptr<ast::Pattern> pattern(TP::PatternContext *c);
    std::shared_ptr<ast::Pattern> closedPattern(TP::Closed_patternContext *c);
    std::shared_ptr<ast::Pattern> literalPattern(TP::Closed_patternContext *c, antlr4::Token *first);
    std::shared_ptr<ast::Pattern> namePattern(TP::Closed_patternContext *c);
    std::shared_ptr<ast::Pattern> mappingPattern(TP::Closed_patternContext *c);
    void checkBindings(const ast::Pattern &p, std::set<std::string> &bound);
    void unreachable(const ast::Pattern &p);
    void params(TP::ParametersContext *c, std::vector<ast::Param> &out);
    void loopBody(TP::BlockContext *c, ast::Body &out);
    void functionBody(TP::BlockContext *c, ast::Body &out);
    void ignoredBlocks(antlr4::ParserRuleContext *c);

    antlr4::TokenStream &tokens_;
    const SourceText &src_;
    SyntaxErrors &errs_;
    uintptr_t stackBase_;
    int depth_ = 0;
};

// ---- literals (Literals.cpp)

/// Parses an INTEGER token (any base, underscores). Returns false with `err` set when it is invalid or
/// does not fit in int64.
bool parseInteger(std::string_view text, int64_t &value, std::string &err);
/// Parses a FLOAT_NUMBER token (values past the double range become infinity or zero, as in Python).
double parseFloat(std::string_view text);

/// One string token, decoded.
struct StringPiece {
    bool isBytes = false, isFormat = false;
    bool namedEscape = false; ///< has a \N{...} escape (its value needs Unicode's name table: not decoded)
    std::string value; ///< decoded (raw strings: the text as written, with "\r\n" made "\n")
};
/// A STRING token's prefix and where its body (between the quotes) lies, as byte offsets in the token.
struct StringToken {
    bool raw = false, bytes = false, format = false;
    size_t quotes = 1; ///< 1 or 3
    size_t bodyBegin = 0, bodyEnd = 0;
};
StringToken splitString(std::string_view token);
/// Decodes a STRING token that is not an f-string. On an invalid escape returns false with `err` and
/// `errPos` (byte offset of the escape within the token).
bool decodeString(std::string_view token, StringPiece &out, std::string &err, size_t &errPos);
/// Decodes token[b, e) (its escapes unless `raw`) and appends it to out.value; errors as decodeString.
bool decodeBody(std::string_view token, size_t b, size_t e, bool raw, StringPiece &out, std::string &err,
                size_t &errPos);

// ---- f-strings (FStrings.cpp)

/// Where the string literal that starts at text[at] (its prefix letters or its quote) ends: the offset just
/// past its closing quotes, or npos when it is not closed. An f-string's replacement fields may hold any
/// string, the same quotes included (Python 3.12); a short string ends at the line's end. When it is not
/// closed because its fields nest too deeply, `tooDeep` (if given) gets the message.
size_t stringEnd(std::string_view text, size_t at, std::string *tooDeep = nullptr);

} // namespace tilec::parse
