/// \file
/// Private interfaces of the parser (src/parse/): the decoded source text and its positions, the syntax
/// error list, the indentation lexer, the error strategy, and the AST builder.
///
/// The pipeline (Parser.cpp): SourceText::decode -> IndentLexer -> TileParser (SLL, then LL with
/// SyntaxErrorStrategy on failure) -> buildModule / buildExpression. Every error on the way goes into one
/// SyntaxErrors list, which filters follow-on errors and reports the rest through the DiagnosticEngine.
#pragma once

#include "tilec/AST.h"

#include "TileLexer.h"
#include "TileParser.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::parse {

/// Deepest bracket nesting and indentation the lexer accepts (CPython's limits). Deeper input is rejected
/// with an error before any recursive code sees it.
constexpr int kMaxBracketDepth = 200;
constexpr int kMaxIndentDepth = 100;
/// Deepest expression nesting the builder produces (covers long operator chains, which the parser handles
/// in a loop but which become left-nested trees).
constexpr int kMaxExprDepth = 1000;
/// Longest `elif` chain: each `elif` nests one If deeper in the tree.
constexpr int kMaxElifChain = 1000;
/// Stack the parser and the builder may use below their entry point before they give up with an error.
constexpr size_t kStackBudget = 3u << 20;

/// One syntax-phase error, before filtering.
struct SyntaxError {
    enum Kind {
        Lexical, ///< from the indentation lexer
        Parse,   ///< from the ANTLR parser (may be a follow-on error)
        Fatal,   ///< the rest of the file cannot be read (an unclosed bracket or string, too deep nesting)
        Build,   ///< found while building the tree (invalid target, literal too large, ...)
        Cutoff,  ///< not reported: parser errors after this offset are consequences of a lexical error
    };
    Kind kind;
    size_t offset; ///< byte offset: the sort key
    SourceRange range;
    std::string message;
    bool atEof = false; ///< a parser error at the end of the file: after an earlier error, a follow-on one
};

/// Collects syntax errors and reports the ones a user needs: sorted by position, at most one per line,
/// no parser error after a fatal error (or a cutoff), and no parser error at the end of the file after an
/// earlier error.
class SyntaxErrors {
  public:
    void add(SyntaxError::Kind k, size_t offset, const SourceRange &r, std::string msg, bool atEof = false);
    bool empty() const { return errors_.empty(); }
    size_t size() const { return errors_.size(); }
    /// Whether an error was recorded at a byte offset in [from, to).
    bool anyIn(size_t from, size_t to) const;
    /// Reports the kept errors through `diag` (which may throw TooManyErrors).
    void flush(DiagnosticEngine &diag);
    /// The errors from index `from` on were found at the end of an f-string's field, not of the file: they
    /// are no follow-on errors.
    void notAtEof(size_t from) {
        for (size_t i = from; i < errors_.size(); ++i) errors_[i].atEof = false;
    }

  private:
    std::vector<SyntaxError> errors_;
};

/// The bytes of one file, decoded to code points for ANTLR, with the map back to byte positions.
class SourceText {
  public:
    SourceText(int file, const std::string &bytes);

    /// Checks for NUL bytes and invalid UTF-8 and decodes. On failure reports the error to `errs`.
    bool decode(SyntaxErrors &errs);

    int file() const { return file_; }
    const std::string &bytes() const { return bytes_; }
    const std::u32string &codePoints() const { return cps_; }
    /// Byte offset of code point `cp` (cp may equal the number of code points: the end of the file).
    size_t byteOf(size_t cp) const;
    /// 1-based line of a byte offset.
    int lineOf(size_t offset) const;
    size_t lineStart(int line) const { return lineStarts_[line - 1]; }
    /// The range of bytes [begin, end); an empty range becomes one column wide so it can be underlined.
    SourceRange range(size_t begin, size_t end) const;
    /// The byte range of a token (synthesized tokens are empty: see IndentLexer).
    size_t tokenBegin(const antlr4::Token *t) const;
    size_t tokenEnd(const antlr4::Token *t) const;
    SourceRange tokenRange(const antlr4::Token *t) const { return range(tokenBegin(t), tokenEnd(t)); }
    /// The source bytes of a token (without decoding).
    std::string_view tokenText(const antlr4::Token *t) const;

  private:
    int file_;
    const std::string &bytes_;
    std::u32string cps_;
    std::vector<uint32_t> cpToByte_; ///< empty when every code point is one byte (after the BOM skip)
    size_t skip_ = 0;                ///< bytes of a UTF-8 byte-order mark not given to ANTLR
    std::vector<size_t> lineStarts_;
    mutable int lastLine_ = 1; ///< lineOf's guess: lookups mostly go forward through the file
};

/// An ANTLRInputStream over already decoded code points (ANTLR's own decoder throws on invalid UTF-8).
class DecodedStream : public antlr4::ANTLRInputStream {
  public:
    explicit DecodedStream(const std::u32string &cps) {
        _data = cps;
        p = 0;
    }
};

/// Code points [begin, end) of a file, at their positions in the file (no copy): what an f-string's
/// replacement field is lexed from, so that its tokens carry the file's offsets.
class WindowStream : public antlr4::CharStream {
  public:
    WindowStream(const std::u32string &cps, size_t begin, size_t end) : cps_(cps), begin_(begin), end_(end), p_(begin) {}
    void consume() override;
    size_t LA(ssize_t i) override;
    ssize_t mark() override { return -1; }
    void release(ssize_t) override {}
    size_t index() override { return p_; }
    void seek(size_t index) override { p_ = std::max(begin_, std::min(index, end_)); }
    size_t size() override { return end_; } ///< the end, as an offset in the file
    std::string getText(const antlr4::misc::Interval &interval) override;
    std::string getSourceName() const override { return "<f-string>"; }
    std::string toString() const override { return "<f-string>"; }

  private:
    const std::u32string &cps_;
    size_t begin_, end_, p_;
};

/// The generated lexer plus Python's line structure: NEWLINE only at the end of a logical line,
/// INDENT/DEDENT from the indentation stack, bracket matching, and lexical error reporting.
/// In expression mode (parseExpression) there are no NEWLINE/INDENT/DEDENT tokens at all.
class IndentLexer : public grammar::TileLexer {
  public:
    IndentLexer(antlr4::CharStream *in, const SourceText &src, SyntaxErrors &errs, bool expressionMode);
    std::unique_ptr<antlr4::Token> nextToken() override;

  private:
    struct Level {
        int width8, width1; ///< indentation with tabs to multiples of 8, and with tabs as one column
        bool phantom;       ///< pushed after a bad unindent: popping it emits no DEDENT
        bool matchBody = false; ///< the block of a match statement: its lines' leading `case` is CASE
    };
    struct Open {
        size_t type; ///< the opening token type
        size_t offset;
        SourceRange range;
    };

    std::unique_ptr<antlr4::Token> synth(size_t type, size_t cpIndex, size_t line, size_t col);
    void indentation(const antlr4::Token &first);
    bool brackets(antlr4::Token &t);
    enum class Widened { No, Yes, TooDeep };
    Widened wholeFString(antlr4::Token &t);
    void finish();
    void softKeyword(antlr4::Token &t);
    void resolveMatch();
    void lexError(SyntaxError::Kind k, size_t begin, size_t end, std::string msg);

    const SourceText &src_;
    SyntaxErrors &errs_;
    bool exprMode_;
    std::deque<std::unique_ptr<antlr4::Token>> pending_;
    std::vector<Level> indents_{{0, 0, false}};
    std::vector<Open> open_;
    bool atLineStart_ = true, lineHasTokens_ = false, finished_ = false;
    /// pending_'s index of a `match` that begins the current logical line: the line is held back until its end
    /// tells whether it is a match statement (it ends with ':'); npos when none is.
    size_t heldMatch_ = SIZE_MAX;
    bool nextIsMatchBody_ = false; ///< the last logical line began a match statement
    size_t lastEnd_ = 0; ///< code point index just after the last real token
};

/// The error strategy of the second (LL) parse: turns ANTLR's generic reports into messages a user can
/// act on (using the rule being parsed and the expected tokens) and records them in a SyntaxErrors list.
class SyntaxErrorStrategy : public antlr4::DefaultErrorStrategy {
  public:
    SyntaxErrorStrategy(const SourceText &src, SyntaxErrors &errs) : src_(src), errs_(errs) {}

  protected:
    void reportNoViableAlternative(antlr4::Parser *p, const antlr4::NoViableAltException &e) override;
    void reportInputMismatch(antlr4::Parser *p, const antlr4::InputMismatchException &e) override;
    void reportFailedPredicate(antlr4::Parser *p, const antlr4::FailedPredicateException &e) override;
    void reportUnwantedToken(antlr4::Parser *p) override;
    void reportMissingToken(antlr4::Parser *p) override;
    antlr4::misc::IntervalSet getErrorRecoverySet(antlr4::Parser *p) override;

  private:
    void report(antlr4::Parser *p, antlr4::Token *offending, const antlr4::misc::IntervalSet &expected,
                bool missing);
    const SourceText &src_;
    SyntaxErrors &errs_;
    size_t reported_ = 0;
};

/// Raw parser errors after which the error-recovering parse stops: the first ones are what a user reads
/// (the diagnostics stop at --error-limit anyway), and recovery on garbage costs time for each error.
constexpr size_t kMaxParseErrors = 100;

/// Thrown by SyntaxErrorStrategy after kMaxParseErrors errors.
struct EnoughErrors {};

/// Thrown by GuardedParser when the parse nests too deep for the stack budget.
struct NestingTooDeep {
    size_t tokenIndex;
};

/// The generated parser with a stack guard on rule entry.
class GuardedParser : public grammar::TileParser {
  public:
    explicit GuardedParser(antlr4::TokenStream *in, uintptr_t stackBase = 0);
    void enterRule(antlr4::ParserRuleContext *ctx, size_t state, size_t rule) override;
    void enterRecursionRule(antlr4::ParserRuleContext *ctx, size_t state, size_t rule, int prec) override;

  private:
    void check();
    uintptr_t base_;
};

/// Whether the stack has grown more than kStackBudget below `base` (an address taken at an entry point).
bool stackExhausted(uintptr_t base);
inline uintptr_t stackPosition() { return reinterpret_cast<uintptr_t>(__builtin_frame_address(0)); }

/// Builds the module (or the expression) from a parse tree that had no syntax errors. Errors it finds
/// (invalid assignment targets, argument order, literals) go into `errs`.
ast::Module buildModule(grammar::TileParser::File_inputContext *ctx, antlr4::TokenStream &tokens,
                        const SourceText &src, SyntaxErrors &errs);
ast::ExprP buildExpression(grammar::TileParser::Eval_inputContext *ctx, antlr4::TokenStream &tokens,
                           const SourceText &src, SyntaxErrors &errs, int fstringDepth = 0, uintptr_t stackBase = 0);

/// Lexes, parses and builds code points [begin, end) of `src` as an expression list: an f-string's
/// replacement field (FStrings.cpp), `fstringDepth` f-strings deep. Errors go into `errs` at the file's
/// positions; returns null when there were some.
ast::ExprP parseFieldExpression(const SourceText &src, SyntaxErrors &errs, size_t begin, size_t end,
                                int fstringDepth, uintptr_t stackBase);

/// Quoted description of a token for messages: "'foo'", "end of line", "end of file", "indent".
std::string describeToken(const antlr4::Token *t, const SourceText &src);

} // namespace tilec::parse
