/// \file
/// Python's line structure on top of the generated lexer: logical lines, INDENT/DEDENT, bracket matching,
/// and the lexical errors (invalid characters, unterminated strings, bad indentation, unbalanced brackets).
///
/// Brackets are matched here rather than left to the parser so that an unclosed bracket is reported where
/// it was opened ("'(' was never closed") instead of at the end of the file, and so that nesting deeper than
/// kMaxBracketDepth is refused before the recursive parser sees it.
#include "parse/ASTBuilder.h"

#include <cstdint>
#include <cstdio>

namespace tilec::parse {

using antlr4::Token;
using grammar::TileLexer;
using grammar::TileParser;

namespace {

size_t closerType(size_t open) {
    return open == TileLexer::OPEN_PAREN   ? TileLexer::CLOSE_PAREN
           : open == TileLexer::OPEN_BRACK ? TileLexer::CLOSE_BRACK
                                           : TileLexer::CLOSE_BRACE;
}
const char *openerText(size_t open) {
    return open == TileLexer::OPEN_PAREN ? "(" : open == TileLexer::OPEN_BRACK ? "[" : "{";
}

/// Whether a string token's prefix makes it an f-string.
bool isFString(std::string_view token) {
    size_t q = token.find_first_of("'\"");
    return q != std::string_view::npos && token.substr(0, q).find_first_of("fF") != std::string_view::npos;
}

/// "invalid character '$'", or with the code point for what a terminal may not show.
std::string invalidCharacter(char32_t cp, std::string_view text) {
    char buf[96];
    bool invisible = cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || (cp >= 0x2000 && cp <= 0x200F) ||
                     (cp >= 0x2028 && cp <= 0x202F) || cp == 0xFEFF;
    if (invisible) {
        std::snprintf(buf, sizeof buf, "invalid non-printable character U+%04X", (unsigned)cp);
        return buf;
    }
    if (cp == '!') return "invalid character '!' (use 'not' for logical negation)";
    if (cp < 0x80) return "invalid character '" + std::string(text) + "'";
    std::snprintf(buf, sizeof buf, "' (U+%04X)", (unsigned)cp);
    return "invalid character '" + std::string(text) + buf;
}

} // namespace

IndentLexer::IndentLexer(antlr4::CharStream *in, const SourceText &src, SyntaxErrors &errs, bool expressionMode)
    : TileLexer(in), src_(src), errs_(errs), exprMode_(expressionMode) {
    removeErrorListeners(); // ERROR_CHAR catches everything: the generated lexer never reports
}

std::unique_ptr<Token> IndentLexer::synth(size_t type, size_t cpIndex, size_t line, size_t col) {
    const char *text = type == TileParser::INDENT   ? "<indent>"
                       : type == TileParser::DEDENT ? "<dedent>"
                       : type == Token::EOF         ? "<EOF>"
                                                    : "<newline>";
    // A real {lexer, input} source: the error strategy builds its missing-token stand-ins from it.
    // The token is empty (stop = start - 1) and sits at `cpIndex`.
    return _factory->create({this, _input}, type, text, Token::DEFAULT_CHANNEL, cpIndex, cpIndex - 1, line, col);
}

void IndentLexer::lexError(SyntaxError::Kind k, size_t begin, size_t end, std::string msg) {
    errs_.add(k, begin, src_.range(begin, end), std::move(msg));
}

/// Compares the indentation of a logical line's first token with the stack (CPython's algorithm: widths
/// with tab stops of 8 and of 1 must agree in their ordering, or tabs and spaces are mixed ambiguously).
void IndentLexer::indentation(const Token &first) {
    size_t begin = src_.tokenBegin(&first);
    int line = src_.lineOf(begin);
    size_t ls = src_.lineStart(line);
    int w8 = 0, w1 = 0;
    const std::string &b = src_.bytes();
    for (size_t i = ls; i < begin; ++i) {
        char c = b[i];
        if (c == ' ') ++w8, ++w1;
        else if (c == '\t') w8 = (w8 / 8 + 1) * 8, ++w1;
        else if (c == '\f') w8 = w1 = 0;
        else if (c != '\r') break;
    }
    auto tabError = [&] {
        lexError(SyntaxError::Lexical, ls, begin, "inconsistent use of tabs and spaces in indentation");
    };
    size_t cp = first.getStartIndex(), ln = first.getLine(), col = first.getCharPositionInLine();
    Level top = indents_.back();
    if (w8 == top.width8) {
        if (w1 != top.width1) tabError();
        return;
    }
    if (w8 > top.width8) {
        if (w1 <= top.width1) tabError();
        if ((int)indents_.size() > kMaxIndentDepth) {
            lexError(SyntaxError::Fatal, begin, src_.tokenEnd(&first), "too many levels of indentation");
            finish();
            return;
        }
        indents_.push_back({w8, w1, false, nextIsMatchBody_});
        pending_.push_back(synth(TileParser::INDENT, cp, ln, col));
        return;
    }
    while (indents_.size() > 1 && w8 < indents_.back().width8) {
        if (!indents_.back().phantom) pending_.push_back(synth(TileParser::DEDENT, cp, ln, col));
        indents_.pop_back();
    }
    if (w8 != indents_.back().width8) {
        lexError(SyntaxError::Lexical, begin, src_.tokenEnd(&first),
                 "unindent does not match any outer indentation level");
        // Continue as if this width were a level of its own, without telling the parser: the lines that
        // follow at the same width then raise no more errors.
        indents_.push_back({w8, w1, true});
    } else if (w1 != indents_.back().width1) {
        tabError();
    }
}

/// Tracks bracket nesting. Returns false when the token is to be dropped.
bool IndentLexer::brackets(Token &t) {
    size_t type = t.getType();
    size_t begin = src_.tokenBegin(&t), end = src_.tokenEnd(&t);
    if (type == TileLexer::OPEN_PAREN || type == TileLexer::OPEN_BRACK || type == TileLexer::OPEN_BRACE) {
        if ((int)open_.size() >= kMaxBracketDepth) {
            lexError(SyntaxError::Fatal, begin, end, "too many nested parentheses");
            open_.clear(); // no "never closed" on top of it
            finish();
            return false;
        }
        open_.push_back({type, begin, src_.range(begin, end)});
        return true;
    }
    if (type != TileLexer::CLOSE_PAREN && type != TileLexer::CLOSE_BRACK && type != TileLexer::CLOSE_BRACE)
        return true;
    std::string text(src_.tokenText(&t));
    if (open_.empty()) {
        lexError(SyntaxError::Lexical, begin, end, "unmatched '" + text + "'");
        return false;
    }
    Open o = open_.back();
    open_.pop_back();
    if (closerType(o.type) != type) {
        std::string msg = "closing parenthesis '" + text + "' does not match opening parenthesis '" +
                          openerText(o.type) + "'";
        if (o.range.line != src_.lineOf(begin)) msg += " on line " + std::to_string(o.range.line);
        lexError(SyntaxError::Lexical, begin, end, msg);
        // Let the parser see the closer it expects, so the one mistake makes one error.
        if (auto *ct = dynamic_cast<antlr4::CommonToken *>(&t)) ct->setType(closerType(o.type));
    }
    return true;
}

/// An f-string whose replacement fields hold strings in its own quotes (`f"{d["k"]}"`) or go on over several
/// lines (Python 3.12) lexes as a shorter (or unterminated) string: the token is made to cover the whole
/// f-string, and lexing goes on after it. TooDeep: its fields nest too deeply to be read (an error; the
/// input ends there).
IndentLexer::Widened IndentLexer::wholeFString(Token &t) {
    std::string_view bytes(src_.bytes());
    size_t begin = src_.tokenBegin(&t), end = src_.tokenEnd(&t);
    std::string tooDeep;
    size_t whole = stringEnd(bytes.substr(0, src_.byteOf(_input->size())), begin, &tooDeep);
    if (!tooDeep.empty()) { // the rest would only make follow-on errors
        lexError(SyntaxError::Fatal, begin, end, tooDeep);
        lastEnd_ = t.getStartIndex();
        finish();
        return Widened::TooDeep;
    }
    auto *ct = dynamic_cast<antlr4::CommonToken *>(&t);
    if (whole == std::string_view::npos || whole <= end || !ct) return Widened::No;
    size_t cp = t.getStopIndex() + 1, line = getLine(), col = getCharPositionInLine();
    for (size_t i = end; i < whole; ++i) {
        if (((unsigned char)bytes[i] & 0xC0) == 0x80) continue;
        ++cp, ++col;
        if (bytes[i] == '\n') ++line, col = 0;
    }
    ct->setStopIndex(cp - 1);
    _input->seek(cp);
    setLine(line);
    setCharPositionInLine(col);
    return Widened::Yes;
}

/// The soft keywords (PEP 634) at the start of a logical line: `case` directly in a match statement's block is
/// CASE; a `match` is held with the rest of its line, which resolveMatch judges at the line's end.
void IndentLexer::softKeyword(Token &t) {
    if (t.getType() != TileLexer::NAME) return;
    std::string_view text = src_.tokenText(&t);
    if (text == "case" && indents_.back().matchBody) {
        if (auto *ct = dynamic_cast<antlr4::CommonToken *>(&t)) ct->setType(TileParser::CASE);
    } else if (text == "match") {
        heldMatch_ = pending_.size(); // the index t gets when pushed
    }
}

/// The held line that begins with `match` is a match statement when it ends with ':' (no simple statement
/// does, outside brackets) and `match` is not alone before it (`match:` is an annotation gone wrong).
void IndentLexer::resolveMatch() {
    if (heldMatch_ == SIZE_MAX) return;
    size_t at = heldMatch_;
    heldMatch_ = SIZE_MAX;
    if (pending_.size() < at + 3 || pending_.back()->getType() != TileLexer::COLON ||
        pending_[at + 1]->getType() == TileLexer::COLON)
        return;
    if (auto *ct = dynamic_cast<antlr4::CommonToken *>(pending_[at].get())) ct->setType(TileParser::MATCH);
    nextIsMatchBody_ = true;
}

/// The end of input: an unclosed bracket, the last logical line, the open indentation levels.
void IndentLexer::finish() {
    if (finished_) return;
    finished_ = true;
    resolveMatch();
    if (!open_.empty()) {
        // A lexical error after the bracket (an unterminated string that swallowed the closer) is the one
        // to report; the bracket then only tells the filter where the parser's view went wrong.
        const Open &o = open_.back();
        if (errs_.anyIn(o.offset, SIZE_MAX))
            errs_.add(SyntaxError::Cutoff, o.offset, o.range, "");
        else
            errs_.add(SyntaxError::Fatal, o.offset, o.range, std::string("'") + openerText(o.type) + "' was never closed");
    }
    size_t line = src_.lineOf(src_.byteOf(lastEnd_));
    if (!exprMode_) {
        if (lineHasTokens_) pending_.push_back(synth(TileLexer::NEWLINE, lastEnd_, line, 0));
        for (size_t i = indents_.size(); i-- > 1;)
            if (!indents_[i].phantom) pending_.push_back(synth(TileParser::DEDENT, lastEnd_, line, 0));
        indents_.resize(1);
    }
    pending_.push_back(synth(Token::EOF, _input->size(), line, 0));
}

std::unique_ptr<Token> IndentLexer::nextToken() {
    for (;;) {
        if (!pending_.empty() && heldMatch_ == SIZE_MAX) {
            std::unique_ptr<Token> t = std::move(pending_.front());
            pending_.pop_front();
            return t;
        }
        if (finished_) return synth(Token::EOF, _input->size(), getLine(), 0);

        std::unique_ptr<Token> t = TileLexer::nextToken();
        size_t type = t->getType();
        if (type == Token::EOF) {
            finish();
            continue;
        }
        if (type == TileLexer::NEWLINE) {
            // Inside brackets and on blank or comment-only lines a newline is only white space.
            if (exprMode_ || !open_.empty() || !lineHasTokens_) continue;
            lineHasTokens_ = false;
            atLineStart_ = true;
            if (heldMatch_ == SIZE_MAX) return t;
            resolveMatch();
            pending_.push_back(std::move(t));
            continue;
        }
        size_t begin = src_.tokenBegin(t.get()), end = src_.tokenEnd(t.get());
        if (type == TileLexer::ERROR_CHAR) {
            std::string_view text = src_.tokenText(t.get());
            if (text == "\\")
                lexError(SyntaxError::Lexical, begin, end, "unexpected character after line continuation character");
            else
                lexError(SyntaxError::Lexical, begin, end,
                         invalidCharacter(src_.codePoints()[t->getStartIndex()], text));
            continue;
        }
        if (type == TileLexer::UNTERMINATED_STRING) {
            // An f-string whose field goes on to the next line (Python 3.12) is not unterminated.
            Widened w = isFString(src_.tokenText(t.get())) ? wholeFString(*t) : Widened::No;
            if (w == Widened::TooDeep) continue;
            if (w == Widened::No) lexError(SyntaxError::Lexical, begin, end, "unterminated string literal");
            if (auto *ct = dynamic_cast<antlr4::CommonToken *>(t.get())) ct->setType(TileLexer::STRING);
        } else if (type == TileLexer::STRING) {
            // `'''abc` with no closing quotes lexes as the empty string `''` followed by more: the rest of
            // the file is inside the string.
            std::string_view text = src_.tokenText(t.get());
            size_t q = text.find_first_of("'\"");
            size_t next = t->getStopIndex() + 1;
            const std::u32string &cps = src_.codePoints();
            if (q != std::string_view::npos && text.size() - q == 2 && text[q] == text[q + 1] && next < _input->size() &&
                cps[next] == (char32_t)text[q]) {
                lexError(SyntaxError::Fatal, begin, begin + q + 3, "unterminated triple-quoted string literal");
                lastEnd_ = t->getStartIndex();
                finish();
                continue;
            }
            if (isFString(text) && wholeFString(*t) == Widened::TooDeep) continue;
        }
        if (atLineStart_ && !exprMode_) {
            indentation(*t);
            nextIsMatchBody_ = false;
            if (finished_) continue;
            softKeyword(*t);
        }
        atLineStart_ = false;
        lineHasTokens_ = true;
        if (!brackets(*t)) continue;
        lastEnd_ = t->getStopIndex() + 1;
        pending_.push_back(std::move(t));
    }
}

} // namespace tilec::parse
