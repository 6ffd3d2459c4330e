/// \file
/// Syntax error messages: ANTLR's generic reports ("mismatched input X expecting {...}") mapped to what a
/// Python user expects to read ("expected ':' after 'if' condition", "unexpected indent", "expected an
/// indented block after 'for' statement on line 3"), and the filter that keeps one mistake one error.
#include "parse/ParseInternal.h"

#include <algorithm>
#include <cstdint>
#include <set>

namespace tilec::parse {

using antlr4::Parser;
using antlr4::ParserRuleContext;
using antlr4::Token;
using antlr4::misc::IntervalSet;
using grammar::TileParser;

// ---------------------------------------------------------------- the error list

void SyntaxErrors::add(SyntaxError::Kind k, size_t offset, const SourceRange &r, std::string msg, bool atEof) {
    errors_.push_back({k, offset, r, std::move(msg), atEof});
}

bool SyntaxErrors::anyIn(size_t from, size_t to) const {
    return std::any_of(errors_.begin(), errors_.end(), [&](const SyntaxError &e) { return e.offset >= from && e.offset < to; });
}

void SyntaxErrors::flush(DiagnosticEngine &diag) {
    std::vector<SyntaxError> all = std::move(errors_);
    errors_.clear();
    // Lexical errors were recorded before the parser ran: a stable sort keeps them first at equal offsets.
    std::stable_sort(all.begin(), all.end(), [](const SyntaxError &a, const SyntaxError &b) { return a.offset < b.offset; });
    // Past a fatal error (an unclosed bracket, reported where it opens) the parser saw a broken file: its
    // errors there are consequences. The lexer's own errors there are kept: one may be the cause.
    size_t cut = SIZE_MAX;
    bool anyFatal = false;
    for (const SyntaxError &e : all) {
        if (e.kind == SyntaxError::Fatal || e.kind == SyntaxError::Cutoff) cut = std::min(cut, e.offset);
        anyFatal |= e.kind == SyntaxError::Fatal;
    }
    // A line with a lexical error gets no parser error: the parser only saw what the lexer made of it.
    std::set<int> lexicalLines;
    for (const SyntaxError &e : all)
        if (e.kind == SyntaxError::Lexical || e.kind == SyntaxError::Fatal) lexicalLines.insert(e.range.line);
    std::vector<const SyntaxError *> kept;
    for (const SyntaxError &e : all) {
        if (e.kind == SyntaxError::Cutoff) continue;
        bool fatal = e.kind == SyntaxError::Fatal;
        bool parse = e.kind == SyntaxError::Parse;
        if (parse && (e.offset > cut || lexicalLines.count(e.range.line))) continue;
        if (parse && e.atEof && (!kept.empty() || anyFatal)) continue;
        if (!fatal && !kept.empty() && kept.back()->range.line == e.range.line) continue;
        kept.push_back(&e);
    }
    for (const SyntaxError *e : kept) diag.error(e->range, e->message);
}

// ---------------------------------------------------------------- describing tokens

namespace {

bool isKeyword(size_t t) { return t >= TileParser::FALSE && t <= TileParser::YIELD; }

/// Tokens that can begin an expression.
bool startsExpression(size_t t) {
    switch (t) {
    case TileParser::NAME: case TileParser::INTEGER: case TileParser::FLOAT_NUMBER: case TileParser::IMAG_NUMBER:
    case TileParser::STRING: case TileParser::OPEN_PAREN: case TileParser::OPEN_BRACK: case TileParser::OPEN_BRACE:
    case TileParser::NONE: case TileParser::TRUE: case TileParser::FALSE: case TileParser::ELLIPSIS:
    case TileParser::NOT: case TileParser::MINUS: case TileParser::ADD: case TileParser::NOT_OP:
    case TileParser::LAMBDA: case TileParser::AWAIT:
        return true;
    default:
        return false;
    }
}

/// Tokens that can end an expression.
bool endsExpression(size_t t) {
    switch (t) {
    case TileParser::NAME: case TileParser::INTEGER: case TileParser::FLOAT_NUMBER: case TileParser::IMAG_NUMBER:
    case TileParser::STRING: case TileParser::CLOSE_PAREN: case TileParser::CLOSE_BRACK: case TileParser::CLOSE_BRACE:
    case TileParser::NONE: case TileParser::TRUE: case TileParser::FALSE: case TileParser::ELLIPSIS:
        return true;
    default:
        return false;
    }
}

/// Synthesized and end-of-input tokens have no text of their own.
bool pointsAfterPrevious(const Token *t) {
    size_t ty = t->getType();
    return ty == Token::EOF || ty == TileParser::NEWLINE || ty == TileParser::DEDENT;
}

/// What the `:` that is missing ends, for "expected ':' after ...".
std::string colonContext(ParserRuleContext *ctx) {
    for (; ctx; ctx = dynamic_cast<ParserRuleContext *>(ctx->parent)) {
        switch (ctx->getRuleIndex()) {
        case TileParser::RuleIf_stmt: return " after 'if' condition";
        case TileParser::RuleElif_clause: return " after 'elif' condition";
        case TileParser::RuleWhile_stmt: return " after 'while' condition";
        case TileParser::RuleFor_stmt: return " after the 'for' clause";
        case TileParser::RuleElse_clause: return " after 'else'";
        case TileParser::RuleTry_stmt: return " after 'try'";
        case TileParser::RuleFinally_clause: return " after 'finally'";
        case TileParser::RuleExcept_clause: return " after 'except' clause";
        case TileParser::RuleWith_stmt: return " after 'with' items";
        case TileParser::RuleFuncdef: return " after function signature";
        case TileParser::RuleClassdef: return " after class header";
        case TileParser::RuleLambdef: case TileParser::RuleLambdef_nocond: return " after lambda parameters";
        case TileParser::RuleBlock: case TileParser::RuleStmt: case TileParser::RuleExpr: return "";
        default: break;
        }
    }
    return "";
}

/// The statement a block belongs to, for "expected an indented block after ...".
std::string blockOwner(ParserRuleContext *ctx, const SourceText &src) {
    for (; ctx; ctx = dynamic_cast<ParserRuleContext *>(ctx->parent)) {
        const char *what = nullptr;
        switch (ctx->getRuleIndex()) {
        case TileParser::RuleIf_stmt: what = "'if' statement"; break;
        case TileParser::RuleElif_clause: what = "'elif' statement"; break;
        case TileParser::RuleElse_clause: what = "'else' statement"; break;
        case TileParser::RuleWhile_stmt: what = "'while' statement"; break;
        case TileParser::RuleFor_stmt: what = "'for' statement"; break;
        case TileParser::RuleTry_stmt: what = "'try' statement"; break;
        case TileParser::RuleExcept_clause: what = "'except' statement"; break;
        case TileParser::RuleFinally_clause: what = "'finally' statement"; break;
        case TileParser::RuleWith_stmt: what = "'with' statement"; break;
        case TileParser::RuleFuncdef: what = "function definition"; break;
        case TileParser::RuleClassdef: what = "class definition"; break;
        default: break;
        }
        if (what) {
            int line = src.lineOf(src.tokenBegin(ctx->getStart()));
            return std::string(" after ") + what + " on line " + std::to_string(line);
        }
    }
    return "";
}

/// Whether the parser is between an opening bracket and its closer (an unclosed bracket among the
/// matched children of some rule being parsed).
bool insideBrackets(ParserRuleContext *ctx) {
    for (; ctx; ctx = dynamic_cast<ParserRuleContext *>(ctx->parent)) {
        size_t rule = ctx->getRuleIndex();
        if (rule == TileParser::RuleStmt || rule == TileParser::RuleSimple_stmts) return false;
        int open = 0;
        for (antlr4::tree::ParseTree *ch : ctx->children) {
            auto *n = dynamic_cast<antlr4::tree::TerminalNode *>(ch);
            if (!n) continue;
            size_t ty = n->getSymbol()->getType();
            if (ty == TileParser::OPEN_PAREN || ty == TileParser::OPEN_BRACK || ty == TileParser::OPEN_BRACE) ++open;
            if (ty == TileParser::CLOSE_PAREN || ty == TileParser::CLOSE_BRACK || ty == TileParser::CLOSE_BRACE) --open;
        }
        if (open > 0) return true;
    }
    return false;
}

/// Whether `t` is the first token of a simple statement.
bool startsStatement(antlr4::TokenStream *tokens, Token *t) {
    size_t i = t->getTokenIndex();
    if (i == 0) return true;
    size_t ty = tokens->get(i - 1)->getType();
    return ty == TileParser::NEWLINE || ty == TileParser::INDENT || ty == TileParser::DEDENT || ty == TileParser::SEMI;
}

/// Index of the first token of the logical line before token `idx` (an INDENT's line).
size_t logicalLineStart(antlr4::TokenStream *tokens, size_t idx) {
    if (idx == INVALID_INDEX || idx == 0) return 0;
    size_t i = idx - 1;
    if (tokens->get(i)->getType() == TileParser::NEWLINE && i > 0) --i;
    while (i > 0) {
        size_t ty = tokens->get(i - 1)->getType();
        if (ty == TileParser::NEWLINE || ty == TileParser::INDENT || ty == TileParser::DEDENT) break;
        --i;
    }
    return i;
}

bool hasRule(ParserRuleContext *ctx, size_t rule) {
    for (; ctx; ctx = dynamic_cast<ParserRuleContext *>(ctx->parent))
        if (ctx->getRuleIndex() == rule) return true;
    return false;
}

} // namespace

std::string describeToken(const Token *t, const SourceText &src) {
    switch (t->getType()) {
    case Token::EOF: return "end of file";
    case TileParser::NEWLINE: return "end of line";
    case TileParser::INDENT: return "indent";
    case TileParser::DEDENT: return "unindent";
    default: break;
    }
    std::string text(src.tokenText(t));
    if (text.size() > 24) {
        size_t cut = 20;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut; // keep UTF-8 whole
        text = text.substr(0, cut) + "...";
    }
    for (char &c : text)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    return "'" + text + "'";
}

// ---------------------------------------------------------------- the error strategy

void SyntaxErrorStrategy::reportNoViableAlternative(Parser *p, const antlr4::NoViableAltException &e) {
    Token *off = e.getOffendingToken();
    // The expected set is that of the decision's first token; it says nothing about a later one.
    if (e.getStartToken() && off && e.getStartToken()->getTokenIndex() != off->getTokenIndex())
        report(p, off, IntervalSet(), false);
    else
        report(p, off, p->getExpectedTokens(), false);
}

void SyntaxErrorStrategy::reportInputMismatch(Parser *p, const antlr4::InputMismatchException &e) {
    report(p, e.getOffendingToken(), e.getExpectedTokens(), false);
}

void SyntaxErrorStrategy::reportFailedPredicate(Parser *p, const antlr4::FailedPredicateException &e) {
    report(p, e.getOffendingToken(), IntervalSet(), false);
}

void SyntaxErrorStrategy::reportUnwantedToken(Parser *p) {
    if (inErrorRecoveryMode(p)) return;
    beginErrorCondition(p);
    report(p, p->getCurrentToken(), getExpectedTokens(p), false);
}

void SyntaxErrorStrategy::reportMissingToken(Parser *p) {
    if (inErrorRecoveryMode(p)) return;
    beginErrorCondition(p);
    report(p, p->getCurrentToken(), getExpectedTokens(p), true);
}

namespace {

/// What one syntax error is about, gathered once for the message rules below.
struct Offense {
    Parser *parser;
    antlr4::TokenStream *tokens;
    ParserRuleContext *ctx;
    Token *tok;           ///< the offending token
    Token *prev;          ///< the last real (not synthesized) token before it, or null
    size_t type;          ///< tok's type
    size_t begin;         ///< tok's byte offset
    const IntervalSet &expected;
    bool missing;         ///< ANTLR would insert one expected token here
    bool expects(size_t t) const { return expected.contains(t); }
};

/// The real token before `idx` (synthesized INDENT/DEDENT/NEWLINE have no text to point after).
Token *previousReal(antlr4::TokenStream *tokens, size_t idx) {
    if (idx == INVALID_INDEX) return nullptr;
    for (size_t i = idx; i-- > 0;) {
        Token *t = tokens->get(i);
        size_t ty = t->getType();
        if (ty != TileParser::INDENT && ty != TileParser::DEDENT && ty != TileParser::NEWLINE) return t;
    }
    return nullptr;
}

/// Whether only DEDENTs separate token `idx` from the end of the file.
bool atEndOfFile(antlr4::TokenStream *tokens, size_t idx, size_t type) {
    if (type == Token::EOF) return true;
    if (idx == INVALID_INDEX || (type != TileParser::DEDENT && type != TileParser::NEWLINE)) return false;
    size_t next = idx + 1;
    while (next < tokens->size() && tokens->get(next)->getType() == TileParser::DEDENT) ++next;
    return next < tokens->size() && tokens->get(next)->getType() == Token::EOF;
}

enum class Place { AtToken, AfterPrevious, FromPrevious };

/// Picks the message for an offense, from the most specific rule to the generic "unexpected X".
/// `place` says where the caret goes.
std::string messageFor(const Offense &o, const SourceText &src, Place &place) {
    size_t type = o.type, rule = o.ctx->getRuleIndex();
    if (o.expects(TileParser::INDENT)) return "expected an indented block" + blockOwner(o.ctx, src);
    if (type == TileParser::ASSIGN && (o.expects(TileParser::EQ) || rule == TileParser::RuleIf_stmt ||
                                       rule == TileParser::RuleElif_clause || rule == TileParser::RuleWhile_stmt))
        return "invalid syntax: maybe you meant '==' or ':=' instead of '='?";
    if (o.expects(TileParser::COLON) &&
        (o.missing || type == TileParser::NEWLINE || type == Token::EOF || o.expected.size() == 1)) {
        place = Place::AfterPrevious;
        std::string msg = "expected ':'" + colonContext(o.ctx);
        if (type == TileParser::IF && rule == TileParser::RuleElse_clause) msg += " (did you mean 'elif'?)";
        return msg;
    }
    if ((type == TileParser::AND_OP || type == TileParser::OR_OP) && o.prev && o.prev->getType() == type &&
        src.tokenEnd(o.prev) == o.begin) {
        // C's `&&` and `||` lex as two bitwise operators.
        place = Place::FromPrevious;
        return type == TileParser::AND_OP ? "invalid syntax: use 'and' instead of '&&'"
                                          : "invalid syntax: use 'or' instead of '||'";
    }
    if (o.expects(TileParser::ELSE) && rule == TileParser::RuleTest) {
        place = Place::AfterPrevious;
        return "expected 'else' after 'if' expression";
    }
    if (o.expects(TileParser::EXCEPT) && o.expects(TileParser::FINALLY)) return "expected 'except' or 'finally' block";
    if (hasRule(o.ctx, TileParser::RuleDecorated) && o.expects(TileParser::DEF))
        return "expected a function or class definition after decorator";
    std::string found = type == TileParser::NEWLINE || type == Token::EOF ? "" : ", found " + describeToken(o.tok, src);
    bool name = o.expects(TileParser::NAME), expression = name && o.expects(TileParser::INTEGER);
    if (isKeyword(type) && name && !expression) return describeToken(o.tok, src) + " is a keyword and cannot be used as a name";
    if (name && !expression && !startsExpression(type)) return "expected a name" + found;
    if (expression && !startsExpression(type) && !isKeyword(type)) return "expected an expression" + found;
    if (startsExpression(type) && o.prev && endsExpression(o.prev->getType()) && insideBrackets(o.ctx))
        return "invalid syntax: perhaps you forgot a comma?";
    if (startsExpression(type) && o.prev && o.prev->getType() == TileParser::NAME && src.tokenText(o.prev) == "print" &&
        startsStatement(o.tokens, o.prev))
        return "missing parentheses in call to 'print'; did you mean print(...)?";
    if (type == Token::EOF) return "unexpected end of file";
    return "invalid syntax: unexpected " + describeToken(o.tok, src);
}

} // namespace

/// ANTLR's recovery set is the union of the follow sets of every rule being parsed, recomputed on each
/// error: on garbage input that dominates the parse time. Panic mode to the tokens that end a statement or
/// a bracketed part recovers as well for the one error per line that is shown.
IntervalSet SyntaxErrorStrategy::getErrorRecoverySet(Parser *) {
    IntervalSet set;
    for (size_t t : {size_t(TileParser::NEWLINE), size_t(TileParser::INDENT), size_t(TileParser::DEDENT),
                     size_t(TileParser::CLOSE_PAREN), size_t(TileParser::CLOSE_BRACK), size_t(TileParser::CLOSE_BRACE),
                     size_t(TileParser::COLON), size_t(TileParser::COMMA), size_t(TileParser::SEMI), size_t(Token::EOF)})
        set.add(ssize_t(t));
    return set;
}

void SyntaxErrorStrategy::report(Parser *p, Token *off, const IntervalSet &expected, bool missing) {
    if (++reported_ > kMaxParseErrors) throw EnoughErrors{};
    if (!off) off = p->getCurrentToken();
    antlr4::TokenStream *tokens = p->getTokenStream();
    size_t idx = off->getTokenIndex();
    Offense o{p, tokens, p->getContext(), off, previousReal(tokens, idx), off->getType(), src_.tokenBegin(off),
              expected, missing};
    bool atEof = atEndOfFile(tokens, idx, o.type);
    if (o.type == TileParser::INDENT) {
        // After an error in a block's header the parser did not see the block start: its indent is no news.
        if (errs_.anyIn(src_.tokenBegin(tokens->get(logicalLineStart(tokens, idx))), o.begin)) return;
        errs_.add(SyntaxError::Parse, o.begin, src_.tokenRange(off), "unexpected indent", atEof);
        return;
    }
    // Synthesized and end-of-input tokens have no text: errors on them point just after the token before.
    Place place = pointsAfterPrevious(off) ? Place::AfterPrevious : Place::AtToken;
    std::string msg = messageFor(o, src_, place);
    size_t at = o.begin;
    SourceRange where = src_.tokenRange(off);
    if (place == Place::AfterPrevious && o.prev) {
        at = src_.tokenEnd(o.prev);
        where = src_.range(at, at);
    } else if (place == Place::FromPrevious && o.prev) {
        at = src_.tokenBegin(o.prev);
        where = src_.range(at, src_.tokenEnd(off));
    }
    errs_.add(SyntaxError::Parse, at, where, std::move(msg), atEof);
}

// ---------------------------------------------------------------- the stack guard

GuardedParser::GuardedParser(antlr4::TokenStream *in, uintptr_t stackBase)
    : TileParser(in), base_(stackBase ? stackBase : stackPosition()) {}

void GuardedParser::check() {
    if (stackExhausted(base_)) throw NestingTooDeep{getCurrentToken()->getTokenIndex()};
}

void GuardedParser::enterRule(ParserRuleContext *ctx, size_t state, size_t rule) {
    check();
    TileParser::enterRule(ctx, state, rule);
}

void GuardedParser::enterRecursionRule(ParserRuleContext *ctx, size_t state, size_t rule, int prec) {
    check();
    TileParser::enterRecursionRule(ctx, state, rule, prec);
}

} // namespace tilec::parse
